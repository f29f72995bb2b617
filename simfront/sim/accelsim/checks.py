"""Checks that exist because Accel-Sim 1.x (GPGPU-Sim 4.x) rejects, asserts on or hangs
with a configuration: on its option dictionary (``validate_accelsim_options``), whether
written by simfront.sim.accelsim.config (which runs them on every description it writes)
or handed over as a folder. The description's own physical rules stay in
``simfront.gpu.validate``. Every message names the option and the rule.

The rules come from GPGPU-Sim 4.x's own assertions (dev branch, Oct 2024) and from the
failures recorded in ../shared/data/accelsim (README there):
  - IPOLY partition hashing (-gpgpu_memory_partition_indexing 2) hashes over
    next_pow2(n_mem) x sub-partitions banks and only knows 16, 32 and 64
    (hashing.cc ipoly_hash_function): the public H100 config's 80 channels assert.
  - In the sub-core model each unit reads its own OC_EX slot (register_set::get_ready
    asserts reg_id < regs.size()): more units of a kind than its OC_EX width crash.
  - In the sub-core model every ID_OC width must equal the scheduler count
    (shader_core_ctx::create_front_pipeline asserts).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from simfront.core.errors import ConfigError
from simfront.gpu.memory import L2_SET_HASHES
from simfront.gpu.validate import IPOLY_BANKS, legal_set_counts

SECTOR_SIZE = 32           # GPGPU-Sim's hard-coded SECTOR_SIZE
SECTOR_CHUNK = 4           # and SECTOR_CHUNCK_SIZE: a sector cache line is 128 B

# Order of -gpgpu_pipeline_widths.
PIPELINE_STAGES = ("ID_OC_SP", "ID_OC_DP", "ID_OC_INT", "ID_OC_SFU", "ID_OC_MEM",
                   "OC_EX_SP", "OC_EX_DP", "OC_EX_INT", "OC_EX_SFU", "OC_EX_MEM", "EX_WB",
                   "ID_OC_TENSOR_CORE", "OC_EX_TENSOR_CORE")


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def _err(msg: str, field: str) -> ConfigError:
    return ConfigError(msg, field=field)


def _opt(opts: dict[str, str], name: str, default: "str | None" = None) -> str:
    if name in opts:
        return opts[name]
    if default is None:
        raise ConfigError(f"option -{name} missing", field=name)
    return default


def _int(opts: dict[str, str], name: str, default: "str | None" = None) -> int:
    v = _opt(opts, name, default)
    try:
        return int(v)
    except ValueError as exc:
        raise ConfigError(f"-{name} must be an integer, got {v!r}", field=name) from exc


# Which Accel-Sim unit executes each team pipe (see accelsim.py).
PIPE_OPTION = {"fp32": "gpgpu_num_sp_units", "fp16": "gpgpu_num_sp_units",
               "fp64": "gpgpu_num_dp_units", "sfu": "gpgpu_num_sfu_units",
               "tensor": "specialized_unit_3", "cbu": "specialized_unit_1",
               "uniform": "specialized_unit_4"}


def validate_accelsim_options(opts: dict[str, str],
                              pipes_used: "Iterable[str] | None" = None) -> None:
    """Reject Accel-Sim 1.x options the simulator would assert on or hang with."""
    _check_counts_and_clocks(opts)
    _check_partition_indexing(opts)
    spec = _check_pipeline_widths(opts)
    _check_caches(opts)
    _check_shared_memory(opts)
    _check_pipeline_depths(opts, spec)
    _check_used_pipes_have_units(opts, spec, pipes_used)


def _check_counts_and_clocks(opts: dict[str, str]) -> None:
    for name in ("gpgpu_n_clusters", "gpgpu_n_cores_per_cluster", "gpgpu_n_mem",
                 "gpgpu_num_sched_per_core", "gpgpu_shader_registers",
                 "gpgpu_n_sub_partition_per_mchannel"):
        if _int(opts, name) <= 0:
            raise _err(f"-{name} must be positive, got {opts[name]}", name)
    clocks = _opt(opts, "gpgpu_clock_domains").split(":")
    if len(clocks) != 4 or any(float(c) <= 0 for c in clocks):
        raise _err(f"-gpgpu_clock_domains needs 4 positive MHz values "
                   f"core:icnt:l2:dram, got {opts['gpgpu_clock_domains']}",
                   "gpgpu_clock_domains")


def _check_partition_indexing(opts: dict[str, str]) -> None:
    n_mem = _int(opts, "gpgpu_n_mem")
    n_sub = _int(opts, "gpgpu_n_sub_partition_per_mchannel")
    if not _pow2(n_sub):
        raise _err(f"-gpgpu_n_sub_partition_per_mchannel must be a power of two "
                   f"(addrdec.cc asserts), got {n_sub}", "gpgpu_n_sub_partition_per_mchannel")
    indexing = _int(opts, "gpgpu_memory_partition_indexing", "0")
    if indexing == 2:
        banks = _next_pow2(n_mem) * n_sub
        if banks not in IPOLY_BANKS:
            raise _err(
                f"IPOLY partition hashing (-gpgpu_memory_partition_indexing 2) supports only "
                f"16, 32 or 64 channels x sub-partitions (it hashes over next_pow2(n_mem) x "
                f"n_sub = {_next_pow2(n_mem)} x {n_sub} = {banks}); with -gpgpu_n_mem "
                f"{n_mem} use 0 (linear) instead", "gpgpu_memory_partition_indexing")
    if indexing == 1 and not _pow2(n_mem):
        raise _err(f"bitwise-XOR partition hashing (-gpgpu_memory_partition_indexing 1) "
                   f"needs a power-of-two -gpgpu_n_mem, got {n_mem}",
                   "gpgpu_memory_partition_indexing")
    if indexing not in (0, 1, 2, 3, 4):
        raise _err(f"unknown -gpgpu_memory_partition_indexing {indexing}",
                   "gpgpu_memory_partition_indexing")


def _check_pipeline_widths(opts: dict[str, str]) -> dict:
    """Check the pipeline widths against the units; return the specialized units
    (``_spec_units``), which the later checks read too."""
    widths_raw = _ints_list(_opt(opts, "gpgpu_pipeline_widths"))
    if len(widths_raw) != len(PIPELINE_STAGES):
        raise _err(f"-gpgpu_pipeline_widths needs {len(PIPELINE_STAGES)} values "
                   f"({','.join(PIPELINE_STAGES)}), got {len(widths_raw)}",
                   "gpgpu_pipeline_widths")
    w = dict(zip(PIPELINE_STAGES, widths_raw))
    n_sched = _int(opts, "gpgpu_num_sched_per_core")
    sub = _opt(opts, "gpgpu_sub_core_model", "0") == "1"
    units = {"SP": _int(opts, "gpgpu_num_sp_units", "1"),
             "DP": _int(opts, "gpgpu_num_dp_units", "0"),
             "INT": _int(opts, "gpgpu_num_int_units", "0"),
             "SFU": _int(opts, "gpgpu_num_sfu_units", "1"),
             "TENSOR_CORE": _int(opts, "gpgpu_num_tensor_core_units", "0")}
    tensor_avail = _opt(opts, "gpgpu_tensor_core_avail", "0") == "1"
    spec = _spec_units(opts)
    if sub:
        _check_sub_core_slots(w, n_sched, units, tensor_avail, spec)
        _check_sub_core_operands(opts, n_sched)
    return spec


def _check_sub_core_slots(w: dict[str, int], n_sched: int, units: dict[str, int],
                          tensor_avail: bool, spec: dict) -> None:
    checks = [("SP", True), ("SFU", True), ("MEM", True),
              ("TENSOR_CORE", tensor_avail), ("DP", units["DP"] > 0),
              ("INT", units["INT"] > 0)]
    for kind, applies in checks:
        if applies and w[f"ID_OC_{kind}"] != n_sched:
            raise _err(
                f"in the sub-core model (-gpgpu_sub_core_model 1) each scheduler owns one "
                f"issue slot, so ID_OC_{kind} width must equal the scheduler count "
                f"-gpgpu_num_sched_per_core {n_sched}, got {w[f'ID_OC_{kind}']}",
                "gpgpu_pipeline_widths")
    for kind, count in units.items():
        if kind == "TENSOR_CORE" and not tensor_avail:
            continue
        if count > w[f"OC_EX_{kind}"]:
            raise _err(
                f"{count} {kind} units but OC_EX_{kind} width {w[f'OC_EX_{kind}']}: in "
                f"the sub-core model unit k reads OC_EX slot k, so units must not exceed "
                f"the OC_EX width (register_set::get_ready asserts reg_id < regs.size())",
                _unit_option(kind))
    for num, (enabled, count, id_oc, oc_ex, name) in spec.items():
        if enabled and count > 0 and id_oc != n_sched:
            raise _err(f"specialized unit {num} ({name}): ID_OC width {id_oc} must equal "
                       f"the scheduler count {n_sched} in the sub-core model",
                       f"specialized_unit_{num}")
        if enabled and count > oc_ex:
            raise _err(f"specialized unit {num} ({name}): {count} units but OC_EX width "
                       f"{oc_ex}; units must not exceed it in the sub-core model",
                       f"specialized_unit_{num}")


def _check_sub_core_operands(opts: dict[str, str], n_sched: int) -> None:
    banks = _int(opts, "gpgpu_num_reg_banks", "8")
    if banks % n_sched:
        raise _err(f"-gpgpu_num_reg_banks {banks} must be a multiple of the scheduler "
                   f"count {n_sched} in the sub-core model", "gpgpu_num_reg_banks")
    cus = _int(opts, "gpgpu_operand_collector_num_units_gen", "0")
    if _opt(opts, "gpgpu_enable_specialized_operand_collector", "1") == "0" and (
            cus < n_sched or cus % n_sched):
        raise _err(f"-gpgpu_operand_collector_num_units_gen {cus} must be a non-zero "
                   f"multiple of the scheduler count {n_sched} in the sub-core model",
                   "gpgpu_operand_collector_num_units_gen")


def _check_caches(opts: dict[str, str]) -> None:
    # GPGPU-Sim's built-in default strings for these lack the set-index field and abort in
    # cache_config::exit_parse_error, so each must be given and must parse.
    for name in CACHE_OPTIONS:
        if name not in opts:
            raise _err(f"-{name} must be given: GPGPU-Sim's built-in default for it does not "
                       f"parse (cache_config::init aborts)", name)
        if opts[name] != "none" or name in ("gpgpu_cache:il1", "gpgpu_cache:dl2"):
            _check_cache(name, opts[name])
    if "gpgpu_cache:dl1" in opts and _int(opts, "gpgpu_unified_l1d_size", "0") > 0:
        c = _cache_fields(opts["gpgpu_cache:dl1"])
        base_kb = c["sets"] * c["line"] * c["assoc"] // 1024
        unified = _int(opts, "gpgpu_unified_l1d_size")
        if base_kb == 0 or unified % base_kb:
            raise _err(f"-gpgpu_unified_l1d_size {unified} KB must be a multiple of the "
                       f"-gpgpu_cache:dl1 size {base_kb} KB", "gpgpu_unified_l1d_size")


def _check_shared_memory(opts: dict[str, str]) -> None:
    if _opt(opts, "gpgpu_adaptive_cache_config", "0") == "1":
        carve = _ints_list(_opt(opts, "gpgpu_shmem_option", "0"))
        unified = _int(opts, "gpgpu_unified_l1d_size", "0")
        if max(carve) > unified:
            raise _err(f"shared-memory carve-out {max(carve)} KB is over the unified "
                       f"L1/shared {unified} KB (the L1 share would be negative)",
                       "gpgpu_shmem_option")
        shmem = _int(opts, "gpgpu_shmem_size", "16384")
        if shmem > max(carve) * 1024:
            raise _err(f"-gpgpu_shmem_size {shmem} is over the largest carve-out "
                       f"{max(carve)} KB", "gpgpu_shmem_size")
    if _int(opts, "gpgpu_shmem_per_block", "49152") > _int(opts, "gpgpu_shmem_size",
                                                           "16384"):
        raise _err(f"-gpgpu_shmem_per_block {opts.get('gpgpu_shmem_per_block')} is over "
                   f"-gpgpu_shmem_size {opts.get('gpgpu_shmem_size')}", "gpgpu_shmem_per_block")
    for name in ("gpgpu_l1_latency", "gpgpu_smem_latency"):
        if name in opts and _int(opts, name) <= (1 if name == "gpgpu_smem_latency" else 0):
            raise _err(f"-{name} must be positive (shader.cc asserts)", name)


def _check_used_pipes_have_units(opts: dict[str, str], spec: dict,
                                 pipes_used: "Iterable[str] | None") -> None:
    """Zero units of a kind the trace uses: its instructions never issue (a deadlock)."""
    for pipe in pipes_used or ():
        option = PIPE_OPTION.get(pipe)
        if option is None:
            continue
        if option.startswith("specialized_unit_"):
            num = int(option.rsplit("_", 1)[1])
            enabled, count = spec[num][0], spec[num][1]
            has = enabled and count > 0
        else:
            has = _int(opts, option, "0") > 0
        if not has:
            raise _err(f"the trace uses the '{pipe}' pipe but -{option} gives it no units; "
                       f"its instructions would never issue (deadlock)", option)


# GPGPU-Sim's defaults of the PTX-mode latency options (cuda-sim.cc).
_PTX_DEFAULTS = {"ptx_opcode_latency_int": "1,1,19,25,145,32",
                 "ptx_opcode_latency_fp": "1,1,1,1,30",
                 "ptx_opcode_latency_dp": "8,8,8,8,335",
                 "ptx_opcode_latency_sfu": "8", "ptx_opcode_latency_tesnor": "64"}
MAX_ALU_LATENCY = 512


def _check_pipeline_depths(opts: dict[str, str], spec: dict) -> None:
    """A unit's pipeline has max_<unit>_latency stages, taken from the PTX-mode latency
    options even in trace-driven mode (shader_core_config::set_pipeline_latency); an
    instruction enters at stage latency - initiation, so a trace latency beyond the depth
    writes past the pipeline (segfault in pipelined_simd_unit::cycle: seen with the PTX
    defaults, whose SP depth is 1)."""
    ptx = {k: _ints_list(opts.get(k, d)) for k, d in _PTX_DEFAULTS.items()}
    intl, fpl, dpl = (ptx["ptx_opcode_latency_int"], ptx["ptx_opcode_latency_fp"],
                      ptx["ptx_opcode_latency_dp"])
    depth = {"sp": fpl[1], "int": max(intl[1], intl[5]), "dp": dpl[1],
             "sfu": max(dpl[4], ptx["ptx_opcode_latency_sfu"][0]),
             "tensor": ptx["ptx_opcode_latency_tesnor"][0]}
    source = {"sp": "ptx_opcode_latency_fp (MAX)", "int": "ptx_opcode_latency_int (MAX, SHFL)",
              "dp": "ptx_opcode_latency_dp (MAX)", "sfu": "ptx_opcode_latency_dp (DIV) / "
              "ptx_opcode_latency_sfu", "tensor": "ptx_opcode_latency_tesnor"}
    for kind in depth:
        name = f"trace_opcode_latency_initiation_{kind}"
        if name not in opts:
            continue
        lat, init = _ints_list(opts[name])[:2]
        if lat >= MAX_ALU_LATENCY:
            raise _err(f"-{name}: latency {lat} must be below {MAX_ALU_LATENCY} "
                       f"(MAX_ALU_LATENCY)", name)
        if lat - init >= depth[kind]:
            raise _err(f"-{name} {lat},{init}: the {kind} pipeline is only {depth[kind]} "
                       f"stages deep (from -{source[kind]}); latency - initiation must be "
                       f"below it or the unit writes past its pipeline (segfault)", name)
    for num, (enabled, count, _, _, uname) in spec.items():
        name = f"trace_opcode_latency_initiation_spec_op_{num}"
        if not enabled or not count or name not in opts:
            continue
        lat, init = _ints_list(opts[name])[:2]
        max_lat = int(opts[f"specialized_unit_{num}"].split(",")[2])
        if lat - init >= max_lat or lat >= MAX_ALU_LATENCY:
            raise _err(f"-{name} {lat},{init}: specialized unit {num} ({uname}) has "
                       f"max latency {max_lat}; latency - initiation must be below it",
                       name)


def _ints_list(v: str) -> list[int]:
    try:
        return [int(x) for x in v.split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigError(f"expected a comma-separated list of integers, got {v!r}") from exc


def _unit_option(kind: str) -> str:
    return {"SP": "gpgpu_num_sp_units", "DP": "gpgpu_num_dp_units",
            "INT": "gpgpu_num_int_units", "SFU": "gpgpu_num_sfu_units",
            "TENSOR_CORE": "gpgpu_num_tensor_core_units"}[kind]


def _spec_units(opts: dict[str, str]) -> dict[int, tuple[bool, int, int, int, str]]:
    out = {}
    for num in range(1, 9):
        v = opts.get(f"specialized_unit_{num}")
        if not v:
            continue
        f = v.split(",")
        try:
            out[num] = (f[0] == "1", int(f[1]), int(f[3]), int(f[4]), f[5])
        except (IndexError, ValueError) as exc:
            raise _err(f"-specialized_unit_{num} needs <enabled>,<units>,<latency>,<ID_OC>,"
                       f"<OC_EX>,<NAME>, got {v!r}", f"specialized_unit_{num}") from exc
    return out


CACHE_OPTIONS = ("gpgpu_cache:il1", "gpgpu_cache:dl1", "gpgpu_cache:dl2",
                 "gpgpu_const_cache:l1", "gpgpu_tex_cache:l1")
# The sscanf format of cache_config::init: "%c:%u:%u:%u,%c:%c:%c:%c:%c,%c:%u:%u,%u:%u,%u"
# with at least 12 fields converted.
_CACHE_RE = re.compile(r"^[NS]:\d+:\d+:\d+,[LF]:[RBTEL]:[mfs]:[NWFL]:[HPCLX],[FTAS]:\d+:\d+"
                       r"(,\d+(:\d+(,\d+)?)?)?$")


def _cache_fields(v: str) -> dict[str, Any]:
    try:
        head, policy = v.split(",")[:2]
        kind, sets, line, assoc = head.split(":")
        pol = policy.split(":")
        return {"kind": kind, "sets": int(sets), "line": int(line), "assoc": int(assoc),
                "write": pol[1], "alloc": pol[2], "hash": pol[4] if len(pol) > 4 else "L"}
    except ValueError as exc:
        raise ConfigError(f"cannot read cache config {v!r}") from exc


def _check_cache(name: str, v: str) -> None:
    if not _CACHE_RE.match(v.replace(" ", "")):
        raise _err(f"-{name} {v!r} does not parse as <S|N>:<sets>:<line>:<assoc>,<rep>:<wr>:"
                   f"<alloc>:<wr_alloc>:<set_index>,<mshr>:<N>:<merge>,<mq>[:<fifo>][,<port>] "
                   f"(cache_config::init aborts)", name)
    c = _cache_fields(v)
    if c["sets"] <= 0 or c["line"] <= 0 or c["assoc"] <= 0:
        raise _err(f"-{name}: sets, line and ways must be positive in {v!r}", name)
    letter_names = {v: k for k, v in L2_SET_HASHES.items()}
    hash_name = letter_names.get(c["hash"], "linear")
    if not legal_set_counts(hash_name)(c["sets"]):
        need = ("16, 32 or 64" if hash_name == "ipoly" else "32 or 64"
                if hash_name == "fermi" else "a power of two")
        raise _err(f"-{name}: the '{hash_name}' set index ({c['hash']}) needs {need} sets, "
                   f"got {c['sets']} (gpu-cache.cc asserts set_index < nset)", name)
    if c["kind"] == "S" and c["line"] != SECTOR_SIZE * SECTOR_CHUNK:
        raise _err(f"-{name}: a sector cache needs {SECTOR_SIZE * SECTOR_CHUNK} B lines "
                   f"(4 x 32 B sectors hard-coded in GPGPU-Sim), got {c['line']}", name)
    if c["write"] == "B" and c["alloc"] in ("f", "s"):
        raise _err(f"-{name}: a write-back cache cannot allocate on fill (GPGPU-Sim asserts: "
                   f"deadlock)", name)


def accelsim_warnings(opts: dict[str, str]) -> list[str]:
    """Settings Accel-Sim accepts but that silently do nothing."""
    out = []
    if _opt(opts, "gpgpu_sub_core_model", "0") == "1":
        n_sched = _int(opts, "gpgpu_num_sched_per_core")
        for kind, option in (("SP", "gpgpu_num_sp_units"), ("SFU", "gpgpu_num_sfu_units"),
                             ("INT", "gpgpu_num_int_units"), ("DP", "gpgpu_num_dp_units")):
            count = _int(opts, option, "0")
            if count > n_sched:
                out.append(
                    f"-{option} {count} > {n_sched} schedulers in the sub-core model: a "
                    f"collector unit of scheduler s only fills OC_EX slot s and unit k only "
                    f"reads slot k, so {count - n_sched} {kind} units never execute")
    return out


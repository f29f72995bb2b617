"""Accel-Sim 1.x configuration: write a description as ``gpgpusim.config`` +
``trace.config`` + an interconnect file, and read such files back into a description.

Option names are those of Accel-Sim 1.x / GPGPU-Sim 4.x (dev branch, October 2024); every
value is computed here from the description, nothing is copied from a public config.

Mapping of the team pipes onto Accel-Sim's units (Ampere opcode map, trace-driven mode):
  fp32, fp16 -> SP units (FADD/FFMA/HFMA2... are SP_OP; fp16 has no unit of its own,
    and its latency no option: HFMA2 takes the SP latency in Accel-Sim)
  int -> INT units (IADD3, IMAD, LOP3 and the ALU_OP moves/conversions)
  sfu -> SFU units (MUFU);  fp64 -> DP units
  tensor -> specialized unit 3 'TENSOR' (HMMA/IMMA/DMMA), and the generic tensor units,
    at the peak rate: the HMMA.16816 they run are mostly warpgroup MMAs lowered
    (simfront.sim.accelsim.lowering), so native mma.sync runs faster there than on the
    H100 (``sm.tensor.mma_sync_share``, which the built-in model uses)
  cbu -> specialized unit 1 'BRA';  uniform -> specialized unit 4 'UDP'
  lsu -> the load/store unit (one per SM in GPGPU-Sim; its timing comes from L1/shared)
  texture ('other') -> specialized unit 2 'TEX' at the L1 latency.

Units per sub-partition are written as one Accel-Sim unit per scheduler in the sub-core
model (each scheduler owns its ID_OC/OC_EX slot). A description whose pipes need more
than one unit per sub-partition, or an issue width above one, is written with the
sub-core model off (shared slots, dual issue): in the sub-core model unit k is only fed
from OC_EX slot k, which only scheduler k's collectors fill, so extra units never run.

Round trip: fields Accel-Sim has no option for (name, FP16 and LSU pipes, tensor rates of
other input types, the mma.sync share of the tensor peak, DRAM kind, capacity and stacks,
sector sizes) travel in one
``# simfront-extra:`` comment line; options given as ``raw`` go after a
``# simfront-raw`` marker and, GPGPU-Sim reading options in order, override what comes
before.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any, Iterable

from simfront.core.atomic import write_text
from simfront.core.errors import ConfigError
from simfront.gpu.gpu import GPU
from simfront.gpu.memory import L2_SET_HASHES, PARTITION_INDEXING
from simfront.gpu.presets import h100
from simfront.gpu.sm import TensorPipe
from simfront.gpu.units import Size
from simfront.gpu.validate import validate_description
from simfront.sim.accelsim.checks import PIPELINE_STAGES, SECTOR_SIZE, validate_accelsim_options

GPGPUSIM_CONFIG = "gpgpusim.config"
TRACE_CONFIG = "trace.config"
ICNT_CONFIG = "config_simfront_islip.icnt"

EXTRA_MARK = "# simfront-extra:"
RAW_MARK = "# simfront-raw"

# Fields with no Accel-Sim option: carried in the extra line.
EXTRA_PATHS = (
    "name", "sm.registers.max_per_thread", "sm.pipes.fp16", "sm.pipes.lsu",
    "sm.tensor.fma_per_clk", "sm.tensor.mma_sync_share", "sm.hmma_dtype", "sm.l1.sector", "l2.sector", "dram.kind",
    "dram.capacity", "dram.stacks", "dram.channels_per_stack", "empty_kernel_ns",
    "ncu_fixed_cycles", "clock_limits",
)

# Accel-Sim's specialized units by number (fixed by its opcode maps).
SPEC_UNITS = {1: ("BRA", "cbu"), 2: ("TEX", None), 3: ("TENSOR", "tensor"),
              4: ("UDP", "uniform")}
_INDEXING_BY_NUMBER = {v: k for k, v in PARTITION_INDEXING.items()}
_HASH_BY_LETTER = {v: k for k, v in L2_SET_HASHES.items()}


# ----------------------------------------------------------------------------- writing

def sub_core_model(gpu: GPU) -> bool:
    """Whether the description fits Accel-Sim's sub-core model (see module doc)."""
    sm = gpu.sm
    units = [sm.pipes.get(p).units for p in ("fp32", "int", "sfu", "fp64", "cbu",
                                             "uniform")] + [sm.tensor.units]
    return sm.issue_width == 1 and max(units) <= 1


def _dram_address_mapping(gpu: GPU) -> str:
    """dramid@<bit>;<map> with S (byte-in-burst), C (column), B (bank), R (row) bits,
    channels interleaved every 256 B. Row of 1 KiB (HBM page)."""
    d = gpu.dram
    s_bits = int(math.log2(gpu.l2.sector.bytes))
    c_bits = 10 - s_bits
    b_bits = int(math.log2(d.banks))
    r_bits = 14
    bits = "R" * r_bits + "B" * b_bits + "C" * c_bits + "S" * s_bits
    bits = bits.rjust(64, "0")
    groups = ".".join(bits[i:i + 8] for i in range(0, 64, 8))
    return f"dramid@8;{groups}"


def _timing_string(gpu: GPU) -> str:
    t = gpu.dram.timing
    d = gpu.dram
    return (f"nbk={d.banks}:CCD={t.CCD}:RRD={t.RRD}:RCD={t.RCD}:RAS={t.RAS}:RP={t.RP}:"
            f"RC={t.RC}:CL={t.CL}:WL={t.WL}:CDLR={t.CDLR}:WR={t.WR}:nbkgrp={d.bank_groups}"
            f":CCDL={t.CCDL}:RTPL={t.RTPL}")


def _cache_string(sector: bool, sets: int, line: int, assoc: int, policy: str,
                  set_hash: str, mshr: str, queues: str, port: int) -> str:
    return (f"{'S' if sector else 'N'}:{sets}:{line}:{assoc},{policy}:{set_hash},"
            f"{mshr},{queues},{port}")


def _mhz(freq_hz: int) -> str:
    return f"{freq_hz / 1e6:.6f}".rstrip("0").rstrip(".")


def _ptx_options(gpu: GPU) -> list[tuple[str, str]]:
    p = gpu.sm.pipes
    ws = gpu.sm.warp_size
    t = gpu.sm.tensor

    def rep(lat: int, n: int, last: "int | None" = None) -> str:
        vals = [lat] * n + ([last] if last is not None else [])
        return ",".join(map(str, vals))

    return [
        ("ptx_opcode_latency_int", rep(p.int.latency, 4, p.sfu.latency) + f",{p.int.latency}"),
        ("ptx_opcode_initiation_int",
         rep(p.int.initiation(ws), 4, p.sfu.initiation(ws)) + f",{p.int.initiation(ws)}"),
        ("ptx_opcode_latency_fp", rep(p.fp32.latency, 4, p.sfu.latency)),
        ("ptx_opcode_initiation_fp", rep(p.fp32.initiation(ws), 4, p.sfu.initiation(ws))),
        ("ptx_opcode_latency_dp", rep(p.fp64.latency, 4, p.sfu.latency)),
        ("ptx_opcode_initiation_dp", rep(p.fp64.initiation(ws), 4, p.sfu.initiation(ws))),
        ("ptx_opcode_latency_sfu", str(p.sfu.latency)),
        ("ptx_opcode_initiation_sfu", str(p.sfu.initiation(ws))),
        ("ptx_opcode_latency_tesnor", str(t.latency)),   # sic: GPGPU-Sim's spelling
        ("ptx_opcode_initiation_tensor", str(t.initiation(gpu.sm.hmma_dtype))),
    ]


Options = list[tuple[str, str]]
Sections = list[tuple[str, Options]]


def accelsim_sections(gpu: GPU) -> Sections:
    """gpgpusim.config content as (section comment, [(option, value)]), raw excluded."""
    return [*_gpu_sections(gpu), *_sm_sections(gpu), _l1_section(gpu),
            _fixed_caches_section(), _l2_section(gpu), _dram_section(gpu),
            _interconnect_section(gpu), _statistics_section()]


def _gpu_sections(gpu: GPU) -> Sections:
    clocks = gpu.clocks
    return [
        ("functional simulator: performance mode", [
            ("gpgpu_ptx_sim_mode", "0"),
            ("gpgpu_compute_capability_major", "9"),
            ("gpgpu_compute_capability_minor", "0"),
            ("gpgpu_occupancy_sm_number", "90"),
        ]),
        ("GPU: SMs (one per cluster) and memory channels", [
            ("gpgpu_n_clusters", str(gpu.sm_count)),
            ("gpgpu_n_cores_per_cluster", "1"),
            ("gpgpu_n_mem", str(gpu.dram.channels)),
            ("gpgpu_n_sub_partition_per_mchannel", str(gpu.l2.banks_per_channel)),
        ]),
        ("clock domains in MHz: core:interconnect:L2:DRAM", [
            ("gpgpu_clock_domains", f"{_mhz(clocks.core.hz)}:{_mhz(clocks.interconnect.hz)}:"
                                    f"{_mhz(clocks.l2.hz)}:{_mhz(gpu.dram.clock.hz)}"),
        ]),
    ]


def _pipeline_widths(gpu: GPU) -> dict[str, int]:
    """Width of each of PIPELINE_STAGES: one issue slot per scheduler in the sub-core model
    (see module doc), at least one execute slot per unit."""
    sm = gpu.sm
    n = sm.sub_partitions
    p = sm.pipes
    issue = sm.issue_width
    id_oc = n * (1 if sub_core_model(gpu) else issue)
    return {
        "ID_OC_SP": id_oc, "ID_OC_DP": id_oc, "ID_OC_INT": id_oc, "ID_OC_SFU": id_oc,
        "ID_OC_MEM": n, "OC_EX_SP": max(n, p.fp32.units * n),
        "OC_EX_DP": max(n, p.fp64.units * n), "OC_EX_INT": max(n, p.int.units * n),
        "OC_EX_SFU": max(n, p.sfu.units * n), "OC_EX_MEM": n,
        "EX_WB": 2 * n * issue, "ID_OC_TENSOR_CORE": id_oc,
        "OC_EX_TENSOR_CORE": max(n, sm.tensor.units * n),
    }


def _sm_sections(gpu: GPU) -> Sections:
    sm = gpu.sm
    n = sm.sub_partitions
    p = sm.pipes
    issue = sm.issue_width
    regs = sm.registers
    widths = _pipeline_widths(gpu)
    return [
        ("SM: threads, warps, blocks, registers", [
            ("gpgpu_shader_core_pipeline", f"{sm.max_warps * sm.warp_size}:{sm.warp_size}"),
            ("gpgpu_shader_cta", str(sm.max_blocks)),
            ("gpgpu_shader_registers", str(regs.registers)),
            ("gpgpu_registers_per_block", str(regs.registers)),
            ("gpgpu_num_reg_banks", str(regs.banks)),
            ("gpgpu_reg_file_port_throughput", str(regs.read_ports)),
            ("gpgpu_enable_specialized_operand_collector", "0"),
            ("gpgpu_operand_collector_num_units_gen", str(regs.collector_units)),
            ("gpgpu_operand_collector_num_in_ports_gen", str(regs.collector_units)),
            ("gpgpu_operand_collector_num_out_ports_gen", str(regs.collector_units)),
        ]),
        ("SM: schedulers (one per sub-partition) and issue", [
            ("gpgpu_sub_core_model", "1" if sub_core_model(gpu) else "0"),
            ("gpgpu_num_sched_per_core", str(n)),
            ("gpgpu_scheduler", sm.scheduler),
            ("gpgpu_max_insn_issue_per_warp", str(issue)),
            ("gpgpu_dual_issue_diff_exec_units", "1" if issue == 1 else "0"),
            ("gpgpu_simd_model", "1"),
        ]),
        ("PTX-mode opcode latencies <ADD,MAX,MUL,MAD,DIV(,SHFL)>: unused by trace-driven "
         "timing, but GPGPU-Sim sizes each unit's pipeline from them (SP: MAX; INT: MAX, SHFL;"
         " DP: MAX; SFU: DP DIV, SFU), so they carry the pipes' latencies", _ptx_options(gpu)),
        ("SM: pipeline register widths (" + ",".join(PIPELINE_STAGES) + ") and units", [
            ("gpgpu_pipeline_widths", ",".join(str(widths[s]) for s in PIPELINE_STAGES)),
            ("gpgpu_num_sp_units", str(p.fp32.units * n)),
            ("gpgpu_num_dp_units", str(p.fp64.units * n)),
            ("gpgpu_num_int_units", str(p.int.units * n)),
            ("gpgpu_num_sfu_units", str(p.sfu.units * n)),
            ("gpgpu_tensor_core_avail", "1" if sm.tensor.units else "0"),
            ("gpgpu_num_tensor_core_units", str(sm.tensor.units * n)),
            ("gpgpu_num_mem_units", "1"),
        ]),
    ]


def _l1_section(gpu: GPU) -> tuple[str, Options]:
    l1 = gpu.sm.l1
    l1_assoc = l1.size.bytes // (l1.sets * l1.line.bytes)
    return ("L1 data cache / shared memory (unified, carve-outs in KB)", [
        ("gpgpu_adaptive_cache_config", "1"),
        ("gpgpu_unified_l1d_size", str(l1.size.bytes // 1024)),
        ("gpgpu_shmem_option", ",".join(str(c.bytes // 1024) for c in l1.shared_carveouts)),
        ("gpgpu_cache:dl1", _cache_string(True, l1.sets, l1.line.bytes, l1_assoc,
                                          "L:T:m:L", "L", f"A:{l1.mshr_entries}:8",
                                          "16:0", l1.sector.bytes)),
        ("gpgpu_l1_banks", str(l1.l1_banks)),
        ("gpgpu_l1_banks_byte_interleaving", str(l1.sector.bytes)),
        ("gpgpu_l1_latency", str(l1.l1_latency)),
        ("gpgpu_gmem_skip_L1D", "0"),
        ("gpgpu_flush_l1_cache", "1"),
        ("gpgpu_shmem_size", str(l1.max_shared_per_sm.bytes)),
        ("gpgpu_shmem_sizeDefault", str(l1.max_shared_per_sm.bytes)),
        ("gpgpu_shmem_per_block", str(l1.max_shared_per_block.bytes)),
        ("gpgpu_shmem_num_banks", str(l1.banks)),
        ("gpgpu_shmem_limited_broadcast", "0"),
        ("gpgpu_shmem_warp_parts", "1"),
        ("gpgpu_smem_latency", str(l1.shared_latency)),
        ("gpgpu_coalesce_arch", "70"),
    ])


def _fixed_caches_section() -> tuple[str, Options]:
    return ("instruction, constant and texture caches: GPGPU-Sim's built-in defaults do not "
            "parse, so they are always written; with perfect instruction/constant caches "
            "their sizes do not affect timing", [
                ("gpgpu_perfect_inst_const_cache", "1"),
                ("gpgpu_cache:il1", "N:32:128:8,L:R:f:N:L,S:2:48,4"),
                ("gpgpu_inst_fetch_throughput", "4"),
                ("gpgpu_const_cache:l1", "N:128:64:8,L:R:f:N:L,S:2:64,4"),
                ("gpgpu_tex_cache:l1", "N:4:128:256,L:R:m:N:L,T:512:8,128:2"),
            ])


def _l2_section(gpu: GPU) -> tuple[str, Options]:
    ch = gpu.dram.channels
    l2 = gpu.l2
    l2_sets = int(l2.sets(ch))
    return (f"L2: {l2.size} = {ch} channels x {l2.banks_per_channel} banks x {l2_sets} sets x "
            f"{l2.assoc} ways x {l2.line.bytes} B", [
                ("gpgpu_cache:dl2", _cache_string(True, l2_sets, l2.line.bytes, l2.assoc,
                                                  "L:B:m:L", L2_SET_HASHES[l2.set_hash],
                                                  f"A:{l2.mshr_entries}:4", "32:0",
                                                  l2.port_width.bytes)),
                ("gpgpu_cache:dl2_texture_only", "0"),
                ("gpgpu_l2_rop_latency", str(l2.hit_latency)),
                ("gpgpu_memory_partition_indexing",
                 str(PARTITION_INDEXING[gpu.dram.partition_indexing])),
                ("gpgpu_perf_sim_memcpy", "1"),
            ])


def _dram_section(gpu: GPU) -> tuple[str, Options]:
    d = gpu.dram
    return (f"DRAM: {d.kind}, {d.channels} channels x {d.channel_width_bits} bit, "
            f"{d.transfers_per_clock} transfers per clock -> {d.bandwidth}", [
                ("gpgpu_n_mem_per_ctrlr", "1"),
                ("gpgpu_dram_buswidth", str(d.channel_width_bits // 8)),
                ("gpgpu_dram_burst_length", str(d.transfers_per_clock)),
                ("dram_data_command_freq_ratio", str(d.transfers_per_clock)),
                ("gpgpu_dram_timing_opt", _timing_string(gpu)),
                ("dram_latency", str(d.latency)),
                ("gpgpu_dram_scheduler", "1"),
                ("gpgpu_frfcfs_dram_sched_queue_size", "64"),
                ("gpgpu_dram_return_queue_size", "128"),
                ("dram_dual_bus_interface", "1"),
                ("dram_bnk_indexing_policy", "0"),
                ("dram_bnkgrp_indexing_policy", "1"),
                ("gpgpu_mem_address_mask", "1"),
                ("gpgpu_mem_addr_mapping", _dram_address_mapping(gpu)),
            ])


def _interconnect_section(gpu: GPU) -> tuple[str, Options]:
    icnt = gpu.interconnect
    return ("interconnect", [
        ("network_mode", "2" if icnt.model == "xbar" else "1"),
        ("inter_config_file", ICNT_CONFIG),
        ("icnt_in_buffer_limit", str(icnt.buffer)),
        ("icnt_out_buffer_limit", str(icnt.buffer)),
        ("icnt_subnets", str(icnt.subnets)),
        ("icnt_flit_size", str(icnt.flit_size)),
        ("icnt_arbiter_algo", "1"),
    ])


def _statistics_section() -> tuple[str, Options]:
    return ("statistics", [
        ("gpgpu_memlatency_stat", "14"),
        ("gpgpu_runtime_stat", "500"),
        ("visualizer_enabled", "0"),
    ])


def trace_options(gpu: GPU) -> list[tuple[str, list[tuple[str, str]]]]:
    """trace.config content: per-unit latency/initiation and the specialized units."""
    sm = gpu.sm
    n = sm.sub_partitions
    ws = sm.warp_size
    p = sm.pipes
    sub = sub_core_model(gpu)
    t = sm.tensor
    t_init = t.initiation(sm.hmma_dtype)

    def li(lat: int, init: int) -> str:
        return f"{lat},{init}"

    def spec(num: int, name: str, units: int, lat: int) -> list[tuple[str, str]]:
        total = units * n
        id_oc = n * (1 if sub else sm.issue_width)
        return [(f"specialized_unit_{num}",
                 f"{1 if total else 0},{total},{lat},{id_oc},{max(n, total)},{name}")]

    tex_lat = sm.l1.l1_latency
    return [
        ("latency,initiation per Accel-Sim opcode class (core clocks)", [
            ("trace_opcode_latency_initiation_int", li(p.int.latency, p.int.initiation(ws))),
            ("trace_opcode_latency_initiation_sp", li(p.fp32.latency, p.fp32.initiation(ws))),
            ("trace_opcode_latency_initiation_dp", li(p.fp64.latency, p.fp64.initiation(ws))),
            ("trace_opcode_latency_initiation_sfu", li(p.sfu.latency, p.sfu.initiation(ws))),
            ("trace_opcode_latency_initiation_tensor", li(t.latency, t_init)),
        ]),
        ("specialized unit 1: branch/control (cbu)",
         spec(1, "BRA", p.cbu.units, p.cbu.latency)
         + [("trace_opcode_latency_initiation_spec_op_1",
             li(p.cbu.latency, p.cbu.initiation(ws)))]),
        ("specialized unit 2: texture, fixed at the L1 latency",
         spec(2, "TEX", 1, tex_lat)
         + [("trace_opcode_latency_initiation_spec_op_2", li(tex_lat, 4))]),
        (f"specialized unit 3: tensor cores, HMMA.16816 {sm.hmma_dtype} = "
         f"{TensorPipe.HMMA_FMAS} FMA at {t.fma_per_clk.get(sm.hmma_dtype)} FMA/clk",
         spec(3, "TENSOR", t.units, t.latency)
         + [("trace_opcode_latency_initiation_spec_op_3", li(t.latency, t_init))]),
        ("specialized unit 4: uniform datapath",
         spec(4, "UDP", p.uniform.units, p.uniform.latency)
         + [("trace_opcode_latency_initiation_spec_op_4",
             li(p.uniform.latency, p.uniform.initiation(ws)))]),
    ]


def accelsim_options(gpu: GPU) -> dict[str, str]:
    """Every option the writer emits (both files), with ``raw`` applied on top."""
    opts: dict[str, str] = {}
    for _, items in accelsim_sections(gpu) + trace_options(gpu):
        opts.update(items)
    opts.update(gpu.raw_options)
    return opts


def _extra(gpu: GPU) -> dict[str, Any]:
    data = gpu.to_dict()
    out: dict[str, Any] = {}
    for path in EXTRA_PATHS:
        v: Any = data
        for part in path.split("."):
            v = v[part]
        out[path] = v
    return out


def _render(sections: list[tuple[str, list[tuple[str, str]]]]) -> str:
    lines = []
    for title, items in sections:
        lines.append(f"\n# {title}")
        for k, v in items:
            if any(c.isspace() for c in v):
                v = f'"{v}"'
            lines.append(f"-{k} {v}")
    return "\n".join(lines) + "\n"


def icnt_text(gpu: GPU) -> str:
    """BookSim file for -network_mode 1: a one-stage butterfly (crossbar) with a port per
    SM and per memory sub-partition."""
    nodes = gpu.sm_count + gpu.l2.banks(gpu.dram.channels)
    icnt = gpu.interconnect
    return "\n".join([
        f"// simfront: crossbar for {gpu.name}: {gpu.sm_count} SMs + "
        f"{gpu.l2.banks(gpu.dram.channels)} memory sub-partitions",
        "use_map = 0;", f"flit_size = {icnt.flit_size};", f"network_count = {icnt.subnets};",
        "topology = fly;", f"k = {nodes};", "n = 1;", "routing_function = dest_tag;",
        "num_vcs = 1;", f"vc_buf_size = {icnt.buffer};",
        f"input_buffer_size = {icnt.buffer};", f"ejection_buffer_size = {icnt.buffer};",
        f"boundary_buffer_size = {icnt.buffer};", "wait_for_tail_credit = 0;",
        "vc_allocator = islip;", "sw_allocator = islip;", "alloc_iters = 1;",
        "credit_delay = 0;", "routing_delay = 0;", "vc_alloc_delay = 1;",
        "sw_alloc_delay = 1;", "input_speedup = 1;", "output_speedup = 1;",
        "internal_speedup = 2.0;", "traffic = uniform;",
        "packet_size = {{1,2,3,4},{10,20}};", "packet_size_rate = {{1,1,1,1},{2,1}};",
        "sim_type = gpgpusim;", "injection_rate = 0.1;", f"subnets = {icnt.subnets};",
        "read_request_subnet = 0;", "read_reply_subnet = 1;", "write_request_subnet = 0;",
        "write_reply_subnet = 1;", "read_request_begin_vc = 0;", "read_request_end_vc = 0;",
        "write_request_begin_vc = 0;", "write_request_end_vc = 0;",
        "read_reply_begin_vc = 0;", "read_reply_end_vc = 0;", "write_reply_begin_vc = 0;",
        "write_reply_end_vc = 0;", "",
    ])


def write_accelsim_config(gpu: GPU, out_dir: "str | Path", *,
                          pipes_used: "set[str] | None" = None) -> dict[str, Path]:
    """Validate ``gpu`` for Accel-Sim and write its three files into ``out_dir``.
    Returns {'gpgpusim': path, 'trace': path, 'icnt': path}."""
    validate_for_accelsim(gpu, pipes_used)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header = (f"# Accel-Sim 1.x configuration of GPU '{gpu.name}', written by simfront from "
              f"its GPU description.\n# Edit the description, not this file.\n"
              f"{EXTRA_MARK} {json.dumps(_extra(gpu), sort_keys=True)}\n")
    body = _render(accelsim_sections(gpu))
    trace_raw, main_raw = _split_raw(gpu)
    if main_raw:
        body += f"\n{RAW_MARK} options (the description's escape hatch; they override the " \
                f"above)\n" + "".join(f"-{k} {_quote(v)}\n" for k, v in main_raw)
    trace_body = (f"# Accel-Sim trace-driven options of GPU '{gpu.name}' (simfront)\n"
                  + _render(trace_options(gpu)))
    if trace_raw:
        trace_body += f"\n{RAW_MARK} options\n" + "".join(f"-{k} {_quote(v)}\n"
                                                          for k, v in trace_raw)
    paths = {"gpgpusim": out / GPGPUSIM_CONFIG, "trace": out / TRACE_CONFIG,
             "icnt": out / ICNT_CONFIG}
    write_text(paths["gpgpusim"], header + body)
    write_text(paths["trace"], trace_body)
    write_text(paths["icnt"], icnt_text(gpu))
    return paths


def validate_for_accelsim(gpu: GPU, pipes_used: "Iterable[str] | None" = None) -> None:
    """Raise ConfigError (naming the field or option and the rule) if ``gpu`` is not a
    usable description or if Accel-Sim 1.x would reject or crash on the configuration
    written from it (raw options included). ``pipes_used``: the team pipe names a trace
    uses (e.g. from the trace stats), to reject zero-unit kinds."""
    pipes = set(pipes_used or ())
    validate_description(gpu, pipes)
    sm = gpu.sm
    fp16, fp32 = sm.pipes.fp16, sm.pipes.fp32
    # The units and lanes must match; the latency need not: Accel-Sim has one latency per
    # unit class, so HFMA2 takes the SP latency there (the H100's HFMA2 chains take 8
    # clocks, FFMA chains 4; the fp16 latency travels in the extra line).
    if (fp16.units, fp16.lanes) != (fp32.units, fp32.lanes):
        raise ConfigError("Accel-Sim 1.x runs FP16 instructions (HADD2/HFMA2) on the SP units, "
                          "so the fp16 pipe must have the fp32 pipe's units and lanes",
                          field="sm.pipes.fp16")
    if gpu.l2.sector != Size(SECTOR_SIZE) or sm.l1.sector != Size(SECTOR_SIZE):
        raise ConfigError(f"Accel-Sim's sector caches use {SECTOR_SIZE} B sectors",
                          field="l2.sector")
    validate_accelsim_options(accelsim_options(gpu), pipes)


def _quote(v: str) -> str:
    return f'"{v}"' if any(c.isspace() for c in v) else v


def _split_raw(gpu: GPU) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    trace_names = {k for _, items in trace_options(gpu) for k, _ in items}
    trace_raw = [(k, v) for k, v in gpu.raw if k in trace_names
                 or k.startswith(("trace_opcode", "specialized_unit"))]
    main_raw = [(k, v) for k, v in gpu.raw if (k, v) not in trace_raw]
    return trace_raw, main_raw


# ----------------------------------------------------------------------------- reading

def parse_options(text: str, source: "Path | None" = None) -> tuple[dict[str, str],
                                                                    dict[str, str],
                                                                    dict[str, Any] | None]:
    """Options of one GPGPU-Sim config text: (options, raw options after the simfront-raw
    marker, the simfront-extra data or None). Later occurrences win, as in GPGPU-Sim."""
    extra = None
    body_lines, raw_lines = [], []
    target = body_lines
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(EXTRA_MARK):
            extra = json.loads(s[len(EXTRA_MARK):])
            continue
        if s.startswith(RAW_MARK):
            target = raw_lines
            continue
        target.append(line.split("#", 1)[0])
    return (_pairs("\n".join(body_lines), source), _pairs("\n".join(raw_lines), source),
            extra)


def _pairs(text: str, source: "Path | None") -> dict[str, str]:
    try:
        tokens = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        raise ConfigError(f"cannot split options: {exc}", path=source) from exc
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        name = tokens[i]
        if not name.startswith("-") or i + 1 >= len(tokens):
            raise ConfigError(f"expected '-option value', got {name!r}", path=source,
                              field=name)
        out[name[1:]] = " ".join(tokens[i + 1].split())
        i += 2
    return out


def read_options(config_dir: "str | Path") -> tuple[dict[str, str], dict[str, str],
                                                    dict[str, Any] | None]:
    """Merged options of gpgpusim.config and trace.config in a directory."""
    d = Path(config_dir)
    opts: dict[str, str] = {}
    raw: dict[str, str] = {}
    extra = None
    for name in (GPGPUSIM_CONFIG, TRACE_CONFIG):
        f = d / name
        if not f.is_file():
            if name == GPGPUSIM_CONFIG:
                raise ConfigError("no gpgpusim.config here", path=d)
            continue
        o, r, e = parse_options(f.read_text(), f)
        opts.update(o)
        raw.update(r)
        extra = extra or e
    return opts, raw, extra


def _ints(v: str) -> list[int]:
    return [int(x) for x in v.replace(":", ",").split(",") if x.strip()]


def _cache(v: str) -> dict[str, Any]:
    head, policy, mshr, *rest = v.split(",")
    kind, sets, line, assoc = head.split(":")
    pol = policy.split(":")
    m = mshr.split(":")
    port = int(rest[1]) if len(rest) > 1 else int(line)
    return {"sector": kind == "S", "sets": int(sets), "line": int(line),
            "assoc": int(assoc), "hash": pol[4] if len(pol) > 4 else "L",
            "mshr": int(m[1]), "port": port}


def _timing(v: str) -> dict[str, int]:
    out = {}
    for part in v.replace(" ", "").split(":"):
        if "=" in part:
            k, x = part.split("=")
            out[k] = int(x)
    return out


class _Reader:
    """The options being read back, with the few ways a description field is derived from
    them; ``need`` names the missing option rather than failing on a KeyError."""

    def __init__(self, opts: dict[str, str], extra: "dict[str, Any] | None",
                 source: "Path | None"):
        self.opts = opts
        self.extra = extra or {}
        self.source = source

    def need(self, name: str) -> str:
        if name not in self.opts:
            raise ConfigError(f"option -{name} missing; cannot describe the GPU without it",
                              path=self.source, field=name)
        return self.opts[name]

    def int(self, name: str) -> int:
        return int(self.need(name))

    def lat_init(self, option: str) -> tuple[int, int]:
        lat, init = _ints(self.need(option))
        return lat, init


def options_to_gpu(opts: dict[str, str], raw: "dict[str, str] | None" = None,
                   extra: "dict[str, Any] | None" = None,
                   base: "GPU | None" = None, source: "Path | None" = None) -> GPU:
    """A description from Accel-Sim options. Fields Accel-Sim has no option for come from
    ``extra`` (written by us) or else from ``base`` (default: the h100 preset)."""
    base = base or h100()
    b = base.to_dict()
    r = _Reader(opts, extra, source)
    try:
        data = {
            "name": r.extra.get("name", source.parent.name if source else "accelsim"),
            "sm_count": r.int("gpgpu_n_clusters") * r.int("gpgpu_n_cores_per_cluster"),
            "sm": _sm_from_options(r, b["sm"]),
            "l2": _l2_from_options(r, b["l2"]),
            "dram": _dram_from_options(r, b["dram"]),
            "clocks": _clocks_from_options(r),
            "interconnect": {
                "model": "xbar" if opts.get("network_mode", "2") == "2" else "booksim",
                "flit_size": int(opts.get("icnt_flit_size", "32")),
                "subnets": int(opts.get("icnt_subnets", "2")),
                "buffer": int(opts.get("icnt_in_buffer_limit", "64")),
            },
            "raw": dict(raw or {}),
            # Accel-Sim has no front end to give it: a file of ours says it, else the base's
            "empty_kernel_ns": r.extra.get("empty_kernel_ns", b.get("empty_kernel_ns")),
            "ncu_fixed_cycles": r.extra.get("ncu_fixed_cycles", b.get("ncu_fixed_cycles")),
            # nor a clock that follows the kernel (it runs every kernel at core_clock)
            "clock_limits": r.extra.get("clock_limits", b.get("clock_limits")),
        }
    except (ValueError, IndexError, KeyError) as exc:
        raise ConfigError(f"cannot read Accel-Sim options: {exc!r}", path=source) from exc
    return GPU.from_dict(data, source=source)


def _spec_units_from_options(r: _Reader, n: int, ws: int) -> dict[int, dict[str, int]]:
    spec = {}
    for num in SPEC_UNITS:
        fields = r.need(f"specialized_unit_{num}").split(",")
        lat, init = r.lat_init(f"trace_opcode_latency_initiation_spec_op_{num}")
        spec[num] = {"units": int(fields[1]) // n if fields[0] == "1" else 0,
                     "lanes": ws // max(1, init), "latency": lat, "init": init}
    return spec


def _tensor_from_options(r: _Reader, sm: dict[str, Any], unit: dict[str, int],
                         hmma: str) -> dict[str, Any]:
    """The tensor pipe; its rates are the extra line's (or the base's), scaled to the
    initiation interval the options give where that interval is not theirs."""
    tensor_rates = dict(r.extra.get("sm.tensor.fma_per_clk", sm["tensor"]["fma_per_clk"]))
    t_rate = TensorPipe.HMMA_FMAS // max(1, unit["init"])
    if unit["init"] != -(-TensorPipe.HMMA_FMAS // max(1, tensor_rates[hmma])):
        k = t_rate / tensor_rates[hmma]
        tensor_rates = {d: int(round(v * k)) for d, v in tensor_rates.items()}
    return {"units": unit["units"], "fma_per_clk": tensor_rates, "latency": unit["latency"],
            "mma_sync_share": r.extra.get("sm.tensor.mma_sync_share",
                                          sm["tensor"].get("mma_sync_share", 1))}


def _pipes_from_options(r: _Reader, sm: dict[str, Any], n: int, ws: int,
                        spec: dict[int, dict[str, int]]) -> dict[str, Any]:
    def pipe(units_option: str, option: str) -> dict[str, int]:
        lat, init = r.lat_init(option)
        return {"units": r.int(units_option) // n, "lanes": ws // max(1, init), "latency": lat}

    fp32 = pipe("gpgpu_num_sp_units", "trace_opcode_latency_initiation_sp")
    return {
        "fp32": fp32,
        "fp16": r.extra.get("sm.pipes.fp16", dict(fp32)),
        "int": pipe("gpgpu_num_int_units", "trace_opcode_latency_initiation_int"),
        "sfu": pipe("gpgpu_num_sfu_units", "trace_opcode_latency_initiation_sfu"),
        "fp64": pipe("gpgpu_num_dp_units", "trace_opcode_latency_initiation_dp"),
        "lsu": r.extra.get("sm.pipes.lsu", sm["pipes"]["lsu"]),
        "cbu": {k: spec[1][k] for k in ("units", "lanes", "latency")},
        "uniform": {k: spec[4][k] for k in ("units", "lanes", "latency")},
    }


def _l1_from_options(r: _Reader) -> dict[str, Any]:
    l1c = _cache(r.need("gpgpu_cache:dl1"))
    return {
        "size": r.int("gpgpu_unified_l1d_size") * 1024,
        "shared_carveouts": [int(x) * 1024 for x in
                             r.need("gpgpu_shmem_option").split(",") if x.strip()],
        "max_shared_per_sm": r.int("gpgpu_shmem_size"),
        "max_shared_per_block": r.int("gpgpu_shmem_per_block"),
        "sets": l1c["sets"], "line": l1c["line"],
        "sector": r.extra.get("sm.l1.sector", l1c["port"]),
        "banks": r.int("gpgpu_shmem_num_banks"),
        "l1_banks": r.int("gpgpu_l1_banks"),
        "l1_latency": r.int("gpgpu_l1_latency"),
        "shared_latency": r.int("gpgpu_smem_latency"),
        "mshr_entries": l1c["mshr"],
    }


def _sm_from_options(r: _Reader, sm: dict[str, Any]) -> dict[str, Any]:
    """The SM; ``sm`` is the base's, for what the options do not say."""
    n = r.int("gpgpu_num_sched_per_core")
    threads, ws = _ints(r.need("gpgpu_shader_core_pipeline"))
    spec = _spec_units_from_options(r, n, ws)
    hmma = r.extra.get("sm.hmma_dtype", sm["hmma_dtype"])
    return {
        "sub_partitions": n, "warp_size": ws, "max_warps": threads // ws,
        "max_blocks": r.int("gpgpu_shader_cta"),
        "issue_width": int(r.opts.get("gpgpu_max_insn_issue_per_warp", "1")),
        "scheduler": r.need("gpgpu_scheduler"),
        "registers": {
            "registers": r.int("gpgpu_shader_registers"),
            "banks": r.int("gpgpu_num_reg_banks"),
            "read_ports": int(r.opts.get("gpgpu_reg_file_port_throughput", "1")),
            "collector_units": r.int("gpgpu_operand_collector_num_units_gen"),
            "max_per_thread": r.extra.get("sm.registers.max_per_thread",
                                          sm["registers"]["max_per_thread"]),
        },
        "pipes": _pipes_from_options(r, sm, n, ws, spec),
        "tensor": _tensor_from_options(r, sm, spec[3], hmma),
        "l1": _l1_from_options(r),
        "hmma_dtype": hmma,
    }


def _l2_from_options(r: _Reader, l2: dict[str, Any]) -> dict[str, Any]:
    l2c = _cache(r.need("gpgpu_cache:dl2"))
    n_mem = r.int("gpgpu_n_mem")
    n_sub = r.int("gpgpu_n_sub_partition_per_mchannel")
    return {
        "size": l2c["sets"] * l2c["line"] * l2c["assoc"] * n_mem * n_sub,
        "banks_per_channel": n_sub, "line": l2c["line"],
        "sector": r.extra.get("l2.sector", l2["sector"]),
        "assoc": l2c["assoc"], "set_hash": _HASH_BY_LETTER.get(l2c["hash"], "linear"),
        "port_width": l2c["port"],
        "hit_latency": r.int("gpgpu_l2_rop_latency"),
        "mshr_entries": l2c["mshr"],
    }


def _dram_from_options(r: _Reader, dram: dict[str, Any]) -> dict[str, Any]:
    n_mem = r.int("gpgpu_n_mem")
    timing = _timing(r.need("gpgpu_dram_timing_opt"))
    stacks = r.extra.get("dram.stacks", dram["stacks"])
    cps = r.extra.get("dram.channels_per_stack", dram["channels_per_stack"])
    *_, dram_mhz = _clock_domains(r)
    if stacks * cps != n_mem:
        # the channels the options give win over the stacks a base or extra line says
        stacks, cps = 1, n_mem
    return {
        "kind": r.extra.get("dram.kind", dram["kind"]),
        "capacity": r.extra.get("dram.capacity", dram["capacity"]),
        "stacks": stacks, "channels_per_stack": cps,
        "channel_width_bits": r.int("gpgpu_dram_buswidth") * 8,
        "clock": f"{dram_mhz} MHz",
        "transfers_per_clock": r.int("dram_data_command_freq_ratio"),
        "partition_indexing": _INDEXING_BY_NUMBER.get(
            int(r.opts.get("gpgpu_memory_partition_indexing", "0")), "custom"),
        "latency": r.int("dram_latency"),
        "banks": timing.get("nbk", dram["banks"]),
        "bank_groups": timing.get("nbkgrp", dram["bank_groups"]),
        "timing": {k: timing.get(k, dram["timing"][k]) for k in dram["timing"]},
    }


def _clock_domains(r: _Reader) -> tuple[str, str, str, str]:
    """core, interconnect, L2 and DRAM clocks in MHz."""
    core, icnt_mhz, l2_mhz, dram_mhz = r.need("gpgpu_clock_domains").split(":")
    return core, icnt_mhz, l2_mhz, dram_mhz


def _clocks_from_options(r: _Reader) -> dict[str, str]:
    core, icnt_mhz, l2_mhz, _ = _clock_domains(r)
    return {"core": f"{core} MHz", "interconnect": f"{icnt_mhz} MHz", "l2": f"{l2_mhz} MHz"}


def read_accelsim_config(config_dir: "str | Path", base: "GPU | None" = None) -> GPU:
    """Parse gpgpusim.config + trace.config in ``config_dir`` back into a description."""
    opts, raw, extra = read_options(config_dir)
    return options_to_gpu(opts, raw, extra, base=base,
                          source=Path(config_dir) / GPGPUSIM_CONFIG)

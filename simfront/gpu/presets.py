"""Preset GPUs as factory functions, and loading descriptions by name or path.

Sources (full citations in gpu_configs/README.md):
  [WP]   NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022) and H100 data sheet.
  [NCU]  Our own ncu captures on an H100 SXM (../shared/data/h100/ncu, device__attribute_*).
  [CUDA] CUDA C++ Programming Guide, compute capability 9.0 tables.
  [Jia18] Jia, Maggioni, Staiger, Scarpazza: Dissecting the NVIDIA Volta GPU Architecture
         via Microbenchmarking (arXiv:1804.06826).
  [Jia19] Jia, Maggioni, Smith, Scarpazza: Dissecting the NVidia Turing T4 GPU via
         Microbenchmarking (arXiv:1903.07486).
  [Luo24] Luo et al.: Benchmarking and Dissecting the Nvidia Hopper GPU Architecture
         (IPDPS 2024, arXiv:2402.13499).
  [UB]   Our pipe microbenchmarks on an H100 (bench/device/ubench.cu, traces in
         bench/data/ubench/, table in bench/RESULTS.md, bench/bench_ubench.py).
  [MEAS] Our own timings and clock readings on an H100 (bench/device/, data in
         bench/data/device/).
  [EST]  Our estimate, stated as such; calibrate against [NCU] before trusting it.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import yaml

from simfront.core.errors import ConfigError
from simfront.core.paths import repo_dir
from simfront.gpu.gpu import GPU, ClockLimits, Clocks, Interconnect, TensorClock
from simfront.gpu.memory import DRAM, L2, DRAMTiming
from simfront.gpu.sm import (SM, L1Shared, Pipe, Pipes, RegisterFile, TensorPipe,
                             TensorRates)
from simfront.gpu.units import Frequency, Size
from simfront.gpu.variants import with_variants
from simfront.gpu.yamlio import field_lines


def _h100_registers() -> RegisterFile:
    return RegisterFile(
        registers=65536,                        # [WP][NCU] 64K 32-bit registers per SM
        banks=16,                               # [Jia18] 2 banks/SMSP; x2 stands in for the
        read_ports=2,                           #   operand reuse cache Accel-Sim lacks [EST]
        collector_units=8,
    )


def _h100_pipes() -> Pipes:
    # [WP] per SM: 128 FP32, 64 INT32, 64 FP64, 16 SFU, 32 LD/ST -> per SMSP below.
    # Latencies: 4-cycle dependent issue of FP32/INT ALU ops since Volta [Jia18][Jia19],
    # unchanged on Hopper [Luo24], FFMA and IMAD chains 4.1 [UB]; FP64 DFMA 8
    # [Jia18]; HFMA2 chains 8.1, MUFU.EX2/RSQ chains 17.0 [UB].
    return Pipes(
        fp32=Pipe(units=1, lanes=32, latency=4),
        fp16=Pipe(units=1, lanes=32, latency=8),   # HFMA2 on the FMA pipe, 2 per lane
        int=Pipe(units=1, lanes=16, latency=4),
        sfu=Pipe(units=1, lanes=4, latency=17),
        fp64=Pipe(units=1, lanes=16, latency=8),
        lsu=Pipe(units=1, lanes=8, latency=4),
        cbu=Pipe(units=1, lanes=32, latency=4),     # [EST]
        uniform=Pipe(units=1, lanes=32, latency=4),  # [EST]
    )


def _h100_tensor() -> TensorPipe:
    return TensorPipe(
        units=1,                                # [WP] 4 tensor cores per SM, 1 per SMSP
        # [WP] dense per SM per clock: FP16/BF16 4096 FLOP, TF32 2048, FP8/INT8 8192,
        # FP64 256 -> per tensor core in FMA (1 FMA = 2 FLOP):
        fma_per_clk=TensorRates(bf16=512, fp16=512, tf32=256, fp8=1024, int8=1024, fp64=32),
        latency=24,                             # HMMA.16816 bf16 chains 24.0 [UB]
        # [UB] mma.sync HMMA.16816 bf16 issues once per 6 clocks per SMSP (6.2 with
        # the ramp), 2/3 of the peak above (which HGMMA reaches)
        mma_sync_share=Fraction(2, 3),
    )


#: [CUDA] cc 9.0 shared-memory carve-outs (KB)
_H100_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def _h100_l1() -> L1Shared:
    kib = Size.kib
    return L1Shared(
        size=kib(256),                          # [WP] 256 KB combined L1/shared per SM
        shared_carveouts=tuple(kib(k) for k in _H100_CARVEOUTS_KB),
        max_shared_per_sm=kib(228),             # [NCU] 233472 B
        max_shared_per_block=kib(227),          # [NCU] 232448 B (opt-in)
        sets=4,                                 # streaming, highly associative L1 (model)
        line=Size(128),
        sector=Size(32),
        banks=32,                               # 32 x 4 B shared-memory banks
        l1_banks=4,                             # 4 x 32 B sectors/clk = 128 B/clk/SM [EST]
        l1_latency=33,                          # L1 hit load-to-use [Luo24][EST]
        shared_latency=29,                      # LDS load-to-use [Luo24][EST]
        mshr_entries=256,
    )


def _h100_sm() -> SM:
    return SM(
        sub_partitions=4,                       # [WP] 4 SMSPs per SM
        warp_size=32,
        max_warps=64,                           # [NCU] max_warps_per_multiprocessor
        max_blocks=32,                          # [NCU] max_blocks_per_multiprocessor
        issue_width=1,                          # [NCU] max_ipc_per_scheduler = 1
        scheduler="lrr",                        # modelling choice (Accel-Sim's tuned Volta+)
        registers=_h100_registers(),
        pipes=_h100_pipes(),
        tensor=_h100_tensor(),
        l1=_h100_l1(),
    )


def _h100_l2() -> L2:
    return L2(
        size=Size.mib(50),                      # [WP][NCU] 52428800 B
        banks_per_channel=2,                    # [NCU] 80 L2 slices, one per channel;
        line=Size(128),                         #   each modelled as 2 banks
        sector=Size(32),
        assoc=40,                               # -> 64 sets per 320 KiB bank (IPOLY-legal)
        set_hash="ipoly",
        port_width=Size(32),
        hit_latency=200,                        # ~260 load-to-use [Luo24] minus L1/xbar [EST]
        mshr_entries=256,
    )


def _h100_dram() -> DRAM:
    return DRAM(
        kind="HBM3",
        capacity=Size(80 << 30),                # [WP] 80 GB
        stacks=5,                               # [WP] 5 HBM3 stacks, 10 x 512-bit controllers
        channels_per_stack=16,                  # JEDEC HBM3: 16 x 64-bit channels per stack
        channel_width_bits=64,                  # -> 5120-bit bus [NCU fb_bus_width]
        clock=Frequency.mhz(2619),              # [NCU] memory_clock_rate 2619000 kHz
        transfers_per_clock=2,                  # DDR -> 3.352 TB/s [WP: 3.35 TB/s]
        partition_indexing="linear",            # IPOLY needs 16/32/64 channels: not 80
        latency=100,                            # [EST]
        banks=16,                               # JEDEC HBM: 16 banks in 4 bank groups
        bank_groups=4,
        # JESD235 HBM core timings in ns (tRCD 14, tRP 14, tRAS 33, tRC 47, CL 14,
        # tWR 12, tRRD 4) converted to clocks at 2619 MHz [EST for HBM3]
        timing=DRAMTiming(CCD=1, RRD=11, RCD=37, RAS=87, RP=37, RC=124, CL=37, WL=2,
                          CDLR=3, WR=32, CCDL=2, RTPL=4),
    )


def _h100_clock_limits() -> ClockLimits:
    # [MEAS] ncu's gpc__cycles_elapsed.avg.per_second over the Mamba2 paper step on
    # 132/96/64/32 SMs of green contexts (bench/device/clock_steps.sh; fitted by
    # bench/bench_clock.py, the Mamba1 step held out): tensor work holds the clock at
    # 1.83/1.81/1.83/1.91 GHz, the large GEMMs at the 700 W power cap below that
    return ClockLimits(
        tensor=(TensorClock(32, 0.963), TensorClock(64, 0.924), TensorClock(96, 0.914),
                TensorClock(132, 0.923)),
        power_share=0.762, power_sms=132, power_exponent=0.396)


def h100() -> GPU:
    """NVIDIA H100 SXM5 80 GB, as far as public facts and microbenchmarks describe it."""
    return GPU(
        name="h100",
        sm_count=132,                           # [WP][NCU] H100 SXM5
        sm=_h100_sm(),
        l2=_h100_l2(),
        dram=_h100_dram(),
        # [NCU] with --clock-control none the SM clock ran at a median 1968 MHz over all
        # launches (1971 MHz for non-tensor kernels): the 1980 MHz max boost [WP][NCU].
        clocks=Clocks(core=Frequency.mhz(1980), interconnect=Frequency.mhz(1980),
                      l2=Frequency.mhz(1980)),
        interconnect=Interconnect(model="xbar", flit_size=40, subnets=2, buffer=256),
        # [MEAS] torch.cuda._sleep(0) in a stream, CUPTI: median 896 ns of 300
        # (bench/device/launch_cost.py; bench/data/device/launch_cost/)
        empty_kernel_ns=896.0,
        clock_limits=_h100_clock_limits(),
    )


FACTORIES: dict[str, Callable[[], GPU]] = {"h100": h100}


def presets_dir() -> Path:
    return repo_dir("gpu_configs")


def preset_names() -> list[str]:
    names = set(FACTORIES)
    d = presets_dir()
    if d.is_dir():
        names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def load_gpu(spec: "str | Path | GPU") -> GPU:
    """A GPU from a preset name (``h100``, ``h100-tv8``; see ``preset_names()``) or a
    YAML file path. A bad name lists the valid ones; a bad YAML field names the file,
    line and field."""
    if isinstance(spec, GPU):
        return spec
    path = Path(spec)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ConfigError("no such GPU description file", path=path)
        return _load_file(path, seen=())
    name = str(spec)
    file = presets_dir() / f"{name}.yaml"
    if file.is_file():
        return _load_file(file, seen=())
    if name in FACTORIES:
        return FACTORIES[name]()
    raise ConfigError(f"unknown GPU preset '{name}'; valid presets: "
                      f"{', '.join(preset_names())} (or give a path to a .yaml file)")


_TOP_KEYS = {"base", "variants", "description"}


def _load_file(path: Path, seen: tuple[Path, ...]) -> GPU:
    text = path.read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", path=path,
                          line=mark.line + 1 if mark else None) from exc
    if not isinstance(data, dict):
        raise ConfigError("a GPU description must be a YAML mapping", path=path)
    lines = field_lines(text)
    base_name = data.pop("base", None)
    variants = data.pop("variants", None) or {}
    data.pop("description", None)
    if base_name is not None:
        if path.resolve() in seen:
            raise ConfigError(f"'base: {base_name}' refers back to itself", path=path,
                              line=lines("base"), field="base")
        try:
            base = _base(str(base_name), path, seen + (path.resolve(),))
        except ConfigError as exc:
            if exc.path is not None and exc.path != path:
                raise
            raise ConfigError(exc.reason, path=path, line=lines("base"),
                              field="base") from exc
        merged = _deep_merge(base.to_dict(), data)
        if "name" not in data:
            merged["name"] = path.stem
    else:
        merged = data
    gpu = GPU.from_dict(merged, source=path, lines=lines)
    if variants:
        if not isinstance(variants, dict):
            raise ConfigError("'variants' must be a mapping", path=path,
                              line=lines("variants"), field="variants")
        try:
            gpu = with_variants(gpu, **variants)
        except ConfigError as exc:
            raise ConfigError(exc.reason, path=path,
                              line=lines(f"variants.{exc.field}") if exc.field
                              else lines("variants"),
                              field=f"variants.{exc.field}" if exc.field
                              else "variants") from exc
    if variants or base_name is not None:
        gpu = gpu.replace(name=str(data.get("name", path.stem)))
    return gpu


def _base(name: str, referrer: Path, seen: tuple[Path, ...]) -> GPU:
    candidate = referrer.parent / f"{name}.yaml"
    if name.endswith((".yaml", ".yml")):
        candidate = referrer.parent / name
    if candidate.is_file():
        return _load_file(candidate, seen)
    named = presets_dir() / f"{name}.yaml"
    if named.is_file():
        return _load_file(named, seen)
    if name in FACTORIES:
        return FACTORIES[name]()
    raise ConfigError(f"unknown base '{name}'; valid presets: {', '.join(preset_names())}")


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out

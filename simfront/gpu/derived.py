"""Figures that follow from a description: peaks per clock and per second, bandwidths and
the tensor:vector ratio that the Mamba studies sweep."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from simfront.gpu.gpu import GPU
from simfront.gpu.sm import TENSOR_DTYPES
from simfront.gpu.units import Bandwidth


@dataclass(frozen=True)
class Derived:
    """Peaks of one GPU description.

    tensor_flop_per_clk_sm: dense tensor FLOP per clock per SM, by input type
        (1 FMA = 2 FLOP; int8 counted as ops).
    vector_flop_per_clk_sm: 'fp32' (FFMA lanes x 2) and 'fp16x2' (HFMA2: 2 halves x 2).
    sfu_ops_per_clk_sm, int_ops_per_clk_sm, fp64_flop_per_clk_sm: per SM per clock.
    tensor_vector_ratio: bf16 tensor FMA per clock against FP32 FMA per clock, per SM
        (16 on the H100: 4 x 512 against 128).
    *_tflops: the same at the modelled core clock, whole GPU.
    """

    sm_count: int
    core_clock_mhz: float
    tensor_flop_per_clk_sm: dict[str, int]
    vector_flop_per_clk_sm: dict[str, int]
    sfu_ops_per_clk_sm: int
    int_ops_per_clk_sm: int
    fp64_flop_per_clk_sm: int
    tensor_vector_ratio: Fraction
    tensor_tflops: dict[str, float]
    vector_tflops: dict[str, float]
    dram_bandwidth: Bandwidth
    l2_bandwidth: Bandwidth
    l1_bandwidth_per_sm_bytes_per_clk: int
    l2_sets_per_bank: float
    l2_banks: int

    @property
    def ratio_text(self) -> str:
        r = self.tensor_vector_ratio
        return f"{r.numerator}:{r.denominator}" if r.denominator != 1 else f"{r.numerator}:1"


def _lanes(gpu: GPU, pipe: str) -> int:
    p = gpu.sm.pipes.get(pipe)
    return p.units * p.lanes * gpu.sm.sub_partitions


def derived(gpu: GPU) -> Derived:
    sm = gpu.sm
    tcs = sm.tensor.units * sm.sub_partitions
    tensor = {d: 2 * tcs * sm.tensor.fma_per_clk.get(d) for d in TENSOR_DTYPES}
    vector = {"fp32": 2 * _lanes(gpu, "fp32"), "fp16x2": 4 * _lanes(gpu, "fp16")}
    fp32_fma = _lanes(gpu, "fp32")
    ratio = (Fraction(tcs * sm.tensor.fma_per_clk.bf16, fp32_fma) if fp32_fma
             else Fraction(0))
    hz = gpu.clocks.core.hz
    per_s = gpu.sm_count * hz / 1e12
    channels = gpu.dram.channels
    l2_bw = Bandwidth(gpu.l2.banks(channels) * gpu.l2.port_width.bytes * gpu.clocks.l2.hz)
    return Derived(
        sm_count=gpu.sm_count,
        core_clock_mhz=gpu.clocks.core.mhz_value,
        tensor_flop_per_clk_sm=tensor,
        vector_flop_per_clk_sm=vector,
        sfu_ops_per_clk_sm=_lanes(gpu, "sfu"),
        int_ops_per_clk_sm=_lanes(gpu, "int"),
        fp64_flop_per_clk_sm=2 * _lanes(gpu, "fp64"),
        tensor_vector_ratio=ratio,
        tensor_tflops={d: v * per_s for d, v in tensor.items()},
        vector_tflops={d: v * per_s for d, v in vector.items()},
        dram_bandwidth=gpu.dram.bandwidth,
        l2_bandwidth=l2_bw,
        l1_bandwidth_per_sm_bytes_per_clk=sm.l1.l1_banks * sm.l1.sector.bytes,
        l2_sets_per_bank=gpu.l2.sets(channels),
        l2_banks=gpu.l2.banks(channels),
    )


def tensor_vector_ratio(gpu: GPU) -> Fraction:
    return derived(gpu).tensor_vector_ratio


def format_derived(gpu: GPU) -> str:
    """The human-readable summary ``simfront config show`` prints."""
    d = derived(gpu)
    lines = [
        f"GPU {gpu.name}: {gpu.sm_count} SMs x {gpu.sm.sub_partitions} sub-partitions, "
        f"core clock {gpu.clocks.core}",
        f"tensor:vector ratio (bf16 tensor FMA : fp32 FMA per SM per clock): "
        f"{d.ratio_text}",
        "peak tensor FLOP/clk/SM (dense): " + ", ".join(
            f"{k} {v}" for k, v in d.tensor_flop_per_clk_sm.items()),
        "peak vector FLOP/clk/SM: " + ", ".join(
            f"{k} {v}" for k, v in d.vector_flop_per_clk_sm.items()),
        f"SFU ops/clk/SM: {d.sfu_ops_per_clk_sm}; INT32 ops/clk/SM: {d.int_ops_per_clk_sm}; "
        f"FP64 FLOP/clk/SM: {d.fp64_flop_per_clk_sm}",
        f"HMMA.16816 {gpu.sm.hmma_dtype} per tensor core: every "
        f"{gpu.sm.tensor.mma_sync_initiation(gpu.sm.hmma_dtype)} clocks as mma.sync "
        f"(share {gpu.sm.tensor.mma_sync_share} of the peak), "
        f"{gpu.sm.tensor.initiation(gpu.sm.hmma_dtype)} at the peak (warpgroup MMA)",
        "peak tensor TFLOP/s at core clock: " + ", ".join(
            f"{k} {v:.1f}" for k, v in d.tensor_tflops.items()),
        "peak vector TFLOP/s at core clock: " + ", ".join(
            f"{k} {v:.1f}" for k, v in d.vector_tflops.items()),
        f"DRAM: {gpu.dram.kind} {gpu.dram.channels} channels x {gpu.dram.channel_width_bits}"
        f" bit @ {gpu.dram.clock} -> {d.dram_bandwidth.tb_per_s:.3f} TB/s",
        f"L2: {gpu.l2.size} in {d.l2_banks} banks x {d.l2_sets_per_bank:g} sets x "
        f"{gpu.l2.assoc} ways x {gpu.l2.line} ({gpu.l2.set_hash}) -> "
        f"{d.l2_bandwidth.tb_per_s:.2f} TB/s",
        f"L1/shared: {gpu.sm.l1.size} per SM (shared up to {gpu.sm.l1.max_shared_per_sm}), "
        f"{d.l1_bandwidth_per_sm_bytes_per_clk} B/clk/SM",
    ]
    cl = gpu.clock_limits
    if cl is None:
        lines.append("clock under load: every kernel at the core clock (no clock_limits)")
    else:
        core = gpu.clocks.core.hz / 1e9
        share = sorted(cl.tensor, key=lambda t: -t.sms)
        lines.append(
            "clock under load: tensor work at " + ", ".join(
                f"{t.share * core:.2f} GHz on {t.sms} SMs" for t in share)
            + f"; power cap {cl.power_share * core:.2f} GHz x (SMs x tensor busy / "
            f"{cl.power_sms}) ^ -{cl.power_exponent}")
    return "\n".join(lines)

"""The model on the H100 pipe microbenchmarks (bench/data/ubench/, from
bench/device/ubench.cu): dependent chains whose time follows from their code, traced and
timed (ncu ``gpc__cycles_elapsed.max``) on an H100. The H100 description's pipe latencies
and rates were read from this set, so these tests check that the model reproduces its own
fit set; bench/bench_heldout.py measures the held-out workloads."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from simfront.traces.reader import TraceSet

SET = Path(__file__).resolve().parents[1] / "bench" / "data" / "ubench" / "ubench-h100"

pytestmark = pytest.mark.skipif(not (SET / "kernelslist.g").is_file(),
                                reason=f"no shipped microbenchmark traces in {SET}")


@pytest.fixture(scope="module")
def launches() -> dict[str, tuple[dict, object, float]]:
    """label -> (design row, traced kernel, H100 cycles). The table, the traces and the ncu
    rows are all in launch order (bench/bench_ubench.py checks names and shapes)."""
    from simfront.core.ncu import read_ncu_csv

    with open(SET / "ubench_launches.csv", newline="") as f:
        table = list(csv.DictReader(f))
    ncu = read_ncu_csv(next(SET.glob("ncu.csv*")))
    kernels = list(TraceSet(SET).kernels())
    out = {}
    for row, kernel, (_, n) in zip(table, kernels, ncu.iterrows()):
        assert kernel.header.grid[0] == int(row["grid"]) == int(n["grid_size"])
        out[row["label"]] = (row, kernel, float(n["gpc__cycles_elapsed.max"]))
    return out


def _model(kernel, gpu) -> dict:
    from simfront.sim.model.api import simulate_kernel

    return simulate_kernel(kernel, gpu, cache=False)


def _chain(kernel, row) -> tuple[str, int]:
    """The chained opcode of a chain kernel and the chain's length (its count in one warp
    over the ILP): the dependent steps one warp must go through one after another."""
    for block in kernel.iter_blocks():
        ops = Counter(i.opcode for i in block.warps[0].instructions)
        op, n = ops.most_common(1)[0]
        return op, n // int(row["ilp"])
    raise AssertionError("empty trace")


def _latency(opcode: str, gpu) -> int:
    from simfront.sim.model.decode import build_optable

    return int(build_optable([opcode], gpu).latency[0])


@pytest.mark.parametrize("label", ["ffma_ilp1_w1", "mufu_ex2_ilp1_w1", "hmma_ilp1_w1"])
def test_one_warp_per_sm_is_timed_as_its_dependent_chain(label, launches, h100):
    # One warp on an SM: fewer warp slots than sub-partitions. The issue loop once visited
    # none of them, and the kernel came out at the launch overhead alone.
    from simfront.sim.model.params import DEFAULT_PARAMS

    row, kernel, hw = launches[label]
    assert int(row["warps_per_sm"]) == 1
    rec = _model(kernel, h100)
    op, steps = _chain(kernel, row)
    chain = steps * _latency(op, h100)
    assert rec["cycles"] > 10 * DEFAULT_PARAMS.launch.cycles
    # the chain's latencies one after another, plus a few percent of loop overhead
    assert chain <= rec["sim_sm_cycles"] < 1.05 * chain, (op, steps)
    assert rec["cycles"] == pytest.approx(hw, rel=0.05)


def test_one_warp_per_sub_partition_is_unchanged(launches, h100):
    # 4 warps on an SM, one per sub-partition: the slots the issue loop always visited.
    row, kernel, hw = launches["ffma_ilp1_w4"]
    assert int(row["warps_per_sm"]) == 4
    rec = _model(kernel, h100)
    op, steps = _chain(kernel, row)
    chain = steps * _latency(op, h100)
    assert chain <= rec["sim_sm_cycles"] < 1.1 * chain
    assert rec["cycles"] == pytest.approx(hw, rel=0.05)


@pytest.mark.parametrize("label", [
    "imad_ilp8_w64",     # IMAD at half the FFMA rate (the FMA-heavy half only)
    "hmma_ilp8_w32",     # mma.sync HMMA.16816 every 6 clocks, not the peak's 4
    "hfma2_ilp1_w1",     # HFMA2 chains: 8 clocks a step
    "mufu_ex2_ilp1_w4",  # MUFU chains, one warp per sub-partition: 17 clocks a step
])
def test_pipe_rates_and_latencies_match_the_h100(label, launches, h100):
    _, kernel, hw = launches[label]
    assert _model(kernel, h100)["cycles"] == pytest.approx(hw, rel=0.05)


OPS = ("FFMA", "IMAD", "HMMA.16816.F32.BF16", "HGMMA.64x128x16.F32.BF16")


def _initiation(gpu) -> dict[str, int]:
    from simfront.sim.model.decode import build_optable

    return dict(zip(OPS, build_optable(list(OPS), gpu).initiation.tolist()))


@pytest.mark.parametrize("variant", [{}, {"tensor_vector_ratio": 8},
                                     {"tensor_vector_ratio": 32},
                                     {"tensor_vector_ratio": 8, "ratio_mode": "scale_tensor"},
                                     {"tensor_vector_ratio": 32, "ratio_mode": "scale_tensor"}])
def test_pipe_facts_follow_every_ratio_variant(variant, h100):
    # The measured facts are relative (IMAD: half the FMA pipe's lanes; mma.sync: a share of
    # the tensor peak), so a variant that scales a pipe scales them with it.
    from simfront.gpu import with_variants

    g = with_variants(h100, **variant)
    ii = _initiation(g)
    assert ii["IMAD"] == 2 * ii["FFMA"]
    peak = g.sm.tensor.fma_per_clk.bf16
    # a warpgroup MMA (per warp: 16 x 128 x 16 FMAs) at the peak, mma.sync at 2/3 of it
    assert ii["HGMMA.64x128x16.F32.BF16"] == 16 * 128 * 16 // peak
    assert ii["HMMA.16816.F32.BF16"] * peak == 3 * 16 * 8 * 16 // 2

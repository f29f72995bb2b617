"""A split reduction's finishing walk (``simfront.sim.model.finish``): the step's cost
measured on the H200 (bench/device/split_tail.cu, data in bench/data/device/split_tail/),
the idiom found in the shipped traces of PyTorch's reductions and not in Triton's fenced
atomics, and the walk's clocks in the record of a held-out launch against its ncu cycles."""

from __future__ import annotations

import sys

import pytest

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import finish
from simfront.sim.model.decode import build_optable
from simfront.sim.model.occupancy import launch_from
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import _popcount32
from simfront.traces.reader import TraceSet

sys.path.insert(0, str(REPO_ROOT / "bench"))
import bench_split_tail  # noqa: E402

TRACES = REPO_ROOT / "traces"


def _kernel(set_name: str, kid: int):
    return next(k for k in TraceSet(TRACES / set_name).kernels() if k.kernel_id == kid)


def _seen(kernel) -> finish.FinishSeen:
    seen = finish.FinishSeen()
    for c in kernel.iter_chunks():
        table = build_optable(c.opcodes, load_gpu("h200"))
        op = c.op.astype("int64")
        seen.add(table, table.kind[op], op, _popcount32(c.mask))
    return seen


def test_the_step_cost_is_the_h200_walks_slope():
    table = bench_split_tail.walk_table()
    assert len(table) == 10
    assert bench_split_tail.step_cycles(table) == pytest.approx(
        DEFAULT_PARAMS.grid.last_block_step_cycles, rel=0.02)
    # the walk grows with its steps: a step is a round trip, not a fixed cost
    walks = table.set_index("steps").tail_clocks_max
    assert walks[49] > 5 * walks[8]


def test_pytorchs_split_sum_walks_its_column():
    k = _kernel("h200-ho-m2-d512", 245499)
    ln = launch_from(k.header)
    seen = _seen(k)
    assert (seen.fence, seen.atomic, seen.last_traced) == (True, True, False)
    assert ln.grid == (10, 193, 1) and ln.block == (32, 4, 1)
    assert finish.walk_steps(seen, ln.grid, ln.block) == 49  # 193 partials, 4 a step


def test_a_sample_holding_a_last_block_adds_no_walk():
    # the H100 twin's third strided sum: its box holds blocks that counted in last
    k = _kernel("ho-m2-d512", 198008)
    ln = launch_from(k.header)
    seen = _seen(k)
    assert seen.fence and seen.atomic and seen.last_traced
    assert finish.walk_steps(seen, ln.grid, ln.block) == 0


def test_tritons_fenced_atomics_are_not_the_idiom():
    k = _kernel("h200-ho-m2-d512", 245468)  # grid (8, 48, 3), float atomics of many lanes
    seen = _seen(k)
    assert not (seen.fence and seen.atomic)
    assert finish.walk_steps(seen, launch_from(k.header).grid, (32, 4, 1)) == 0


def test_the_walk_brings_the_strided_sum_near_ncu():
    from simfront.sim.model import simulate_kernel
    from simfront.sim.model.validation import pair_launches, read_ncu

    d = TRACES / "h200-ho-m2-d512"
    pairs, _ = pair_launches(d, read_ncu(d / "ncu.csv"))
    p = next(p for p in pairs if p.kernel.kernel_id == 245499)
    rec = simulate_kernel(p.kernel, "h200")
    assert rec["sim_finish_walk_cycles"] == pytest.approx(
        49 * DEFAULT_PARAMS.grid.last_block_step_cycles)
    ncu = float(p.row["cycles"])
    # without the walk the model read 0.51 of ncu's cycles; with it within 15%
    assert (rec["cycles"] - rec["sim_finish_walk_cycles"]) / ncu < 0.6
    assert abs(rec["cycles"] / ncu - 1) < 0.15

"""A grid of one wave is timed on its heaviest traced blocks (docs/model-grids.md, *A grid
of one wave*), on the shipped H200 step `traces/h200-ho-m2-d512` (held out: nothing is
fitted on it) and its ncu profile."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.paths import repo_dir
from simfront.gpu import load_gpu, with_variants
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.simulate import _slowest_sm_blocks
from simfront.sim.model.validation import pair_launches, read_ncu
from simfront.traces.reader import KernelTrace

SET = repo_dir("traces") / "h200-ho-m2-d512"
#: AdamW's multi_tensor_apply over small tensors: grid 33, box-sampled 8 blocks, traced
#: blocks 0-1 run 405 warp instructions, 2-7 run 9,152 (one full chunk each)
ADAM_SMALL = "kernel-245661.traceg.xz"
#: the same over large tensors: grid 320, every traced block 9,152
ADAM_LARGE = "kernel-245660.traceg.xz"
#: CUB's onesweep radix sort: grid 3, unsampled, block 0 the lightest
RADIX = "kernel-245647.traceg.xz"
#: CUB's radix histogram in a user's step (H100): grid 924 (7 a SM on 132 SMs), box-sampled,
#: traced blocks 0-3 run 3,893-3,895 warp instructions and 4-7 run 1,184; the census's
#: average 1,196
HISTOGRAM = repo_dir("traces") / "user-m2-d768" / "kernel-215189.traceg.xz"


def _blocks(trace):
    """Warp instructions per traced block."""
    counts: dict[int, int] = {}
    for c in trace.iter_chunks():
        tb, n = np.unique(c.tb, return_counts=True)
        for t, k in zip(tb.tolist(), n.tolist()):
            counts[t] = counts.get(t, 0) + k
    return [counts[t] for t in sorted(counts)]


@pytest.fixture(scope="module")
def ncu_cycles():
    pairs, _ = pair_launches(SET, read_ncu(SET / "ncu.csv"))
    return {p.kernel.path.name: float(p.row["cycles"]) for p in pairs}


def test_the_slowest_sm_runs_the_heaviest_block_beside_average_ones():
    W = 2
    # four blocks of two warps: rows 3, 7, 7, 1
    per_warp = [1, 2, 3, 4, 4, 3, 1, 0]
    off = np.concatenate([[0], np.cumsum(per_warp)]).astype(np.int64)
    cols = {"op": np.arange(off[-1], dtype=np.int32)}
    got, new_off, n, heaviest = _slowest_sm_blocks(cols, off, 4, W, 1, average=4.0)
    assert (n, heaviest) == (1, 7.0)
    assert got["op"].tolist() == list(range(3, 10))  # block 1: of the two heaviest the first
    # three blocks at once: block 1, and twice block 0, the one nearest the average
    got, new_off, n, _ = _slowest_sm_blocks(cols, off, 4, W, 3, average=4.0)
    assert n == 3
    assert got["op"].tolist() == [0, 1, 2, 0, 1, 2] + list(range(3, 10))
    assert new_off.tolist() == [0, 1, 3, 4, 6, 9, 13]
    # an average near the light block picks it instead
    got, _, _, _ = _slowest_sm_blocks(cols, off, 4, W, 2, average=1.5)
    assert got["op"].tolist() == list(range(3, 10)) + [17]


def test_a_one_wave_grid_is_timed_on_its_heaviest_traced_block(ncu_cycles):
    k = KernelTrace(SET / ADAM_SMALL)
    assert k.header.sampled_blocks is not None and k.header.grid == (33, 1, 1)
    per_block = _blocks(k)
    assert per_block[0] < per_block[2] == max(per_block)
    rec = simulate_kernel(k, load_gpu("h200"), cache=False)
    assert rec["sim_timed_instructions"] == max(per_block)
    # the census's average block does less than the heaviest: no scaling down
    assert rec["sim_work_scale"] == 1.0
    # block 0 alone read 0.19 of ncu's cycles; the heaviest block reads them within 25%
    assert 0.75 < rec["cycles"] / ncu_cycles[ADAM_SMALL] < 1.25


def test_an_unsampled_small_grid_is_timed_on_its_heaviest_block(ncu_cycles):
    k = KernelTrace(SET / RADIX)
    assert k.header.sampled_blocks is None and k.header.grid == (3, 1, 1)
    per_block = _blocks(k)
    assert per_block[0] < max(per_block)
    rec = simulate_kernel(k, load_gpu("h200"), cache=False)
    assert rec["sim_timed_instructions"] == max(per_block)
    assert 0.8 < rec["cycles"] / ncu_cycles[RADIX] < 1.25  # block 0 read 0.66


def test_several_blocks_an_sm_put_the_heaviest_beside_average_ones():
    k = KernelTrace(HISTOGRAM)
    per_block = _blocks(k)
    assert per_block == [3893, 3893, 3893, 3895] + [1184] * 4
    rec = simulate_kernel(k, load_gpu("h100"), cache=False)
    # the heaviest block and six of the light ones, not the four heavy ones at once
    assert rec["sim_timed_blocks"] == 7
    assert rec["sim_timed_instructions"] == 3895 + 6 * 1184


def test_more_than_one_wave_keeps_sm0s_own_blocks():
    # 320 blocks of 512 threads on 32 SMs (4 a SM): three waves, SM 0 runs blocks in turn
    k = KernelTrace(SET / ADAM_LARGE)
    rec = simulate_kernel(k, with_variants(load_gpu("h200"), sm_count=32), cache=False)
    # SM 0's ten blocks: the eight traced ones repeated in order, each of 9,152
    assert rec["sim_timed_blocks"] == 10
    assert rec["sim_timed_instructions"] == 10 * 9152

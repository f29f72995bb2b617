"""A sampled grid whose traced blocks are alike and whose census's average block is lighter
has blocks that exit at once (docs/model-grids.md, *Blocks that find no work*): on the
shipped H200 hybrid step `traces/h200-ho-hybrid`, mamba_ssm's `_layer_norm_bwd_kernel`
(grid 132 = the SM count, 64 rows a program over 8,192 rows: programs 128-131 find none),
against its green-context timelines on 64 and 32 SMs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simfront.core.paths import repo_dir
from simfront.gpu import load_gpu, with_variants
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.simulate import working_blocks
from simfront.traces.reader import KernelTrace

SET = repo_dir("traces") / "h200-ho-hybrid"
#: 512 threads, 58 registers: two blocks an SM; 256 threads, 168 registers: one
LN_TWO = "kernel-249991.traceg.xz"
LN_ONE = "kernel-249996.traceg.xz"


def test_alike_blocks_and_a_lighter_census_leave_blocks_without_work():
    alike = np.array([100, 100, 100, 100, 100, 100, 100, 100])
    # 128 blocks of 100 and 4 of 1
    assert working_blocks(alike, 132, 128 * 100 + 4) == 128
    # a census of the traced blocks' work: every block works
    assert working_blocks(alike, 132, 132 * 100) == 132
    # a shortfall of more than a rounded-up grid's few blocks: blocks doing other work
    # (a causal kernel's tiles above the diagonal)
    assert working_blocks(alike, 4096, 2653 * 100) == 4096
    # blocks that differ say nothing of where the shortfall is
    unlike = np.array([100, 100, 100, 100, 60, 60, 60, 60])
    assert working_blocks(unlike, 132, 128 * 100) == 132
    # too few traced blocks to tell, or no census
    assert working_blocks(alike[:3], 132, 128 * 100) == 132
    assert working_blocks(alike, 132, None) == 132


def _hardware_ratio(kernel_name: str, block: str, sms: str) -> float:
    """The green-context timeline's median time of the kernel's launches of this block size
    on ``sms`` over the whole GPU's."""
    def times(cond):
        df = pd.read_csv(SET / "whatif" / f"h200-{cond}.csv.xz", skiprows=[1])
        sel = df["Kernel Name"].str.contains(kernel_name) & (df["Block Size"] == block)
        return df.loc[sel, "gpu__time_duration.sum"].astype(float).to_numpy()
    return float(np.median(times(sms)) / np.median(times("all")))


@pytest.mark.parametrize("trace,block", [(LN_TWO, "(512, 1, 1)"), (LN_ONE, "(256, 1, 1)")])
def test_the_layer_norm_backward_on_fewer_sms_follows_its_working_blocks(trace, block):
    kernel = KernelTrace(SET / trace)
    h200 = load_gpu("h200")
    base = simulate_kernel(kernel, h200, None)
    for sms in (64, 32):
        rec = simulate_kernel(kernel, with_variants(h200, sm_count=sms), None)
        hw = _hardware_ratio("_layer_norm_bwd", block, f"sms{sms}")
        model = rec["cycles"] / base["cycles"]
        # every block taken to work put a second wave on 64 SMs: 1.74x / 2.49x here
        assert model == pytest.approx(hw, rel=0.1), (sms, model, hw)


def test_a_sample_of_blocks_that_exit_at_once_is_flagged_blind():
    # PyTorch's CatArrayBatchedCopy over five inputs (grid 264 x 5, `ho-m2-d512`): the
    # sampled box (4 x 2 blocks at the grid's corner) holds only blocks that exit after 11
    # instructions a warp, where the census's average block runs ~2,600 a warp: the record says
    # so (`sim_traced_work_share`), as the model saw none of the grid's memory traffic
    # (ncu: 61 MB read). Its three-input sibling's sample works (share above 1).
    h100 = load_gpu("h100")
    cat = repo_dir("traces") / "ho-m2-d512"
    blind = simulate_kernel(KernelTrace(cat / "kernel-197887.traceg.xz"), h100, cache=False)
    seen = simulate_kernel(KernelTrace(cat / "kernel-197876.traceg.xz"), h100, cache=False)
    assert blind["sim_traced_work_share"] < 0.01
    assert blind["l1_accesses"] == 0 and blind["dram_read_bytes"] == 0
    assert seen["sim_traced_work_share"] > 0.5 and seen["dram_read_bytes"] > 1e7

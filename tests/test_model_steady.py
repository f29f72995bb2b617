"""An SM in its steady state adds its windows instead of running them (``issue.run_sm``,
docs/model-issue.md *The steady state*), on the shipped paper step's cross-entropy-sized
elementwise kernel: 6,095 blocks on SM 0 of an H100, 16 at a time, box-sampled (8 traced
blocks repeated)."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.paths import repo_dir
from simfront.gpu import load_gpu
from simfront.sim.model import simulate
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.traces.reader import KernelTrace

KERNEL = repo_dir("traces") / "mamba2_lm-paper-box" / "kernel-222893.traceg.xz"
WHOLE = DEFAULT_PARAMS.with_(**{"issue.steady_waves": 0})


@pytest.fixture(scope="module")
def prepared():
    gpu = load_gpu("h100")
    return simulate.prepare_kernel(KernelTrace(KERNEL), gpu), gpu


def _run(prepared, params, keep_rows=False):
    prep, gpu = prepared
    _, cfg, t, out, st, _ = simulate.unloaded_run(prep, gpu, params, keep_rows)
    return t, out, int(st.steady_t[2]), cfg


def test_the_window_is_whole_waves_of_repeating_blocks(prepared):
    prep, _ = prepared
    assert prep.repeat_from == 8 and prep.timed_blocks == 6095
    _, _, _, cfg = _run(prepared, DEFAULT_PARAMS)
    assert cfg.block_period % prep.repeat_from == 0
    assert cfg.block_period >= DEFAULT_PARAMS.issue.steady_waves * cfg.blocks_per_sm
    assert simulate._block_period(0, 16, 8) == 0      # rows that do not repeat
    assert simulate._block_period(8, 16, 0) == 0      # switched off
    assert simulate._block_period(3, 2, 8) == 18


def test_a_steady_sm_skips_and_lands_where_the_whole_run_does(prepared):
    t_whole, whole, skipped_whole, _ = _run(prepared, WHOLE)
    t_steady, steady, skipped, _ = _run(prepared, DEFAULT_PARAMS)
    assert skipped_whole == 0
    # most of the kernel is added, not run
    assert skipped > 0.5 * t_steady
    assert abs(t_steady / t_whole - 1) < 0.005
    # every sub-partition's clocks still add up to the kernel's, reason by reason
    assert (steady.stall.sum(axis=1) == t_steady).all()
    assert (whole.stall.sum(axis=1) == t_whole).all()
    # each reason's share of the clocks within a point of the whole run's (a reason's
    # clocks vary more from window to window than the windows' clocks do)
    shares = steady.stall.sum(axis=0) / steady.stall.sum()
    np.testing.assert_allclose(shares, whole.stall.sum(axis=0) / whole.stall.sum(),
                               atol=0.01)
    # the instructions the added windows stand for are the skipped blocks'
    np.testing.assert_allclose(steady.issued_pipe, whole.issued_pipe, rtol=0.003)
    assert steady.warp_cycles[0] == pytest.approx(whole.warp_cycles[0], rel=0.005)


def test_per_row_waits_run_every_block(prepared):
    t_whole, _, _, _ = _run(prepared, WHOLE)
    t, out, skipped, _ = _run(prepared, DEFAULT_PARAMS, keep_rows=True)
    assert skipped == 0 and t == t_whole
    assert out.row_wait.sum() > 0

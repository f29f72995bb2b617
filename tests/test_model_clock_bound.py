"""A kernel's clock found without the run at the core clock (``clock.bounded_clock``):
where the tensor pipes' busy share, bounded by the heaviest block's tensor clocks a row,
leaves the power cap above the tensor limit, the clock is the tensor limit, as the run
would have found; a GEMM busy enough to meet the cap still runs."""

from __future__ import annotations

import pytest

from simfront.core.paths import REPO_ROOT

TRACES = REPO_ROOT / "traces"


def _clocks(path, gpu):
    from simfront.sim.model.clock import bounded_clock, known_clock, run_clock
    from simfront.sim.model.decode import PIPE_INDEX
    from simfront.sim.model.simulate import op_timing, prepare_kernel, time_prepared
    from simfront.traces.reader import KernelTrace

    prep = prepare_kernel(KernelTrace(path), gpu)
    if prep.pipe_counts[PIPE_INDEX["tensor"]] == 0 or known_clock(prep, gpu) is not None:
        return None
    return bounded_clock(prep, gpu, op_timing(prep, gpu)), run_clock(time_prepared(prep, gpu), gpu)


def test_the_bound_gives_the_clock_the_run_finds_on_every_tiny_step_kernel():
    from simfront.gpu import load_gpu

    gpu = load_gpu("h100")
    decided = 0
    for name in ("mamba2_lm-tiny", "hybrid_lm-tiny"):
        for path in sorted((TRACES / name).glob("kernel-*.traceg*")):
            got = _clocks(path, gpu)
            if got is None or got[0] is None:
                continue
            decided += 1
            assert got[0] == got[1], path.name
    assert decided >= 6


@pytest.mark.parametrize("kernel, decided", [
    ("kernel-222985", True),    # an SSD kernel: tensor pipes busy a fifth of its rows at most
    ("kernel-223026", False),   # the LM head's GEMM: busy enough for the power cap to bind
])
def test_the_paper_step_runs_only_the_kernels_the_bound_cannot_decide(kernel, decided):
    from simfront.gpu import load_gpu

    got = _clocks(TRACES / "mamba2_lm-paper-box" / f"{kernel}.traceg.xz", load_gpu("h100"))
    assert got is not None
    assert (got[0] is not None) == decided
    if decided:
        assert got[0] == got[1]

"""Kernel-time speedups turned into wall-clock step speedups with the measured busy share."""

from __future__ import annotations

from pathlib import Path

import pytest

from simfront.analysis.wallclock import step_share, wall_speedup

ROOT = Path(__file__).resolve().parents[1]


def test_amdahl_with_fixed_host_gaps():
    assert wall_speedup(2.0, 1.0) == pytest.approx(2.0)
    assert wall_speedup(2.0, 0.0) == pytest.approx(1.0)
    assert wall_speedup(2.0, 0.5) == pytest.approx(1 / 0.75)
    assert wall_speedup(0.5, 0.5) == pytest.approx(1 / 1.5)      # a slower GPU too
    with pytest.raises(ValueError):
        wall_speedup(1.1, 1.5)


def test_tiny_steps_are_host_bound_and_paper_steps_are_not():
    """Measured on the H100: the tiny LM steps keep the GPU busy for a few percent of the
    step, so no GPU can speed them up by much; the paper-size steps are mostly GPU time."""
    tiny = step_share(ROOT / "traces" / "mamba2_lm-tiny")
    paper = step_share(ROOT / "traces" / "mamba2_lm-paper")
    assert tiny is not None and paper is not None
    assert tiny.busy_share < 0.1 and tiny.ceiling < 1.2
    assert 0.4 < paper.busy_share < 1.0
    assert paper.wall_speedup(1.05) < 1.05
    assert paper.wall_speedup(1.05) == pytest.approx(1 / ((1 - paper.busy_share)
                                                          + paper.busy_share / 1.05))


def test_a_set_without_a_timeline_has_no_share(tmp_path):
    assert step_share(tmp_path) is None


def test_a_sweeps_workloads_find_their_measured_step(tmp_path):
    """The balance report reads each workload's busy share through the sweep file that the
    sweep's folder keeps; a workload whose set has no timeline is left out."""
    import json

    from simfront.analysis.wallclock import sweep_step_shares

    folder = tmp_path / ".sweeps" / "s"
    folder.mkdir(parents=True)
    (folder / "sweep.yaml").write_text(
        "name: s\nworkloads:\n  - name: m2\n    traces: mamba2_lm-paper\n"
        "  - name: hy\n    traces: hybrid_lm-tiny\n"
        "gpu:\n  base: h100\n  axes:\n    tensor_vector_ratio: [16, 8]\nbackends: [model]\n")
    (folder / "sweep.json").write_text(json.dumps({"sweep_file": str(ROOT / "experiments" / "x.yaml"),
                                                   "name": "s"}))
    shares = sweep_step_shares(folder / "results.h5")
    assert set(shares) == {"m2"}
    assert shares["m2"].busy_share == pytest.approx(step_share(ROOT / "traces" / "mamba2_lm-paper").busy_share)

"""The built-in model as a backend: records, schema, failures, CLI (issue 5)."""

from __future__ import annotations

import lzma
import math

import pytest
from click.testing import CliRunner

from simfront.stats.schema import is_known_column


@pytest.fixture(scope="module")
def gpu():
    from simfront.gpu import load_gpu

    return load_gpu("h100")


def test_model_is_the_default_registered_backend():
    from simfront.sim.backend import DEFAULT_BACKEND, backend_names, get_backend

    assert DEFAULT_BACKEND == "model"
    assert "model" in backend_names()
    b = get_backend("model")
    assert b.name == "model" and b.version()


def test_backend_runs_selected_kernels_with_schema_columns(scan_step, gpu, tmp_path):
    from simfront.sim.backend import SimJob, get_backend

    job = SimJob("j1", scan_step, gpu, tmp_path / "out",
                 kernels=("kernel-35607.traceg.xz", "kernel-35611*"))
    res = get_backend("model").run(job)
    assert res.ok, res.reason
    assert [r["kernel_id"] for r in res.records] == [35607, 35611]
    assert (tmp_path / "out" / "result.json").is_file()
    for r in res.records:
        unknown = [c for c in r if not is_known_column(c)]
        assert not unknown, unknown
        assert r["complete"] and r["cycles"] > 0 and r["instructions"] > 0
        assert math.isclose(r["time_us"], r["cycles"] / gpu.clocks.core.hz * 1e6)
        stalls = sum(v for c, v in r.items() if c.startswith("stall_"))
        assert stalls == pytest.approx(1.0, abs=1e-6)
        # one block: SM 0 runs all of the trace's instructions
        assert r["instructions"] == r["sim_timed_instructions"]


def test_truncated_trace_fails_the_job_naming_the_kernel(scan_step, gpu, tmp_path):
    from simfront.sim.backend import SimJob, get_backend

    src = scan_step / "kernel-35607.traceg.xz"
    text = lzma.open(src).read()
    cut = text[: len(text) - 200]
    cut = cut[: cut.rfind(b"\n") + 1] + b"01f0 ffffffff 1 R5"  # a line cut short
    d = tmp_path / "traces"
    d.mkdir()
    (d / "kernel-1.traceg").write_bytes(cut)
    (d / "kernel-2.traceg").write_bytes(text)
    (d / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    res = get_backend("model").run(SimJob("j2", d, gpu, tmp_path / "out"))
    assert not res.ok
    assert "kernel-1.traceg" in res.reason
    done = {r["kernel_uid"]: r["complete"] for r in res.records}
    assert done == {1: False, 2: True}


def test_cli_sim_run_writes_records(scan_step, tmp_path):
    import pandas as pd

    from simfront.cli import cli

    out = tmp_path / "rec.csv"
    r = CliRunner().invoke(cli, ["sim", "run", str(scan_step), "--kernel", "kernel-35607",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert len(df) == 1 and df.loc[0, "backend"] == "model" and df.loc[0, "cycles"] > 0


def test_a_sampled_trace_stands_for_its_whole_grid():
    """simfront's tracer kept 32 of the 528 blocks of this layer-norm launch: the model's
    counts are the whole grid's, and SM 0 is timed on its share (4 blocks), not on 1."""
    from simfront.gpu import load_gpu
    from simfront.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    k = KernelTrace(repo_dir("traces") / "mamba2_lm-tiny" / "kernel-96381.traceg.xz")
    traced, total = k.header.sampled_blocks
    rec = simulate_kernel(k, load_gpu("h100"), cache=False)
    assert rec["instructions"] == pytest.approx(k.instruction_count() * total / traced)
    # the same blocks unsampled-looking: a grid of just the traced blocks runs 1 per SM
    from dataclasses import replace
    small = KernelTrace(k.path)
    small._header = replace(k.header, grid=(traced, 1, 1), extra=())
    rec_small = simulate_kernel(small, load_gpu("h100"), cache=False)
    assert rec["cycles"] > rec_small["cycles"]

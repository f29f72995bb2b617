"""The demo pipeline end to end on the built-in model: sample traces -> sweep -> HDF5 ->
balance study -> report. Small: one sample trace set, three ratios."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simfront.core.paths import repo_dir


def test_sample_trace_sets_are_found():
    from simfront.analysis.demo import sample_trace_sets
    sets = sample_trace_sets()
    assert sets and all((p / "kernelslist.g").exists() or (p / "kernelslist.g.xz").exists()
                        for p in sets)


def test_the_tiny_demo_takes_the_tiny_whole_step_captures_only():
    import json

    from simfront.analysis.demo import sample_trace_sets
    sets = sample_trace_sets(tiny=True)
    presets = {json.loads((p / "manifest.json").read_text())["workload"].get("preset")
               for p in sets}
    if not any("paper" in p.name for p in repo_dir("traces").iterdir()):
        pytest.skip("no paper-size capture shipped")
    assert presets == {"tiny"}
    assert not any("-paper" in p.name for p in sets)


def test_demo_on_the_smallest_sample(tmp_path):
    from simfront.analysis.demo import run_demo
    from simfront.analysis.studies import load_sweep_records

    small = repo_dir("traces") / "mamba1_torch_elementwise"
    if not small.is_dir():
        pytest.skip("sample trace set traces/mamba1_torch_elementwise not shipped")
    html, md = run_demo(tmp_path / "demo", traces=small, ratios=(16.0, 8.0, 4.0),
                        backend="model")
    rec = load_sweep_records(tmp_path / "demo" / "sweep" / "results.h5")
    assert sorted(rec["ratio"].unique()) == [4.0, 8.0, 16.0]
    assert rec.groupby("ratio").size().nunique() == 1          # every kernel at every ratio
    text = html.read_text()
    assert text.count("data:image/png;base64,") >= 3
    assert not re.search(r"src=['\"](?!data:)", text)
    assert "Tensor:vector balance" in md.read_text()


def test_the_demo_takes_the_shipped_paper_size_steps():
    import json

    from simfront.analysis.demo import PAPER_SETS, sample_trace_sets
    sets = sample_trace_sets()
    assert [p.name for p in sets] == list(PAPER_SETS)
    for p in sets:
        workload = json.loads((p / "manifest.json").read_text())["workload"]
        assert workload["preset"] == "paper"
        assert workload["name"] in ("mamba2_lm", "mamba1_lm")


def test_the_report_says_what_size_the_steps_are():
    from simfront.analysis.demo import _what_the_sets_are, sample_trace_sets
    tiny = _what_the_sets_are(sample_trace_sets(tiny=True))
    paper = _what_the_sets_are(sample_trace_sets())
    assert "`tiny` preset" in tiny and "paper-size" in tiny
    assert "`paper` preset" in paper and "tiny" not in paper
    mixed = _what_the_sets_are(sample_trace_sets(tiny=True) + sample_trace_sets())
    assert "mamba2_lm-paper-box paper" in mixed and " tiny" in mixed


def test_the_tiny_demo_and_a_trace_folder_are_one_choice(tmp_path):
    from click.testing import CliRunner

    from simfront.analysis.cli import demo_cmd
    res = CliRunner().invoke(demo_cmd, ["--tiny", "--traces", str(tmp_path),
                                        "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "give one" in res.output

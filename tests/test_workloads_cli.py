"""The entry point the capture driver runs (`python -m simfront.workloads.run`) and the
`simfront workloads` commands."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from simfront.workloads import WORKLOADS, counts, get_spec
from simfront.workloads.cli import workloads


def test_list_and_show():
    runner = CliRunner()
    res = runner.invoke(workloads, ["list"])
    assert res.exit_code == 0
    assert [line.split()[0] for line in res.output.splitlines()] == list(WORKLOADS)
    res = runner.invoke(workloads, ["show", "mamba2_lm", "--preset", "paper"])
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)
    assert shown["params"] == counts.param_count(get_spec("mamba2_lm").config("paper"))
    assert shown["config"]["d_model"] == 768


def test_run_module_prints_a_json_summary_line(tmp_path):
    pytest.importorskip("torch", reason="torch is needed to run a workload")
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "simfront.workloads.run", "mamba2_lm", "--preset", "tiny",
         "--device", "cpu", "--iterations", "2", "--window", "1", "--set", "seqlen=32",
         "--set", "chunk_size=16", "--sms", "all", "--summary", str(out)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary == json.loads(out.read_text())
    assert summary["workload"] == "mamba2_lm" and summary["preset"] == "tiny"
    assert summary["impl"] == "reference" and summary["window"] == 1
    assert len(summary["step_ms"]) == 2 and all(t > 0 for t in summary["step_ms"])
    assert summary["config"]["seqlen"] == 32
    assert summary["window_sms"] is None      # --sms all: the whole GPU, as by default
    from simfront.core.provenance import sha256_json
    assert summary["config_hash"] == sha256_json({k: summary[k] for k in
                                                  ("workload", "impl", "amp", "config")})
    cfg = get_spec("mamba2_lm").config("tiny")
    import dataclasses
    assert summary["params"] == counts.param_count(dataclasses.replace(cfg, seqlen=32))


def test_run_module_bad_input_exits_2_with_a_message():
    proc = subprocess.run(
        [sys.executable, "-m", "simfront.workloads.run", "mamba2_lm", "--device", "cpu",
         "--iterations", "2", "--window", "0"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "steady-state" in proc.stderr and proc.stdout == ""


def test_run_module_takes_one_sm_count_for_the_window():
    """Without --timeline, --sms is the window's SM count: one, not a list."""
    proc = subprocess.run(
        [sys.executable, "-m", "simfront.workloads.run", "mamba2_lm", "--device", "cpu",
         "--iterations", "2", "--window", "1", "--sms", "64,32"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--sms" in proc.stderr and "one SM count" in proc.stderr


def test_a_window_on_fewer_sms_needs_a_window():
    pytest.importorskip("torch", reason="torch is needed to run a workload")
    from simfront.core.errors import ConfigError
    from simfront.workloads.runner import run

    with pytest.raises(ConfigError, match="needs a window"):
        run("mamba2_lm", "tiny", 2, None, device="cpu", overrides={"seqlen": 32},
            window_sms=64)

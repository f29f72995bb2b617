"""``simfront timeline SCRIPT.py``: the runner's command and environment, a script's window
timed for real (on the CPU, where it has no kernels but a wall time), its failures, and a
timeline stored beside a shipped trace set and paired with its launches."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simfront.capture.cli import store_and_pair, timeline_cmd
from simfront.capture.driver import CaptureError
from simfront.capture.script_timeline import conditions, run_script_timelines
from simfront.capture.script_window import (ENV_DIR, ENV_L2SET, ENV_SMS, Condition, command)
from simfront.core.timeline import read_timeline_json
from simfront.core.errors import ConfigError, InputError
from simfront.core.provenance import sha256_file

ROOT = Path(__file__).resolve().parents[1]

# A user's step: three iterations, the last bracketed as for `simfront trace`; the bracketed
# one sleeps 80 ms, so its wall time says the window timed that iteration and no other.
SCRIPT = '''
import json, sys, time
import torch

out = sys.argv[sys.argv.index("--argv-to") + 1]
json.dump(sys.argv, open(out, "w"))
x = torch.randn(64, 64)
for it in range(3):
    if it == 2:
        torch.cuda.profiler.start()
        time.sleep(0.08)
    y = (x @ x).relu().sum()
    if it == 2:
        torch.cuda.profiler.stop()
'''


def test_condition_travels_through_the_environment(tmp_path):
    for cond in (Condition(tmp_path, None), Condition(tmp_path, 64),
                 Condition(tmp_path, None, 25)):
        env = cond.env()
        assert Condition.from_env(env) == Condition(tmp_path.resolve(), cond.sms,
                                                    cond.l2_setaside_mb)
    assert Condition(tmp_path, 64).env()[ENV_SMS] == "64"
    assert Condition(tmp_path, None).env()[ENV_SMS] == "all"
    assert [Condition(tmp_path, s, l2).label for s, l2 in ((None, None), (32, None),
                                                          (None, 25))] == ["all", "sms32",
                                                                           "l2set25"]


def test_bad_environment_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match=ENV_DIR):
        Condition.from_env({ENV_SMS: "64"})
    with pytest.raises(ConfigError, match=ENV_SMS):
        Condition.from_env({ENV_DIR: str(tmp_path), ENV_SMS: "lots"})
    with pytest.raises(ConfigError, match=ENV_SMS):
        Condition.from_env({ENV_DIR: str(tmp_path), ENV_SMS: "96,64"})
    with pytest.raises(ConfigError, match=ENV_L2SET):
        Condition.from_env({ENV_DIR: str(tmp_path), ENV_L2SET: "big"})
    with pytest.raises(ConfigError, match=ENV_L2SET):
        Condition(tmp_path, 64, 25)


def test_command_runs_the_script_under_the_hook(tmp_path):
    cmd = command("my_step.py", ("--batch", "4"))
    assert cmd[:3] == [sys.executable, "-m", "simfront.capture.script_window"]
    assert Path(cmd[3]).is_absolute() and cmd[3].endswith("my_step.py")
    assert cmd[4:] == ["--batch", "4"]


def test_conditions_run_in_order_and_once_each(tmp_path):
    assert [c.label for c in conditions(tmp_path, [None, 96, 64], 25)] == [
        "all", "sms96", "sms64", "l2set25"]
    with pytest.raises(InputError, match="twice"):
        conditions(tmp_path, [64, 64])


def test_a_script_window_is_timed_in_its_own_process(tmp_path):
    script = tmp_path / "my_step.py"
    script.write_text(SCRIPT)
    argv_file = tmp_path / "argv.json"
    out = tmp_path / "tl"
    (s,) = run_script_timelines(script, ["--argv-to", str(argv_file)], [None], out)
    assert s.label == "all" and s.format == 2 and s.device_name == "cpu"
    assert 80 <= s.step_ms < 1000                # the bracketed iteration, with its sleep
    assert s.extra["script_args"] == ["--argv-to", str(argv_file)]
    assert s.extra["script_sha256"] == sha256_file(script)
    # the script saw the argv `python my_step.py ARGS` gives it
    assert json.loads(argv_file.read_text()) == [str(script.resolve()), "--argv-to",
                                                 str(argv_file)]
    assert read_timeline_json(out / "timeline-all.json") == s
    assert (out / "timeline-all.csv").is_file() and (out / "timeline-all.log").is_file()


def test_a_script_without_a_window_fails_with_its_log(tmp_path):
    script = tmp_path / "no_window.py"
    script.write_text("import torch\nprint('stepping')\n")
    with pytest.raises(CaptureError, match="bracketed no window") as err:
        run_script_timelines(script, [], [None], tmp_path / "tl")
    assert "timeline-all.log" in str(err.value)


def test_an_sm_count_without_a_gpu_fails_in_the_runner(tmp_path):
    script = tmp_path / "my_step.py"
    script.write_text(SCRIPT)
    with pytest.raises(CaptureError, match="sms64: status 2") as err:
        run_script_timelines(script, ["--argv-to", str(tmp_path / "a")], [64], tmp_path / "tl")
    assert "needs a CUDA GPU" in str(err.value)


def test_cli_refuses_workload_options_for_a_script(tmp_path):
    script = tmp_path / "my_step.py"
    script.write_text(SCRIPT)
    res = CliRunner().invoke(timeline_cmd, [str(script), "--set", "seqlen=4", "-o",
                                            str(tmp_path / "tl")])
    assert res.exit_code == 2 and "--set" in res.output


def test_stored_timeline_pairs_with_the_trace_set(tmp_path):
    """A shipped H100 timeline, as a run of `simfront timeline` leaves it in its output
    folder, stored beside a copy of its trace set: whatif/h100-sms64.csv.xz and .json, every
    launch paired."""
    src = ROOT / "traces" / "mamba2_lm-tiny"
    tset = tmp_path / "set"
    shutil.copytree(src, tset, ignore=shutil.ignore_patterns("whatif"))
    out = tmp_path / "tl"
    out.mkdir()
    import lzma

    (out / "timeline-sms64.csv").write_bytes(
        lzma.decompress((src / "whatif" / "h100-sms64.csv.xz").read_bytes()))
    shutil.copy(src / "whatif" / "h100-sms64.json", out / "timeline-sms64.json")
    row = store_and_pair(out, "sms64", tset, force=False)
    assert Path(row["stored"]) == tset / "whatif" / "h100-sms64.csv.xz"
    assert (tset / "whatif" / "h100-sms64.json").is_file()
    n = read_timeline_json(out / "timeline-sms64.json").launches
    # every launch paired; Triton autotuned 25 to another grid in the timeline's process
    assert row["paired"] == {"exact": n - 25, "shape": 25}
    with pytest.raises(InputError, match="already there"):
        store_and_pair(out, "sms64", tset, force=False)

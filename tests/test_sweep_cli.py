"""`simfront sweep run|status|retry|cancel|gather` through click's CliRunner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from simfront.cli import cli
from simfront.stats.h5store import read_jobs
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import kernel_workloads, write_sweep


def test_cli_run_status_retry_gather(tmp_path):
    faults = tmp_path / "faults.json"
    path = write_sweep(tmp_path, "cli", traces=kernel_workloads(n=3),
                       options={"faults": str(faults)},
                       executor={"max_attempts": 1, "workers": 2})
    ids = [j.job_id for j in Sweep.open(path).plan().jobs]
    faults.write_text(json.dumps({ids[1]: "error"}))
    runner = CliRunner()

    r = runner.invoke(cli, ["sweep", "run", str(path), "-q"])
    assert r.exit_code == 1, r.output + r.stderr
    assert "done 2, failed 1" in r.output and "sweep retry" in r.stderr

    directory = Sweep.open(path).directory
    r = runner.invoke(cli, ["sweep", "status", str(directory), "--failed"])
    assert r.exit_code == 0, r.output
    assert ids[1] in r.output and "probe reported an error" in r.output
    assert ids[0] not in r.output

    faults.write_text("{}")
    r = runner.invoke(cli, ["sweep", "retry", str(path), ids[1][:8]])
    assert r.exit_code == 0 and "1 failed jobs queued again" in r.output
    r = runner.invoke(cli, ["sweep", "run", str(path), "-q"])
    assert r.exit_code == 0, r.output + r.stderr
    assert "started 1 attempts" in r.output and "done 3, failed 0" in r.output

    out = tmp_path / "copy.h5"
    r = runner.invoke(cli, ["sweep", "gather", str(path), "-o", str(out)])
    assert r.exit_code == 0 and read_jobs(out).ok.all() and len(read_jobs(out)) == 3

    r = runner.invoke(cli, ["sweep", "cancel", str(path)])
    assert r.exit_code == 0 and "cancelled 0" in r.output

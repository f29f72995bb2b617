"""Slurm executor against a real Slurm (.ci/slurm-up starts a single-node one in CI).

Skipped, saying why, where no Slurm answers. The fake parts are only the faults a real
Slurm cannot produce on demand (a task that segfaults comes from the probe backend)."""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from simfront.core.paths import REPO_ROOT
from simfront.sim.backend import backend_names
from simfront.stats.h5store import read_jobs, read_records
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import kernel_workloads, write_sweep
from simfront.sweep.worker import read_runs

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def slurm() -> None:
    """Skip where Slurm is not installed; where it is (CI, after .ci/slurm-up) a controller
    that does not answer or a node that cannot run jobs is a failure, not a skip."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        pytest.skip("Slurm not installed (no sinfo/sbatch); .ci/slurm-up installs and "
                    "starts a one-node Slurm")
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                             timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("sinfo did not answer in 20 s: is slurmctld running? (.ci/slurm-up)")
    states = out.stdout.split()
    if out.returncode != 0 or not any(s in ("idle", "mixed", "allocated") for s in states):
        pytest.fail(f"Slurm is installed but has no usable node (sinfo: "
                    f"{out.stdout.strip() or out.stderr.strip()}); run .ci/slurm-up")


def _wait_for(cond, timeout: float = 90.0) -> None:
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            raise AssertionError("condition not reached in time")
        time.sleep(0.1)


def test_sweep_of_24_jobs_through_sbatch_arrays_survives_kill_9(tmp_path, slurm):
    # The real built-in model when it is there; else the probe (sweep machinery only).
    backend = "model" if "model" in backend_names() else "sweep-probe"
    log = tmp_path / "probe.log"
    options = {"log": str(log)} if backend == "sweep-probe" else {}
    path = write_sweep(tmp_path, "slurm24", traces=kernel_workloads(n=24), backends=backend,
                       options=options,
                       resources={"cpus": 1, "mem": "700M", "time": "5m"},
                       executor={"kind": "slurm", "poll": "1s", "max_attempts": 2,
                                 "slurm": {"chunk": 12, "jobs_per_task": 4,
                                           "partition": "debug"}})
    s = Sweep.open(path)
    driver = subprocess.Popen([sys.executable, "-m", "simfront", "sweep", "run", str(path), "-q"],
                              cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    _wait_for(lambda: len(read_runs(s.directory)) >= 2)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(10)
    assert s.store.counts()["done"] < 24, "the driver died mid-sweep"

    summary = Sweep.open(path).run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 24, "failed": 0}

    # chunked arrays (12 jobs each, 4 per task) with the sweep file's resources
    scripts = sorted((s.directory / "batches").glob("*.sh"))
    assert len(scripts) == 2
    text = scripts[0].read_text()
    for directive in ("--array=0-2", "--cpus-per-task=1", "--mem=700M", "--time=00:20:00",
                      "--partition=debug"):
        assert f"#SBATCH {directive}" in text
    assert all(re.fullmatch(r"[^:]+:\d+", r) for r in s.status().ref)

    # every job ran exactly once although the driver was killed and a new one adopted
    ids = sorted(j.job_id for j in s.plan().jobs)
    runs = collections.Counter(r["job_id"] for r in read_runs(s.directory))
    assert sorted(runs) == ids and set(runs.values()) == {1}
    if backend == "sweep-probe":
        lines = collections.Counter(ln.split()[0] for ln in log.read_text().splitlines())
        assert sorted(lines) == ids and set(lines.values()) == {1}

    jobs = read_jobs(summary.results)
    recs = read_records(summary.results)
    assert sorted(jobs.job_id) == ids and jobs.ok.all()
    assert set(recs.job_id) == set(ids)
    assert set(recs.backend) == {backend}


def test_crashing_task_is_requeued_then_failed_with_slurms_reason(tmp_path, slurm):
    faults = tmp_path / "faults.json"
    path = write_sweep(tmp_path, "slurmfault", traces=kernel_workloads(n=3),
                       options={"faults": str(faults)},
                       resources={"cpus": 1, "mem": "500M", "time": "2m"},
                       executor={"kind": "slurm", "poll": "1s", "max_attempts": 2,
                                 "backoff": "0s"})
    s = Sweep.open(path)
    ids = [j.job_id for j in s.plan().jobs]
    faults.write_text(f'{{"{ids[0]}": "crash", "{ids[1]}": "flaky"}}')
    summary = s.run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 2, "failed": 1}
    t = s.status().set_index("job_id")
    assert t.loc[ids[0], "attempts"] == 2
    reason = t.loc[ids[0], "reason"]
    assert "ended FAILED" in reason and "without a result" in reason, reason
    assert (t.loc[ids[1], "state"], t.loc[ids[1], "attempts"]) == ("done", 2)
    assert len(list((s.directory / "batches").glob("*.sh"))) >= 2  # requeues are new arrays


def test_cancel_stops_submitted_arrays(tmp_path, slurm):
    path = write_sweep(tmp_path, "slurmcancel", traces=kernel_workloads(n=4),
                       options={"sleep_s": 30},
                       resources={"cpus": 1, "mem": "500M", "time": "2m"},
                       executor={"kind": "slurm"})
    s = Sweep.open(path)
    s.run(progress=False, wait=False, gather_results=False)
    assert s.store.counts()["running"] == 4
    (array_id,) = s.store.batches().values()
    assert s.cancel() == 4
    _wait_for(lambda: subprocess.run(["squeue", "-h", "-j", array_id], capture_output=True,
                                     text=True).stdout.strip() == "", timeout=30)
    assert s.store.counts()["failed"] == 4
    assert set(s.status().reason) == {"cancelled by user"}

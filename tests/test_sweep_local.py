"""Local executor end to end: results in HDF5, resume, retries, timeouts, crashes, kill -9 of
the driver and Ctrl-C, all checked against the job store and the workers' run log."""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simfront.core.errors import SweepError
from simfront.core.paths import REPO_ROOT
from simfront.stats.h5store import read_jobs, read_records
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import kernel_workloads, write_sweep
from simfront.sweep.worker import read_runs


def _driver(path: Path) -> subprocess.Popen:
    """`simfront sweep run` in its own process (and process group, like a terminal job)."""
    return subprocess.Popen([sys.executable, "-m", "simfront", "sweep", "run", str(path), "-q"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _wait_for(cond, timeout: float = 60.0) -> None:
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def _exactly_once(sweep: Sweep, log: Path | None = None) -> None:
    ids = [j.job_id for j in sweep.plan().jobs]
    runs = [r for r in read_runs(sweep.directory) if r["ok"]]
    counts = collections.Counter(r["job_id"] for r in runs)
    assert sorted(counts) == sorted(ids) and set(counts.values()) == {1}, counts
    if log is not None:  # the backend's own side effect, too
        lines = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
        assert sorted(lines) == sorted(ids) and set(lines.values()) == {1}, lines


def test_run_gathers_hdf5_and_rerun_skips_finished(tmp_path):
    path = write_sweep(tmp_path, "basic", traces=kernel_workloads(n=6),
                       backends=["sweep-noop", "sweep-probe"])
    s = Sweep.open(path)
    summary = s.run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 12, "failed": 0}
    assert summary.started == 12
    jobs = read_jobs(summary.results)
    recs = read_records(summary.results)
    assert len(jobs) == 12 and jobs.ok.all()
    assert sorted(recs.job_id) == sorted(j.job_id for j in s.plan().jobs)
    assert set(recs.workload) == {w["name"] for w in kernel_workloads(n=6)}
    assert set(recs.backend) == {"sweep-noop", "sweep-probe"}
    mtime = summary.results.stat().st_mtime_ns

    again = Sweep.open(path).run(progress=False)
    assert again.started == 0 and again.counts["done"] == 12
    assert len(read_jobs(again.results)) == 12 and again.results.stat().st_mtime_ns >= mtime
    _exactly_once(s)


def test_changing_an_axis_adds_jobs_and_keeps_old_results(tmp_path):
    path = write_sweep(tmp_path, "axis", axes={"sm_count": [66, 132]}, backends="sweep-noop")
    s1 = Sweep.open(path)
    assert s1.run(progress=False).counts["done"] == 2
    old = {j.job_id for j in s1.plan().jobs}
    path = write_sweep(tmp_path, "axis", axes={"sm_count": [66, 132, 99]},
                       backends="sweep-noop")
    s2 = Sweep.open(path)
    summary = s2.run(progress=False)
    assert summary.sync["added"] == 1 and summary.sync["already_done"] == 2
    assert summary.started == 1 and summary.counts["done"] == 3
    assert old < {j.job_id for j in s2.plan().jobs}
    assert len(read_jobs(summary.results)) == 3
    _exactly_once(s2)


def test_crash_timeout_and_errors_retry_then_fail_with_reason(tmp_path):
    faults = tmp_path / "faults.json"
    path = write_sweep(tmp_path, "faults", traces=kernel_workloads(n=8),
                       options={"faults": str(faults)},
                       resources={"cpus": 1, "mem": "1G", "time": "2s"},
                       executor={"max_attempts": 2, "backoff": "100ms", "workers": 2})
    s = Sweep.open(path)
    ids = [j.job_id for j in s.plan().jobs]
    plan = {ids[0]: "crash", ids[1]: "hang", ids[2]: "flaky", ids[3]: "raise",
            ids[4]: "error", ids[5]: "exit"}
    faults.write_text(json.dumps(plan))
    summary = s.run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 3, "failed": 5}
    t = s.status().set_index("job_id")
    assert t.loc[ids[0], "state"] == "failed" and t.loc[ids[0], "attempts"] == 2
    assert t.loc[ids[0], "reason"] == "worker process died (killed by SIGSEGV)"
    assert t.loc[ids[1], "state"] == "failed" and "timed out after 2 s" in t.loc[ids[1], "reason"]
    assert (t.loc[ids[2], "state"], t.loc[ids[2], "attempts"]) == ("done", 2)
    assert "RuntimeError: probe asked to raise" in t.loc[ids[3], "reason"]
    assert t.loc[ids[4], "reason"] == "probe reported an error"
    assert "exit code 3" in t.loc[ids[5], "reason"]
    assert (t.loc[ids[6:], "state"] == "done").all()
    attempts = s.store.attempts_table()
    assert len(attempts[attempts.job_id == ids[1]]) == 2
    jobs = read_jobs(summary.results).set_index("job_id")
    assert not jobs.loc[ids[0], "ok"] and "SIGSEGV" in jobs.loc[ids[0], "reason"]
    assert jobs.loc[ids[7], "ok"]

    # retry queues the failed ones with a fresh budget; without faults they now finish
    faults.write_text("{}")
    assert s.retry() == 5
    assert Sweep.open(path).run(progress=False).counts["done"] == 8


def test_kill_9_of_the_driver_then_rerun_runs_every_job_exactly_once(tmp_path):
    log = tmp_path / "backend.log"
    path = write_sweep(tmp_path, "kill9", traces=kernel_workloads(n=12),
                       options={"log": str(log), "sleep_s": 0.25},
                       executor={"workers": 2})
    s = Sweep.open(path)
    proc = _driver(path)
    _wait_for(lambda: log.exists() and len(log.read_text().splitlines()) >= 3)
    os.kill(proc.pid, signal.SIGKILL)  # the driver only: its workers are orphaned mid-job
    proc.wait(10)
    running = s.store.counts()["running"]
    assert running >= 1, "the driver died with jobs in flight"
    summary = Sweep.open(path).run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 12, "failed": 0}
    _exactly_once(s, log)
    assert s.store.integrity_ok()
    assert len(read_jobs(summary.results)) == 12


def test_ctrl_c_stops_cleanly_and_leaves_the_store_consistent(tmp_path):
    log = tmp_path / "backend.log"
    path = write_sweep(tmp_path, "ctrlc", traces=kernel_workloads(n=10),
                       options={"log": str(log), "sleep_s": 0.2}, executor={"workers": 2})
    s = Sweep.open(path)
    proc = _driver(path)
    # the store, not the backend's log, says what is done: a job whose log line is written
    # may still be on its way to the driver when the signal lands
    _wait_for(lambda: s.store.path.exists() and s.store.counts()["done"] >= 2)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends to its foreground job
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    c = s.store.counts()
    assert c["running"] == 0 and c["failed"] == 0 and c["done"] >= 2 and c["queued"] >= 1
    att = s.store.attempts_table()
    assert (att.outcome.isin(["ok", "released"])).all()
    assert s.store.integrity_ok()
    assert s.driver_pid() is None
    # nothing left running: no worker survives the driver's clean stop
    n_before = len(log.read_text().splitlines())
    time.sleep(0.4)
    assert len(log.read_text().splitlines()) == n_before
    assert Sweep.open(path).run(progress=False).counts["done"] == 10
    _exactly_once(s, log)


def test_a_second_driver_is_refused_while_one_runs(tmp_path):
    path = write_sweep(tmp_path, "two", traces=kernel_workloads(n=4),
                       options={"sleep_s": 1.0}, executor={"workers": 1})
    proc = _driver(path)
    s = Sweep.open(path)
    _wait_for(lambda: s.store.path.exists() and s.store.counts()["running"] >= 1)
    with pytest.raises(SweepError, match="already being run"):
        s.run(progress=False)
    assert s.status().state.isin(["queued", "running", "done"]).all()
    assert s.cancel() == 4 - s.store.counts()["done"]
    proc.wait(30)
    assert proc.returncode == 130  # the driver was told to stop and did
    c = s.store.counts()
    assert c["running"] == 0 and c["queued"] == 0 and c["done"] + c["failed"] == 4
    assert "cancelled by user" in set(s.status().reason)


def test_an_orphaned_worker_past_its_time_limit_is_killed(tmp_path):
    faults = tmp_path / "faults.json"
    path = write_sweep(tmp_path, "orphan", traces=kernel_workloads(n=2),
                       options={"faults": str(faults)},
                       resources={"cpus": 1, "mem": "1G", "time": "2s"},
                       executor={"workers": 2, "max_attempts": 1})
    s = Sweep.open(path)
    hang, ok = [j.job_id for j in s.plan().jobs]
    faults.write_text(json.dumps({hang: "hang"}))
    status = s.directory / "jobs" / hang / "status.json"
    proc = _driver(path)
    _wait_for(lambda: status.exists())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    orphan = json.loads(status.read_text())["pid"]
    assert _alive(orphan)  # still running, holding the job
    summary = Sweep.open(path).run(progress=False)
    assert summary.counts == {"queued": 0, "running": 0, "done": 1, "failed": 1}
    reason = s.status().set_index("job_id").loc[hang, "reason"]
    assert f"orphaned worker (pid {orphan}) was killed" in reason
    _wait_for(lambda: not _alive(orphan), timeout=10)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that is not ours counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _stop_while_committing(sweep_dir: str, job_id: str, spec) -> None:
    """A worker told to stop (SIGTERM, as the driver's shutdown and scancel send) just as it
    writes a finished run's result."""
    from simfront.sweep import worker

    real = worker.write_result

    def stopped_mid_write(path, result):
        os.kill(os.getpid(), signal.SIGTERM)
        real(path, result)

    worker.write_result = stopped_mid_write
    worker.run_job(sweep_dir, job_id, 1, spec)
    os._exit(0)  # not reached: the held SIGTERM lands once the result is written


def test_a_stop_while_committing_lands_after_the_result_is_written(tmp_path):
    log = tmp_path / "backend.log"
    path = write_sweep(tmp_path, "commit", traces=kernel_workloads(n=1),
                       options={"log": str(log)})
    s = Sweep.open(path)
    job = s.plan().jobs[0]
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_stop_while_committing, args=(str(s.directory), job.job_id, job))
    p.start()
    p.join(60)
    assert p.exitcode == -signal.SIGTERM  # it was stopped, and by that signal...
    result = json.loads((s.directory / "jobs" / job.job_id / "result.json").read_text())
    assert result["ok"] and result["attempt"] == 1  # ...after its result was committed
    # so the next driver takes the result instead of running the job again
    assert s.run(progress=False).counts["done"] == 1
    _exactly_once(s, log)


def test_a_result_committed_while_the_driver_stops_counts_as_done(tmp_path):
    """A worker that committed its job's result after the driver's last look: stopping
    records that job done instead of giving it back to the queue (so it is not run again)."""
    from simfront.sweep.registry import make_executor

    log = tmp_path / "backend.log"
    path = write_sweep(tmp_path, "late", traces=kernel_workloads(n=1),
                       options={"log": str(log)}, executor={"workers": 1})
    s = Sweep.open(path)
    s.sync()
    ex = make_executor("local", s.directory, s.store, s.spec.executor, s.spec.resources,
                       s.spec.name)
    claims = s.store.claim(1, ex.name)
    ex.start(claims)
    job = claims[0].job_id
    result = s.directory / "jobs" / job / "result.json"
    _wait_for(lambda: result.exists())
    finished, stopped = ex.shutdown(interrupted=True)  # not polled: its answer is unread
    assert [o.job_id for o in finished] == [job] and finished[0].ok and stopped == []
    s.store.finish(finished)
    assert s.store.counts()["done"] == 1
    assert Sweep.open(path).run(progress=False).started == 0
    _exactly_once(s, log)

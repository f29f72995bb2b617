"""The SQLite job store: plan sync, attempts, retries with backoff, concurrent processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from simfront.gpu import load_gpu
from simfront.sweep.plan import JobSpec
from simfront.sweep.store import JobStore, Outcome


H100 = load_gpu("h100")


def _spec(i: int, backend: str = "sweep-noop") -> JobSpec:
    return JobSpec(job_id=f"job{i:04d}", workload="w", trace_dir="/t", trace_hash="th",
                   trace_bytes=1000, kernels=None, base_gpu="h100", params={"sm_count": i},
                   config=f"h100[sm_count={i}]", config_hash=f"c{i}", gpu=H100, backend=backend,
                   backend_version="1")


def test_sync_keeps_done_adds_new_sets_aside_old(tmp_path):
    store = JobStore(tmp_path)
    r = store.sync_plan([_spec(i) for i in range(4)], max_attempts=3)
    assert r == {"planned": 4, "added": 4, "already_done": 0, "set_aside": 0}
    claims = store.claim(2, "local")
    assert [c.attempt for c in claims] == [1, 1]
    store.finish([Outcome(c.job_id, c.attempt, ok=True, wall_s=1.0) for c in claims])
    # a changed axis: jobs 2..5 planned now; 0 and 1 (done) leave the plan but stay stored
    r = store.sync_plan([_spec(i) for i in range(1, 6)], max_attempts=3)
    assert r == {"planned": 5, "added": 2, "already_done": 1, "set_aside": 1}
    assert store.counts() == {"queued": 4, "running": 0, "done": 1, "failed": 0}
    assert store.counts(in_plan_only=False)["done"] == 2
    # a re-sync of the same plan changes nothing
    assert store.sync_plan([_spec(i) for i in range(1, 6)], 3)["added"] == 0
    assert store.integrity_ok()


def test_failed_attempts_back_off_then_fail_with_reason(tmp_path):
    store = JobStore(tmp_path, backoff_s=10)
    store.sync_plan([_spec(0)], max_attempts=2)
    t0 = 1000.0
    (c,) = store.claim(5, "local", now=t0)
    assert store.finish([Outcome(c.job_id, 1, ok=False, exit_code=-11, reason="segv")],
                        now=t0) == {c.job_id: "queued"}
    assert store.claim(5, "local", now=t0 + 5) == []          # still backing off
    assert store.next_due() == pytest.approx(t0 + 10)
    (c2,) = store.claim(5, "local", now=t0 + 11)
    assert c2.attempt == 2
    # a late report of attempt 1 cannot touch attempt 2
    assert store.finish([Outcome(c.job_id, 1, ok=True)]) == {}
    assert store.finish([Outcome(c.job_id, 2, ok=False, exit_code=1, reason="boom")]) == \
        {c.job_id: "failed"}
    row = store.table().iloc[0]
    assert (row.state, row.attempts, row.exit_code, row.reason) == ("failed", 2, 1, "boom")
    att = store.attempts_table()
    assert list(att.reason) == ["segv", "boom"] and list(att.outcome) == ["failed", "failed"]
    assert store.retry() == 1
    (c3,) = store.claim(5, "local")
    assert c3.attempt == 1  # retry gives a fresh budget


def test_release_does_not_count_the_attempt(tmp_path):
    store = JobStore(tmp_path)
    store.sync_plan([_spec(0)], max_attempts=1)
    (c,) = store.claim(1, "local")
    assert store.release([(c.job_id, c.attempt)], "interrupted") == 1
    (c2,) = store.claim(1, "local")
    assert c2.attempt == 1


def _hammer(path: str, worker: int, out: "mp.Queue") -> None:
    store = JobStore(path, busy_timeout_s=30)
    got = []
    while True:
        claims = store.claim(3, f"w{worker}")
        if not claims:
            break
        got += [c.job_id for c in claims]
        store.finish([Outcome(c.job_id, c.attempt, ok=True, host=f"w{worker}") for c in claims])
        store.table()  # readers interleave with writers
    out.put(got)


def test_two_processes_on_one_store_never_take_a_job_twice(tmp_path):
    n = 400
    store = JobStore(tmp_path)
    store.sync_plan([_spec(i) for i in range(n)], max_attempts=1)
    store.close()
    ctx = mp.get_context("fork")  # each child opens its own connection
    q = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), w, q)) for w in range(3)]
    for p in procs:
        p.start()
    got = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    flat = [j for g in got for j in g]
    assert len(flat) == n and len(set(flat)) == n
    assert all(got), "every process got some of the work"
    store = JobStore(tmp_path)
    assert store.counts() == {"queued": 0, "running": 0, "done": n, "failed": 0}
    assert store.integrity_ok()
    assert sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_store_pickles_without_its_connection(tmp_path):
    import pickle

    store = JobStore(tmp_path)
    store.sync_plan([_spec(0)], 1)
    clone = pickle.loads(pickle.dumps(store))
    assert clone.counts()["queued"] == 1

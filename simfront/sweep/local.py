"""The local executor: a pool of forked worker processes on this machine.

Each worker is its own process group (so Ctrl-C on the terminal reaches only the driver,
and a timeout kills the worker together with any simulator it started) and talks to the
driver over its own pipe, one job at a time. A worker whose driver dies finishes the job in
hand, commits its result file and exits; the next driver adopts that result.
"""

from __future__ import annotations

import fcntl
import multiprocessing as mp
import os
import signal
import socket
import sqlite3
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from simfront.sweep.executor import Executor
from simfront.sweep.store import Claim, Outcome
from simfront.sweep.worker import job_dir, read_json, read_result, run_job


#: how long a stopped worker gets to finish committing a result before SIGKILL
STOP_GRACE_S = 5.0


def machine_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    claim: Claim | None = None
    started: float = 0.0


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        n = self.settings.workers or max(1, machine_cpus() // self.resources.cpus)
        self.n_workers = n
        self.timeout_s = float(self.resources.time_s)
        self._slots: list[_Slot] = []
        self._external: dict[str, int] = {}  # adopted attempts run by an orphaned worker
        self._host = socket.gethostname()

    # ------------------------------------------------------------------ workers

    def _spawn(self) -> _Slot:
        parent, child = mp.Pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                parent.close()
                _worker_loop(child, str(self.sweep_dir))
            finally:
                os._exit(0)
        child.close()
        slot = _Slot(_Proc(pid), parent)
        self._slots.append(slot)
        return slot

    def _idle_slot(self) -> _Slot | None:
        for s in list(self._slots):
            if s.claim is None and not s.proc.is_alive():
                self._retire(s, kill=False)  # died while idle (OOM killer, ...)
        for s in self._slots:
            if s.claim is None:
                return s
        if len(self._slots) < self.n_workers:
            return self._spawn()
        return None

    def _retire(self, slot: _Slot, kill: bool) -> None:
        if kill and slot.proc.is_alive():
            # SIGTERM first: a worker committing a finished job's result holds it off until the
            # result is written (worker._committing), so a stop cannot make that job run twice.
            _signal_group(slot.proc.pid, signal.SIGTERM)
            slot.proc.join(timeout=STOP_GRACE_S)
            if slot.proc.is_alive():
                _kill_group(slot.proc.pid)
        slot.proc.join(timeout=5)
        slot.conn.close()
        self._slots.remove(slot)

    # ------------------------------------------------------------------ interface

    def capacity(self) -> int:
        busy = sum(1 for s in self._slots if s.claim is not None)
        return max(0, self.n_workers - busy - len(self._external))  # orphans use CPUs too

    def in_flight(self) -> int:
        return sum(1 for s in self._slots if s.claim is not None) + len(self._external)

    def start(self, claims: list[Claim]) -> dict[str, str]:
        refs = {}
        for c in claims:
            slot = self._idle_slot()
            assert slot is not None, "start() called beyond capacity()"
            try:
                slot.conn.send((c.job_id, c.attempt, c.spec))
            except OSError:  # it died since we looked; one fresh worker, one more try
                self._retire(slot, kill=True)
                slot = self._spawn()
                slot.conn.send((c.job_id, c.attempt, c.spec))
            slot.claim, slot.started = c, time.time()
            refs[c.job_id] = f"{self._host}:{slot.proc.pid}"
        return refs

    def poll(self, timeout: float) -> tuple[list[Outcome], list[tuple[str, int]]]:
        busy = [s for s in self._slots if s.claim is not None]
        now = time.time()
        wait_s = timeout
        for s in busy:
            wait_s = min(wait_s, max(0.0, s.started + self.timeout_s - now))
        if self._external:
            wait_s = min(wait_s, 0.5)
        ready = set()
        if busy:
            # A worker's pipe becomes readable when it answers and when it dies.
            ready = set(wait([s.conn for s in busy], timeout=wait_s))
        elif wait_s > 0:
            time.sleep(wait_s)
        outcomes: list[Outcome] = []
        now = time.time()
        for s in busy:
            c = s.claim
            assert c is not None
            died = False
            if s.conn in ready:
                try:
                    out = s.conn.recv()
                except (EOFError, OSError):
                    died = True
                else:
                    outcomes.append(_outcome(c, out))
                    s.claim = None
                    continue
            if died or not s.proc.is_alive():
                s.proc.join(timeout=5)  # reap it, so its exit status is known
                code = s.proc.exitcode
                outcomes.append(Outcome(c.job_id, c.attempt, ok=False, exit_code=code,
                                        reason=f"worker process died ({_describe_exit(code)})",
                                        host=self._host, started_at=s.started, finished_at=now,
                                        wall_s=now - s.started))
                self._retire(s, kill=True)
            elif now - s.started >= self.timeout_s:
                self._retire(s, kill=True)
                outcomes.append(Outcome(c.job_id, c.attempt, ok=False, exit_code=-signal.SIGKILL,
                                        reason=f"timed out after {self.timeout_s:g} s "
                                               f"(resources.time); killed",
                                        host=self._host, started_at=s.started, finished_at=now,
                                        wall_s=now - s.started))
        done, lost = self._check_external()
        return outcomes + done, lost

    def adopt(self, rows: list[sqlite3.Row]) -> tuple[list[Outcome], list[tuple[str, int]]]:
        for r in rows:
            if r["executor"] == self.name:
                self._external[r["job_id"]] = r["attempts"]
        return self._check_external()

    def _check_external(self) -> tuple[list[Outcome], list[tuple[str, int]]]:
        """Attempts of an earlier driver: finished if its worker left a result, still running
        while the job's lock is held, lost otherwise."""
        outcomes, lost = [], []
        for job_id, attempt in list(self._external.items()):
            state = _probe(self.sweep_dir, job_id)
            if state == "busy":
                # An orphaned worker past the time limit would hold the job forever.
                st = read_json(job_dir(self.sweep_dir, job_id) / "status.json") or {}
                started = st.get("started_at") or time.time()
                if (st.get("host") == self._host and st.get("pid")
                        and time.time() - started > self.timeout_s):
                    _kill_group(int(st["pid"]))
                    del self._external[job_id]
                    outcomes.append(Outcome(
                        job_id, attempt, ok=False, exit_code=-signal.SIGKILL,
                        reason=f"timed out after {self.timeout_s:g} s (resources.time); its "
                               f"orphaned worker (pid {st['pid']}) was killed",
                        host=self._host, started_at=started, finished_at=time.time()))
                continue
            del self._external[job_id]
            done = _committed(self.sweep_dir, job_id, attempt)
            if done is not None:
                outcomes.append(done)
            else:
                lost.append((job_id, attempt))
        return outcomes, lost

    def cancel(self, refs: list[str]) -> None:
        for ref in refs:
            host, _, pid = (ref or "").rpartition(":")
            if host == self._host and pid.isdigit():
                _kill_group(int(pid))

    def shutdown(self, interrupted: bool) -> tuple[list[Outcome], list[tuple[str, int]]]:
        finished, stopped = [], []
        for s in list(self._slots):
            if s.claim is not None:
                c = s.claim
                self._retire(s, kill=True)
                # it may have committed its result since the last poll
                done = _committed(self.sweep_dir, c.job_id, c.attempt)
                if done is not None:
                    finished.append(done)
                else:
                    stopped.append((c.job_id, c.attempt))
            else:
                try:
                    s.conn.send(None)
                except OSError:
                    pass
                self._retire(s, kill=False)
        return finished, stopped


def _outcome(c: Claim, out: dict[str, Any]) -> Outcome:
    return Outcome(c.job_id, c.attempt, ok=bool(out.get("ok")), exit_code=out.get("exit_code"),
                   reason=out.get("reason"), host=out.get("host"),
                   started_at=out.get("started_at"), finished_at=out.get("finished_at"),
                   wall_s=out.get("wall_s"))


def _committed(sweep_dir: Path, job_id: str, attempt: int) -> Outcome | None:
    """The outcome a job's result file holds for this attempt (or an ok one of any
    attempt), else None: the attempt ended without a result."""
    r, _ = read_result(job_dir(sweep_dir, job_id) / "result.json")
    if r is not None and (r.get("ok") or r.get("attempt") == attempt):
        return _outcome(Claim(job_id, attempt, None), r)  # type: ignore[arg-type]
    return None


def _probe(sweep_dir: Path, job_id: str) -> str:
    """'busy' while some process holds the job's lock, else 'free'."""
    path = job_dir(sweep_dir, job_id) / "lock"
    if not path.exists():
        return "free"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "busy"
        fcntl.flock(f, fcntl.LOCK_UN)
    return "free"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _kill_group(pid: int) -> None:
    _signal_group(pid, signal.SIGKILL)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class _Proc:
    """A forked worker process: just enough of multiprocessing.Process, without its pipes."""

    def __init__(self, pid: int):
        self.pid = pid
        self.exitcode: int | None = None

    def _reap(self, flags: int) -> bool:
        if self.exitcode is not None:
            return True
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            self.exitcode = -1
            return True
        if pid == 0:
            return False
        self.exitcode = os.waitstatus_to_exitcode(status)
        return True

    def is_alive(self) -> bool:
        return not self._reap(os.WNOHANG)

    def join(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while not self._reap(os.WNOHANG) and time.time() < deadline:
            time.sleep(0.005)


def _worker_loop(conn: Connection, sweep_dir: str) -> None:
    # Hold nothing of the driver's: not the other workers' pipes (they would hide the
    # driver's death), not its driver lock (an orphan would keep the sweep locked), not its
    # SQLite files. Only stdio and our own pipe stay open.
    keep = conn.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, _max_fd())
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the driver is gone; nothing in hand
        if msg is None:
            os._exit(0)
        job_id, attempt, spec = msg
        try:
            out = run_job(sweep_dir, job_id, attempt, spec)
        except Exception as exc:  # the worker's own failure (disk full, ...), not the backend's
            out = {"ok": False, "reason": f"worker error: {type(exc).__name__}: {exc}",
                   "exit_code": 1}
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            os._exit(0)  # result is on disk; the next driver adopts it


def _max_fd() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 65536)
    except (ValueError, OSError):
        return 4096

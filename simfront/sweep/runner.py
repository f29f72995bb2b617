"""A sweep on disk and the driver loop that runs it.

:class:`Sweep` ties a sweep file to its directory (``jobs.sqlite``, ``jobs/``, ``batches/``,
``logs/``, ``results.h5``, a copy of the sweep file). :meth:`Sweep.run` plans, syncs the
store, adopts attempts an earlier driver left behind, then loops: claim due jobs, start
them, collect outcomes, until nothing is queued or running; then gathers the HDF5 file.
One driver per sweep at a time (a lock file says which); ``status``, ``retry`` and
``cancel`` work beside it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
from tqdm import tqdm

from simfront.core.errors import BackendError, SweepError
from simfront.sim.backend import get_backend
from simfront.sweep.executor import Executor
from simfront.sweep.plan import Plan, plan_sweep
from simfront.sweep.registry import make_executor
from simfront.sweep.results import RESULTS_FILE, gather
from simfront.sweep.spec import SweepSpec, load_sweep
from simfront.sweep.store import STORE_FILE, JobStore, Outcome, StoreDamaged
from simfront.core.atomic import file_mode
from simfront.sweep.worker import job_dir, read_json, read_result, write_json_atomic

SPEC_COPY = "sweep.yaml"
DRIVER_LOCK = "driver.lock"


@dataclass
class RunSummary:
    counts: dict[str, int]
    started: int = 0
    retried: int = 0
    interrupted: bool = False
    results: Path | None = None
    wall_s: float = 0.0
    sync: dict[str, int] = field(default_factory=dict)
    #: done jobs whose result file was lost or damaged, queued again: job id -> what was wrong
    requeued: dict[str, str] = field(default_factory=dict)
    #: where a damaged job store was moved when it was rebuilt
    rebuilt_from: Path | None = None

    @property
    def complete(self) -> bool:
        return self.counts.get("queued", 0) == 0 and self.counts.get("running", 0) == 0


class Sweep:
    """A sweep file and its directory. Holds paths only; the store opens per process."""

    def __init__(self, spec: SweepSpec, directory: str | Path | None = None):
        self.spec = spec
        self.directory = Path(directory).resolve() if directory else spec.directory
        self.store = JobStore(self.directory, backoff_s=spec.executor.backoff_s)
        self._plan: Plan | None = None

    @classmethod
    def open(cls, path: str | Path, directory: str | Path | None = None) -> "Sweep":
        """From a sweep file, or from a sweep directory (its copy of the sweep file)."""
        path = Path(path)
        if path.is_dir():
            copy = path / SPEC_COPY
            if not copy.exists():
                raise SweepError(f"not a sweep directory (no {SPEC_COPY})", path)
            spec = load_sweep(copy)
            # The copy's relative trace paths are relative to the original file's folder.
            meta = path / "sweep.json"
            if meta.exists():
                spec = replace(spec, path=Path(json.loads(meta.read_text())["sweep_file"]))
            return cls(spec, directory or path)
        s = cls(load_sweep(path), directory)
        s._check_owner()
        return s

    def _check_owner(self) -> None:
        """Two sweep files of one name would share a directory, and the second would replace
        the first's results: refuse while the first file is still where it was."""
        meta = read_json(self.directory / "sweep.json")
        if not isinstance(meta, dict) or not meta.get("sweep_file"):
            return
        owner = Path(meta["sweep_file"])
        if owner != self.spec.path and owner.is_file():
            raise SweepError(f"the sweep directory {self.directory} belongs to {owner}, which "
                             f"has the same name '{self.spec.name}'; give this sweep another "
                             f"'name:' (or 'dir:')", self.spec.path,
                             self.spec.line_of("name"), "name")

    # ------------------------------------------------------------------ plan

    def plan(self) -> Plan:
        if self._plan is None:
            self._plan = plan_sweep(self.spec)
        return self._plan

    def sync(self) -> dict[str, int]:
        """Plan and make the store's plan match (new jobs queued, old results kept)."""
        plan = self.plan()
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.spec.path != (self.directory / SPEC_COPY).resolve():
            _copy_atomic(self.spec.path, self.directory / SPEC_COPY)
            write_json_atomic(self.directory / "sweep.json",
                              {"sweep_file": str(self.spec.path), "name": self.spec.name})
        return self.store.sync_plan(plan.jobs, self.spec.executor.max_attempts)

    def estimate(self) -> Any:
        rates = self.store.rates() if self.store.path.exists() else {}
        return self.plan().estimate(rates)

    # ------------------------------------------------------------------ run

    def run(self, executor: str | None = None, progress: bool = True, wait: bool = True,
            gather_results: bool = True) -> RunSummary:
        t0 = time.time()
        with self._driver_lock():
            rebuilt = self._open_store()
            sync = self.sync()
            if rebuilt is not None:
                self._restore_done()
            kind = executor or self.spec.executor.kind
            self.refresh()
            requeued = self.verify_results()
            others = sorted({r["executor"] for r in self.store.running()} - {kind})
            if others:
                raise SweepError(f"jobs of this sweep are still running under the "
                                 f"'{others[0]}' executor; follow them with 'simfront sweep "
                                 f"run --executor {others[0]}' or stop them with 'simfront "
                                 f"sweep cancel'", self.directory)
            if kind == "local":
                self._check_backends()
            ex = make_executor(kind, self.directory, self.store, self.spec.executor,
                               self.spec.resources, self.spec.name)
            summary = drive(self.store, ex, progress=progress, wait=wait)
            summary.sync = sync
            summary.requeued, summary.rebuilt_from = requeued, rebuilt
            if gather_results:
                summary.results = self.gather()
        summary.wall_s = time.time() - t0
        return summary

    def _open_store(self) -> Path | None:
        """Check the job store; a damaged one is moved aside (returned) and a new one made,
        which ``_restore_done`` fills from the jobs' result files."""
        if not self.store.path.exists():
            return None
        try:
            self.store.check()
            return None
        except StoreDamaged:
            pass
        self.store.close()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.store.path.with_name(f"{STORE_FILE}.damaged-{stamp}")
        n = 1
        while aside.exists():  # an earlier one from the same second is kept too
            n += 1
            aside = self.store.path.with_name(f"{STORE_FILE}.damaged-{stamp}-{n}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.store.path}{suffix}")
            if src.exists():
                os.replace(src, Path(f"{aside}{suffix}"))
        print(f"warning: {self.store.path} was damaged; moved to {aside.name} and rebuilt from "
              f"the sweep file and the jobs' result files", file=sys.stderr)
        return aside

    def _restore_done(self) -> int:
        """In a rebuilt store, mark done the planned jobs whose result file says ok."""
        outs = []
        for j in self.plan().jobs:
            r, _ = read_result(job_dir(self.directory, j.job_id) / "result.json")
            if r is not None and r.get("ok"):
                outs.append(Outcome(j.job_id, int(r.get("attempt") or 1), ok=True,
                                    exit_code=r.get("exit_code"), host=r.get("host"),
                                    started_at=r.get("started_at"),
                                    finished_at=r.get("finished_at"), wall_s=r.get("wall_s")))
        return self.store.restore_done(outs)

    def verify_results(self) -> dict[str, str]:
        """Done jobs whose ``result.json`` is missing, torn or damaged hold records nowhere:
        each is queued again (its file moved aside to ``result.json.damaged``); returns job
        id -> what was wrong."""
        if not self.store.path.exists():
            return {}
        bad: dict[str, str] = {}
        for (job_id,) in self.store.conn.execute(
                "SELECT job_id FROM jobs WHERE state = 'done' AND in_plan = 1").fetchall():
            path = job_dir(self.directory, job_id) / "result.json"
            r, problem = read_result(path)
            if r is not None and not r.get("ok"):
                problem = "says the job failed, though the store has it done"
            if problem is None:
                continue
            bad[job_id] = problem
            if path.exists():
                try:
                    os.replace(path, path.with_name("result.json.damaged"))
                except OSError:
                    pass  # the worker reruns a job whose result does not read as ok anyway
        if bad:
            self.store.requeue({j: f"result.json {p}: queued again" for j, p in bad.items()})
        return bad

    def _check_backends(self) -> None:
        """Say now, not once per job, when a backend cannot run here."""
        for name in self.spec.backends:
            try:
                get_backend(name).check_available()
            except BackendError as exc:
                raise SweepError(str(exc), self.spec.path, self.spec.line_of("backends"),
                                 "backends") from None

    @contextmanager
    def _driver_lock(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / DRIVER_LOCK
        with open(path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                who = f.read().strip() or "another process"
                raise SweepError(f"sweep is already being run by {who}; wait for it, or stop it "
                                 f"with 'simfront sweep cancel'", self.directory) from None
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()}")
            f.flush()
            try:
                yield
            finally:
                f.seek(0)
                f.truncate()

    def driver_pid(self) -> int | None:
        """The pid of the driver running this sweep now, if any."""
        path = self.directory / DRIVER_LOCK
        if not path.exists():
            return None
        with open(path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                text = f.read().split()
                return int(text[1]) if len(text) == 2 and text[1].isdigit() else None
            fcntl.flock(f, fcntl.LOCK_UN)
        return None

    # ------------------------------------------------------------------ other actions

    def refresh(self) -> int:
        """Apply outcomes that workers wrote while no driver watched (``run --no-wait``, a
        killed driver); returns how many. Lost tasks are found only by ``run``."""
        if not self.store.path.exists():
            return 0
        outs = []
        for r in self.store.running():
            res, _ = read_result(job_dir(self.directory, r["job_id"]) / "result.json")
            if res is not None and (res.get("ok") or res.get("attempt") == r["attempts"]):
                outs.append(Outcome(r["job_id"], r["attempts"], ok=bool(res.get("ok")),
                                    exit_code=res.get("exit_code"), reason=res.get("reason"),
                                    host=res.get("host"), started_at=res.get("started_at"),
                                    finished_at=res.get("finished_at"),
                                    wall_s=res.get("wall_s")))
        return len(self.store.finish(outs)) if outs else 0

    def gather(self, out: str | Path | None = None) -> Path:
        """Write results.h5 from the finished jobs' result files (a damaged results.h5 is
        simply replaced). Raises SweepError, after writing, when finished jobs had lost their
        result files: they are queued again and the file lacks their records."""
        bad = self.verify_results()
        path = gather(self.directory, self.store, self.spec.name, out)
        os.chmod(path, file_mode())
        if bad:
            first = next(iter(bad))
            raise SweepError(f"{path.name} was written without the records of {len(bad)} "
                             f"finished job(s) whose result file was lost or damaged "
                             f"(jobs/{first}/result.json: {bad[first]}); they are queued again:"
                             f" 'simfront sweep run' reruns them", self.directory)
        return path

    @property
    def results_path(self) -> Path:
        return self.directory / RESULTS_FILE

    def status(self) -> pd.DataFrame:
        return self.store.table()

    def retry(self, job_ids: list[str] | None = None) -> int:
        return self.store.retry(job_ids)

    def cancel(self) -> int:
        """Stop the sweep (returns how many jobs were cancelled): the running driver (if any) is told to stop, queued and running
        jobs are marked failed ('cancelled by user'; ``retry`` requeues them), and their
        tasks are cancelled where they run."""
        pid = self.driver_pid()
        if pid is not None and pid != os.getpid():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        n, running = self.store.cancel()
        by_executor: dict[str, list[str]] = {}
        for job_id, ref in running:
            row = self.store.conn.execute("SELECT executor FROM jobs WHERE job_id = ?",
                                          (job_id,)).fetchone()
            if row and row[0] and ref:
                by_executor.setdefault(row[0], []).append(ref)
        for kind, refs in by_executor.items():
            ex = make_executor(kind, self.directory, self.store, self.spec.executor,
                               self.spec.resources, self.spec.name)
            ex.cancel(refs)
        return n


def drive(store: JobStore, ex: Executor, progress: bool = True, wait: bool = True,
          label: str = "sweep") -> RunSummary:
    """The driver loop. SIGINT/SIGTERM stop it cleanly: running local attempts are stopped
    and given back to the queue uncounted; batch tasks keep running for the next driver.
    ``label`` names the progress bar."""
    stop = _StopFlag()
    summary = RunSummary(counts={})
    bar = _Progress(store, enabled=progress, label=label)
    with stop.installed():
        try:
            done, lost = ex.adopt(store.running())
            _apply(store, done, lost, bar, summary)
            while not stop.set:
                cap = ex.capacity()
                if cap > 0:
                    claims = store.claim(cap, ex.name)
                    if claims:
                        refs = ex.start(claims)
                        store.set_refs(refs, {c.job_id: c.attempt for c in claims})
                        summary.started += len(claims)
                        bar.refresh(force=True)
                if ex.in_flight() == 0:
                    due = store.next_due()
                    if due is None:
                        break  # nothing queued, nothing running: finished
                    if not wait:
                        break
                    time.sleep(min(max(0.0, due - time.time()), 0.5))
                    continue
                if not wait and ex.name != "local":
                    break  # submitted; the scheduler runs them
                done, lost = ex.poll(0.5)
                _apply(store, done, lost, bar, summary)
            if stop.set:
                # Results already sent are finished work: record them rather than give their
                # jobs back to the queue.
                _apply(store, *ex.poll(0.0), bar, summary)
        finally:
            summary.interrupted = stop.set
            finished, stopped = ex.shutdown(interrupted=stop.set)
            if finished:
                store.finish(finished)
            if stopped:
                store.release(stopped, "interrupted: the driver stopped")
            bar.close()
    summary.counts = store.counts()
    return summary


def _apply(store: JobStore, done: list[Outcome], lost: list[tuple[str, int]], bar: "_Progress",
           summary: RunSummary) -> None:
    if done:
        states = store.finish(done)
        summary.retried += sum(1 for s in states.values() if s == "queued")
    if lost:
        store.release(lost, "attempt lost: its driver stopped before it started or finished")
    if done or lost:
        bar.refresh()


class _StopFlag:
    """First SIGINT/SIGTERM asks the loop to stop; a second SIGINT interrupts at once."""

    def __init__(self) -> None:
        self.set = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.set and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.set = True
        print(f"\nstopping ({signal.Signals(signum).name}): finishing bookkeeping...",
              file=sys.stderr)

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)


class _Progress:
    """A tqdm bar on stderr: done+failed of planned, with running/queued/failed counts."""

    def __init__(self, store: JobStore, enabled: bool, label: str = "sweep"):
        self.store = store
        self.bar = None
        if enabled:
            c = store.counts()
            total = sum(c.values())
            self.bar = tqdm(total=total, initial=c["done"] + c["failed"], unit="job",
                            desc=label, file=sys.stderr, dynamic_ncols=True, leave=True)
            self._last = 0.0
            self.refresh()

    def refresh(self, force: bool = False) -> None:
        """Redraw with the store's counts, at most five times a second unless ``force``:
        a job's end and its worker's next start come together, and the bar is to show the
        second (it showed one job running of two)."""
        if self.bar is None:
            return
        now = time.monotonic()
        if now - self._last < 0.2 and not force:
            return
        self._last = now
        c = self.store.counts()
        self.bar.n = c["done"] + c["failed"]
        self.bar.set_postfix(done=c["done"], running=c["running"], queued=c["queued"],
                             failed=c["failed"], refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self._last = 0.0
            self.refresh()
            self.bar.close()


def _copy_atomic(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)



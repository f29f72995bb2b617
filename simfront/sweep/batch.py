"""Batch-scheduler executors: attempts go out as array jobs, state comes back from the
scheduler's queue and the workers' result files.

A subclass fills in a few hooks (submitit's recipe): the script header, the submit command
and how to read its job id, a queue query, an end-of-task query and a cancel command. See
:mod:`simfront.sweep.slurm`; a PBS executor is the same size.

Per batch, ``<sweep dir>/batches/<name>.tasks`` (line i = ``<job id> <attempt>`` of array task
i) and ``<name>.sh`` are written before submission; the store records the batch before the
submit command runs and its scheduler id right after, so a driver killed in between can find
the batch again. Task logs go to ``<sweep dir>/logs/``.
"""

from __future__ import annotations

import abc
import shlex
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simfront.core.errors import SweepError
from simfront.core.paths import PACKAGE_DIR
from simfront.sweep.executor import Executor
from simfront.sweep.store import Claim, Outcome
from simfront.sweep.worker import job_dir, read_json, read_result, write_job_file


@dataclass
class _Task:
    job_id: str
    attempt: int
    batch: str
    index: int
    submitted: float


@dataclass(frozen=True)
class TaskEnd:
    """What the scheduler says about a task that left its queue."""

    state: str
    exit_code: int | None
    reason: str


class BatchExecutor(Executor):
    #: environment variable that holds the array index inside a task
    index_var: str = ""

    # ------------------------------------------------------------------ hooks

    @abc.abstractmethod
    def script_header(self, name: str, n_tasks: int, log_pattern: str) -> list[str]:
        """Directive lines (``#SBATCH ...``) for an array of ``n_tasks`` tasks."""

    @abc.abstractmethod
    def submit_command(self, script: Path) -> list[str]: ...

    @abc.abstractmethod
    def parse_job_id(self, stdout: str) -> str: ...

    @abc.abstractmethod
    def live_tasks(self, external_ids: list[str]) -> dict[tuple[str, int], str] | None:
        """(batch id, task index) -> scheduler state of tasks still queued or running;
        None when the query failed (then nothing is declared lost this round)."""

    @abc.abstractmethod
    def task_end(self, external_id: str, index: int) -> TaskEnd | None:
        """How a task that left the queue ended, if the scheduler still remembers."""

    @abc.abstractmethod
    def cancel_command(self, external_ids: list[str]) -> list[str]: ...

    def find_batch(self, name: str) -> str | None:
        """The scheduler id of a batch submitted under ``name`` whose id was not recorded."""
        return None

    # ------------------------------------------------------------------ interface

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self._tasks: dict[str, _Task] = {}
        self._batch_ids: dict[str, str | None] = {}
        self._wait = 0.25  # grows to settings.poll_s between status checks
        (self.sweep_dir / "batches").mkdir(parents=True, exist_ok=True)
        (self.sweep_dir / "logs").mkdir(parents=True, exist_ok=True)

    def capacity(self) -> int:
        return 1_000_000  # the scheduler queues; we submit everything due

    def in_flight(self) -> int:
        return len(self._tasks)

    def start(self, claims: list[Claim]) -> dict[str, str]:
        refs: dict[str, str] = {}
        chunk = self.settings.chunk
        for i in range(0, len(claims), chunk):
            part = claims[i:i + chunk]
            try:
                refs.update(self._submit(part))
            except BaseException:
                # Give back what did not go out; earlier chunks are submitted and tracked.
                self.store.release([(c.job_id, c.attempt) for c in claims[i:]
                                    if c.job_id not in refs], "submission failed")
                self.store.set_refs(refs, {c.job_id: c.attempt for c in claims})
                raise
        return refs

    def _submit(self, claims: list[Claim]) -> dict[str, str]:
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        per = self.settings.jobs_per_task
        n_tasks = -(-len(claims) // per)
        bdir = self.sweep_dir / "batches"
        for c in claims:
            write_job_file(self.sweep_dir, c.spec)
        manifest = bdir / f"{name}.tasks"
        manifest.write_text("".join(f"{c.job_id} {c.attempt}\n" for c in claims))
        log = str(self.sweep_dir / "logs" / f"{name}_%a.out")
        script = bdir / f"{name}.sh"
        script.write_text(self._script(name, n_tasks, log, manifest))
        self.store.add_batch(name, self.name, n_tasks)
        cmd = self.submit_command(script)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise SweepError(f"'{cmd[0]}' not found: is this a {self.name} login node?") from None
        except subprocess.TimeoutExpired:
            raise SweepError(f"'{shlex.join(cmd)}' did not answer in 120 s") from None
        if proc.returncode != 0:
            raise SweepError(f"'{shlex.join(cmd)}' failed (exit {proc.returncode}): "
                             f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        ext = self.parse_job_id(proc.stdout)
        self.store.set_batch_id(name, ext)
        self._batch_ids[name] = ext
        now = time.time()
        refs = {}
        for i, c in enumerate(claims):
            self._tasks[c.job_id] = _Task(c.job_id, c.attempt, name, i // per, now)
            refs[c.job_id] = f"{name}:{i // per}"
        self._wait = 0.25
        return refs

    def _script(self, name: str, n: int, log: str, manifest: Path) -> str:
        q = shlex.quote
        pkg_parent = str(PACKAGE_DIR.parent)
        per = self.settings.jobs_per_task
        lines = ["#!/bin/bash", *self.script_header(name, n, log),
                 f"# simfront sweep '{self.sweep_name}', batch {name}: {n} tasks of {per} "
                 f"job(s), listed in",
                 f"# {manifest} (line j = job id and attempt; task i runs lines "
                 f"i*{per} .. i*{per}+{per - 1}).",
                 f"export PYTHONPATH={q(pkg_parent)}${{PYTHONPATH:+:$PYTHONPATH}}",
                 f"exec {q(sys.executable)} -m simfront.sweep.worker --sweep-dir "
                 f"{q(str(self.sweep_dir))} --manifest {q(str(manifest))} --per-task {per} "
                 f"--index \"${self.index_var}\"", ""]
        return "\n".join(lines)

    def poll(self, timeout: float) -> tuple[list[Outcome], list[tuple[str, int]]]:
        time.sleep(max(0.0, min(timeout, self._wait)))
        self._wait = min(self.settings.poll_s, self._wait * 1.5)
        if not self._tasks:
            return [], []
        # Queue first, files second: a task writes its result before it leaves the queue,
        # so a task absent from the queue and without a result really ended without one.
        ids = sorted({i for i in (self._batch_ids.get(t.batch) for t in self._tasks.values()) if i})
        live = self.live_tasks(ids) if ids else {}
        outcomes, lost = [], []
        ended: list[_Task] = []
        for job_id, t in list(self._tasks.items()):
            r, _ = read_result(job_dir(self.sweep_dir, job_id) / "result.json")
            if r is not None and (r.get("ok") or r.get("attempt") == t.attempt):
                outcomes.append(_outcome(t, r))
                del self._tasks[job_id]
                continue
            ext = self._batch_ids.get(t.batch)
            if live is None or ext is None or (ext, t.index) in live:
                continue
            ended.append(t)
        # A task of several jobs that died took the job it was running with it; the jobs it
        # never started are given back uncounted, unless it started none (then it is the
        # task that fails, e.g. a broken environment, and every job's attempt counts).
        started = {t.job_id for t in ended if self._started(t)}
        tasks_with_start = {(t.batch, t.index) for t in ended if t.job_id in started}
        ends: dict[tuple[str, int], TaskEnd | None] = {}
        for t in ended:
            del self._tasks[t.job_id]
            if t.job_id not in started and (t.batch, t.index) in tasks_with_start:
                lost.append((t.job_id, t.attempt))
                continue
            ext = self._batch_ids[t.batch]
            key = (t.batch, t.index)
            if key not in ends:
                ends[key] = self.task_end(ext, t.index)
            end = ends[key]
            job_id = t.job_id
            if end is None:
                reason = f"{self.name} task {ext}_{t.index} left the queue without a result"
                outcomes.append(Outcome(job_id, t.attempt, ok=False, reason=reason))
            else:
                reason = (f"{self.name} task {ext}_{t.index} ended {end.state}"
                          f"{f' (exit code {end.exit_code})' if end.exit_code is not None else ''}"
                          f" without a result" + (f": {end.reason}" if end.reason else ""))
                log = self.sweep_dir / "logs" / f"{t.batch}_{t.index}.out"
                tail = _tail(log)
                if tail:
                    reason += f"; log ends: {tail}"
                outcomes.append(Outcome(job_id, t.attempt, ok=False, exit_code=end.exit_code,
                                        reason=reason))
        return outcomes, lost

    def _started(self, t: _Task) -> bool:
        st = read_json(job_dir(self.sweep_dir, t.job_id) / "status.json")
        return st is not None and st.get("attempt") == t.attempt

    def adopt(self, rows: list[sqlite3.Row]) -> tuple[list[Outcome], list[tuple[str, int]]]:
        batches = self.store.batches()
        outcomes, lost = [], []
        for r in rows:
            if r["executor"] != self.name:
                continue
            job_id, attempt, ref = r["job_id"], r["attempts"], r["ref"]
            res, _ = read_result(job_dir(self.sweep_dir, job_id) / "result.json")
            if res is not None and (res.get("ok") or res.get("attempt") == attempt):
                outcomes.append(_outcome(_Task(job_id, attempt, "", 0, 0), res))
                continue
            if not ref:
                lost.append((job_id, attempt))  # claimed, never submitted
                continue
            name, _, idx = ref.rpartition(":")
            ext = batches.get(name) or self.find_batch(name)
            if ext is None:
                lost.append((job_id, attempt))
                continue
            self._batch_ids[name] = ext
            self._tasks[job_id] = _Task(job_id, attempt, name, int(idx), time.time())
        return outcomes, lost

    def cancel(self, refs: list[str]) -> None:
        batches = self.store.batches()
        ids = sorted({batches[n] for n in (r.rpartition(":")[0] for r in refs if r)
                      if batches.get(n)})
        if ids:
            subprocess.run(self.cancel_command(ids), capture_output=True, text=True, timeout=60)

    def shutdown(self, interrupted: bool) -> tuple[list[Outcome], list[tuple[str, int]]]:
        # Submitted tasks keep running in the scheduler; the next `sweep run` adopts them and
        # `sweep cancel` stops them.
        return [], []


def _outcome(t: _Task, r: dict[str, Any]) -> Outcome:
    return Outcome(t.job_id, t.attempt, ok=bool(r.get("ok")), exit_code=r.get("exit_code"),
                   reason=r.get("reason"), host=r.get("host"), started_at=r.get("started_at"),
                   finished_at=r.get("finished_at"), wall_s=r.get("wall_s"))


def _tail(path: Path, n: int = 3) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[-500:]

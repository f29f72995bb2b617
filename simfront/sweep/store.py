"""The job store: one SQLite file in the sweep's directory that says what every job is doing.

States: ``queued`` -> ``running`` -> ``done`` | ``failed`` (a failed attempt with attempts
left goes back to ``queued`` after a backoff). Every change is one transaction; claims use
``BEGIN IMMEDIATE`` so two drivers on one store never take the same job; WAL mode and a busy
timeout let readers (``sweep status``) work while a driver writes. Outcomes carry the attempt
number they belong to, and an outcome for an attempt that is no longer current is ignored, so
a late or repeated report can never undo a newer state.

The store holds a path, not an open connection (one is opened per process on first use), so
objects that hold a store can be pickled into worker processes.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd

from simfront.core.errors import SweepError
from simfront.sweep.plan import JobSpec

STATES = ("queued", "running", "done", "failed")
STORE_FILE = "jobs.sqlite"


class StoreDamaged(SweepError):
    """The job store's file is not a readable SQLite database (torn, overwritten, corrupted):
    ``Sweep.rebuild_store`` makes a new one from the sweep file and the jobs' result files."""


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error means the file itself is damaged (not busy, not a full disk)."""
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(exc) for s in ("malformed", "not a database"))
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id       TEXT PRIMARY KEY,
    seq          INTEGER NOT NULL,
    in_plan      INTEGER NOT NULL DEFAULT 1,
    workload     TEXT NOT NULL,
    config       TEXT NOT NULL,
    backend      TEXT NOT NULL,
    params       TEXT NOT NULL,
    spec         TEXT NOT NULL,
    trace_bytes  INTEGER NOT NULL DEFAULT 0,
    state        TEXT NOT NULL CHECK (state IN ('queued','running','done','failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    not_before   REAL NOT NULL DEFAULT 0,
    exit_code    INTEGER,
    reason       TEXT,
    host         TEXT,
    executor     TEXT,
    ref          TEXT,
    queued_at    REAL,
    started_at   REAL,
    finished_at  REAL,
    wall_s       REAL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, in_plan, not_before);
CREATE TABLE IF NOT EXISTS attempts (
    job_id      TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    executor    TEXT,
    ref         TEXT,
    host        TEXT,
    started_at  REAL,
    finished_at REAL,
    outcome     TEXT,
    exit_code   INTEGER,
    reason      TEXT,
    PRIMARY KEY (job_id, attempt)
);
CREATE TABLE IF NOT EXISTS batches (
    name        TEXT PRIMARY KEY,
    executor    TEXT NOT NULL,
    external_id TEXT,
    n_tasks     INTEGER NOT NULL,
    created_at  REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Claim:
    """A job handed to an executor for one attempt."""

    job_id: str
    attempt: int
    spec: JobSpec


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended. ``ok`` False with ``retryable`` True may be retried."""

    job_id: str
    attempt: int
    ok: bool
    exit_code: int | None = None
    reason: str | None = None
    host: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    wall_s: float | None = None
    retryable: bool = True


class JobStore:
    """The SQLite job store of one sweep directory (``<dir>/jobs.sqlite``)."""

    FILE = "jobs.sqlite"

    def __init__(self, directory: str | Path, backoff_s: float = 2.0, busy_timeout_s: float = 60):
        self.directory = Path(directory)
        self.path = self.directory / self.FILE
        self.backoff_s = backoff_s
        self.busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["_conn"], d["_pid"] = None, -1
        return d

    # ------------------------------------------------------------------ connection

    @property
    def conn(self) -> sqlite3.Connection:
        # A connection must never cross a fork: a child opens its own.
        if self._conn is None or self._pid != os.getpid():
            try:
                return self._connect()
            except sqlite3.DatabaseError as exc:
                self._conn = None
                raise self.error(exc) from None
        return self._conn

    def error(self, exc: sqlite3.Error) -> SweepError:
        """A SQLite error as a one-line SweepError naming the store (StoreDamaged when the
        file itself is damaged)."""
        if is_damage(exc):
            return StoreDamaged(f"job store is damaged ({exc}); 'simfront sweep run' rebuilds "
                                f"it from the sweep file and the jobs' result files", self.path)
        name = getattr(exc, "sqlite_errorname", "")
        if name.startswith(("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN")):
            return SweepError(f"job store: {exc} (is the disk full, or the folder read-only? "
                              f"finished jobs are kept: free space or fix the folder, then run "
                              f"again)", self.path)
        return SweepError(f"job store: {exc}", self.path)

    def check(self) -> None:
        """Raise StoreDamaged unless SQLite's quick check passes (pages, indexes, rows)."""
        try:
            row = self.conn.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise self.error(exc) from None
        if row is None or row[0] != "ok":
            raise StoreDamaged(f"job store is damaged (quick_check: {row[0] if row else '?'}); "
                               f"'simfront sweep run' rebuilds it from the sweep file and the "
                               f"jobs' result files", self.path)

    def _connect(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        try:
            return self._setup(conn)
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _setup(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise SweepError(f"job store cannot use WAL mode (got '{mode}'); is the sweep "
                             "directory on a network filesystem? Use a local disk.",
                             self.path)
        # WAL + NORMAL: a commit survives a killed process; only power loss can lose the
        # last commits, and then the worker's result files restore them.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn, self._pid = conn, os.getpid()
        with self._tx(immediate=True):
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise SweepError(f"job store schema {row[0]} is newer than this simfront "
                                 f"reads ({SCHEMA_VERSION}); upgrade simfront", self.path)
        return conn

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def _tx(self, immediate: bool = True) -> "_Tx":
        return _Tx(self._conn if self._conn is not None else self.conn, immediate)

    # ------------------------------------------------------------------ plan

    def sync_plan(self, jobs: list[JobSpec], max_attempts: int,
                  set_aside_others: bool = True) -> dict[str, int]:
        """Make the store's plan the given jobs: new ids are queued, known ids keep their
        state and results (done stays done), ids no longer planned are kept but set aside.
        ``set_aside_others`` False adds the jobs to the plan instead (a store that serves as
        a cache of runs, as the what-ifs' does, where each caller plans what it needs)."""
        now = time.time()
        conn = self.conn
        with self._tx():
            known = {r[0]: r[1] for r in conn.execute("SELECT job_id, state FROM jobs")}
            seq0 = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM jobs").fetchone()[0]
            if set_aside_others:
                conn.execute("UPDATE jobs SET in_plan = 0")
            added = 0
            for i, j in enumerate(jobs):
                spec = json.dumps(j.to_dict(), sort_keys=True)
                if j.job_id in known:
                    conn.execute("UPDATE jobs SET in_plan = 1, seq = ?, spec = ?, max_attempts = ?,"
                                 " workload = ?, config = ? WHERE job_id = ?",
                                 (seq0 + i + 1, spec, max_attempts, j.workload, j.config, j.job_id))
                else:
                    added += 1
                    conn.execute(
                        "INSERT INTO jobs (job_id, seq, workload, config, backend, params, spec,"
                        " trace_bytes, state, max_attempts, queued_at) VALUES"
                        " (?,?,?,?,?,?,?,?,'queued',?,?)",
                        (j.job_id, seq0 + i + 1, j.workload, j.config, j.backend,
                         json.dumps(j.params, sort_keys=True, default=str), spec, j.trace_bytes,
                         max_attempts, now))
            n_plan = len(jobs)
        kept = sum(1 for j in jobs if known.get(j.job_id) == "done")
        return {"planned": n_plan, "added": added, "already_done": kept,
                "set_aside": len(set(known) - {j.job_id for j in jobs}) if set_aside_others
                else 0}

    # ------------------------------------------------------------------ claiming

    def claim(self, limit: int, executor: str, host: str | None = None,
              now: float | None = None, only: "Iterable[str] | None" = None) -> list[Claim]:
        """Atomically move up to ``limit`` due queued jobs to running, one attempt each;
        ``only``: of these job ids (a caller that runs its own jobs of a shared store)."""
        if limit <= 0:
            return []
        now = time.time() if now is None else now
        host = host or socket.gethostname()
        conn = self.conn
        ids = sorted(only) if only is not None else None
        which = f" AND job_id IN ({','.join('?' * len(ids))})" if ids is not None else ""
        with self._tx():
            rows = conn.execute(
                "SELECT job_id, attempts, spec FROM jobs WHERE state = 'queued' AND in_plan = 1"
                " AND not_before <= ?" + which + " ORDER BY seq LIMIT ?",
                (now, *(ids or ()), limit)).fetchall()
            claims = []
            for r in rows:
                attempt = r["attempts"] + 1
                conn.execute("UPDATE jobs SET state = 'running', attempts = ?, started_at = ?,"
                             " finished_at = NULL, host = ?, executor = ?, ref = NULL,"
                             " exit_code = NULL WHERE job_id = ?",
                             (attempt, now, host, executor, r["job_id"]))
                conn.execute("INSERT OR REPLACE INTO attempts (job_id, attempt, executor, host,"
                             " started_at) VALUES (?,?,?,?,?)",
                             (r["job_id"], attempt, executor, host, now))
                claims.append(Claim(r["job_id"], attempt, JobSpec.from_dict(json.loads(r["spec"]))))
        return claims

    def set_refs(self, refs: dict[str, str], attempts: dict[str, int]) -> None:
        """Record where each running attempt lives (a pid, a Slurm array task)."""
        conn = self.conn
        with self._tx():
            for job_id, ref in refs.items():
                conn.execute("UPDATE jobs SET ref = ? WHERE job_id = ? AND attempts = ?"
                             " AND state = 'running'", (ref, job_id, attempts[job_id]))
                conn.execute("UPDATE attempts SET ref = ? WHERE job_id = ? AND attempt = ?",
                             (ref, job_id, attempts[job_id]))

    # ------------------------------------------------------------------ outcomes

    def finish(self, outcomes: Iterable[Outcome], now: float | None = None) -> dict[str, str]:
        """Apply attempt outcomes in one transaction; returns the new state per job applied.
        Outcomes of attempts that are not the job's current running attempt are ignored."""
        now = time.time() if now is None else now
        conn = self.conn
        applied: dict[str, str] = {}
        with self._tx():
            for o in outcomes:
                row = conn.execute("SELECT state, attempts, max_attempts FROM jobs WHERE job_id = ?",
                                   (o.job_id,)).fetchone()
                if row is None or row["state"] != "running" or row["attempts"] != o.attempt:
                    continue
                finished = o.finished_at or now
                if o.ok:
                    state, not_before = "done", 0.0
                elif o.retryable and row["attempts"] < row["max_attempts"]:
                    state = "queued"
                    not_before = now + self.backoff_s * 2 ** (row["attempts"] - 1)
                else:
                    state, not_before = "failed", 0.0
                conn.execute(
                    "UPDATE jobs SET state = ?, not_before = ?, exit_code = ?, reason = ?,"
                    " host = COALESCE(?, host), started_at = COALESCE(?, started_at),"
                    " finished_at = ?, wall_s = ? WHERE job_id = ?",
                    (state, not_before, o.exit_code, None if o.ok else o.reason, o.host,
                     o.started_at, finished, o.wall_s, o.job_id))
                conn.execute(
                    "UPDATE attempts SET outcome = ?, exit_code = ?, reason = ?,"
                    " host = COALESCE(?, host), started_at = COALESCE(?, started_at),"
                    " finished_at = ? WHERE job_id = ? AND attempt = ?",
                    ("ok" if o.ok else "failed", o.exit_code, o.reason, o.host, o.started_at,
                     finished, o.job_id, o.attempt))
                applied[o.job_id] = state
        return applied

    def release(self, claims: Iterable[tuple[str, int]], reason: str) -> int:
        """Give running attempts back to the queue without counting them (Ctrl-C, a driver
        that stopped before the attempt started)."""
        conn = self.conn
        n = 0
        with self._tx():
            for job_id, attempt in claims:
                cur = conn.execute("UPDATE jobs SET state = 'queued', attempts = attempts - 1,"
                                   " ref = NULL, not_before = 0, reason = ? WHERE job_id = ?"
                                   " AND state = 'running' AND attempts = ?",
                                   (reason, job_id, attempt))
                if cur.rowcount:
                    n += 1
                    conn.execute("UPDATE attempts SET outcome = 'released', reason = ?,"
                                 " finished_at = ? WHERE job_id = ? AND attempt = ?",
                                 (reason, time.time(), job_id, attempt))
        return n

    def requeue(self, reasons: dict[str, str]) -> int:
        """Queue done jobs again with a fresh attempt budget (their result file was lost or
        damaged, so their records exist nowhere); ``reasons`` maps job id to why."""
        conn = self.conn
        n = 0
        with self._tx():
            for job_id, reason in reasons.items():
                n += conn.execute("UPDATE jobs SET state = 'queued', attempts = 0, not_before = 0,"
                                  " ref = NULL, reason = ? WHERE job_id = ? AND state = 'done'",
                                  (reason, job_id)).rowcount
        return n

    def restore_done(self, outcomes: Iterable[Outcome]) -> int:
        """Mark queued jobs done from result files found on disk (a rebuilt store)."""
        conn = self.conn
        n = 0
        with self._tx():
            for o in outcomes:
                n += conn.execute(
                    "UPDATE jobs SET state = 'done', attempts = ?, exit_code = ?, reason = NULL,"
                    " host = ?, started_at = ?, finished_at = ?, wall_s = ? WHERE job_id = ?"
                    " AND state = 'queued'",
                    (o.attempt, o.exit_code, o.host, o.started_at, o.finished_at, o.wall_s,
                     o.job_id)).rowcount
        return n

    # ------------------------------------------------------------------ batches

    def add_batch(self, name: str, executor: str, n_tasks: int) -> None:
        with self._tx():
            self.conn.execute("INSERT OR REPLACE INTO batches VALUES (?,?,NULL,?,?)",
                              (name, executor, n_tasks, time.time()))

    def set_batch_id(self, name: str, external_id: str) -> None:
        with self._tx():
            self.conn.execute("UPDATE batches SET external_id = ? WHERE name = ?",
                              (external_id, name))

    def batches(self) -> dict[str, str | None]:
        return {r[0]: r[1] for r in self.conn.execute("SELECT name, external_id FROM batches")}

    # ------------------------------------------------------------------ user actions

    def retry(self, job_ids: list[str] | None = None, reset_attempts: bool = True) -> int:
        """Queue failed jobs (all, or the given ids) again with a fresh attempt budget."""
        conn = self.conn
        with self._tx():
            q = "UPDATE jobs SET state = 'queued', not_before = 0, reason = NULL"
            if reset_attempts:
                q += ", attempts = 0"
            q += " WHERE state = 'failed' AND in_plan = 1"
            if job_ids:
                rows = 0
                for jid in job_ids:
                    rows += conn.execute(q + " AND job_id LIKE ?", (jid + "%",)).rowcount
                return rows
            return conn.execute(q).rowcount

    def cancel(self, reason: str = "cancelled by user") -> tuple[int, list[tuple[str, str | None]]]:
        """Mark queued and running jobs failed (retry brings them back); returns how many,
        and the running ones' (job_id, ref) so the caller can stop them where they run."""
        conn = self.conn
        with self._tx():
            running = [(r[0], r[1]) for r in conn.execute(
                "SELECT job_id, ref FROM jobs WHERE state = 'running'")]
            conn.execute("UPDATE attempts SET outcome = 'cancelled', reason = ?, finished_at = ?"
                         " WHERE outcome IS NULL AND job_id IN (SELECT job_id FROM jobs WHERE"
                         " state = 'running')", (reason, time.time()))
            n = conn.execute("UPDATE jobs SET state = 'failed', reason = ?, finished_at = ?"
                             " WHERE state IN ('queued', 'running')",
                             (reason, time.time())).rowcount
        return n, running

    # ------------------------------------------------------------------ reading

    def counts(self, in_plan_only: bool = True) -> dict[str, int]:
        q = "SELECT state, COUNT(*) FROM jobs" + (" WHERE in_plan = 1" if in_plan_only else "")
        out = {s: 0 for s in STATES}
        for state, n in self.conn.execute(q + " GROUP BY state"):
            out[state] = n
        return out

    def running(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM jobs WHERE state = 'running' ORDER BY seq").fetchall()

    def next_due(self) -> float | None:
        """When the earliest queued job becomes due (None when nothing is queued)."""
        row = self.conn.execute("SELECT MIN(not_before) FROM jobs WHERE state = 'queued'"
                                " AND in_plan = 1").fetchone()
        return row[0]

    def table(self, in_plan_only: bool = True) -> pd.DataFrame:
        q = ("SELECT job_id, workload, config, backend, params, state, attempts, max_attempts,"
             " exit_code, reason, host, executor, ref, started_at, finished_at, wall_s,"
             " trace_bytes, in_plan FROM jobs" + (" WHERE in_plan = 1" if in_plan_only else "")
             + " ORDER BY seq")
        return pd.read_sql_query(q, self.conn)

    def attempts_table(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM attempts ORDER BY job_id, attempt", self.conn)

    def specs(self, state: str | None = None, in_plan_only: bool = True) -> Iterator[JobSpec]:
        q = "SELECT spec FROM jobs WHERE 1=1"
        args: list[Any] = []
        if in_plan_only:
            q += " AND in_plan = 1"
        if state:
            q += " AND state = ?"
            args.append(state)
        for (spec,) in self.conn.execute(q + " ORDER BY seq", args).fetchall():
            yield JobSpec.from_dict(json.loads(spec))

    def rates(self) -> dict[str, float]:
        """Measured seconds per MB of trace per backend, from finished jobs."""
        out = {}
        for backend, s, b in self.conn.execute(
                "SELECT backend, SUM(wall_s), SUM(trace_bytes) FROM jobs WHERE state = 'done'"
                " AND wall_s IS NOT NULL GROUP BY backend"):
            if b:
                out[backend] = s / (b / 1e6)
        return out

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


class _Tx:
    """``BEGIN IMMEDIATE`` .. ``COMMIT``, rolled back on any exception (KeyboardInterrupt too)."""

    def __init__(self, conn: sqlite3.Connection, immediate: bool):
        self.conn, self.immediate = conn, immediate

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")

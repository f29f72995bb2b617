"""CLI of the sweep stage: thin wrappers over the library functions of simfront.sweep."""

from __future__ import annotations

import errno
import functools
import sqlite3
import sys
from pathlib import Path
from typing import Any, Callable

import click

from simfront.core.errors import SimfrontError, SweepError
from simfront.sweep.runner import Sweep

_WHERE = click.argument("sweep", type=click.Path(exists=True, path_type=Path))
_DIR = click.option("--dir", "directory", type=click.Path(path_type=Path), default=None,
                    help="Sweep directory (default: from the sweep file, .sweeps/<name>).")


def _open(sweep: Path, directory: Path | None) -> Sweep:
    s = Sweep.open(sweep, directory)
    click.get_current_context().meta["simfront.sweep"] = s
    return s


def _one_line_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What the file system or SQLite refuses (a read-only folder, a full disk, a damaged
    job store) as a one-line SweepError naming the file, not a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except SimfrontError:
            raise
        except sqlite3.Error as exc:
            s = click.get_current_context().meta.get("simfront.sweep")
            if s is None:
                raise SweepError(f"job store: {exc}", kw.get("sweep")) from None
            raise s.store.error(exc) from None
        except OSError as exc:
            s = click.get_current_context().meta.get("simfront.sweep")
            # a write to an open file names no file: the sweep folder is where it happened
            where = exc.filename or (s.directory if s is not None else kw.get("sweep"))
            msg = exc.strerror or str(exc)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                msg += ("; finished jobs are kept: free space or fix the folder, then run "
                        "again")
            raise SweepError(msg, where) from None

    return wrapper


@click.group("sweep")
def sweep() -> None:
    """Sweep files: plan jobs, run them locally or on Slurm, follow and fix them."""


@sweep.command("plan")
@_WHERE
@_DIR
@click.option("--list", "show", is_flag=True, help="List every job.")
@_one_line_errors
def plan_cmd(sweep: Path, directory: Path | None, show: bool) -> None:
    """Expand SWEEP (a sweep file) into jobs; print their count and estimated cost."""
    s = _open(sweep, directory)
    plan = s.plan()
    click.echo(f"sweep '{s.spec.name}' -> {s.directory}")
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    if plan.duplicates:
        click.echo(f"({plan.duplicates} combinations gave an identical job and were merged)")
    click.echo(s.estimate().describe())
    if s.store.path.exists():
        known = set(s.store.table(in_plan_only=False).query("state == 'done'").job_id)
        n_done = sum(1 for j in plan.jobs if j.job_id in known)
        click.echo(f"{n_done} of them already done in the job store; "
                   f"{len(plan.jobs) - n_done} to run")
    if show:
        for j in plan.jobs:
            params = ",".join(f"{k}={v}" for k, v in j.params.items())
            click.echo(f"{j.job_id}  {j.workload}  {j.backend}  {params or j.config}")


@sweep.command("run")
@_WHERE
@_DIR
@click.option("--executor", type=str, default=None,
              help="Override the sweep file's executor (local, slurm).")
@click.option("--no-wait", is_flag=True, help="Batch executors: submit and return.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@_one_line_errors
def run_cmd(sweep: Path, directory: Path | None, executor: str | None, no_wait: bool,
            quiet: bool) -> None:
    """Run the jobs of SWEEP not yet done; resumes whatever an earlier run left."""
    s = _open(sweep, directory)
    summary = s.run(executor=executor, progress=not quiet, wait=not no_wait)
    for note in s.plan().notes:
        click.echo(f"note: {note}", err=True)
    if summary.requeued:
        click.echo(f"{len(summary.requeued)} finished job(s) had lost or damaged result files "
                   f"and were queued again, e.g. {_first(summary.requeued)}", err=True)
    c = summary.counts
    sync = summary.sync
    click.echo(f"planned {sync.get('planned', 0)} jobs ({sync.get('added', 0)} new); "
               f"started {summary.started} attempts, {summary.retried} retried; "
               f"done {c['done']}, failed {c['failed']}, running {c['running']}, "
               f"queued {c['queued']} ({summary.wall_s:.1f} s)")
    if summary.results:
        click.echo(f"results: {summary.results}")
    if summary.interrupted:
        click.echo("interrupted: run again to resume", err=True)
        sys.exit(130)
    if c["failed"]:
        click.echo("some jobs failed: 'simfront sweep status --failed' says why, "
                   "'simfront sweep retry' queues them again", err=True)
        sys.exit(1)


@sweep.command("status")
@_WHERE
@_DIR
@click.option("--jobs", "show_jobs", is_flag=True, help="One line per job.")
@click.option("--failed", is_flag=True, help="List failed jobs and their reasons.")
@_one_line_errors
def status_cmd(sweep: Path, directory: Path | None, show_jobs: bool, failed: bool) -> None:
    """Counts per state (and per job with --jobs) from the job store."""
    s = _open(sweep, directory)
    pid = s.driver_pid()
    if pid is None:
        s.refresh()  # outcomes written while no driver watched
        requeued = s.verify_results()
        if requeued:
            click.echo(f"{len(requeued)} job(s) marked done had lost or damaged result files "
                       f"and are queued again ('simfront sweep run' reruns them), e.g. "
                       f"{_first(requeued)}", err=True)
    df = s.status()
    c = s.store.counts()
    click.echo(f"sweep '{s.spec.name}' ({s.directory}): {len(df)} jobs: " +
               ", ".join(f"{k} {v}" for k, v in c.items()))
    click.echo(f"driver: pid {pid}" if pid else "driver: none running")
    if s.results_path.exists():
        click.echo(f"results: {s.results_path}{_h5_state(s.results_path)}")
    if show_jobs or failed:
        rows = df[df.state == "failed"] if failed else df
        for r in rows.itertuples(index=False):
            wall = f"{r.wall_s:.1f}s" if r.wall_s == r.wall_s and r.wall_s is not None else "-"
            line = (f"{r.job_id}  {r.state:<7} try {r.attempts}/{r.max_attempts}  {wall:>8}  "
                    f"{r.workload}  {r.config}  {r.backend}")
            if r.reason:
                line += f"\n    reason: {r.reason}"
            click.echo(line)


@sweep.command("retry")
@_WHERE
@_DIR
@click.argument("job_ids", nargs=-1)
@_one_line_errors
def retry_cmd(sweep: Path, directory: Path | None, job_ids: tuple[str, ...]) -> None:
    """Queue failed jobs again (all, or those whose ids start with JOB_IDS)."""
    s = _open(sweep, directory)
    n = s.retry(list(job_ids) or None)
    click.echo(f"{n} failed jobs queued again; 'simfront sweep run' runs them")


@sweep.command("cancel")
@_WHERE
@_DIR
@_one_line_errors
def cancel_cmd(sweep: Path, directory: Path | None) -> None:
    """Stop the sweep's driver and tasks; queued and running jobs are marked failed."""
    s = _open(sweep, directory)
    n = s.cancel()
    click.echo(f"cancelled {n} queued or running jobs; 'simfront sweep retry' requeues them")


@sweep.command("gather")
@_WHERE
@_DIR
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None,
              help="HDF5 file to write (default: <sweep dir>/results.h5).")
@_one_line_errors
def gather_cmd(sweep: Path, directory: Path | None, out: Path | None) -> None:
    """Write finished jobs' records into the sweep's HDF5 file (atomically)."""
    s = _open(sweep, directory)
    click.echo(str(s.gather(out)))


def _first(bad: dict[str, str]) -> str:
    job_id, problem = next(iter(bad.items()))
    return f"jobs/{job_id}/result.json: {problem}"


def _h5_state(path: Path) -> str:
    """'' for a readable results file, else what is wrong and how to rebuild it."""
    from simfront.stats.h5store import read_attrs

    try:
        read_attrs(path)
    except (SimfrontError, OSError) as exc:
        return (f" (unreadable: {getattr(exc, 'reason', exc)}; 'simfront sweep gather' "
                f"rebuilds it from the jobs' result files)")
    return ""


# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [sweep]

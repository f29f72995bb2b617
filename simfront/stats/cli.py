"""CLI of the stats stage: thin wrappers over the library functions of simfront.stats."""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path

import click

from simfront.core.errors import InputError

#: Columns `stats parse` and `stats show` print by default.
SUMMARY_COLUMNS = ("kernel_uid", "kernel_id", "complete", "cycles", "instructions",
                   "thread_instructions", "ipc", "accelsim_gpu_ipc", "l1_hit_rate",
                   "l2_hit_rate", "dram_read_bytes", "dram_write_bytes", "dram_util",
                   "sim_wall_s", "kernel_name")


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:.4g}"
    if isinstance(v, str) and len(v) > 60:
        return v[:57] + "..."
    return str(v)


def _table(rows: list[dict], columns: list[str]) -> str:
    cols = [c for c in columns if any(c in r for r in rows)]
    cells = [[_fmt(r.get(c, float("nan"))) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(x.rjust(w) for x, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


#: exit status of ``stats parse`` when the log is of a failed run (a crash, an assertion, a
#: cut-off log): what was parsed is still printed, and scripts can tell (2 is bad input).
FAILED_RUN_EXIT = 1


@click.group("stats")
def stats() -> None:
    """Per-kernel records: parse simulator output, show and export HDF5 results."""


@stats.command("parse")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--columns", "-c", default=None,
              help="comma-separated columns (globs allowed, e.g. 'cycles,stall_*'); "
                   "default: a summary")
@click.option("--all", "all_columns", is_flag=True, help="every column, one kernel per block")
@click.option("--json", "as_json", is_flag=True, help="print the records as JSON")
def parse_cmd(log: Path, columns: str | None, all_columns: bool, as_json: bool) -> None:
    """Parse a GPGPU-Sim/Accel-Sim stdout (plain, .xz or .zst) into per-kernel records.

    Exits 1 when the log is of a failed run (after printing what was parsed), 2 on bad input."""
    from simfront.sim.accelsim.parse import kernel_records, parse_file

    parsed = parse_file(log)
    records = kernel_records(parsed)
    if as_json:
        click.echo(json.dumps({"records": records, "failure": parsed.failure,
                               "unknown_lines": dict(parsed.unknown)}, indent=1, default=str))
        if not parsed.ok:
            raise click.exceptions.Exit(FAILED_RUN_EXIT)
        return
    if all_columns:
        for r in records:
            click.echo(f"--- kernel {r.get('kernel_uid')} ---")
            for k, v in r.items():
                click.echo(f"{k:48s} {_fmt(v) if not isinstance(v, str) else v}")
    else:
        cols = list(SUMMARY_COLUMNS)
        if columns:
            allkeys = list(dict.fromkeys(k for r in records for k in r))
            cols = []
            for pat in columns.split(","):
                cols += [k for k in allkeys if fnmatch.fnmatchcase(k, pat.strip())
                         and k not in cols]
        click.echo(_table(records, cols) if records else "(no kernel statistics in this log)")
    status = "ok" if parsed.ok else f"FAILED: {parsed.failure}"
    click.echo(f"\nrun: {status}", err=True)
    click.echo(f"{parsed.n_lines:,} lines, {len(parsed.blocks)} kernel statistics blocks, "
               f"{parsed.n_unknown} unknown lines", err=True)
    for shape, n in parsed.unknown.most_common(10):
        click.echo(f"  unknown x{n}: {shape}", err=True)
    if not parsed.ok:
        raise click.exceptions.Exit(FAILED_RUN_EXIT)


@stats.command("show")
@click.argument("h5", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--jobs", "show_jobs", is_flag=True, help="show the jobs table instead")
@click.option("--columns", "-c", default=None, help="comma-separated columns to print")
@click.option("--info", is_flag=True, help="list the columns with dtype and unit")
def show_cmd(h5: Path, show_jobs: bool, columns: str | None, info: bool) -> None:
    """Show a results HDF5 file: attributes, then records (or jobs)."""
    from simfront.stats import h5store

    attrs = h5store.read_attrs(h5)
    for k, v in attrs.items():
        click.echo(f"{k}: {v}")
    if info:
        click.echo(h5store.column_info(h5, "jobs" if show_jobs else "records").to_string())
        return
    df = h5store.read_jobs(h5) if show_jobs else h5store.read_records(h5)
    if columns:
        want = [c.strip() for c in columns.split(",")]
        missing = [c for c in want if c not in df.columns]
        if missing:
            raise InputError(f"no column(s) {', '.join(missing)}", h5)
        df = df[want]
    elif not show_jobs:
        df = df[[c for c in SUMMARY_COLUMNS + ("job_id", "config") if c in df.columns]]
    click.echo(f"\n{len(df)} rows")
    click.echo(df.to_string(max_colwidth=48))


@stats.command("export")
@click.argument("h5", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="output file; .csv or .parquet")
@click.option("--jobs", "export_jobs", is_flag=True, help="export the jobs table instead")
def export_cmd(h5: Path, out: Path, export_jobs: bool) -> None:
    """Export the records (or jobs) table of a results file to CSV or Parquet."""
    from simfront.stats import h5store

    h5store.export_table(h5, out, "jobs" if export_jobs else "records")
    click.echo(f"wrote {out}", err=True)


# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [stats]

"""``simfront analyze threeway``: the command over :mod:`simfront.analysis.threeway`."""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from simfront.analysis.report import Report

from simfront.analysis.threeway import add_threeway, three_way

from simfront.core.errors import InputError

from simfront.core.ncu import read_ncu_csv

from simfront.gpu import config_hash, load_gpu


@click.command("threeway")
@click.argument("results", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--ncu", "ncu", multiple=True, metavar="WORKLOAD=CSV",
              help="ncu records of a workload's step (default: the trace store's ncu.csv "
                   "of each workload that has one).")
@click.option("--base", default="h100", show_default=True,
              help="The baseline GPU the what-ifs are against: a preset or description "
                   "file, or a config name as the records write it (results made under an "
                   "earlier description, whose hash the preset no longer has).")
@click.option("--tol", default=0.05, show_default=True,
              help="Relative difference of two what-if ratios that counts as disagreement.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write the tables (CSV) and a report (HTML + Markdown) here.")
def threeway_cmd(results: tuple[Path, ...], ncu: tuple[str, ...], base: str, tol: float,
                 out: Path | None) -> None:
    """Model vs Accel-Sim vs H100, per kernel and per step, at the baseline and under each
    what-if in RESULTS (sweep HDF5 files holding both backends); says where the two
    simulators disagree on a what-if."""
    from simfront.stats.h5store import read_records

    records = pd.concat([read_records(p) for p in results], ignore_index=True)
    hw = {}
    for item in ncu:
        w, sep, path = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected WORKLOAD=CSV, got {item!r}", param_hint="--ncu")
        hw[w] = read_ncu_csv(path)
    if not ncu:
        from simfront.traces.store import TraceStore

        for w in sorted(records["workload"].dropna().unique()):
            try:
                p = TraceStore().get(str(w)).path / "ncu.csv"
            except (InputError, LookupError):
                continue
            if p.is_file():
                hw[str(w)] = read_ncu_csv(p)
    named = records.loc[records["config"] == base, "config_hash"] \
        if "config" in records else pd.Series(dtype=str)
    base_hash = str(named.iloc[0]) if len(named) else config_hash(load_gpu(base))
    t = three_way(records, hw, base_hash, tol)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        if len(t.errors):
            click.echo(t.errors.to_string(index=False, float_format="{:.4g}".format))
        click.echo(t.steps.to_string(index=False, float_format="{:.6g}".format))
        if len(t.whatifs):
            click.echo(t.whatifs.drop(columns=["config_hash"]).to_string(
                index=False, float_format="{:.4f}".format))
    for d in t.disagreements:
        click.secho(f"disagree: {d}", fg="yellow")
    if not t.disagreements and len(t.whatifs):
        click.echo("Accel-Sim and the model agree on every what-if here.")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name, df in (("kernels", t.kernels), ("steps", t.steps), ("whatifs", t.whatifs),
                         ("errors", t.errors)):
            df.to_csv(out / f"threeway_{name}.csv", index=False)
        rep = Report("Model vs Accel-Sim vs H100", out,
                     provenance={"results": [str(p) for p in results], "base": base,
                                 "tol": tol})
        add_threeway(rep, t)
        h, m = rep.write("threeway")
        click.echo(f"report: {h} and {m}", err=True)

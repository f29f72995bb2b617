"""CLI of the analysis stage: thin wrappers over the library functions of simfront.analysis.

    simfront analyze characterize NCU.csv|DIR...   hardware characterization from ncu
                                                   (DIR: *.ncu.csv, or a trace set's ncu-configs.csv)
    simfront analyze balance SWEEP.h5              the tensor:vector balance study
    simfront analyze design SWEEP.h5               what each GPU axis of a sweep buys
    simfront analyze correlate SWEEP.h5 NCU.csv    simulated against measured cycles
    simfront analyze threeway SWEEP.h5...          model vs Accel-Sim vs H100, what-ifs
    simfront analyze whatif TRACE_SET              model what-ifs against hardware what-ifs
    simfront analyze lengths DIR...                a step along sequence length (PerfMamba's)
    simfront report --out DIR [inputs]             HTML + Markdown report of all of them
    simfront demo --out DIR                        sample traces -> sweep -> balance report
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from simfront.analysis import lengths as length_study
from simfront.analysis.ablation import bound_sentence, sweep_vector_bounds, vector_bound
from simfront.analysis.ablation import compare as ablation_compare
from simfront.analysis.ablation import render_markdown as ablation_markdown
from simfront.analysis.correlate import base_config_records, correlate
from simfront.analysis.demo import run_demo
from simfront.analysis.design import axis_points, design_study, value_text
from simfront.analysis.occupancy import compare as occupancy_compare
from simfront.analysis.occupancy import render_markdown as occupancy_markdown
from simfront.analysis.report import Report
from simfront.analysis.threeway_cli import threeway_cmd
from simfront.analysis.wallclock import sweep_step_shares
from simfront.analysis.whatif import DEFAULT_L2, compare, render_markdown, summary
from simfront.core.atomic import write_text
from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv


def _json_out(obj) -> str:
    return json.dumps(obj, indent=1, default=lambda o: None if o != o else str(o))


@click.group("analyze")
def analyze() -> None:
    """The studies: characterization, tensor:vector balance, correlation."""


@analyze.command("characterize")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of tables.")
def characterize_cmd(inputs: tuple[Path, ...], as_json: bool) -> None:
    """Characterize training steps from ncu CSVs (files or directories of *.ncu.csv), or
    trace sets profiled one launch per configuration (ncu-configs.csv beside the traces)."""
    from simfront.analysis.studies import characterize_ncu

    chars = characterize_ncu(list(inputs))
    if as_json:
        click.echo(_json_out({ch.workload: {
            "step_time_s": ch.step_time_s, "launches": ch.launches,
            "dram_util_time_weighted": ch.dram_util_time_weighted,
            "category_share": ch.categories["share"].to_dict(),
            "ssm_kernels": ch.ssm_table[["launches", "time_us", "share"]].to_dict("index"),
            "pipe_classes": ch.pipe_classes[["launches", "share"]].to_dict("index"),
        } for ch in chars}))
        return
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        for ch in chars:
            click.echo(f"== {ch.workload}: {ch.launches} launches, step "
                       f"{ch.step_time_s * 1e3:.3f} ms, time-weighted DRAM use "
                       f"{ch.dram_util_time_weighted:.1%}")
            click.echo(ch.categories.to_string())
            click.echo("\nSSM kernels:")
            click.echo(ch.ssm_table.to_string())
            click.echo("\nPipe classes:")
            click.echo(ch.pipe_classes.to_string())
            click.echo("\nAgainst the seed study:")
            for r in ch.comparison.itertuples():
                click.echo(f"  {r.figure}: ours {r.ours:.3g}, published {r.published:g}. {r.why}")
            click.echo("")


@analyze.command("balance")
@click.argument("sweep", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--ratio-column", default=None, help="Records column holding the tensor:vector "
              "ratio (default: from the jobs' GPU parameters).")
@click.option("--baseline", type=float, default=None, help="Baseline ratio (default 16, the H100).")
@click.option("--min-gain", type=float, default=0.02, show_default=True,
              help="Gain per doubling of vector units below which they stop paying.")
@click.option("--boot", type=int, default=500, show_default=True, help="Bootstrap resamples.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write a report (HTML + Markdown + PNGs) here.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def balance_cmd(sweep: Path, ratio_column: str | None, baseline: float | None, min_gain: float,
                boot: int, out: Path | None, as_json: bool) -> None:
    """The tensor:vector balance study over a sweep's HDF5 results."""
    from simfront.analysis.studies import balance_per_workload, load_sweep_records

    rec = load_sweep_records(sweep, ratio_column)
    results = balance_per_workload(rec, baseline_ratio=baseline, min_gain=min_gain, n_boot=boot)
    vector_bounds = sweep_vector_bounds(sweep)
    if as_json:
        click.echo(_json_out({k: {**r.summary(),
                                  "hardware_vector_bound": vector_bounds.get(k.split("/")[0])}
                              for k, r in results.items()}))
    else:
        for name, r in results.items():
            s = r.summary()
            click.echo(f"== {name}: {s['kernels']} kernels")
            cols = ["vector_scale", "time", "speedup", "tensor_limited", "vector_limited",
                    "other_limited"]
            click.echo(r.step[cols].to_string(float_format="{:.4g}".format))
            click.echo(f"crossing ratio (tensor-limited = vector-limited): {s['crossing_ratio']}"
                       f"  interval {s['intervals'].get('crossing_ratio')}")
            click.echo(f"knee ratio: {s['knee_ratio']}  interval {s['intervals'].get('knee_ratio')}")
            click.echo(f"stops paying (<{min_gain:.0%}/doubling) from ratio "
                       f"{s['stop_paying_ratio']}")
            for n in r.notes:
                click.echo(f"note: {n}")
            bound = vector_bounds.get(name.split("/")[0])
            if bound is not None:
                click.echo(bound_sentence(bound))
    if out is not None:
        from simfront.analysis.studies import add_balance
        rep = Report("Tensor:vector balance study", Path(out),
                     provenance={"sweep": str(sweep)})
        add_balance(rep, results, shares=sweep_step_shares(sweep),
                    vector_bounds=vector_bounds)
        h, m = rep.write()
        click.echo(f"report: {h} and {m}", err=True)


@analyze.command("design")
@click.argument("sweep", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--base", "base_gpu", default="h100", show_default=True,
              help="GPU whose own values are the base point, where a configuration's name "
                   "does not say (BASE[...]).")
@click.option("--min-gain", type=float, default=0.02, show_default=True,
              help="Gain per doubling of a resource below which more of it stops paying.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write a report (HTML + Markdown + PNGs) here.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def design_cmd(sweep: Path, base_gpu: str, min_gain: float, out: Path | None,
               as_json: bool) -> None:
    """What each GPU parameter a sweep varies buys the step: along each axis with the others
    at the base GPU's own values, and where more stops paying at every other combination."""
    from simfront.analysis.studies import add_design, load_sweep_records
    from simfront.stats.h5store import read_jobs

    points, base = axis_points(read_jobs(sweep), base_gpu)
    results = design_study(load_sweep_records(sweep, base_gpu=base_gpu), points, base,
                           min_gain=min_gain)
    if as_json:
        click.echo(_json_out({k: r.summary() for k, r in results.items()}))
    else:
        for name, r in results.items():
            click.echo(f"== {name}: {len(r.points)} configurations, base "
                       + ", ".join(f"{a}={value_text(r.base[a])}" for a in r.axes))
            for a in r.axes:
                click.echo(f"-- {a}, the others at the base:")
                click.echo(r.along[a].reset_index(drop=True)
                           .to_string(float_format="{:.4g}".format))
                if isinstance(r.along[a]["value"].iloc[0], str):
                    click.echo("   a choice, not a quantity: nothing to stop paying")
                    continue
                at = r.pays[a]
                here = at.loc[at["at_base"], "stops_paying"].iloc[0]
                spread = sorted({_fmt_value(v) for v in at["stops_paying"]})
                click.echo(f"   stops paying (<{min_gain:.0%}/doubling) from "
                           f"{_fmt_value(here)} at the base; over the other axes' "
                           f"{len(at)} combinations: {', '.join(spread)}")
            for n in r.notes:
                click.echo(f"note: {n}")
    if out is not None:
        rep = Report("Design-space study", Path(out), provenance={"sweep": str(sweep)})
        add_design(rep, results)
        h, m = rep.write()
        click.echo(f"report: {h} and {m}", err=True)


def _design_of(sweep: Path, rec: pd.DataFrame) -> dict:
    """The design study of a sweep whose GPU varies in more than the tensor:vector ratio
    (nothing for a ratio sweep, whose balance study says it all)."""
    from simfront.stats.h5store import read_jobs

    try:
        points, base = axis_points(read_jobs(sweep))
    except InputError:
        return {}
    if set(points.columns) <= {"tensor_vector_ratio"}:
        return {}
    return design_study(rec, points, base)


def _fmt_value(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "none (the last step pays)"
    return value_text(v)


@analyze.command("correlate")
@click.argument("sweep", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("ncu", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--config", default=None, help="Only records of this config (default: the "
              "one that is the unmodified H100, else the first).")
@click.option("--workload", default=None, help="Only records of this workload (default: the "
              "one whose launches pair best with the ncu records).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write a report (HTML + Markdown + PNG) here.")
def correlate_cmd(sweep: Path, ncu: Path, config: str | None, workload: str | None,
                  out: Path | None) -> None:
    """Simulated cycles of SWEEP.h5 against hardware cycles of an ncu CSV, per kernel."""
    from simfront.stats.h5store import read_records

    corr = correlate(base_config_records(read_records(sweep), config), read_ncu_csv(ncu),
                     workload=workload)
    click.echo(f"{len(corr.matched)} kernels matched; MAPE {corr.mape:.1%}; Pearson "
               f"{corr.pearson:.3f} (log {corr.pearson_log:.3f}); unmatched: "
               f"{corr.unmatched_sim} simulated, {corr.unmatched_hw} measured")
    if out is not None:
        from simfront.analysis.studies import add_correlation
        rep = Report("Correlation against hardware", Path(out),
                     provenance={"sweep": str(sweep), "ncu": str(ncu)})
        add_correlation(rep, corr)
        h, m = rep.write()
        click.echo(f"report: {h} and {m}", err=True)


@analyze.command("whatif")
@click.argument("trace_sets", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--conditions", default=None, metavar="LABEL,...",
              help="What-if timelines to compare (file stems under whatif/, e.g. "
                   "h100-sms64,h200-all; default: every one there).")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="The job store of the model runs (default: "
                                 "$SIMFRONT_CACHE/whatif or ~/.cache/simfront/whatif).")
@click.option("--l2", "l2", type=click.Choice(["cold", "warm"]), default=None,
              help="How the model's L2 starts for each kernel: empty, as ncu measures a "
                   "kernel (cold), or as the step's previous kernel left it (warm); default: "
                   "simfront.analysis.whatif.DEFAULT_L2.")
@click.option("--worst", default=3, show_default=True, help="Worst kernels listed per row.")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write every launch's hardware and model ratios to this CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--base", default=None, metavar="GPU",
              help="The GPU whose whole-GPU timeline (GPU-all) is the base, e.g. h200; "
                   "default: the only one there, or the one the trace set was captured on.")
def whatif_cmd(trace_sets: tuple[Path, ...], conditions: str | None, cache_dir: Path | None,
               l2: str | None, worst: int, csv_out: Path | None, as_json: bool,
               base: str | None) -> None:
    """Model what-if ratios against hardware what-if ratios of TRACE_SET(s), per launch and
    for the step (the timelines in each set's whatif/ folder, over the whole GPU the step
    was captured on)."""

    labels = [c.strip() for c in conditions.split(",") if c.strip()] if conditions else None
    results = []
    for d in trace_sets:
        results += compare(d, labels, cache_dir, progress=lambda m: click.echo(m, err=True),
                           l2=l2 or DEFAULT_L2, base=base)
    if csv_out is not None:
        frames = [r.launches.assign(workload=r.workload, condition=r.condition)
                  for r in results]
        write_text(csv_out, pd.concat(frames).to_csv(index=False))
    if as_json:
        click.echo(_json_out(summary(results, worst)))
    else:
        click.echo(render_markdown(results, worst))


@analyze.command("ablation")
@click.argument("trace_sets", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def ablation_cmd(trace_sets: tuple[Path, ...], as_json: bool) -> None:
    """The model's vector-work ablation ratios against the hardware's (each set's ablation/
    folder, bench/device/ablate.sh), and the hardware's bound on what removing the ablated
    kernels' exps gives the step."""
    fits = [ablation_compare(d) for d in trace_sets]
    if as_json:
        click.echo(_json_out({f.set_name: f.rows.to_dict("records") for f in fits}))
        return
    click.echo(ablation_markdown(fits))
    for f, d in zip(fits, trace_sets):
        b = vector_bound(d)
        click.echo(f"{f.set_name}: mean |error| {f.mape:.1%}, worst {f.worst:.1%}; "
                   + bound_sentence(b))


@analyze.command("lengths")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--condition", default="all", show_default=True,
              help="Which timeline of each input: all (the whole GPU), sms64, ...")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write lengths.md, lengths.csv and lengths.png here.")
@click.option("--json", "as_json", is_flag=True, help="Print the points as JSON.")
def lengths_cmd(inputs: tuple[Path, ...], condition: str, out: Path | None,
                as_json: bool) -> None:
    """A step along sequence length at a fixed token count, beside PerfMamba's figures.

    INPUTS: trace sets (their base GPU's whatif/ timeline), `simfront timeline` output
    folders or timeline JSON files, one per sequence length."""

    points = length_study.read_points(list(inputs), condition)
    md = length_study.render_markdown(points)
    if out is not None:
        from simfront.analysis.plots import save

        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "lengths.md", md + "\n")
        write_text(out / "lengths.csv", length_study.table(points).to_csv(index=False))
        save(length_study.plot(points), out / "lengths.png")
        click.echo(f"wrote {out}/lengths.md, lengths.csv, lengths.png", err=True)
    click.echo(_json_out(length_study.to_json(points)) if as_json else md)


@click.command("report")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory.")
@click.option("--ncu", "ncu_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="ncu CSV or directory of them: the characterization section.")
@click.option("--sweep", "sweeps", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Sweep HDF5: the balance section (and the design study where the GPU "
                   "varies in more than the ratio).")
@click.option("--ratio-column", default=None, help="Records column holding the ratio.")
@click.option("--correlate", "corr_ncu", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="ncu CSV of the swept step: the correlation section (baseline config).")
@click.option("--title", default="simfront report", show_default=True)
def report_cmd(out: Path, ncu_paths, sweeps, ratio_column, corr_ncu, title) -> None:
    """Write a self-contained HTML page and Markdown with PNG figures."""
    from simfront.analysis.studies import (add_balance, add_balance_summary,
                                           add_characterization, add_correlation, add_design,
                                           balance_per_workload, characterize_ncu,
                                           load_sweep_records)

    if not (ncu_paths or sweeps):
        raise click.UsageError("give at least one input: --ncu and/or --sweep")
    rep = Report(title, Path(out), provenance={"ncu": [str(p) for p in ncu_paths],
                                               "sweeps": [str(s) for s in sweeps]})
    recs = [load_sweep_records(sw, ratio_column) for sw in sweeps]
    # a sweep of one ratio (L2 and SMs, say) has no balance study, only its design study
    studied = [(rec, balance_per_workload(rec) if rec["ratio"].nunique() > 1 else {})
               for rec in recs]
    if any(res for _, res in studied):  # the answer first: the summary across every workload
        add_balance_summary(rep, {k: v for _, res in studied for k, v in res.items()})
    if ncu_paths:
        add_characterization(rep, characterize_ncu(list(ncu_paths)))
    for sw, (rec, results) in zip(sweeps, studied):
        if results:
            add_balance(rep, results, summary=False)
        designed = _design_of(sw, rec)
        if designed:
            add_design(rep, designed)
        if corr_ncu is not None:
            add_correlation(rep, correlate(base_config_records(rec), read_ncu_csv(corr_ncu)))
    h, m = rep.write()
    click.echo(f"wrote {h}\nwrote {m}")


@click.command("demo")
@click.option("--out", type=click.Path(path_type=Path), default=Path("out/demo"), show_default=True)
@click.option("--traces", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None,
              help="Trace set or a folder of them (default: the shipped paper-size steps).")
@click.option("--tiny", is_flag=True,
              help="The shipped tiny steps instead of the paper-size ones (the method at a "
                   "size that leaves most kernels bound by launch and latency; a minute).")
@click.option("--ratios", default="32,16,8,4,2", show_default=True,
              help="Tensor:vector ratios to sweep (16 = H100).")
def demo_cmd(out: Path, traces: Path | None, tiny: bool, ratios: str) -> None:
    """Shipped sample traces -> a tensor:vector sweep on the built-in model -> the balance
    report. Needs no GPU and no simulator."""
    if tiny and traces is not None:
        raise click.UsageError("--tiny and --traces choose the traces both: give one")
    rs = [float(x) for x in ratios.split(",") if x.strip()]
    html_path, md_path = run_demo(Path(out), traces=traces, ratios=rs, tiny=tiny)
    click.echo(f"wrote {html_path}\nwrote {md_path}")


@analyze.command("occupancy")
@click.argument("trace_sets", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kernel", "kernels", multiple=True, metavar="NAME",
              help="Only these held kernels (repeatable; default all).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def occupancy_cmd(trace_sets: tuple[Path, ...], kernels: tuple[str, ...],
                  as_json: bool) -> None:
    """The model's occupancy ratios against the hardware's: each held kernel's time with
    shared memory held on every SM over the same run's base (each set's hold/ folder,
    `simfront timeline --hold-shared`, docs/occupancy.md)."""
    fits = [occupancy_compare(d, kernels=kernels or None) for d in trace_sets]
    if as_json:
        click.echo(_json_out({f.set_name: {"rows": f.rows.to_dict("records"),
                                           "retuned": list(f.retuned)} for f in fits}))
        return
    click.echo(occupancy_markdown(fits))
    for f in fits:
        left = f"; left out as retuned: {', '.join(f.retuned)}" if f.retuned else ""
        click.echo(f"{f.set_name}: mean |error| {f.mape:.1f}%{left}")


analyze.add_command(threeway_cmd)

# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [analyze, report_cmd, demo_cmd]

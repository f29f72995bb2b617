"""The studies end to end: load inputs (ncu CSVs, sweep HDF5 files), run the analyses and
lay their results out as report sections. The CLI and the demo call these."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simfront.analysis import plots
from simfront.analysis.ablation import bound_sentence
from simfront.analysis.balance import BalanceResult, H100_RATIO, balance_study
from simfront.analysis.bound import AnalyticBound, analytic_bound, pipe_time_envelope
from simfront.analysis.characterize import Characterization, characterize
from simfront.analysis.correlate import Correlation
from simfront.analysis.design import AXES, value_text, varying_params
from simfront.analysis.report import Report
from simfront.core.categories import CATEGORY_DOC, kernel_category, short_name
from simfront.core.errors import ConfigError, InputError
from simfront.core.ncu import ncu_files, read_ncu_csv, workload_name
from simfront.gpu.derived import tensor_vector_ratio
from simfront.stats.ncu_configs import expand_trace_set, find_config_profile
from simfront.sweep.inputs import build_gpu

if TYPE_CHECKING:
    from simfront.analysis.wallclock import StepShare

RATIO_COLUMNS = ("tensor_vector_ratio", "ratio")


# --------------------------------------------------------------------------- inputs


def characterize_ncu(paths: list[Path]) -> list[Characterization]:
    """One characterization per ncu CSV (a directory means all its ``*.ncu.csv``, compressed
    ones too; a trace set with a per-configuration profile, ``ncu-configs.csv``, means
    that profile laid over every launch of its window)."""
    files: list[Path] = []
    sets: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir() and find_config_profile(p) is not None:
            # a trace set profiled one launch per configuration: laid over its launches
            sets.append(p)
        else:
            files += ncu_files(p) if p.is_dir() else [p]
    if not files and not sets:
        raise InputError("no ncu CSV files found", paths[0] if paths else None)
    out = []
    for d in sets:
        name, config = _manifest_workload(d / "manifest.json")
        out.append(characterize(expand_trace_set(d).frame, name or d.name, config))
    for f in files:
        name, config = _manifest_workload(f)
        out.append(characterize(read_ncu_csv(f), name or workload_name(f), config))
    return out


def _manifest_workload(ncu_file: Path) -> tuple[str | None, dict | None]:
    """The trace set's name and workload config from the ``manifest.json`` beside an ncu
    file (a capture's ``ncu.csv``), else (None, None)."""
    manifest = Path(ncu_file).parent / "manifest.json"
    if not manifest.is_file():
        return None, None
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable manifest beside {Path(ncu_file).name}: {exc}",
                         manifest) from None
    return doc.get("name"), (doc.get("workload") or {}).get("config")


def ratio_of_params(params: dict[str, Any], base: str = "h100") -> float | None:
    """The tensor:vector ratio of the GPU a job ran on, from its variant parameters: built
    with the GPU stage where the parameters are variants of ``base`` that it accepts, else
    read from a parameter that names it (a sweep over a user backend's own parameters)."""
    try:
        return float(tensor_vector_ratio(build_gpu(base, params)))
    except ConfigError:  # not variants of this GPU, or refused by its rules: fall back below
        pass
    for k, v in params.items():
        if "ratio" in k and k != "ratio_mode":
            try:
                if isinstance(v, str) and ":" in v:
                    a, b = v.split(":", 1)
                    return float(Fraction(a.strip()) / Fraction(b.strip()))
                return float(v)
            except (TypeError, ValueError, ZeroDivisionError):
                return None
    for k, v in params.items():
        if "vector" in k and isinstance(v, (int, float)) and v > 0:
            return H100_RATIO / float(v)
    return None


def load_sweep_records(path: str | Path, ratio_column: str | None = None,
                       base_gpu: str = "h100") -> pd.DataFrame:
    """Records of a sweep's HDF5 file with a ``ratio`` column (tensor:vector ratio of the
    job's GPU) and ``category``/``short_name``; records of failed jobs are left out."""
    from simfront.stats.h5store import read_jobs, read_records

    rec = read_records(path)
    if rec.empty:
        raise InputError("the sweep holds no records (did its jobs fail?)", path)
    jobs = None
    try:
        jobs = read_jobs(path)
    except InputError:
        pass
    if jobs is not None and "ok" in jobs and "job_id" in rec:
        good = set(jobs.loc[jobs["ok"].astype(bool), "job_id"])
        rec = rec[rec["job_id"].isin(good)]
    if ratio_column:
        if ratio_column not in rec:
            raise InputError(f"no column '{ratio_column}' in the records", path)
        rec = rec.assign(ratio=rec[ratio_column].astype(float))
    elif not any(c in rec for c in RATIO_COLUMNS):
        if jobs is None or "params" not in jobs:
            raise InputError("cannot tell each record's tensor:vector ratio: no ratio column "
                             "and no job parameters; name one with --ratio-column", path)
        ratios = {}
        for jid, params in zip(jobs["job_id"], jobs["params"]):
            p = json.loads(params) if isinstance(params, str) and params else {}
            ratios[jid] = ratio_of_params(p, base_gpu)
        rec = rec.assign(ratio=rec["job_id"].map(ratios))
        if rec["ratio"].isna().any():
            bad = sorted(rec.loc[rec["ratio"].isna(), "config"].unique())
            raise InputError("cannot tell the tensor:vector ratio of config(s) "
                             f"{', '.join(map(str, bad))}; name a column with --ratio-column", path)
    elif "ratio" not in rec:
        rec = rec.assign(ratio=rec["tensor_vector_ratio"].astype(float))
    if jobs is not None and "params" in jobs and "job_id" in rec:
        points = other_gpu_params(jobs)
        if points:
            rec = rec.assign(gpu_point=rec["job_id"].map(points))
    if "kernel_name" in rec:
        rec["short_name"] = rec["kernel_name"].astype(str).map(short_name)
        if "category" not in rec:
            rec["category"] = rec["kernel_name"].astype(str).map(kernel_category)
    return rec.reset_index(drop=True)


def other_gpu_params(jobs: pd.DataFrame) -> dict[str, str]:
    """Per job, the GPU parameters other than the tensor:vector ratio that the sweep's jobs
    vary (``l2_size=25 MiB, sm_count=33``), where any do: a balance study is made at each
    such point, never averaged over them."""
    params = {j: json.loads(p) if isinstance(p, str) and p else {}
              for j, p in zip(jobs["job_id"], jobs["params"])}
    varying = varying_params(params.values(), leave_out=(*RATIO_COLUMNS, "ratio_mode"))
    if not varying:
        return {}
    return {j: ", ".join(f"{k}={p.get(k)}" for k in varying) for j, p in params.items()}


def balance_per_workload(rec: pd.DataFrame, pool: str | None = None,
                         **kw: Any) -> dict[str, BalanceResult]:
    """One balance study per workload (and backend, when a sweep holds several, and GPU
    point, when the sweep varies other GPU parameters besides the ratio: ``gpu_point``).
    With ``pool`` set, the workloads are taken as parts of one step and studied together
    under that name (per backend)."""
    out: dict[str, BalanceResult] = {}
    groups = [c for c in ("workload", "backend") if c in rec and not (pool and c == "workload")]
    point = "gpu_point" in rec and rec["gpu_point"].nunique() > 1
    for key, g in (rec.groupby(groups + (["gpu_point"] if point else []))
                   if groups or point else [("all", rec)]):
        key = key if isinstance(key, tuple) else (key,)
        name = "/".join(map(str, key[:len(groups)])) if groups else "all"
        if pool:
            name = f"{pool}/{name}" if groups else pool
        if point:
            name = f"{name} [{key[-1]}]"
        res = balance_study(g, **kw)
        names = g.drop_duplicates(["workload", "kernel_uid"] if "kernel_uid" in g else
                                  ["kernel_name"])
        if "short_name" in g:
            keymap = dict(zip(names[[c for c in ("workload", "kernel_uid") if c in g]]
                              .astype(str).agg("/".join, axis=1), names["short_name"]))
            res.kernels["short_name"] = res.kernels.index.map(keymap)
        out[name] = res
    return out


# --------------------------------------------------------------------------- report sections


def _pct(v: float | None) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.1%}"


def add_characterization(report: Report, chars: list[Characterization]) -> None:
    s = report.section("Hardware characterization (H100, ncu)")
    s.text("Each training step's kernels as measured by Nsight Compute. Shares are of step "
           "time; means over kernels are weighted by kernel time. Categories: " +
           "; ".join(f"{k}: {v}" for k, v in CATEGORY_DOC.items()) + ".")
    summary = pd.DataFrame([{
        "workload": ch.workload, "launches": ch.launches,
        "step time (ms)": ch.step_time_s * 1e3,
        "DRAM use, time-weighted": ch.dram_util_time_weighted,
        "DRAM use, mean of launches": ch.dram_util_mean_unweighted,
        "clock (GHz)": ch.ceilings.clock_hz / 1e9,
        "DRAM peak (TB/s)": ch.ceilings.dram_bw / 1e12,
        "tensor FLOP/SM/cycle (measured)": ch.ceilings.tensor_flop_per_sm_cycle,
        "best GEMM (TFLOP/s)": ch.ceilings.tensor_flops_achieved / 1e12} for ch in chars])
    s.table(summary, "Steps")
    report.add_figure(s, plots.category_breakdown(chars), "category_breakdown",
                      "Operator breakdown: share of step time by category")
    shares = pd.concat({ch.workload: ch.categories[["share", "launches", "dram_util_tw"]]
                        for ch in chars}, axis=1)
    s.table(shares, "Category shares (share of step time, launches, time-weighted DRAM use)")
    report.add_figure(s, plots.dram_util(chars), "dram_util",
                      "Time-weighted DRAM bandwidth use per category and per step")
    add_ncu_bounds(report, chars)
    for ch in chars:
        t = report.section(f"{ch.workload}: roofline, pipe classes and SSM kernels")
        c = ch.ceilings
        t.text(f"Ceilings measured from the records: DRAM {c.dram_bw / 1e12:.2f} TB/s (the peak "
               f"ncu's percentages refer to; best kernel {c.dram_bw_achieved / 1e12:.2f} TB/s), "
               f"tensor {c.tensor_flop_per_sm_cycle:.0f} FLOP per tensor-active SM cycle "
               f"(measured on the GEMMs) = {c.tensor_flops_peak / 1e12:.0f} TFLOP/s at the "
               f"step's median clock {c.clock_hz / 1e9:.2f} GHz; FP32 256 FLOP/SM/cycle "
               f"(datasheet) = {c.fp32_flops_peak / 1e12:.0f} TFLOP/s. "
               + " ".join(c.notes))
        report.add_figure(t, plots.roofline(ch), f"roofline_{ch.workload}",
                          f"Roofline of {ch.workload}")
        report.add_figure(t, plots.pipe_classes(ch), f"pipe_classes_{ch.workload}",
                          f"Tensor against vector pipe utilization, {ch.workload}")
        t.table(ch.pipe_classes, "Pipe classes (a pipe is used at >= 5% of active cycles)")
        t.table(ch.ssm_table, "SSM kernels")
        t.table(ch.comparison, "Against the seed study's published figures")


NCU_BOUND_RATIOS = (64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0)


def ncu_bounds(chars: list[Characterization]) -> dict[str, AnalyticBound]:
    """The analytic tensor:vector bound of each measured step: its launches' measured tensor
    and vector FLOPs and DRAM bytes at the step's measured ceilings."""
    out = {}
    for ch in chars:
        mix = ch.kernels[["kernel_name", "category", "tensor_flops", "vector_flops",
                          "dram_bytes"]]
        out[ch.workload] = analytic_bound(mix, NCU_BOUND_RATIOS, ch.ceilings.tensor_flops_peak,
                                          ch.ceilings.dram_bw,
                                          source=f"ncu FLOP and DRAM counts of {ch.workload}")
    return out


def add_ncu_bounds(report: Report, chars: list[Characterization]) -> None:
    bounds = ncu_bounds(chars)
    s = report.section("Analytic tensor:vector bound of the measured steps")
    s.text("Per launch, t(r) >= max(tensor FLOPs / P_T, vector FLOPs x r / P_T, DRAM bytes / "
           "B) with the measured ceilings (P_T and B above), summed over the step; r is the "
           "tensor:vector ratio (the H100 is 16). Vector FLOPs are FP32 and FP16 FLOPs "
           "(ncu's counters); integer and other ALU work, and latency, are not in the bound, "
           "so real kernels respond less. The balance ratio is sum tensor FLOPs / sum vector "
           "FLOPs: the ratio at which the step's tensor and vector pipes would need equal time.")
    rows = []
    for name, b in bounds.items():
        row = {"workload": name, "balance ratio": b.balance_ratio}
        for r in b.step.index:
            row[f"speedup@{r:g}"] = float(b.step.loc[r, "speedup"])
        vb = b.step["vector_time_s"] / b.step["time_s"]
        row["vector-bound time @16"] = float(vb.loc[16.0])
        row["vector-bound time @64"] = float(vb.loc[64.0])
        rows.append(row)
    s.table(pd.DataFrame(rows), "FLOP bound: speedup over the H100 (ratio 16)")
    env = {ch.workload: pipe_time_envelope(ch.kernels["duration_s"], ch.kernels["vector_util"],
                                           NCU_BOUND_RATIOS) for ch in chars}
    s.text("Pipe-time envelope: with each launch's busiest vector pipe (ncu's FMA or ALU "
           "utilization, so integer and other ALU work counts) busy u of its time t, f times the "
           "vector units can at best make it t(1 - u + u/f) (no overlap), and 1/f times them "
           "need at least max(t, u t f). An upper bound on what more vector units can gain, a "
           "lower bound on what fewer cost.")
    s.table(pd.DataFrame([{"workload": w, **{f"speedup@{r:g}": float(e.loc[r, "speedup"])
                                            for r in e.index}} for w, e in env.items()]),
            "Pipe-time envelope: speedup over the H100 (ratio 16)")
    report.add_figure(s, plots.bound_curves(bounds, env), "ncu_bound",
                      "Step speedup against the ratio from the measured steps: FLOP bound "
                      "(solid) and pipe-time envelope (dashed)")


#: The ratio the summary quotes a speedup at besides the best one (half the H100's 16).
SUMMARY_RATIO = 8.0

#: Workload order in summaries: the study's subject first, then the rest alphabetically.
_LEAD_ORDER = ("mamba2", "mamba1", "hybrid")

#: What a what-if row gives (issue 12's simfront.analysis.whatif summary per trace set):
#: the step's hardware and model ratio for one condition, and the per-kernel MAPE.
WHATIF_KEYS = ("workload", "condition", "hw_ratio", "model_ratio", "per_kernel_mape")


def _lead_key(name: str) -> tuple[int, str]:
    low = name.lower()
    for i, prefix in enumerate(_LEAD_ORDER):
        if low.startswith(prefix):
            return i, low
    return len(_LEAD_ORDER), low


def balance_summary(results: dict[str, BalanceResult],
                    shares: "dict[str, StepShare] | None" = None) -> pd.DataFrame:
    """One row per workload, Mamba2 first: the knee, the speedup at 8:1 and at the best ratio,
    and the share of baseline step time each limiter holds. With ``shares`` (the measured
    step's wall time and busy share, :mod:`simfront.analysis.wallclock`), the GPU-busy share
    and what the best kernel-time speedup is worth for the wall-clock step."""
    shares = shares or {}
    rows = []
    for name in sorted(results, key=_lead_key):
        res = results[name]
        step = res.step
        base = step.loc[res.baseline_ratio]
        at = (float(step.loc[SUMMARY_RATIO, "speedup"]) if SUMMARY_RATIO in step.index
              else float("nan"))
        rows.append({
            "workload": name, "knee ratio": res.knee,
            f"speedup at {SUMMARY_RATIO:g}:1": at,
            "best ratio": float(step["speedup"].idxmax()),
            "speedup at best": float(step["speedup"].max()),
            **{f"{lim}-limited share": float(base[f"{lim}_limited"] / base["time"])
               for lim in ("tensor", "vector", "other")},
        })
        # studies are keyed "workload/backend" where a sweep ran several backends
        share = shares.get(name, shares.get(name.split("/")[0]))
        if share is not None:
            rows[-1]["GPU-busy share of wall step"] = share.busy_share
            rows[-1]["wall-clock speedup at best"] = share.wall_speedup(
                rows[-1]["speedup at best"])
    return pd.DataFrame(rows)


def add_balance_summary(report: Report, results: dict[str, BalanceResult],
                        whatif: "list[dict] | None" = None,
                        shares: "dict[str, StepShare] | None" = None) -> None:
    """The answer first: a section across workloads. ``whatif`` (rows with the keys of
    :data:`WHATIF_KEYS`, e.g. from issue 12's ``simfront.analysis.whatif``) adds how far the
    model's what-ifs held on hardware; without it the section says none were given."""
    s = report.section("Summary across workloads")
    table = balance_summary(results, shares)
    if len(table):
        lead = table.iloc[0]
        knee = ("no knee in the swept range" if pd.isna(lead["knee ratio"]) else
                f"the knee at ratio {lead['knee ratio']:.3g}")
        s.text(f"{lead['workload']}: {knee}; step speedup "
               f"{lead[f'speedup at {SUMMARY_RATIO:g}:1']:.3f}x at {SUMMARY_RATIO:g}:1 and "
               f"{lead['speedup at best']:.3f}x at the best ratio ({lead['best ratio']:g}); at "
               f"the baseline ratio {lead['tensor-limited share']:.0%} of step time is "
               f"tensor-limited, {lead['vector-limited share']:.0%} vector-limited and "
               f"{lead['other-limited share']:.0%} limited by neither. Ratios are tensor FLOP "
               "per FP32 FLOP per cycle (the H100 is 16); the details of each workload follow.")
        if "wall-clock speedup at best" in table and pd.notna(lead.get("wall-clock speedup at best")):
            s.text(f"Those are kernel-time speedups. Measured on the H100, the GPU is busy for "
                   f"{lead['GPU-busy share of wall step']:.0%} of {lead['workload']}'s wall-clock "
                   f"step (the rest is the host launching kernels), so the best ratio's "
                   f"{lead['speedup at best']:.3f}x of kernel time is "
                   f"{lead['wall-clock speedup at best']:.3f}x of the wall-clock step.")
        s.table(table, "Per workload (shares of step time at the baseline ratio)")
    s.text("How far the model's what-ifs held on hardware for this step:")
    if whatif:
        s.table(pd.DataFrame([{k: row.get(k) for k in WHATIF_KEYS} for row in whatif]),
                "Model against hardware what-ifs (hardware and model ratio of step time; "
                "per-kernel MAPE)")
    else:
        s.text("no hardware what-if results were given for this report.")


def add_balance(report: Report, results: dict[str, BalanceResult],
                bounds: dict[str, AnalyticBound] | None = None, summary: bool = True,
                whatif: "list[dict] | None" = None,
                shares: "dict[str, StepShare] | None" = None,
                vector_bounds: dict[str, dict[str, float]] | None = None) -> None:
    """The balance study's sections: the summary across workloads first (unless ``summary``
    is False because the caller placed it), then each workload, Mamba2 first. A workload with
    a hardware ``vector_bounds`` entry (:func:`simfront.analysis.ablation.vector_bound`) gets
    it stated beside the model's speedup."""
    if summary:
        add_balance_summary(report, results, whatif, shares)
    for name in sorted(results, key=_lead_key):
        res = results[name]
        s = report.section(f"Tensor:vector balance: {name}")
        sm = res.summary()
        iv = res.intervals

        def with_iv(key: str, v: float | None, lead: str = "at ratio") -> str:
            if v is None:
                return "none in the swept range"
            i = iv.get(key)
            return f"{lead} {v:.3g}" + (f" (5-95%: {i[0]:.3g}-{i[1]:.3g})" if i else "")

        busy = ("none in the swept range" if res.crossing_busy is None
                else f"at ratio {res.crossing_busy:.3g}")
        s.text(f"{sm['kernels']} kernels at ratios {', '.join(f'{r:g}' for r in res.ratios)} "
               f"(tensor FLOP per FP32 FLOP per cycle; the H100 is 16). Step speedup at most "
               f"{sm['step_speedup_max']:.3f}x (at ratio {sm['ratio_of_max_speedup']:g}). "
               f"Tensor-limited and vector-limited step time are equal: "
               f"{with_iv('crossing_ratio', res.crossing)}; tensor and vector busy-pipe time "
               f"are equal: "
               f"{busy}. Knee: "
               f"{with_iv('knee_ratio', res.knee)}; more vector units gain less than "
               f"{res.min_gain:.0%} of step time per doubling "
               f"{with_iv('stop_paying_ratio', res.stop_paying, 'from ratio')}. Intervals: bootstrap over "
               f"the step's kernels.")
        vb = (vector_bounds or {}).get(name.split("/")[0])  # results are "workload/backend"
        if vb is not None:
            s.text(bound_sentence(vb))
        for n in res.notes:
            s.text("Note: " + n)
        bound = (bounds or {}).get(name)
        report.add_figure(s, plots.step_speedup(res, bound), f"speedup_{_slug(name)}",
                          "Step and per-category speedup against the ratio")
        report.add_figure(s, plots.limited_time(res), f"limiters_{_slug(name)}",
                          "Step time by limiting pipe against the ratio")
        report.add_figure(s, plots.kernel_heatmap(res), f"kernels_{_slug(name)}",
                          "Per-kernel speedup and limiter")
        step = res.step.drop(columns=["ratio"]).copy()
        s.table(step, f"Step ({res.unit}) by ratio")
        k = res.kernels.sort_values("base_time", ascending=False).head(20)
        cols = [c for c in ("short_name", "category", "base_time", "share", "best_speedup",
                            "limiter_at_base") if c in k]
        s.table(k[cols], "Kernels with the most time at the baseline ratio")
        if bound is not None:
            br = bound.balance_ratio
            where = ("the traces hold no tensor work, so any ratio is vector-side only"
                     if br == 0 else "they hold no vector FLOPs" if br is None else
                     f"tensor and vector pipe time of the step are equal at ratio {br:.3g} "
                     "(sum of tensor FLOPs over sum of vector FLOPs)")
            s.text(f"Analytic bound ({bound.source}; compute at the model's peak rates, memory "
                   f"as the compulsory sector traffic at DRAM bandwidth): {where}; bound "
                   f"speedup at most {bound.step['speedup'].max():.3f}x (dashed purple line).")


def add_analytic_only(report: Report, bounds: dict[str, AnalyticBound]) -> None:
    s = report.section("Analytic tensor:vector bound from instruction mixes")
    rows = []
    for name, b in bounds.items():
        rows.append({"workload": name, "source": b.source, "balance ratio": b.balance_ratio,
                     "crossing": b.crossing, "max speedup": float(b.step["speedup"].max())})
    s.table(pd.DataFrame(rows))


def add_correlation(report: Report, corr: Correlation, label: str | None = None) -> None:
    tag = f"{corr.backend}" + (f", {label}" if label else "")
    s = report.section(f"Correlation: {tag} against hardware")
    s.text(f"{len(corr.matched)} launches paired in launch order by kernel, grid and block "
           f"({corr.unmatched_sim} simulated and {corr.unmatched_hw} measured left unpaired). "
           f"MAPE {corr.mape:.1%}, Pearson r {corr.pearson:.3f} (on log cycles "
           f"{corr.pearson_log:.3f}). " + " ".join(corr.notes))
    report.add_figure(s, plots.correlation(corr), f"correlation_{_slug(tag)}",
                      "Simulated against measured cycles")
    worst = corr.matched.reindex(corr.matched["error"].abs().sort_values(ascending=False).index)
    s.table(worst.head(15), "Largest errors")


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in s)


def add_design(report: Report, results: dict) -> None:
    """The design study's sections (``simfront.analysis.design``): per workload, what each
    axis buys along it with the others at the base, where it stops paying at every other
    combination, and which kernel categories gain."""
    for name, res in results.items():
        s = report.section(f"{name}: what each GPU parameter buys")
        base = ", ".join(f"{_axis_label(a)} {value_text(res.base[a])}" for a in res.axes)
        s.text(f"{len(res.points)} configurations over {', '.join(map(_axis_label, res.axes))}; "
               f"the base is {base}. Speedups are the step's time at the base over its time "
               f"there; *stops paying from*: the value from which more of the resource gains "
               f"less than {res.min_gain:.0%} of step time per doubling (none: the last step "
               "still pays).")
        report.add_figure(s, plots.design_axes(res), f"design_{_slug(name)}",
                          "Step speedup along each axis")
        numeric = [a for a in res.axes if not isinstance(res.base[a], str)]
        for i, x in enumerate(numeric):
            for y in numeric[i + 1:]:
                report.add_figure(s, plots.design_grid(res, x, y),
                                  f"design_{_slug(name)}_{x}_{y}",
                                  f"Step speedup over {_axis_label(x)} and {_axis_label(y)}, "
                                  "the others at the base")
        for a in res.axes:
            label = _axis_label(a)
            along = res.along[a].reset_index(drop=True).rename(columns={"value": label})
            s.table(along, f"{label}, the other axes at the base ({res.unit})")
            pays = res.pays[a].drop(columns=["points"]).rename(
                columns={"stops_paying": "stops paying from", **{o: _axis_label(o)
                                                                  for o in res.axes}})
            s.table(pays, f"{label}: where more stops paying, at each combination of the "
                    "other axes")
            _add_category_gains(s, res.categories[a], label, res.base[a])
        for note in res.notes:
            s.text(f"Note: {note}")


def _add_category_gains(s, cats: pd.DataFrame, label: str, base: Any) -> None:
    """Each kernel category's speedup along an axis over its first value, and its share of
    the step at the base."""
    if len(cats) < 2:
        return
    speed = (cats.iloc[0] / cats).T
    speed.columns = [f"{label} {value_text(v)}" for v in cats.index]
    at_base = cats.loc[base] if base in cats.index else cats.iloc[0]
    speed.insert(0, "share at base", at_base / at_base.sum())
    s.table(speed, f"Kernel categories along {label}: speedup over {label} "
            f"{value_text(cats.index[0])}")


def _axis_label(a: str) -> str:
    axis = AXES.get(a)
    return axis.label if axis else a


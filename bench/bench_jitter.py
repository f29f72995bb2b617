"""The issue model's own jitter: how far a kernel's time, a step's and an ablation ratio move
when the DRAM latency moves by a fraction of a nanosecond.

The issue loop is deterministic, but not smooth: warps that run in step, or staggered, hide
different shares of their latency, and which order a kernel falls into can turn on a clock.
Nothing physical separates a DRAM latency of 770 clocks from one of 770.5, so the spread of
the model's answers over such latencies is noise in them, a floor under what a per-kernel
comparison (the ablation's 5%, a what-if's ratio) can resolve.

Each kernel of a set is prepared once and timed (``api.timed_record``, each at its own
clock, the L2 empty) with ``dram.extra_latency`` moved by each of ``OFFSETS_NS``; the
ablation's kernels the same way, variant and base at each offset.

Run:
  python bench/bench_jitter.py [--sets a,b] [--ablation a,b]   # updates its RESULTS section
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from bench_heldout import gpu_of  # bench/bench_heldout.py, beside this script
from results_md import publish  # bench/results_md.py, beside this script

from simfront.analysis.ablation import ablation_dir, ablation_gpu
from simfront.analysis.whatif import condition
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import api
from simfront.sim.model.backend import MODEL_VERSION
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.traces.reader import TraceSet
from simfront.workloads.ablation import ALL_KERNELS, ablation_report

SECTION = "## The issue model's own jitter (bench/bench_jitter.py)"
TOPIC = "Model accuracy against ncu"
TRACES = REPO_ROOT / "traces"
#: the DRAM latency's moves, in ns (a quarter of a nanosecond is about half a clock)
OFFSETS_NS = (-0.5, -0.25, 0.0, 0.25, 0.5)
SETS = ("h200-ho-m2-d512", "ho-m2-d1024")
ABLATION = ("h200-ho-m2-d512", "ho-m2-d512", "ho-hybrid")


def _params(offset_ns: float):
    return DEFAULT_PARAMS.with_(**{"dram.extra_latency":
                                   DEFAULT_PARAMS.dram.extra_latency + offset_ns})


def kernel_times(trace_dir: Path, gpu) -> pd.DataFrame:
    """Each launch's modelled time (us) at each offset: rows by trace file, columns by
    offset, with ``kernel_name``."""
    rows = {}
    names = {}
    for k in TraceSet(trace_dir).kernels():
        prep = api._prepared_kernel(k, gpu, None, DEFAULT_PARAMS)
        names[k.path.name] = k.header.name
        rows[k.path.name] = [api.timed_record(prep, gpu, _params(o))["time_us"]
                             for o in OFFSETS_NS]
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(OFFSETS_NS))
    df["kernel_name"] = pd.Series(names)
    return df


def set_spread(name: str) -> dict:
    """Per-launch and whole-step spread of one set on its own GPU."""
    df = kernel_times(TRACES / name, load_gpu(gpu_of(TRACES / name)))
    t = df[list(OFFSETS_NS)]
    rel = (t.std(axis=1, ddof=0) / t.mean(axis=1)).to_numpy()
    width = (t.max(axis=1) / t.min(axis=1) - 1).to_numpy()
    step = t.sum(axis=0)
    worst = int(np.argmax(width))
    return {"set": name, "launches": len(df), "median_sd": float(np.median(rel)),
            "p90_sd": float(np.quantile(rel, 0.9)), "max_width": float(width[worst]),
            "worst": str(df.kernel_name.iloc[worst])[:48],
            "over_1pct": int(np.sum(width > 0.01)),
            "step_width": float(step.max() / step.min() - 1)}


def ablation_spread(name: str) -> pd.DataFrame:
    """Each ablation ratio (variant over base, per kernel and condition) at each offset,
    beside the hardware's."""
    d = ablation_dir(TRACES / name)
    base_gpu = ablation_gpu(d)
    hw = [r for r in ablation_report(d) if r.kernel != ALL_KERNELS]
    times: dict[tuple[str, str], pd.DataFrame] = {}

    def model(variant: str, label: str) -> pd.DataFrame:
        if (variant, label) not in times:
            gpu = condition(f"{base_gpu}-{label}", base_gpu).model_gpu()
            times[variant, label] = (kernel_times(d / variant, gpu)
                                     .groupby("kernel_name")[list(OFFSETS_NS)].sum())
        return times[variant, label]

    rows = []
    for r in hw:
        ratio = (model(r.variant, r.condition).loc[r.kernel]
                 / model("base", r.condition).loc[r.kernel])
        err = ratio.to_numpy() / r.ratio - 1
        rows.append({"set": name, "kernel": r.kernel, "condition": r.condition,
                     "variant": r.variant, "hw": r.ratio, "model": float(ratio[0.0]),
                     "low": float(ratio.min()), "high": float(ratio.max()),
                     "err_low": float(err.min()), "err_high": float(err.max())})
    return pd.DataFrame(rows)


def render(sets: list[dict], abl: pd.DataFrame) -> str:
    offs = ", ".join(f"{o:+g}" for o in OFFSETS_NS)
    lines = [SECTION, "",
             "Each launch prepared once and timed with `dram.extra_latency` moved by "
             f"{offs} ns (about ±1 clock), the L2 empty, each set on its own GPU "
             f"({MODEL_VERSION}). "
             "The spread is noise: nothing physical tells these latencies apart.", "",
             "| set | launches | sd/mean, median | 90th percentile | launches moving > 1% | "
             "largest max/min | in | the step's max/min |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for s in sets:
        lines.append(f"| {s['set']} | {s['launches']} | {s['median_sd']:.2%} | "
                     f"{s['p90_sd']:.2%} | {s['over_1pct']} | {s['max_width']:+.1%} | "
                     f"`{s['worst']}` | {s['step_width']:+.2%} |")
    if len(abl):
        inside = (abl.err_low >= -0.05) & (abl.err_high <= 0.05)
        outside = (abl.err_high < -0.05) | (abl.err_low > 0.05)
        straddle = int(np.sum(~inside & ~outside))
        inside = int(np.sum(inside))
        lines += ["", "The ablation's ratios (*SSD vector-work ablation*) over the same "
                  "offsets:", "",
                  "| set | kernel | condition | variant | hw ratio | model ratio | range | "
                  "error range |", "|---|---|---|---|---:|---:|---:|---:|"]
        for r in abl.itertuples():
            lines.append(f"| {r.set} | {r.kernel} | {r.condition} | {r.variant} | "
                         f"{r.hw:.3f} | {r.model:.3f} | {r.low:.3f}-{r.high:.3f} | "
                         f"{r.err_low:+.1%}..{r.err_high:+.1%} |")
        width = (abl.high / abl.low - 1)
        lines += ["", f"{inside} of {len(abl)} ratios stay within 5% of the hardware's at "
                  f"every offset; {straddle} are within 5% at some offsets and not at "
                  f"others. A ratio's range is {width.median():.1%} wide at the median, "
                  f"{width.max():.1%} at most."]
    lines += ["", "`python bench/bench_jitter.py` (sets "
              f"`{','.join(s['set'] for s in sets)}`, ablations "
              f"`{','.join(sorted(abl.set.unique())) if len(abl) else ''}`)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--ablation", default=",".join(ABLATION))
    ap.add_argument("--no-write", action="store_true", help="print, leave RESULTS alone")
    args = ap.parse_args(argv)
    sets = []
    for name in filter(None, args.sets.split(",")):
        print(f"{name} ...", flush=True)
        sets.append(set_spread(name))
    abl = [ablation_spread(n) for n in filter(None, args.ablation.split(","))]
    publish(SECTION, render(sets, pd.concat(abl, ignore_index=True) if abl else pd.DataFrame()),
            not args.no_write, TOPIC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

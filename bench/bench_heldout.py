"""The model judged on steps it never saw: the held-out sets of traces/corpus.yaml.

For each held-out set: the baseline against its own ncu profile (every launch, the model's
L2 empty as ncu leaves it), the SM-count what-ifs against its green-context timelines
(``simfront analyze whatif``, the model's L2 warm as the step leaves it), and the worst
systematic misses per kernel (a kernel's launches summed, so a miss that every launch of a
kernel shares shows, and one launch's noise does not).

    python bench/bench_heldout.py [--sets NAME ...] [--jobs N] [--no-write]

Only held-out sets are reported here; the fit sets' figures are in the other sections.
"""

from __future__ import annotations

import argparse
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.analysis.whatif import base_label, compare, model_records, model_source_hash
from simfront.gpu import load_gpu
from simfront.core.paths import REPO_ROOT
from simfront.sim.model import MODEL_VERSION
from simfront.sim.model.simulate import BLIND_WORK_SHARE
from simfront.sim.model.validation import OTHER_WORK, pair_launches, read_ncu, same_work
from simfront.stats.matching import mape

SECTION = "## Held-out accuracy (bench/bench_heldout.py)"
CORPUS = REPO_ROOT / "traces" / "corpus.yaml"
TRACES = REPO_ROOT / "traces"
#: a kernel enters the per-kernel table when it holds at least this share of the step
MIN_SHARE = 0.01
#: the SSD kernels (Mamba2's Triton kernels), listed whatever their share: the balance
#: answer rests on them
SSD = re.compile(r"^_(chunk|state_passing|bmm)")


def held_out_sets(corpus: Path = CORPUS) -> list[str]:
    """The held-out set names, in the corpus file's order; a name also under ``fit`` is an
    error (the file is what keeps the two apart)."""
    doc = yaml.safe_load(corpus.read_text())
    held = list((doc.get("held_out") or {}).keys())
    both = sorted(set(held) & set(doc.get("fit") or []))
    if both:
        raise SystemExit(f"{corpus}: sets both fit and held out: {', '.join(both)}")
    return held


def gpu_of(trace_dir: Path) -> str:
    """The GPU preset of the set's base: the GPU it was captured on (``whatif.base_label``,
    the same rule the what-ifs use)."""
    return base_label(trace_dir)[:-len("-all")]


def baseline(trace_dir: Path, gpu_name: str) -> pd.DataFrame:
    """One row per launch paired with ncu (name, grid and block agree): ncu's and the
    model's cycles, and whether the two ran the same work (``same``: a launch traced
    whole executed ncu's warp instructions, ``validation.same_work``). Launches that
    Triton tuned to another grid under ncu do not pair."""
    ncu = read_ncu(trace_dir / "ncu.csv")
    pairs, _ = pair_launches(trace_dir, ncu)
    recs = model_records(trace_dir, load_gpu(gpu_name), l2="cold")
    traced = (recs["sim_traced_work_share"] if "sim_traced_work_share" in recs
              else pd.Series(1.0, index=recs.index))
    rows = [{"file": p.kernel.path.name, "kernel": str(p.row["short_name"]),
             "category": p.row.get("category"), "ncu_cycles": float(p.row["cycles"]),
             "model_cycles": float(recs.cycles.get(p.kernel.path.name, np.nan)),
             "model_instructions": float(recs.instructions.get(p.kernel.path.name, np.nan)),
             "ncu_instructions": float(p.row.get("sm__inst_executed.sum", np.nan)),
             "whole": p.kernel.header.sampled_blocks is None,
             "traced_work_share": float(traced.get(p.kernel.path.name, 1.0))}
            for p in pairs]
    df = pd.DataFrame(rows)
    df = df[df.model_cycles.notna()]
    df["same"] = same_work(df.model_instructions, df.ncu_instructions, df.whole)
    return df


def per_kernel(df: pd.DataFrame, hw: str, model: str) -> pd.DataFrame:
    """Launches of one kernel summed: its share of the step and its summed ratio model/hw."""
    g = df.groupby("kernel")[[hw, model]].sum()
    g["share"] = g[hw] / g[hw].sum()
    g["ratio"] = g[model] / g[hw]
    g["n"] = df.groupby("kernel").size()
    return g.sort_values("share", ascending=False)


def set_rows(name: str) -> tuple[dict, pd.DataFrame, list[dict], pd.DataFrame]:
    d = TRACES / name
    gpu_name = gpu_of(d)
    paired = baseline(d, gpu_name)
    # a launch that ran other work under ncu than traced is not a comparison of the model
    base = paired[paired.same]
    other = paired[~paired.same]
    blind = base.traced_work_share < BLIND_WORK_SHARE
    summary = {"set": name, "gpu": gpu_name, "launches": len(list(d.glob("kernel-*"))),
               "paired": len(base), "mape": mape(base.ncu_cycles, base.model_cycles),
               "mape_all": mape(paired.ncu_cycles, paired.model_cycles),
               "other": len(other),
               "other_share": float(other.ncu_cycles.sum() / paired.ncu_cycles.sum()),
               "step_ratio": float(base.model_cycles.sum() / base.ncu_cycles.sum()),
               "blind": int(blind.sum()),
               "blind_share": float(base.ncu_cycles[blind].sum() / base.ncu_cycles.sum())}
    wh = compare(d, progress=lambda m: print(m, file=sys.stderr, flush=True))
    whatifs = [{"condition": r.condition, "hw": r.hw_ratio, "model": r.model_ratio,
                "step_error": r.step_error, "mape": r.per_kernel_mape, "paired": r.n_exact}
               for r in wh if not r.condition.endswith("-all")]
    kern = per_kernel(base, "ncu_cycles", "model_cycles")
    sm = []
    for r in wh:
        ex = r.launches[(r.launches.match == "exact") & r.launches.model_ratio.notna()]
        if r.condition.endswith("-all") or ex.empty:
            continue
        g = ex.groupby("short_name")[["hw_base_us", "hw_cond_us", "model_base_us",
                                      "model_cond_us"]].sum()
        g["share"] = g.hw_base_us / g.hw_base_us.sum()
        g = g[(g.share >= MIN_SHARE) | g.index.str.match(SSD)]
        sm.append(pd.DataFrame({"condition": r.condition, "kernel": g.index,
                                "share": g.share.values,
                                "hw": (g.hw_cond_us / g.hw_base_us).values,
                                "model": (g.model_cond_us / g.model_base_us).values}))
    smk = pd.concat(sm, ignore_index=True) if sm else pd.DataFrame()
    return summary, kern, whatifs, smk


def render(results: list[tuple[dict, pd.DataFrame, list[dict], pd.DataFrame]]) -> str:
    out = [SECTION, "",
           f"The model ({MODEL_VERSION}, source hash {model_source_hash()[:12]}) on the "
           "held-out sets of "
           "`traces/corpus.yaml`, steps no model constant was fitted on (six mechanisms were "
           "found looking at them: model-1.19's and model-1.20's at their what-ifs, "
           "model-1.21's at their DRAM reads, model-1.22's at their L1 hit rates, "
           "model-1.23's at the H200 sets' DRAM-bound kernels, model-1.28's at their "
           "ablation ratios; docs/history.md). "
           "Written by `python bench/bench_heldout.py`. Baseline: every launch against ncu "
           "(`--clock-control none`, L2 flushed; the model's L2 empty); launches that Triton "
           "tuned to another grid under ncu than in the traced run do not pair and are left "
           "out, and so are launches traced whole whose warp instructions differ from ncu's "
           f"`sm__inst_executed.sum` by more than {OTHER_WORK:.0%} (*other work*: the same "
           "function, grid and block on another input, such as the Mamba2 steps' one-block "
           "per-head sums, 1.5-1.6x the work when traced). *All pairs* is the MAPE with them. "
           "What-ifs: CUPTI timelines on green contexts of the same step, the model's L2 "
           "warm (`simfront analyze whatif`).", "",
           "*Blind launches*: paired launches whose traced blocks hold under "
           f"{BLIND_WORK_SHARE:.0%} of the census's average block "
           "(`sim_traced_work_share`: the sample "
           "took blocks that exit at once), and their share of ncu's step cycles: the model "
           "times them without their memory traffic.", "",
           "| set | GPU | paired / launches | baseline MAPE | other work (ncu cycles) | "
           "all pairs | step cycles model/ncu | "
           "96 SMs step error | 64 SMs | 32 SMs | per-kernel ratio MAPE at 64 SMs | "
           "blind launches |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s, _, wh, _ in results:
        by = {w["condition"].split("-")[-1]: w for w in wh}
        cells = [f"{by[c]['step_error']:+.1%}" if c in by else "-" for c in
                 ("sms96", "sms64", "sms32")]
        m64 = f"{by['sms64']['mape']:.1%}" if "sms64" in by else "-"
        out.append(f"| {s['set']} | {s['gpu']} | {s['paired']} / {s['launches']} | "
                   f"{s['mape']:.1%} | {s['other']} ({s['other_share']:.1%}) | "
                   f"{s['mape_all']:.1%} | {s['step_ratio']:.3f} | {' | '.join(cells)} | {m64} | "
                   f"{s['blind']} ({s['blind_share']:.1%}) |")
    out += ["", "### Worst systematic misses, per kernel", "",
            "Each kernel's launches summed; the twelve largest kernels of at least 1% of the step, then "
            "every SSD kernel (Triton `_chunk_*`, `_state_passing_*`, `_bmm_*`). Baseline: "
            "summed model cycles over ncu's. What-ifs: the kernel's hardware and model time "
            "ratios (condition over whole GPU); listed where they differ by more than 10%.", "",
            "| set | kernel | share | baseline model/ncu | what-if misses (hw -> model) |",
            "|---|---|---|---|---|"]
    for s, kern, _, smk in results:
        top = kern[kern.share >= MIN_SHARE].head(12)
        ssd = kern[kern.index.str.match(SSD) & ~kern.index.isin(top.index)]
        for k, row in pd.concat([top, ssd]).iterrows():
            miss = ""
            if not smk.empty:
                sub = smk[(smk.kernel == k) & ((smk.model / smk.hw - 1).abs() > 0.10)]
                miss = "; ".join(f"{c.split('-')[-1]} {h:.2f} -> {m:.2f}"
                                 for c, h, m in zip(sub.condition, sub.hw, sub.model))
            out.append(f"| {s['set']} | {k[:40]} | {row.share:.1%} | {row.ratio:.2f} | "
                       f"{miss} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="*", help="held-out sets (default: all present)")
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    ap.add_argument("--jobs", type=int, default=1, help="sets in this many processes at once")
    args = ap.parse_args()
    held = held_out_sets()
    names = args.sets or [n for n in held if (TRACES / n).is_dir()]
    bad = [n for n in names if n not in held]
    if bad:
        raise SystemExit(f"not held out in {CORPUS}: {', '.join(bad)}")
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(set_rows, names))
    else:
        results = [set_rows(n) for n in names]
    text = render(results)
    print(text)
    if not args.no_write:
        update_section(SECTION, text, topic="The held-out corpus")


if __name__ == "__main__":
    main()

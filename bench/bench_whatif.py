"""Benchmark of the model's what-ifs against hardware what-ifs (issue 12).

For every shipped trace set with what-if timelines (``traces/*/whatif/``: the same step timed
with CUPTI on the whole H100, on 96/64/32 SMs of a green context, and on an H200), the
model runs the trace set at the H100 baseline and at the matching GPU variant (``sm_count``;
the ``h100-as-h200`` preset), and the ratios (condition over baseline) are compared: the
step's, summed over launches paired exactly with both timelines, and each launch's (MAPE;
also weighted by the launch's baseline time). Launches where the timeline ran another launch
shape (Triton autotuning on that machine) or another kernel (a cuBLAS choice) are counted
apart. Model records are cached per (set, config hash, model source hash) in
``$SIMFRONT_CACHE/whatif`` (default ``~/.cache/simfront/whatif``): the first run costs about
a CPU minute per set and condition, later ones seconds.

The model answers each condition twice: with every kernel starting from an empty L2
(``cold``, as ncu measures a kernel) and with the step's kernels run in launch order and
the L2 carried from one to the next (``warm``; docs/model.md, *Inter-kernel L2*). The main
table is of the mode the what-ifs use (``simfront.analysis.whatif.DEFAULT_L2``); a second
table sets the two side by side.

Run: ``python bench/bench_whatif.py [--workers N] [SET ...]``; updates its section of
bench/RESULTS.md.
"""

from __future__ import annotations

import sys
import time

from bench_heldout import held_out_sets  # bench/bench_heldout.py, beside this script
from results_md import update_section  # bench/results_md.py, beside this script

from simfront.analysis.whatif import (DEFAULT_L2, WHATIF_DIR, available_conditions, compare,
                                      model_source_hash, render_markdown, warm_cache)
from simfront.core.paths import repo_dir
from simfront.sim.model import MODEL_VERSION

SECTION = "## What-ifs against hardware (bench/bench_whatif.py)"


def whatif_sets(wanted: list[str]) -> list:
    """The fit sets with hardware what-ifs: held-out sets are judged apart
    (bench/bench_heldout.py), never in this development panel."""
    root = repo_dir("traces")
    held = set(held_out_sets())
    return [d for d in sorted(root.iterdir())
            if (d / "kernelslist.g").is_file() and (d / WHATIF_DIR).is_dir()
            and d.name not in held and available_conditions(d)
            and (not wanted or d.name in wanted)]


def targets(results) -> list[str]:
    """The paper-size sets against issue 12's targets: SM count, step within 3% at every
    count and per-launch MAPE <= 8% at 64 SMs; H200, step within 3% and MAPE <= 8%."""
    out = []
    for name in sorted({r.workload for r in results
                        if r.workload.endswith(("-paper", "-paper-box"))}):
        rs = {r.condition: r for r in results if r.workload == name}
        sms = [r for c, r in rs.items() if c.startswith("h100-sms")]
        parts = []
        if sms:
            worst = max(sms, key=lambda r: abs(r.step_error))
            ok = all(abs(r.step_error) <= 0.03 for r in sms)
            parts.append(f"SM count: step error up to {worst.step_error:+.1%} ({worst.title}; "
                         f"target 3%: {'met' if ok else 'not met'})")
            if "h100-sms64" in rs:
                m = rs["h100-sms64"].per_kernel_mape
                parts.append(f"per-launch MAPE at 64 SMs {m:.1%} (target 8%: "
                             f"{'met' if m <= 0.08 else 'not met'})")
        if "h200-all" in rs:
            r = rs["h200-all"]
            parts.append(f"H200: step {r.step_error:+.1%}, per-launch MAPE "
                         f"{r.per_kernel_mape:.1%} (targets 3% / 8%: "
                         f"{'met' if abs(r.step_error) <= 0.03 and r.per_kernel_mape <= 0.08 else 'not met'})")
        l2 = [r for c, r in rs.items() if c.startswith("h100-l2set")]
        for r in l2:
            lr = r.exact.model_ratio
            parts.append(f"{r.title}: hardware {r.hw_ratio:.3f}, model {r.model_ratio:.3f} "
                         f"(per-launch model ratios {lr.min():.3f}-{lr.max():.3f}; cold or warm, "
                         "an LRU L2 of 25 MiB moves these kernels' bytes as one of 50 does: "
                         "see *The L2 set-aside by DRAM traffic* below)")
        out.append(f"- {name}: " + "; ".join(parts) + ".")
    return out


L2_MODES = ("cold", "warm")


def setaside_by_traffic(warm_results) -> str:
    """Where the L2 set-aside's slowdown sits on hardware: the exactly paired launches of at
    least 20 us, grouped by what the warm model makes of them on the H100 (DRAM-bound:
    the DRAM bound is at least 80% of the active time; the share of writes in its DRAM
    traffic), with the hardware's and the model's ratio per group."""
    import pandas as pd

    from simfront.analysis.whatif import BASE, condition, model_records

    rows = []
    for r in warm_results:
        if not r.condition.startswith("h100-l2set"):
            continue
        rec = model_records(repo_dir("traces") / r.workload, condition(BASE).model_gpu(),
                            l2="warm")
        x = r.exact[r.exact.hw_base_us >= 20].copy()
        rd = x.file.map(rec.dram_read_bytes)
        wr = x.file.map(rec.dram_write_bytes)
        dram_bound = x.file.map(rec.sim_dram_bound_cycles >= 0.8 * rec.sim_active_cycles)
        share = wr / (rd + wr)
        x["group"] = [("not DRAM-bound" if not b else "DRAM-bound, writes < 20%" if w < 0.2
                       else "DRAM-bound, writes >= 20%") for b, w in zip(dram_bound, share)]
        x["workload"] = r.workload
        rows.append(x)
    if not rows:
        return ""
    x = pd.concat(rows)
    lines = ["| trace set | launches (>= 20 us) | H100 time, ms | hw ratio | hw per launch | "
             "model ratio (warm) |", "|---|---|---|---|---|---|"]
    for (w, g), d in x.groupby(["workload", "group"]):
        lines.append(f"| {w}: {g} | {len(d)} | {d.hw_base_us.sum() / 1e3:.2f} | "
                     f"{d.hw_cond_us.sum() / d.hw_base_us.sum():.3f} | "
                     f"{d.hw_ratio.min():.2f}-{d.hw_ratio.max():.2f} | "
                     f"{d.model_cond_us.sum() / d.model_base_us.sum():.3f} |")
    return "\n".join(lines)


def base_error(r) -> float:
    """The model's H100 time over the hardware's, summed over the exactly paired launches
    (how far the baseline itself is off; the what-ifs compare ratios)."""
    ex = r.exact
    return float(ex.model_base_us.sum() / ex.hw_base_us.sum() - 1)


def render_modes(by_mode: dict[str, list]) -> str:
    """Cold against warm L2, per trace set and condition: step ratio error, per-launch ratio
    MAPE (plain and time-weighted), and the baseline's own error."""
    cold, warm = by_mode["cold"], by_mode["warm"]
    lines = ["| trace set | condition | hw step ratio | model cold | model warm | step error "
             "cold -> warm | per-launch MAPE cold -> warm | time-weighted cold -> warm | "
             "H100 baseline model/hw - 1, cold -> warm |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c, w in zip(cold, warm):
        assert (c.workload, c.condition) == (w.workload, w.condition)
        lines.append(f"| {c.workload} | {c.title} | {c.hw_ratio:.3f} | {c.model_ratio:.3f} | "
                     f"{w.model_ratio:.3f} | {c.step_error:+.1%} -> {w.step_error:+.1%} | "
                     f"{c.per_kernel_mape:.1%} -> {w.per_kernel_mape:.1%} | "
                     f"{c.weighted_error:.1%} -> {w.weighted_error:.1%} | "
                     f"{base_error(c):+.1%} -> {base_error(w):+.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    workers = 1
    if "--workers" in argv:
        i = argv.index("--workers")
        workers = int(argv[i + 1])
        del argv[i:i + 2]
    t0 = time.monotonic()
    sets = whatif_sets(argv)
    by_mode: dict[str, list] = {m: [] for m in L2_MODES}
    for mode in L2_MODES:
        # The model runs first, side by side; the comparisons then read the cache.
        warm_cache(sets, workers=workers, l2=mode)
        for d in sets:
            print(f"== {d.name}, {mode} L2: {', '.join(available_conditions(d))}", flush=True)
            by_mode[mode] += compare(d, progress=lambda m: print(m, flush=True), l2=mode)
    results = by_mode[DEFAULT_L2]
    if not results:
        print("no trace set with what-if timelines")
        return 1
    table = render_markdown(results)
    modes = render_modes(by_mode)
    print(modes)
    print(table)
    lines = [SECTION, "",
             f"- {time.strftime('%Y-%m-%d', time.gmtime())}, CPU machine; model "
             f"`simfront.sim.model` {MODEL_VERSION}, source hash `{model_source_hash()[:12]}`. "
             "Hardware: "
             "CUPTI timelines "
             "(`simfront timeline`) of the same step shipped in `traces/SET/whatif/`, on the "
             "whole H100, on 96/64/32 SMs of a CUDA green context, and on an H200 "
             "(driver 580.159.04, torch 2.11, one timed iteration after a warm one).",
             "- Model: the trace set on `h100` and on the matching variant (`sm_count` N; "
             "`h100-as-h200` = 4.8 TB/s DRAM and a 60 MiB L2), registers and shared memory "
             "from the set's ncu.csv. Ratio = condition over H100. *hw/model step ratio*: "
             "summed over launches paired exactly with both timelines; *whole step*: all "
             "launches (hardware: the timelines' kernel time; model: every modelled trace "
             "launch). *Per-launch ratio MAPE*: mean |model ratio / hw ratio - 1| over the "
             "exactly paired launches; *time-weighted*: the same weighted by the launch's "
             "H100 time. Worst kernels: summed per kernel name, among those with at least 1% "
             "of the paired H100 time.",
             "- L2: *cold*, every kernel starts with an empty L2 (as ncu measures a kernel); "
             "*warm*, the step's kernels run in launch order with the L2 carried from one to "
             "the next, a sampled kernel's untraced blocks entering it as anonymous lines "
             "(docs/model.md, *Inter-kernel L2*). The first table sets the two side by side "
             "(the last column: the model's H100 time over the hardware's, summed over the "
             "paired launches); the second is the what-if default's "
             f"(`{DEFAULT_L2}`) in full.",
             f"- Command: `python bench/bench_whatif.py --workers 2` ({time.monotonic() - t0:.0f} s "
             "this run, model records from the cache where present); the same table per set: "
             "`simfront analyze whatif traces/SET [--l2 cold|warm]`.", "",
             "### Cold against warm L2", "", modes, "",
             f"### The what-if default ({DEFAULT_L2} L2)", "", table, ""]
    lines += targets(results)
    by_traffic = setaside_by_traffic(by_mode["warm"])
    if by_traffic:
        lines += ["", "### The L2 set-aside by DRAM traffic", "",
                  "Where the 25 MiB set-aside slows the step on hardware: the paired launches "
                  "of at least 20 us, grouped by what the warm model makes of them on the H100 "
                  "(DRAM-bound: the DRAM bound is at least 80% of the active time; writes: "
                  "their share of its DRAM traffic). The slowdown sits in the DRAM-bound "
                  "kernels that write (AdamW's multi_tensor_apply, the big elementwise and "
                  "copy kernels, the softmax): streams that reuse nothing, within or between "
                  "kernels, so an LRU L2 of 25 MiB moves the same bytes as one of 50 and the "
                  "model, cold or warm, stays at 1.00. What the hardware loses there is the "
                  "persisting mode's write path, not capacity: a 256 MiB fill runs 1.25-1.29x, "
                  "a copy 1.11-1.14x and an Adam-like update 1.17-1.18x slower with the "
                  "set-aside, while a read does not slow (bench/device/l2_setaside_stream.py, "
                  "*The set-aside also slows streaming writes*).",
                  "", by_traffic]
    update_section(SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

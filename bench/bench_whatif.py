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

Run: ``python bench/bench_whatif.py [SET ...]``; updates its section of bench/RESULTS.md.
"""

from __future__ import annotations

import sys
import time

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.analysis.whatif import (WHATIF_DIR, available_conditions, compare,
                                      model_source_hash, render_markdown)
from simfront.paths import repo_dir

SECTION = "## What-ifs against hardware (bench/bench_whatif.py)"


def whatif_sets(wanted: list[str]) -> list:
    root = repo_dir("traces")
    return [d for d in sorted(root.iterdir())
            if (d / "kernelslist.g").is_file() and (d / WHATIF_DIR).is_dir()
            and available_conditions(d) and (not wanted or d.name in wanted)]


def targets(results) -> list[str]:
    """The paper-size sets against issue 12's targets: SM count, step within 3% at every
    count and per-launch MAPE <= 8% at 64 SMs; H200, step within 3% and MAPE <= 8%."""
    out = []
    for name in sorted({r.workload for r in results if r.workload.endswith("-paper")}):
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
                         f"(per-launch model ratios {lr.min():.3f}-{lr.max():.3f}: in the model "
                         "each kernel starts with an empty L2 (`prepare_kernel`), so no reuse "
                         "between kernels is lost, and probably the sampled blocks' own "
                         "footprint never fills the 25 MiB left; not checked further)")
        out.append(f"- {name}: " + "; ".join(parts) + ".")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    t0 = time.monotonic()
    results = []
    for d in whatif_sets(argv):
        print(f"== {d.name}: {', '.join(available_conditions(d))}", flush=True)
        results += compare(d, progress=lambda m: print(m, flush=True))
    if not results:
        print("no trace set with what-if timelines")
        return 1
    table = render_markdown(results)
    print(table)
    lines = [SECTION, "",
             f"- {time.strftime('%Y-%m-%d', time.gmtime())}, CPU machine; model "
             f"`simfront.sim.model` as of source hash `{model_source_hash()[:12]}` (the current "
             "model: issue 12's model fixes are not in it yet). Hardware: CUPTI timelines "
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
             f"- Command: `python bench/bench_whatif.py` ({time.monotonic() - t0:.0f} s this "
             "run, model records from the cache where present); the same table per set: "
             "`simfront analyze whatif traces/SET`.", "", table, ""]
    lines += targets(results)
    update_section(SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of launch deduplication (issue 15): is a deduplicated set's step the full one's?

Until the H100 recaptures with ``--dedup`` (tracer 1.2) come back, this measures it offline on
the shipped paper-size captures (``traces/mamba2_lm-paper``, ``traces/mamba1_lm-paper``:
2 layers, every launch of one training step traced with ``--sample first:8``). Each is
deduplicated after the fact (``simfront.traces.dedup.deduplicate_set``) with two keys:

- ``work``: name, grid, block, shared memory and the launch's CTA census (warp instructions
  over every block, in the header): launches doing the same work merge, which is what the
  tracer's key (function, configuration, parameter bytes with pointers masked) aims at;
- ``config``: name, grid, block and shared memory only (what a key without the parameter
  bytes would merge).

The model (``simfront.sim.model``, H100) runs on the full set and on each copy; the step is
the sum of kernel cycles, each record weighted by its launch count. Census per launch:
every merged launch's census against its representative's.

Run: ``python bench/bench_dedup.py``; updates its section of bench/RESULTS.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

import pandas as pd

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.backend import SimJob
from simfront.sim.model.backend import ModelBackend
from simfront.stats.launches import step_total
from simfront.traces.dedup import deduplicate_set
from simfront.traces.reader import TraceSet

SETS = ("mamba2_lm-paper", "mamba1_lm-paper")
KEYS = {
    "work": lambda k: (k.header.name, k.header.grid, k.header.block, k.header.shmem,
                       k.header.census_warp_instructions),
    "config": lambda k: (k.header.name, k.header.grid, k.header.block, k.header.shmem),
}


def model_step(trace_dir: Path, out: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    res = ModelBackend().run(SimJob(out.name, trace_dir, load_gpu("h100"), out))
    if not res.ok:
        raise SystemExit(f"model failed on {trace_dir}: {res.reason}")
    return step_total(pd.DataFrame(res.records), "cycles"), time.perf_counter() - t0


def census_spread(full: Path, mult_key) -> float:
    """Largest relative census difference between a launch and the first of its group."""
    first: dict = {}
    worst = 0.0
    for k in TraceSet(full).kernels():
        c = k.header.census_warp_instructions
        kk = mult_key(k)
        if c is None:
            continue
        if kk not in first:
            first[kk] = c
        else:
            worst = max(worst, abs(c - first[kk]) / max(first[kk], 1))
    return worst


def recaptured(full: Path, dedup: Path) -> dict:
    """The same step captured again with the tracer's own deduplication: launches paired on
    (name, grid, block), census (warp instructions over every block) compared per launch."""
    from simfront.stats.matching import align, launch_key

    def keyed(d):
        ks = list(TraceSet(d).kernels())
        return ks, [launch_key(k.header.name, k.header.grid, k.header.block) for k in ks]

    a, ka = keyed(full)
    b, kb = keyed(dedup)
    pairs = align(ka, kb)
    diffs = []
    for i, j in pairs:
        ca, cb = a[i].header.census_warp_instructions, b[j].header.census_warp_instructions
        if ca and cb:
            diffs.append(abs(cb - ca) / ca)
    exact = sum(d == 0 for d in diffs)
    return {"paired": len(pairs), "traced": len(b), "census_compared": len(diffs),
            "census_exact": exact, "census_max_diff": max(diffs) if diffs else float("nan")}


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in SETS:
            src = REPO_ROOT / "traces" / name
            n = len(TraceSet(src))
            full, wall_full = model_step(src, tmp / f"{name}-full")
            print(f"{name}: {n} launches, model step {full:.4g} cycles ({wall_full:.0f} s)",
                  flush=True)
            for kname, key in KEYS.items():
                d = tmp / f"{name}-{kname}"
                mult = deduplicate_set(src, d, key)
                dd, wall = model_step(d, tmp / f"{name}-{kname}-out")
                rows.append({"set": name, "key": kname, "launches": n, "traced": len(mult),
                             "step_full_cycles": full, "step_dedup_cycles": dd,
                             "step_diff": dd / full - 1,
                             "census_spread": census_spread(src, key),
                             "model_wall_full_s": wall_full, "model_wall_dedup_s": wall})
                print(rows[-1], flush=True)
            rec = REPO_ROOT / "traces" / f"{name}-dedup"
            if rec.is_dir():
                dd, wall = model_step(rec, tmp / f"{name}-tracer-out")
                cmp = recaptured(src, rec)
                rows.append({"set": name, "key": "tracer (recaptured)",
                             "launches": TraceSet(rec).launches, "traced": cmp["traced"],
                             "step_full_cycles": full, "step_dedup_cycles": dd,
                             "step_diff": dd / full - 1, "census_spread": float("nan"),
                             "model_wall_full_s": wall_full, "model_wall_dedup_s": wall,
                             **cmp})
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    lines = ["## Launch deduplication (issue 15)", "",
             "Shipped paper-size steps (2 layers, `--sample first:8`) deduplicated after the fact "
             "and modelled on the H100 preset (`python bench/bench_dedup.py`). `work` merges "
             "launches of equal name, grid, block, shared memory and CTA census (what the "
             "tracer's parameter-byte key aims at); `config` ignores the census (no parameter "
             "bytes). Step = sum of model cycles, each kernel weighted by its launch count; "
             "census spread = the largest relative difference in warp instructions between a "
             "merged launch and its representative.", "",
             "| set | key | launches | traced | step full (cycles) | step dedup | difference "
             "| census spread | model s full / dedup |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['key']} | {r['launches']} | {r['traced']} | "
                     f"{r['step_full_cycles']:.4g} | {r['step_dedup_cycles']:.4g} | "
                     f"{r['step_diff']:+.2%} | {r['census_spread']:.2%} | "
                     f"{r['model_wall_full_s']:.0f} / {r['model_wall_dedup_s']:.0f} |")
    for r in rows:
        if r["key"].startswith("tracer"):
            lines.append(f"- {r['set']}, recaptured on the H100 with the tracer's own key "
                         f"(`traces/{r['set']}-dedup`, tracer 1.2): {r['traced']} of "
                         f"{r['launches']} launches traced, the rest counted; "
                         f"{r['paired']} launches pair with the full capture by name, grid and "
                         f"block; census equal for {r['census_exact']} of "
                         f"{r['census_compared']} compared (largest difference "
                         f"{r['census_max_diff']:.2%}). The step's difference also holds "
                         "capture-to-capture change (another process, other sampled blocks).")
    update_section("## Launch deduplication (issue 15)", "\n".join(lines) + "\n")
    df.to_csv(Path(tempfile.gettempdir()) / "bench_dedup.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())

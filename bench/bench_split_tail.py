"""A split reduction's last block on the H200, and the model's finishing walk against ncu.

The data (bench/data/device/split_tail/, `bash bench/device/split_tail.sh h200`):
bench/device/split_tail.cu runs PyTorch's split-reduction idiom (10 columns x C blocks of
(32, 4); every block stores its partials, fences and counts in on its column's semaphore;
the last walks the column's C partials, four scalar loads a step, one step a loop trip as
PyTorch's SASS has it) for C from 8 to 512, and the last block of each column times its walk
with clock64. Clocks a step, from 4 to 49 steps (the corpus's walks take 15-49), is the
model's ``GridParams.last_block_step_cycles``.

Then the model's `reduce_kernel` launches that walk (``finish``), on the held-out sets and
the fit steps that have them: ncu's cycles against the model's, with and without the walk.

    python bench/bench_split_tail.py [--sets NAME ...] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bench_heldout import gpu_of  # the set's GPU, as the held-out bench reads it
from results_md import publish  # bench/results_md.py, beside this script

from simfront.analysis.whatif import model_records
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import MODEL_VERSION
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.validation import pair_launches, read_ncu

DATA = REPO_ROOT / "bench" / "data" / "device" / "split_tail"
TRACES = REPO_ROOT / "traces"
HEADING = "## A split reduction's last block (bench/bench_split_tail.py)"
#: the walks of the corpus's reductions take 15-49 steps; the fit stays within them
FIT_STEPS = (4, 49)
SETS = ("mamba2_lm-paper", "hybrid_lm-paper", "ho-m2-d512", "ho-m2-d1024", "ho-hybrid",
        "h200-ho-m2-d512", "h200-ho-m2-d1024", "h200-ho-hybrid")


def walk_table(csv: Path = DATA / "split_tail_h200.csv") -> pd.DataFrame:
    """Per walk length: the median over runs of the slowest column's walk, and per step."""
    d = pd.read_csv(csv)
    g = d.groupby(["ctas", "steps"]).tail_clocks_max.median().reset_index()
    g["per_step"] = g.tail_clocks_max / g.steps
    return g


def step_cycles(table: pd.DataFrame, steps: tuple[int, int] = FIT_STEPS) -> float:
    """Clocks a step: the slope of the walk's clocks over its steps within ``steps``."""
    t = table[(table.steps >= steps[0]) & (table.steps <= steps[1])]
    return float(np.polyfit(t.steps, t.tail_clocks_max, 1)[0])


def walk_launches(name: str) -> pd.DataFrame:
    """The set's launches the model gives a finishing walk, paired with ncu."""
    d = TRACES / name
    recs = model_records(d, load_gpu(gpu_of(d)), l2="cold")
    pairs, _ = pair_launches(d, read_ncu(d / "ncu.csv"))
    rows = []
    for p in pairs:
        r = recs.loc[p.kernel.path.name] if p.kernel.path.name in recs.index else None
        if r is None or not r.get("sim_finish_walk_cycles", 0):
            continue
        rows.append({"set": name, "grid": str(p.row["Grid Size"]),
                     "ncu": float(p.row["cycles"]), "model": float(r.cycles),
                     "walk": float(r.sim_finish_walk_cycles)})
    return pd.DataFrame(rows)


def render(table: pd.DataFrame, fitted: float, launches: pd.DataFrame) -> str:
    out = [HEADING, "", "2026-11-28, one H200 call: `bash bench/device/split_tail.sh h200` (data: "
           "`bench/data/device/split_tail/`, the SASS beside). Written by `python "
           "bench/bench_split_tail.py`.", "",
           "| partials (C) | steps | slowest column's walk, clocks | a step |",
           "|---:|---:|---:|---:|"]
    for r in table.itertuples():
        out.append(f"| {r.ctas} | {r.steps} | {r.tail_clocks_max:,.0f} | {r.per_step:.0f} |")
    out += ["", f"Clocks a step, the slope from {FIT_STEPS[0]} to {FIT_STEPS[1]} steps: "
            f"**{fitted:.0f}** (the model's `grid.last_block_step_cycles`: "
            f"{DEFAULT_PARAMS.grid.last_block_step_cycles:.0f}). A step is one load's round "
            "trip to the L2 and the loop's dependent address arithmetic; past 49 steps "
            "(C = 256 and more) a step costs 620-700 clocks, which no launch of the corpus "
            "reaches.", ""]
    if not launches.empty:
        out += [f"The model ({MODEL_VERSION}) on the `reduce_kernel` launches it gives a walk "
                "(L2 cold, against ncu's cycles; launches whose sample holds a last block "
                "keep its walk among the traced rows and get none):", "",
                "| set | grid | launches | ncu cycles | model | model without the walk |",
                "|---|---|---:|---:|---:|---:|"]
        g = launches.groupby(["set", "grid"], sort=False).agg(
            n=("ncu", "size"), ncu=("ncu", "mean"), model=("model", "mean"),
            walk=("walk", "mean"))
        for (s, grid), r in g.iterrows():
            out.append(f"| `{s}` | {grid} | {int(r.n)} | {r.ncu:,.0f} | {r.model / r.ncu:.2f} | "
                       f"{(r.model - r.walk) / r.ncu:.2f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    table = walk_table()
    launches = [walk_launches(s) for s in args.sets if (TRACES / s / "ncu.csv").exists()]
    body = render(table, step_cycles(table),
                  pd.concat(launches, ignore_index=True) if launches else pd.DataFrame())
    publish(HEADING, body, write=not args.no_write, topic="Microbenchmarks")


if __name__ == "__main__":
    main()

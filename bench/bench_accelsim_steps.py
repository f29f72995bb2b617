"""The tiny Mamba-1 and Mamba-2 LM steps, whole, through Accel-Sim 1.x beside the model
(issue 13): what `simfront sweep run experiments/accelsim_steps.yaml` made, read back from
its sweep directory, against the H100 (ncu), into bench/RESULTS.md.

    simfront sweep run experiments/accelsim_steps.yaml --executor local   # hours of CPU
    python bench/bench_accelsim_steps.py [SWEEP_DIR]

It runs nothing itself: the sweep needs an Accel-Sim install (``ACCELSIM_ROOT``). From the
job store it takes the wall and CPU time; from each Accel-Sim job's provenance the
``--isa-compat ampere`` report, which says per launch whether Hopper-only opcodes had to be
lowered (warpgroup MMA, TMA, mbarriers; ``simfront.sim.accelsim.lowering.LOWERED_OPS``) or
only renamed (VIADD, REDG, ...); from results.h5 the records, compared three ways by
``simfront.analysis.threeway``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

import numpy as np
import pandas as pd

from simfront.analysis.threeway import three_way
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.sim.accelsim.lowering import LOWERED_OPS, RENAME_OPS, TMA_LOADS, TMA_STORES
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.stats.h5store import read_records
from simfront.stats.matching import mape, pearson
from simfront.sweep.store import JobStore
from simfront.sweep.worker import finished_result
from simfront.traces.store import TraceStore

#: The model's launch and drain cycles, which ncu's elapsed cycles include and Accel-Sim's
#: do not.
LAUNCH = DEFAULT_PARAMS.launch.cycles
SECTION = "## The tiny steps, whole, through Accel-Sim 1.x (bench/bench_accelsim_steps.py)"
SWEEP = REPO_ROOT / "experiments" / ".sweeps" / "accelsim_steps"
#: Lowerings proper: opcodes with no Ampere counterpart, rewritten into other instructions
#: (renames such as VIADD -> IADD3 are not counted as lowering).
HOPPER_ONLY = LOWERED_OPS - set(RENAME_OPS)
#: The lowerings the issue is about: warpgroup MMA, TMA and mbarriers.
WARPGROUP_TMA = frozenset({"HGMMA", "QGMMA", "IGMMA", "SYNCS"}) | TMA_LOADS | TMA_STORES


def done_jobs(sweep: Path) -> pd.DataFrame:
    """The sweep's planned jobs that finished, from its job store."""
    jobs = JobStore(sweep).table()
    return jobs[jobs["state"] == "done"]


def job_times(jobs: pd.DataFrame) -> dict:
    """Per backend: jobs, CPU time (the jobs' own wall times, one core each) and the
    longest job; and the wall time from the first Accel-Sim job's start to the last one's
    end (model jobs may have been run again later, under a new model version)."""
    out = {b: {"jobs": len(g), "cpu_s": float(g["wall_s"].sum()),
               "longest_s": float(g["wall_s"].max())} for b, g in jobs.groupby("backend")}
    acc = jobs[jobs["backend"] == "accelsim"]
    out["wall_s"] = (float(acc["finished_at"].max() - acc["started_at"].min())
                     if len(acc) else float("nan"))
    return out


def lowering(sweep: Path, jobs: pd.DataFrame) -> pd.DataFrame:
    """Per Accel-Sim launch: workload, kernel id, lowered (a Hopper-only opcode rewritten),
    renamed only, refused, instructions in and out."""
    rows = []
    for job in jobs[jobs["backend"] == "accelsim"].itertuples():
        res = finished_result(sweep, job.job_id) or {}
        compat = (res.get("provenance") or {}).get("isa_compat") or {}
        for file, k in (compat.get("kernels") or {}).items():
            ops = set((k.get("rewritten") or {}))
            lowered = bool(ops & HOPPER_ONLY)
            rows.append({"workload": job.workload, "file": file, "lowered": lowered,
                         "warpgroup_tma": bool(ops & WARPGROUP_TMA),
                         "renamed_only": bool(ops) and not lowered, "refused": False,
                         "instructions_in": k.get("instructions_in"),
                         "instructions_out": k.get("instructions_out")})
        for file in (compat.get("refused") or {}):
            rows.append({"workload": job.workload, "file": file, "lowered": False,
                         "warpgroup_tma": False, "renamed_only": False, "refused": True})
    return pd.DataFrame(rows)


def kernel_id(file: str) -> int:
    return int(file.split("-")[1].split(".")[0])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sweep = Path(argv[0]) if argv else SWEEP
    if not (sweep / "results.h5").is_file():
        # `make bench` on a machine without the sweep: the section keeps its recorded run.
        print(f"no sweep results in {sweep}: run `simfront sweep run "
              "experiments/accelsim_steps.yaml` first (needs Accel-Sim, ACCELSIM_ROOT); "
              "bench/RESULTS.md left as it is")
        return 0
    records = read_records(sweep / "results.h5")
    hw = {}
    for w in sorted(records["workload"].dropna().unique()):
        p = TraceStore().get(str(w)).path / "ncu.csv"
        if p.is_file():
            hw[str(w)] = read_ncu_csv(p)
    t = three_way(records, hw)
    jobs = done_jobs(sweep)
    times = job_times(jobs)
    low = lowering(sweep, jobs)
    low["kernel_id"] = low["file"].map(kernel_id)
    k = t.kernels.merge(low.drop_duplicates(["workload", "kernel_id"])[
        ["workload", "kernel_id", "lowered", "warpgroup_tma", "renamed_only", "refused"]],
        on=["workload", "kernel_id"], how="left")
    base = k[k["config"] == t.base_config]
    acc = records[records["backend"].astype(str) == "accelsim"] if "backend" in records else records
    version = str(acc["backend_version"].dropna().iloc[0]) if "backend_version" in acc and \
        acc["backend_version"].notna().any() else "?"

    lines = [SECTION, "",
             f"- {pd.Timestamp.now(tz='UTC'):%Y-%m-%d}, the 2-core CPU machine; Accel-Sim "
             f"{version} (hand-built outside the repository; `ACCELSIM_ROOT`), the `h100` "
             "description and its tensor:vector 8:1 variant, `--isa-compat ampere`, one job "
             "per distinct launch (`split: kernel`, repeated identical launches run once), "
             "the model standing in after 20 minutes or for what Accel-Sim refuses "
             "(`fallback`). Command: `simfront sweep run experiments/accelsim_steps.yaml "
             "--executor local` (2 workers), then `python bench/bench_accelsim_steps.py`; "
             "the same tables: `simfront analyze threeway "
             "experiments/.sweeps/accelsim_steps/results.h5`.",
             f"- Time: {times['wall_s'] / 3600:.2f} h wall for the Accel-Sim jobs (two "
             "workers, the model's jobs interleaved); Accel-Sim jobs "
             f"{times.get('accelsim', {}).get('jobs', 0)}, "
             f"{times.get('accelsim', {}).get('cpu_s', 0) / 3600:.2f} h CPU (longest job "
             f"{times.get('accelsim', {}).get('longest_s', 0):.0f} s); model jobs "
             f"{times.get('model', {}).get('jobs', 0)}, "
             f"{times.get('model', {}).get('cpu_s', 0) / 60:.1f} min CPU.",
             ""]
    lines += ["| set | launches at H100 | Accel-Sim records of its own | stand-ins (model) | "
              "lowered (Hopper-only opcodes) | of which warpgroup MMA, TMA or mbarriers | "
              "renamed only | refused |",
              "|---|---|---|---|---|---|---|---|"]
    for w, g in base.groupby("workload"):
        own = int(g["accelsim_cycles"].notna().sum() - g["stand_in"].sum())
        lines.append(f"| {w} | {len(g)} | {own} "
                     f"| {int(g['stand_in'].sum())} | {int(g['lowered'].fillna(False).sum())} "
                     f"| {int(g['warpgroup_tma'].fillna(False).sum())} "
                     f"| {int(g['renamed_only'].fillna(False).sum())} "
                     f"| {int(g['refused'].fillna(False).sum())} |")
    lines += ["", "Against the H100 (ncu `gpc__cycles_elapsed.max`, the same launches), at the "
              "`h100` description; *lowered*: launches with a Hopper-only opcode lowered; "
              "stand-ins left out of Accel-Sim's rows. Accel-Sim counts a kernel from its "
              "first block's issue to its last block's end; ncu's elapsed cycles and the "
              f"model add the launch and drain (the model's `launch_cycles`, {LAUNCH:,.0f}, "
              "fitted on `mamba1_scan_step`): the *Accel-Sim + "
              f"{LAUNCH:,.0f}* rows add it to Accel-Sim's cycles, to tell that artefact "
              "from the rest.", "",
              "| set | launches | backend | kernels | MAPE | Pearson | summed / ncu |",
              "|---|---|---|---|---|---|---|"]
    for w, g in base.groupby("workload"):
        g = g[g["hw_cycles"].notna()]
        low = g["lowered"].fillna(False).astype(bool)
        for part, sel in (("lowered", low), ("not lowered", ~low), ("all", low | ~low)):
            for b, label, extra in (("accelsim", "Accel-Sim", 0.0),
                                    ("accelsim", f"Accel-Sim + {LAUNCH:,.0f}", LAUNCH),
                                    ("model", "model", 0.0)):
                x = g[sel & g[f"{b}_cycles"].notna()]
                if b == "accelsim":
                    x = x[~x["stand_in"]]
                if not len(x):
                    continue
                c = x[f"{b}_cycles"] + extra
                lines.append(f"| {w} | {part} | {label} | {len(x)} | "
                             f"{mape(x['hw_cycles'], c):.1%} | {pearson(x['hw_cycles'], c):.3f} "
                             f"| {c.sum() / x['hw_cycles'].sum():.3f} |")
    lines += ["", "Steps (launches both backends finished, each weighted by the launches it "
              "stands for) and the what-if at tensor:vector 8:1:", "",
              "| set | config | launches in common | model cycles | Accel-Sim cycles | "
              "launches with ncu | model / ncu | Accel-Sim / ncu |",
              "|---|---|---|---|---|---|---|---|"]
    both = k[k["model_cycles"].notna() & k["accelsim_cycles"].notna() & ~k["stand_in"]]
    for r in t.steps.itertuples():
        x = both[(both["workload"] == r.workload) & (both["config_hash"] == r.config_hash)
                 & both["hw_cycles"].notna()]
        hw_sum = float((x["hw_cycles"] * x["launch_count"]).sum())
        cells = (f"{len(x)} | {(x['model_cycles'] * x['launch_count']).sum() / hw_sum:.3f} | "
                 f"{(x['accelsim_cycles'] * x['launch_count']).sum() / hw_sum:.3f}"
                 if len(x) else " | | ")
        name = r.config + (" (baseline)" if r.baseline else "")
        lines.append(f"| {r.workload} | {name} | {r.common} | {r.model_cycles:,.0f} | "
                     f"{r.accelsim_cycles:,.0f} | {cells} |")
    if len(t.whatifs):
        lines += ["", f"*Accel-Sim + {LAUNCH:,.0f}*: its ratio with the launch overhead "
                  "added to every launch on both sides, as the model counts it.", "",
                  "| set | what-if | launches | model ratio | Accel-Sim ratio | Accel-Sim + "
                  f"{LAUNCH:,.0f} | disagree | most apart |", "|---|---|---|---|---|---|---|---|"]
        for r in t.whatifs.itertuples():
            x0 = both[(both["workload"] == r.workload) & (both["config"] == t.base_config)]
            x1 = both[(both["workload"] == r.workload) & (both["config_hash"] == r.config_hash)]
            ids = sorted(set(x0["kernel_id"]) & set(x1["kernel_id"]))
            a0 = x0.set_index("kernel_id").loc[ids]
            a1 = x1.set_index("kernel_id").loc[ids]
            diluted = (((a1["accelsim_cycles"] + LAUNCH) * a1["launch_count"]).sum()
                       / ((a0["accelsim_cycles"] + LAUNCH) * a0["launch_count"]).sum())
            lines.append(f"| {r.workload} | {r.config} | {r.kernels} | {r.model_ratio:.3f} | "
                         f"{r.accelsim_ratio:.3f} | {diluted:.3f} | "
                         f"{'yes' if r.disagree else 'no'} | {r.worst_kernels} |")
    # per-kernel what-if response where the two differ most (Accel-Sim's own records)
    b0 = both[both["config"] == t.base_config].set_index(["workload", "kernel_id"])
    for cfg in sorted(set(both["config"]) - {t.base_config}):
        v = both[both["config"] == cfg].set_index(["workload", "kernel_id"])
        ids = b0.index.intersection(v.index)
        rm = v.loc[ids, "model_cycles"] / b0.loc[ids, "model_cycles"]
        ra = v.loc[ids, "accelsim_cycles"] / b0.loc[ids, "accelsim_cycles"]
        lines += ["", f"Per launch at {cfg}: the model's ratio moves by more than 2% for "
                  f"{int((abs(rm - 1) > 0.02).sum())} of {len(ids)} launches, Accel-Sim's for "
                  f"{int((abs(ra - 1) > 0.02).sum())}; the two ratios differ by more than 5% "
                  f"for {int((abs(ra / rm - 1) > 0.05).sum())} (median |log ratio of ratios| "
                  f"{float(np.median(np.abs(np.log(ra / rm)))):.3f})."]
    for d in t.disagreements:
        lines.append(f"- Disagreement: {d}")
    lines.append("")
    update_section(SECTION, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark of ``--isa-compat ampere`` (issue 13): the Hopper-only kernels of the shipped
tiny steps, lowered and run on Accel-Sim 1.x, against the H100 (ncu) and the model.

For each trace set under ``traces/`` named below, every launch holding a Hopper-only opcode
(warpgroup MMA, TMA, mbarriers) is paired with its ncu record of the same step
(``ncu.csv`` beside the traces, through the capture's ``ncu_matched.csv``), run as its own Accel-Sim
job at the ``h100`` config with ``--isa-compat ampere`` (sampled launches re-gridded and
scaled), and modelled with ``simfront.sim.model`` at the same config. Reported: per kernel
the cycles of the three, whether Accel-Sim finished, the lowering's counts, and Accel-Sim's
wall time; per set MAPE and Pearson against ncu ``gpc__cycles_elapsed.max``.

Needs an Accel-Sim 1.x install named by ACCELSIM_ROOT; without one it says so and exits 0
(nothing measured, the RESULTS.md section untouched).

Run: ``python bench/bench_accelsim_lowering.py [SET ...]``; updates its section of
bench/RESULTS.md.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

import pandas as pd

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.accelsim.isa_compat import scan_opcodes
from simfront.sim.accelsim.runner import AccelSimBackend
from simfront.sim.backend import SimJob
from simfront.sim.model.api import timed_record
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import prepare_kernel
from simfront.sim.model.validation import Pair, pair_launches, read_ncu
from simfront.stats.matching import mape, pearson
from simfront.traces.reader import TraceSet

SECTION = "## Accel-Sim 1.x on lowered Hopper kernels (bench/bench_accelsim_lowering.py)"
SETS = ("mamba2_lm-tiny", "mamba1_lm-tiny", "hybrid_lm-tiny")
HOPPER = {"HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "WARPGROUP"}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ncu_pairs(tdir: Path) -> tuple[list[Pair], list[str]]:
    """Trace launches with their ncu rows: the capture's own one-to-one match
    (``ncu_matched.csv``, from `simfront match-profile`) where there is one, else an
    alignment on name, grid and block."""
    ncu = read_ncu(tdir / "ncu.csv")
    matched = tdir / "ncu_matched.csv"
    if not matched.is_file():
        return pair_launches(tdir, ncu)
    kernels = {k.path.name: (i, k) for i, k in enumerate(TraceSet(tdir).kernels())}
    pairs = []
    for r in pd.read_csv(matched).itertuples():
        if r.file in kernels and r.ncu_row == r.ncu_row:
            i, k = kernels[r.file]
            pairs.append(Pair(k, i, ncu.iloc[int(r.ncu_row)]))
    paired = {p.kernel.path.name for p in pairs}
    return pairs, [f for f in kernels if f not in paired]


def run_set(name: str, gpu, backend: AccelSimBackend, work: Path) -> pd.DataFrame:
    tdir = REPO_ROOT / "traces" / name
    pairs, unpaired = ncu_pairs(tdir)
    hopper_unpaired = [f for f in unpaired if scan_opcodes(tdir / f).keys() & HOPPER]
    if hopper_unpaired:
        print(f"{name}: no ncu record for {', '.join(hopper_unpaired)} (left out)", flush=True)
    rows = []
    for p in pairs:
        f = p.kernel.path.name
        ops = scan_opcodes(p.kernel.path)
        if not ops.keys() & HOPPER:
            continue
        t0, c0 = time.perf_counter(), _children_cpu()
        job = SimJob(job_id=f, trace_dir=tdir, gpu=gpu, out_dir=work / name / f, kernels=(f,),
                     options={"isa_compat": "ampere", "memory_limit_gb": 8}, timeout_s=1800)
        res = backend.run(job)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
        rec = res.records[0] if res.records else {}
        k = (res.provenance.get("isa_compat") or {}).get("kernels", {}).get(f, {})
        model = timed_record(prepare_kernel(p.kernel, gpu, p.launch), gpu, DEFAULT_PARAMS)
        rows.append({"set": name, "file": f, "kernel": p.kernel.header.name[:40],
                     "ncu_cycles": float(p.row["cycles"]), "model_cycles": model["cycles"],
                     "accelsim_cycles": rec.get("cycles") if res.ok else float("nan"),
                     "ok": res.ok, "reason": (res.reason or "")[:120],
                     "sampled": bool(rec.get("accelsim_sampled")),
                     "rewritten": sum(k.get("rewritten", {}).values()),
                     "instructions_in": k.get("instructions_in"),
                     "instructions_out": k.get("instructions_out"),
                     "wall_s": wall, "cpu_s": cpu})
        r = rows[-1]
        print(f"{name} {f} {r['kernel']:40s} ok={r['ok']} ncu={r['ncu_cycles']:.0f} "
              f"model={r['model_cycles']:.0f} accelsim={r['accelsim_cycles']} "
              f"({wall:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    if not os.environ.get("ACCELSIM_ROOT"):
        print("ACCELSIM_ROOT is not set: no Accel-Sim install, nothing measured "
              "(docs/accelsim.md says what to install)")
        return 0
    gpu = load_gpu("h100")
    backend = AccelSimBackend()
    version = backend.version()
    sets = argv or list(SETS)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        df = pd.concat([run_set(s, gpu, backend, Path(tmp)) for s in sets], ignore_index=True)
    wall = time.perf_counter() - t0
    ok = df[df.ok]
    lines = [SECTION, "",
             f"Every launch with a Hopper-only opcode (warpgroup MMA, TMA, mbarriers) of the "
             f"shipped tiny steps that has an ncu record, lowered with `--isa-compat ampere` and run as its own job on "
             f"Accel-Sim {version} at the `h100` config, against ncu `gpc__cycles_elapsed.max` "
             f"of the same launch and the model at the same config. "
             f"{len(ok)} of {len(df)} finished; {wall:.0f} s wall in all, "
             f"{df.cpu_s.sum():.0f} s CPU in the simulator on the 2-core box.", "",
             "| set | lowered launches | finished | Accel-Sim MAPE | Accel-Sim Pearson | "
             "model MAPE | model Pearson | Accel-Sim step sum / ncu | model sum / ncu |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s, g in list(df.groupby("set", sort=False)) + [("all", df)]:
        g2 = g[g.ok]
        lines.append(
            f"| {s} | {len(g)} | {len(g2)} | {mape(g2.ncu_cycles, g2.accelsim_cycles):.1%} | "
            f"{pearson(g2.accelsim_cycles, g2.ncu_cycles):.3f} | "
            f"{mape(g.ncu_cycles, g.model_cycles):.1%} | "
            f"{pearson(g.model_cycles, g.ncu_cycles):.3f} | "
            f"{g2.accelsim_cycles.sum() / g2.ncu_cycles.sum():.2f} | "
            f"{g.model_cycles.sum() / g.ncu_cycles.sum():.2f} |")
    lines += ["", "Per kernel (cycles; `in -> out`: warp instructions before and after "
              "lowering):", "",
              "| set | file | kernel | ncu | model | Accel-Sim | sampled | in -> out | "
              "Accel-Sim wall s |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in df.itertuples():
        acc = f"{r.accelsim_cycles:,.0f}" if r.ok else f"failed: {r.reason}"
        lines.append(f"| {r.set} | {r.file} | `{r.kernel}` | {r.ncu_cycles:,.0f} | "
                     f"{r.model_cycles:,.0f} | {acc} | {'yes' if r.sampled else ''} | "
                     f"{r.instructions_in} -> {r.instructions_out} | {r.wall_s:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    update_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

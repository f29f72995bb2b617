"""Benchmark of the sweep machinery (issue 4): orchestration overhead per no-op job on the
local executor (target <= 20 ms) and the time to submit 1,000 jobs to Slurm (target <= 10 s).

Local: a sweep of N no-op jobs (the ``sweep-noop`` backend returns at once, so everything
measured is ours: claiming in the job store, handing the job to a worker, the worker's
lock/status/result files and run log, the outcome's transaction). Timed is the driver loop
alone, with one worker (the cost per job, nothing overlapped) and with the pool sized to the
machine; planning and the HDF5 gather are timed apart.

Slurm: 1,000 jobs planned, then submitted: claim, job files, manifest, script and
``sbatch --array`` (one array; the default chunk is 1,000). The arrays are cancelled at once
so the box does not run them. Skipped, saying so, where ``sbatch`` is absent.

Run: ``python bench/bench_sweep.py [--jobs N]``; updates its section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.sweep.local import machine_cpus
from simfront.sweep.registry import make_executor
from simfront.sweep.runner import Sweep, drive
from simfront.sweep.testing import write_sweep

HERE = Path(__file__).resolve().parent
SECTION = "## Sweep orchestration (bench/bench_sweep.py)"
LOCAL_TARGET_MS = 20.0
SLURM_TARGET_S = 10.0


def _sweep(tmp: Path, name: str, n: int, kind: str) -> Sweep:
    path = write_sweep(tmp, name, axes={"sm_count": {"start": 1, "stop": n, "step": 1}},
                       backends="sweep-noop", executor={"kind": kind})
    return Sweep.open(path)


def bench_local(tmp: Path, n: int, workers: int | None) -> dict[str, float]:
    s = _sweep(tmp, f"local{workers or 'auto'}", n, "local")
    t0 = time.perf_counter()
    s.sync()
    t_plan = time.perf_counter() - t0
    settings = s.spec.executor
    if workers is not None:
        from dataclasses import replace
        settings = replace(settings, workers=workers)
    ex = make_executor("local", s.directory, s.store, settings, s.spec.resources, s.spec.name)
    t0 = time.perf_counter()
    summary = drive(s.store, ex, progress=False)
    t_run = time.perf_counter() - t0
    assert summary.counts["done"] == n, summary.counts
    t0 = time.perf_counter()
    s.gather()
    t_gather = time.perf_counter() - t0
    return {"jobs": n, "workers": getattr(ex, "n_workers", 0), "plan_s": t_plan,
            "run_s": t_run, "per_job_ms": t_run / n * 1e3, "gather_s": t_gather}


def bench_slurm(tmp: Path, n: int) -> dict[str, float] | str:
    if shutil.which("sbatch") is None:
        return "skipped: no sbatch here (.ci/slurm-up installs and starts a local Slurm)"
    s = _sweep(tmp, "slurm", n, "slurm")
    t0 = time.perf_counter()
    s.sync()
    t_plan = time.perf_counter() - t0
    ex = make_executor("slurm", s.directory, s.store, s.spec.executor, s.spec.resources,
                       s.spec.name)
    t0 = time.perf_counter()
    claims = s.store.claim(ex.capacity(), ex.name)
    refs = ex.start(claims)
    s.store.set_refs(refs, {c.job_id: c.attempt for c in claims})
    t_submit = time.perf_counter() - t0
    arrays = [i for i in s.store.batches().values() if i]
    subprocess.run(["scancel", *arrays], capture_output=True)
    s.store.cancel("benchmark: cancelled after submission")
    assert len(claims) == n

    # The same from the user's side: `simfront sweep run --no-wait` on a fresh sweep
    # directory, Python start-up, planning and job store included.
    cli_dir = tmp / "slurm-cli"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "simfront", "sweep", "run", str(s.spec.path),
                           "--dir", str(cli_dir), "--no-wait", "-q"], capture_output=True,
                          text=True)
    t_cli = time.perf_counter() - t0
    cli = Sweep.open(s.spec.path, cli_dir)
    cli_arrays = [i for i in cli.store.batches().values() if i]
    subprocess.run(["scancel", *cli_arrays], capture_output=True)
    cli.store.cancel("benchmark: cancelled after submission")
    if proc.returncode != 0 or not cli_arrays:
        raise RuntimeError(f"sweep run --no-wait failed: {proc.stderr[-2000:]}")
    return {"jobs": n, "arrays": len(arrays), "plan_s": t_plan, "submit_s": t_submit,
            "cli_s": t_cli}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=300, help="no-op jobs for the local figure")
    p.add_argument("--slurm-jobs", type=int, default=1000)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_sweep.") as d:
        tmp = Path(d)
        local1 = bench_local(tmp, a.jobs, workers=1)
        localn = bench_local(tmp, a.jobs, workers=None)
        slurm = bench_slurm(tmp, a.slurm_jobs)
    for r in (local1, localn):
        print(f"local, {r['workers']} worker(s): {r['jobs']} no-op jobs in {r['run_s']:.2f} s "
              f"= {r['per_job_ms']:.2f} ms/job (plan+sync {r['plan_s']:.2f} s, gather "
              f"{r['gather_s']:.2f} s)")
    if isinstance(slurm, str):
        print(f"slurm: {slurm}")
    else:
        print(f"slurm: {slurm['jobs']} jobs submitted in {slurm['submit_s']:.2f} s "
              f"({slurm['arrays']} array(s); plan+sync {slurm['plan_s']:.2f} s); "
              f"`simfront sweep run --no-wait` end to end {slurm['cli_s']:.2f} s")
    _update_results(local1, localn, slurm)
    return 0


def _update_results(local1: dict, localn: dict, slurm: dict | str) -> None:
    worst = max(local1["per_job_ms"], localn["per_job_ms"])
    lines = [SECTION, "",
             f"- {dt.date.today().isoformat()}, {platform.machine()}, {machine_cpus()} CPUs, "
             f"Python {platform.python_version()}; one run on a shared box (others' work "
             "slows it).",
             "- Local: driver loop only (claim, hand over, worker's lock/status/result files "
             "and run log, outcome transaction) for no-op jobs; plan and gather apart.", "",
             "| executor | jobs | workers | ms per job | plan+sync s | gather s |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in (local1, localn):
        lines.append(f"| local | {r['jobs']} | {r['workers']} | {r['per_job_ms']:.2f} | "
                     f"{r['plan_s']:.2f} | {r['gather_s']:.2f} |")
    verdict = "meets" if worst <= LOCAL_TARGET_MS else "misses"
    lines += ["", f"Local overhead: at most {worst:.2f} ms per no-op job, {verdict} the "
              f"{LOCAL_TARGET_MS:.0f} ms target.", ""]
    if isinstance(slurm, str):
        lines.append(f"Slurm: {slurm}.")
    else:
        v = "meets" if max(slurm["submit_s"], slurm["cli_s"]) <= SLURM_TARGET_S else "misses"
        lines += [
            "| Slurm, 1 node (.ci/slurm-up) | jobs | `sbatch --array` | s |",
            "|---|---:|---:|---:|",
            f"| submit: claim, job files, manifest, script, sbatch | {slurm['jobs']} | "
            f"{slurm['arrays']} | {slurm['submit_s']:.2f} |",
            f"| plan + store sync ({slurm['jobs']} GPU variants built, validated, hashed) | "
            f"{slurm['jobs']} | | {slurm['plan_s']:.2f} |",
            f"| `simfront sweep run --no-wait` end to end (Python start-up included) | "
            f"{slurm['jobs']} | {slurm['arrays']} | {slurm['cli_s']:.2f} |", "",
            f"Slurm: {v} the {SLURM_TARGET_S:.0f} s target for 1,000 jobs, counted either way "
            "(arrays cancelled right after submission)."]
    lines.append("")
    update_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

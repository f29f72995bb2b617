"""Soak of a sweep under faults (issue 30): real model jobs, the driver killed at random
moments and resumed, some finished jobs' result files destroyed on the way; at the end
every job's record is in results.h5 exactly once.

Local: a sweep of >= 500 real jobs of the built-in model (the 40 smallest kernels of the
shipped H100 sample x 13 SM counts, a few milliseconds of simulation each, so the soak is
about the sweep's files and not the model's speed). ``simfront sweep run`` is started in its
own session and SIGKILL goes to its process group at a random moment: a quarter of the
time 0.1-2 s after the start (start-up, planning, adopting), else 0-1.5 s after its first
job ran (mid-run; measured from the run log, so the box's load does not move every kill
into start-up). The local workers are process groups of their own: they outlive the driver,
finish the job in hand, commit it and exit, and the next driver adopts what they did. Every
fifth restart, two finished jobs lose their result file (deleted, or a byte changed). After
at least 20 kills a last run goes to the end.

Slurm (where ``sbatch`` and a node answer; ``.ci/slurm-up`` starts a one-node Slurm): the
same sweep on the Slurm executor (20 jobs per array task), driver killed likewise (mid-run:
0-5 s after a job ran) and, each time, ``scancel`` of the array tasks running then; resumed
until done. Skipped, saying so, elsewhere.

Checked at the end of each: the final run exits 0 with every job done, results.h5 has one
record per planned job and no other, the job store passes SQLite's integrity check, and the
reruns (jobs whose backend ran more than once: killed between the run and the commit of
its result, or whose result was destroyed) are counted from the workers' run log.

Run: ``python bench/bench_faults.py [--kills 20] [--slurm-kills 5]``; updates its section of
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import platform
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.core.paths import REPO_ROOT
from simfront.stats.h5store import read_jobs, read_records
from simfront.sweep.local import machine_cpus
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import small_kernel_workloads, write_sweep
from simfront.sweep.worker import job_dir, read_runs

SECTION = "## Sweeps under faults (bench/bench_faults.py)"
N_KERNELS = 40
SM_COUNTS = {"start": 60, "stop": 132, "step": 6}  # 13 values: 40 x 13 = 520 jobs


def _sweep(tmp: Path, name: str, kind: str) -> Path:
    executor: dict = {"kind": kind, "max_attempts": 3, "backoff": "0s"}
    if kind == "slurm":
        executor.update(poll="1s", slurm={"chunk": 1000, "jobs_per_task": 20})
    return write_sweep(tmp, name, traces=small_kernel_workloads(N_KERNELS), backends="model",
                       axes={"sm_count": SM_COUNTS},
                       resources={"cpus": 1, "mem": "1G", "time": "5m"}, executor=executor)


def _start(path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "simfront", "sweep", "run", str(path), "-q"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _destroy(s: Sweep, rng: random.Random, n: int, hit_ids: list[str]) -> None:
    """Delete, or change a byte of, ``n`` finished jobs' result files (their ids added to
    ``hit_ids``)."""
    done = [r.job_id for r in s.status().itertuples() if r.state == "done"]
    for job_id in rng.sample(done, min(n, len(done))):
        path = job_dir(s.directory, job_id) / "result.json"
        if not path.exists():
            continue
        if rng.random() < 0.5:
            path.unlink()
        else:
            data = bytearray(path.read_bytes())
            i = rng.randrange(len(data))
            data[i] ^= 0x20
            path.write_bytes(bytes(data))
        hit_ids.append(job_id)


def _running_tasks(user_arrays: list[str]) -> list[str]:
    """``<array>_<index>`` of the tasks of these arrays that are running now."""
    if not user_arrays:
        return []
    out = subprocess.run(["squeue", "-h", "-r", "-t", "RUNNING", "-o", "%i", "-j",
                          ",".join(user_arrays)], capture_output=True, text=True)
    return out.stdout.split()


def soak(tmp: Path, kind: str, kills: int, rng: random.Random) -> dict:
    path = _sweep(tmp, f"soak_{kind}", kind)
    s = Sweep.open(path)
    n_jobs = len(s.plan().jobs)
    t0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    n_kills = restarts = scancelled = 0
    moments: collections.Counter = collections.Counter()
    hit_ids: list[str] = []
    while n_kills < kills:
        restarts += 1
        if restarts % 5 == 0 and s.store.path.exists():
            _destroy(s, rng, 2, hit_ids)
        runs0 = len(read_runs(s.directory))
        proc = _start(path)
        if rng.random() < 0.25:
            phase = "start-up"
            time.sleep(rng.uniform(0.1, 2.0))  # start-up, planning, adopting
        else:
            phase = "mid-run"
            # mid-run: once this driver's jobs run (how long start-up takes depends on the
            # box's load), a moment up to 1.5 s (local) or 5 s (Slurm) later
            t_end = time.time() + 60
            while (len(read_runs(s.directory)) == runs0 and proc.poll() is None
                   and time.time() < t_end):
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 1.5 if kind == "local" else 5.0))
        if proc.poll() is not None:  # it finished first: the sweep is done; start again
            proc.communicate()
            if s.store.path.exists() and s.store.counts()["done"] == n_jobs:
                _destroy(s, rng, 3, hit_ids)  # something to do for the next one
            continue
        moments[phase] += 1
        if kind == "slurm":
            arrays = [i for i in s.store.batches().values() if i]
            tasks = _running_tasks(arrays)
            if tasks:
                subprocess.run(["scancel", *tasks], capture_output=True)
                scancelled += len(tasks)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        n_kills += 1
    final = _start(path)
    out, err = final.communicate(timeout=3600)
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    retried = final.returncode != 0 and kind == "slurm"
    if retried:
        # tasks scancelled twice may have used up a job's attempts: what `retry` is for
        subprocess.run([sys.executable, "-m", "simfront", "sweep", "retry", str(path)],
                       cwd=REPO_ROOT, capture_output=True)
        final = _start(path)
        out, err = final.communicate(timeout=3600)
    if final.returncode != 0:
        raise RuntimeError(f"the last `sweep run` exited {final.returncode}: {err[-2000:]}")

    s = Sweep.open(path)
    c = s.store.counts()
    recs = read_records(s.results_path)
    per_job = collections.Counter(recs.job_id)
    planned = {j.job_id for j in s.plan().jobs}
    missing = planned - set(per_job)
    extra = set(per_job) - planned
    doubled = [j for j, k in per_job.items() if k != 1]
    runs = collections.Counter(r["job_id"] for r in read_runs(s.directory) if r["ok"])
    return {"kind": kind, "jobs": n_jobs, "kills": n_kills, "restarts": restarts + 1,
            "moments": dict(moments), "destroyed": len(set(hit_ids)), "scancelled": scancelled,
            "done": c["done"], "failed": c["failed"], "records": len(recs),
            "missing": len(missing), "extra": len(extra), "doubled": len(doubled),
            "jobs_ok_in_h5": int(read_jobs(s.results_path).ok.sum()),
            "integrity": s.store.integrity_ok(), "retried": retried,
            "reruns": sum(1 for k in runs.values() if k > 1),
            "hit_runs": {j: runs[j] for j in sorted(set(hit_ids))},
            # every job whose result was destroyed ran again (its records are the rerun's)
            "hit_rerun": all(runs[j] >= 2 for j in set(hit_ids)),
            "backend_runs": sum(runs.values()), "wall_s": wall,
            "cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
            "last_line": out.strip().splitlines()[0] if out.strip() else ""}


def _slurm_usable() -> str | None:
    """None when a Slurm node answers; else why the Slurm half is skipped."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "no sbatch/sinfo here (.ci/slurm-up installs and starts a one-node Slurm)"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                             timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer in 20 s"
    if not any(st in ("idle", "mixed", "allocated") for st in out.stdout.split()):
        return f"no usable Slurm node (sinfo: {out.stdout.strip() or out.stderr.strip()})"
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--slurm-kills", type=int, default=20)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--no-slurm", action="store_true", help="the local half only")
    p.add_argument("--no-write", action="store_true", help="print; leave RESULTS.md alone")
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_faults.") as d:
        results.append(soak(Path(d), "local", a.kills, rng))
        why = "--no-slurm" if a.no_slurm else _slurm_usable()
        if why is None:
            results.append(soak(Path(d), "slurm", a.slurm_kills, rng))
    for r in results:
        print(f"{r['kind']}: {r['jobs']} model jobs, {r['kills']} SIGKILLs of the driver's "
              f"process group ({r['moments']}), {r['destroyed']} result files destroyed, "
              f"{r['scancelled']} array tasks scancelled; end: done {r['done']}, failed "
              f"{r['failed']}; results.h5: {r['records']} records, {r['missing']} missing, "
              f"{r['doubled']} doubled, {r['extra']} unplanned; {r['reruns']} jobs ran "
              f"again; {r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU")
        print(f"  ok backend runs of each job whose result was destroyed: {r['hit_runs']}")
    if why is not None:
        print(f"slurm: skipped: {why}")
    if not a.no_write:
        _update_results(results, why, a.seed)
    bad = [r for r in results if r["missing"] or r["doubled"] or r["extra"] or r["failed"]
           or not r["integrity"] or r["done"] != r["jobs"] or not r["hit_rerun"]]
    return 1 if bad else 0


def _update_results(results: list[dict], slurm_skipped: str | None, seed: int) -> None:
    lines = [SECTION, "",
             f"- {dt.date.today().isoformat()}, {platform.machine()}, {machine_cpus()} CPUs, "
             f"Python {platform.python_version()}; one run (seed {seed}) on a shared box.",
             f"- {N_KERNELS} smallest kernels of the H100 sample x 13 SM counts "
             "(60..132): real jobs of the built-in model, one kernel each. `simfront sweep "
             "run` killed (SIGKILL to the driver's process group; local workers, groups of "
             "their own, finish the job in hand) at a random moment: a quarter 0.1-2 s after "
             "the start, the rest 0-1.5 s (Slurm: 0-5 s, and the array tasks running then "
             "`scancel`led) after its first job ran; resumed; every fifth start, two finished "
             "jobs' result.json deleted or a byte changed; then one run to the end. CPU s: "
             "the drivers and local workers (Slurm tasks run under slurmd, not counted).", "",
             "| executor | jobs | SIGKILLs | when | jobs whose result was destroyed "
             "| tasks scancelled "
             "| final: done / failed | records in results.h5 | missing | doubled | unplanned "
             "| jobs run again | store integrity | wall s | CPU s |",
             "|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        when = ", ".join(f"{k} {v}" for k, v in sorted(r["moments"].items()))
        lines.append(
            f"| {r['kind']} | {r['jobs']} | {r['kills']} | {when} | {r['destroyed']} | "
            f"{r['scancelled']} | {r['done']} / {r['failed']}"
            f"{' (after `sweep retry`)' if r['retried'] else ''} | {r['records']} | "
            f"{r['missing']} | {r['doubled']} | {r['extra']} | {r['reruns']} | "
            f"{'ok' if r['integrity'] else 'FAILED'} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} |")
    if slurm_skipped:
        lines += ["", f"Slurm: skipped: {slurm_skipped}."]
    ok = all(not (r["missing"] or r["doubled"] or r["extra"]) and r["done"] == r["jobs"]
             for r in results)
    lines += ["", ("Every planned job's record is in results.h5 exactly once after every "
                   "kill and every destroyed result file." if ok else
                   "FAILED: records missing or doubled (see the table)."),
              "'Jobs run again' are jobs whose backend ran more than once (runs.log): each "
              "whose result was destroyed (all of them did: "
              + ", ".join("yes" if r["hit_rerun"] else "NO" for r in results) + "), and any "
              "whose worker or array task was killed after its backend returned and before "
              "its result was committed; their records still count once."]
    if any(r["retried"] for r in results):
        lines.append("A Slurm task `scancel`led before it started a job counts an attempt for "
                     "each of its jobs (the executor cannot tell it from a broken environment),"
                     " so jobs caught three times end failed; `sweep retry` queues them again,"
                     " and the last run finishes them.")
    lines.append("")
    update_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

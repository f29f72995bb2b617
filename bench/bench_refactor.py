"""Benchmark of the timing model's refactor (issue 31): record-identical outputs and speed.

Identity: every shipped trace set under ``traces/`` (every kernel of each) through the
built-in model the way a sweep runs it (``ModelBackend.run`` on one ``SimJob`` a set, cold
L2), on each GPU variant of ``VARIANTS``, one worker process a set. Every record is written
as one line of sorted JSON (floats as ``repr`` writes them, which reads back exactly; the
only field left out is ``sim_wall_s``, the wall time); the dump's sha256 is its digest.
``compare`` says whether two dumps are record-identical (every field of every record
equal) and lists the first differences.

Speed: CPU seconds (user + system, this process and nothing else) of one configuration of
``traces/mamba2_lm-paper-box`` (232 launches, box-sampled) in a fresh process with an empty
model cache (``SIMFRONT_CACHE``, a temporary folder), of a second configuration (another
tensor:vector ratio) in the same process after it, and of a third in a fresh process that
finds the first's prepared kernels on disk.

Dumps run with a model cache of their own (``--cache``, default a fresh temporary folder):
the same ``--cache`` twice checks the records made from prepared kernels read back from
disk.

Run:
  python bench/bench_refactor.py dump OUT.jsonl [--sets a,b] [--variants h100,h100-as-h200] [-j N]
                                     [--cache DIR]
  python bench/bench_refactor.py compare A.jsonl B.jsonl
  python bench/bench_refactor.py time
  python bench/bench_refactor.py compile   # numba's first compilation, an empty numba cache
  python bench/bench_refactor.py cold-pair # both paper sets at once, empty numba cache
  python bench/bench_refactor.py inlining  # the units compiled with and without
                                           # core.numba_inlining: CPU s, machine code
  python bench/bench_refactor.py runs SET [GPU]   # issue-model runs of one configuration
  python bench/bench_refactor.py order     # the demo's sweep in the plan's job order and
                                           # configuration by configuration: runs made
  python bench/bench_refactor.py [--baseline A.jsonl]   # time + dump + compare, printed
                                                       # (RESULTS' section is by hand)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from simfront.core.paths import REPO_ROOT

TRACES = REPO_ROOT / "traces"
#: GPU variants every set runs on: the default H100, and one whose L2, clocks, DRAM and
#: front end differ (the trace pass and the issue loop both see a change)
VARIANTS = ("h100", "h100-as-h200")
TIMED_SET = "mamba2_lm-paper-box"
#: fields that differ between two runs of the same inputs
VOLATILE = ("sim_wall_s",)


def trace_sets() -> list[str]:
    return sorted(p.name for p in TRACES.iterdir() if (p / "kernelslist.g").is_file())


def _plain(v):
    """numpy scalars as the Python values they hold (json writes those exactly)."""
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def canonical(rec: dict) -> str:
    return json.dumps({k: _plain(v) for k, v in rec.items() if k not in VOLATILE},
                      sort_keys=True, allow_nan=True)


def run_set(name: str, variant: str) -> tuple[list[dict], float]:
    """The records of one set on one GPU variant, and the CPU seconds they took."""
    from simfront.gpu import load_gpu
    from simfront.sim.backend import SimJob
    from simfront.sim.model.backend import ModelBackend

    gpu = load_gpu(variant)
    c0 = _cpu()
    with tempfile.TemporaryDirectory() as tmp:
        res = ModelBackend().run(SimJob(job_id=f"{name}@{variant}", trace_dir=TRACES / name,
                                        gpu=gpu, out_dir=Path(tmp)))
    return res.records, _cpu() - c0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _worker(name: str, variant: str, out: Path) -> None:
    recs, cpu = run_set(name, variant)
    lines = [json.dumps({"set": name, "variant": variant, "i": i}, sort_keys=True)[:-1]
             + ', "record": ' + canonical(r) + "}" for i, r in enumerate(recs)]
    out.write_text("".join(line + "\n" for line in lines))
    print(f"{name} @ {variant}: {len(recs)} records, {cpu:.1f} CPU s", flush=True)


def dump(out: Path, sets: list[str], variants: list[str], jobs: int,
         cache: Path | None = None) -> str:
    """Every (set, variant) in a worker process of its own, ``jobs`` at a time, with the
    model cache ``cache`` (None: a fresh one); the parts joined in order into ``out``.
    Returns the digest."""
    todo = [(s, v) for v in variants for s in sets]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SIMFRONT_CACHE": str(cache or Path(tmp) / "cache")}
        parts = [Path(tmp) / f"{i}.jsonl" for i in range(len(todo))]
        running: list[subprocess.Popen] = []
        for (s, v), part in zip(todo, parts):
            while len(running) >= jobs:
                _reap(running)
            running.append(subprocess.Popen(
                [sys.executable, __file__, "_one", s, v, str(part)], cwd=REPO_ROOT, env=env))
        while running:
            _reap(running)
        missing = [f"{s}@{v}" for (s, v), p in zip(todo, parts) if not p.is_file()]
        if missing:
            raise SystemExit(f"bench_refactor: no records for {', '.join(missing)}")
        tmp_out = out.with_suffix(out.suffix + ".tmp")
        with open(tmp_out, "w") as f:
            for p in parts:
                f.write(p.read_text())
        os.replace(tmp_out, out)
    return digest(out)


def _reap(running: list[subprocess.Popen]) -> None:
    while True:
        for p in running:
            if p.poll() is not None:
                running.remove(p)
                if p.returncode:
                    raise SystemExit(f"bench_refactor: worker {p.args[3:5]} exited "
                                     f"{p.returncode}")
                return
        time.sleep(0.2)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records(path: Path) -> dict[tuple, dict]:
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            row = json.loads(line)
            out[(row["set"], row["variant"], row["i"])] = row["record"]
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def compare(a_path: Path, b_path: Path, show: int = 20) -> tuple[int, int, list[str]]:
    """(identical records, records compared, the first ``show`` differences)."""
    a, b = _records(a_path), _records(b_path)
    diffs: list[str] = []
    for key in sorted(set(a) ^ set(b)):
        diffs.append(f"{key}: only in {'first' if key in a else 'second'}")
    same = 0
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        bad = [f for f in sorted(set(ra) | set(rb)) if not _same(ra.get(f), rb.get(f))]
        if bad:
            diffs.append(f"{key} {ra.get('kernel_name', '')[:40]}: "
                         + ", ".join(f"{f} {ra.get(f)!r} -> {rb.get(f)!r}" for f in bad[:4]))
        else:
            same += 1
    return same, len(set(a) | set(b)), diffs[:show] + (
        [f"... {len(diffs) - show} more"] if len(diffs) > show else [])


def time_one(variants: list[str]) -> dict:
    """CPU seconds of each configuration of TIMED_SET in this (fresh) process, one after
    another, numba's loading included in the first."""
    c0 = _cpu()
    from simfront.gpu import load_gpu  # noqa: F401  (the imports counted apart)
    from simfront.sim.model.backend import ModelBackend  # noqa: F401
    out = {"imports_cpu_s": _cpu() - c0, "cpu_s": []}
    for v in variants:
        recs, cpu = run_set(TIMED_SET, v)
        out["cpu_s"].append(cpu)
        out["records"] = len(recs)
    return out


def time_fresh() -> dict:
    """``time_one`` in fresh processes sharing an empty model cache: h100 then h100-tv8 in
    one, h100-tv4 in the next (the first's prepared kernels on disk), h100-l2-25mb in a
    third (another cache geometry: a new trace pass, from the decoded traces on disk)."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = [_fresh(["_time", *vs], SIMFRONT_CACHE=tmp)
                for vs in (("h100", "h100-tv8"), ("h100-tv4",), ("h100-l2-25mb",))]
    return {"imports_cpu_s": runs[0]["imports_cpu_s"], "records": runs[0]["records"],
            "first_cpu_s": runs[0]["cpu_s"][0], "second_cpu_s": runs[0]["cpu_s"][1],
            "other_process_cpu_s": runs[1]["cpu_s"][0],
            "new_geometry_cpu_s": runs[2]["cpu_s"][0]}


def compile_one() -> dict:
    """CPU seconds of numba's first compilation in this process (run with an empty
    ``NUMBA_CACHE_DIR``): the trace scanner's first use on TIMED_SET's smallest kernel,
    then the first model run of three kernels of ``mamba2_lm-tiny`` (the issue loop and
    the cache simulation on top)."""
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace, TraceSet

    c0 = _cpu()
    smallest = min(TRACES.joinpath(TIMED_SET).glob("kernel-*.traceg.xz"),
                   key=lambda f: f.stat().st_size)
    for _ in KernelTrace(smallest).iter_chunks():
        pass
    c1 = _cpu()
    for k in list(TraceSet(TRACES / "mamba2_lm-tiny").kernels())[:3]:
        simulate_kernel(k, "h100", None, cache=False)
    return {"scanner_cpu_s": c1 - c0, "first_model_run_cpu_s": _cpu() - c1}


def compile_fresh() -> dict:
    """``compile_one`` in a fresh process whose numba cache is empty."""
    with tempfile.TemporaryDirectory() as tmp:
        # the decoded-trace cache off too: a decoded copy would spare the scanner its compile
        return _fresh(["_compile"], NUMBA_CACHE_DIR=tmp, SIMFRONT_MODEL_CACHE="off",
                      SIMFRONT_TRACE_CACHE="off")


def _fresh(args: list[str], **env: str) -> dict:
    """This script's ``args`` in a fresh process with ``env`` added to this one's: the
    JSON its last line prints."""
    out = subprocess.run([sys.executable, __file__, *args], cwd=REPO_ROOT,
                         env={**os.environ, **env}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def cold_pair() -> dict:
    """Both paper sets at once, each in a fresh process on the ``h100``, sharing an empty
    numba cache and an empty model cache, as a sweep's first two jobs on a fresh checkout:
    wall seconds to the last one's end, and the CPU seconds of each."""
    with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": numba_dir, "SIMFRONT_CACHE": cache}
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, __file__, "_cold", name], cwd=REPO_ROOT,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
                 for name in ("mamba2_lm-paper-box", "mamba1_lm-paper-box")]
        outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cpu_s": [o["cpu_s"] for o in outs],
            "records": [o["records"] for o in outs]}


def compile_units(numba_own: bool) -> dict:
    """CPU seconds of each unit's first compilation (``simfront.core.jit``; run with an
    empty ``NUMBA_CACHE_DIR``) and a digest of the machine code of every compiled signature
    of simfront's compiled modules; ``numba_own``: with numba's own copies of inlined IR
    (``core.numba_inlining`` left out)."""
    import contextlib
    import re

    import numba

    from simfront.core import jit
    from simfront.sim.model import cache, issue, simulate
    from simfront.traces import instructions, reader

    if numba_own:
        jit.shared_scope_copies = contextlib.nullcontext
    cpu = {}
    for unit in (simulate.MODEL, reader.SCANNER):
        c0 = _cpu()
        jit.first_use(unit)
        cpu[unit.name] = _cpu() - c0
    code = {}
    for mod in (issue, cache, instructions, simulate):
        for name, f in sorted(vars(mod).items()):
            if isinstance(f, numba.core.registry.CPUDispatcher) \
                    and f.py_func.__module__ == mod.__name__:
                for sig, asm in f.inspect_asm().items():
                    # names carry per-process hashes (constants) and compile counts
                    asm = re.sub(r"\"?\.bytes\.-?\d+\"?", ".bytes.N", asm)
                    asm = re.sub(r"B\d+v\d+B", "BvB", asm)
                    code[f"{mod.__name__}.{name}{sig}"] = \
                        hashlib.sha256(asm.encode()).hexdigest()
    return {"cpu_s": cpu, "code": code}


def inlining() -> dict:
    """``compile_units`` both ways, one after the other, each in a fresh process with an
    empty numba cache and model cache: their compile CPU seconds, and whether every
    compiled signature's machine code is the same."""
    runs = {}
    for way in ("shared", "numba"):
        with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as c:
            runs[way] = _fresh(["_units", way], NUMBA_CACHE_DIR=numba_dir, SIMFRONT_CACHE=c)
    a, b = runs["shared"]["code"], runs["numba"]["code"]
    return {"cpu_s": {way: r["cpu_s"] for way, r in runs.items()},
            "signatures": len(a), "same_machine_code": a == b,
            "differ": sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))}


def sweep_in_order(way: str, out: Path) -> dict:
    """The demo's sweep (``simfront.analysis.demo``: the paper-size steps, its ratios, the
    local pool) into ``out`` in this process, its jobs in the plan's order (``turned``) or
    configuration by configuration with the sets side by side (``configurations``): wall
    and CPU seconds, the issue-model runs made (counted in a file the workers append to),
    and a digest of its records."""
    import itertools

    import pandas as pd

    from simfront.analysis.demo import DEFAULT_RATIOS, sample_trace_sets, write_sweep_file
    from simfront.analysis.studies import load_sweep_records
    from simfront.sim.model import simulate
    from simfront.sweep import plan
    from simfront.sweep.runner import Sweep

    if way == "configurations":
        plan._job_order = lambda gpus, traces: itertools.product(gpus, traces)
    log = out / "runs.count"
    inner = simulate.run_sm

    def counted(*args):
        with open(log, "a") as f:
            f.write("1\n")
        return inner(*args)

    simulate.run_sm = counted  # the local pool's workers are forks of this process
    sweep_file = write_sweep_file(out / "sweep.yaml", sample_trace_sets(), DEFAULT_RATIOS)
    t0 = time.perf_counter()
    sweep = Sweep.open(sweep_file)
    sweep.run(progress=False)
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec = load_sweep_records(sweep.results_path).drop(columns=list(VOLATILE))
    rec = rec.sort_values(["workload", "config", "kernel_id"]).reset_index(drop=True)
    text = rec[sorted(rec.columns)].to_csv(index=False, float_format="%r")
    return {"wall_s": wall, "cpu_s": children.ru_utime + children.ru_stime,
            "runs": sum(1 for _ in open(log)), "records": len(rec),
            "digest": hashlib.sha256(text.encode()).hexdigest()}


def job_order() -> dict:
    """``sweep_in_order`` both ways, one after the other, each in a fresh process with an
    empty model cache (numba's as it is)."""
    runs = {}
    for way in ("turned", "configurations"):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            runs[way] = _fresh(["_order", way, out], SIMFRONT_CACHE=cache)
    return {**runs, "same_records": runs["turned"]["digest"] == runs["configurations"]["digest"]}


def _cold(name: str) -> dict:
    recs, _ = run_set(name, "h100")
    return {"cpu_s": _cpu(), "records": len(recs)}


def count_runs(name: str, variant: str) -> dict:
    """Issue-model runs (``issue.run_sm`` calls) one configuration of a set makes in this
    process, with the CPU seconds in them and in the whole configuration."""
    from simfront.core import jit
    from simfront.gpu import load_gpu
    from simfront.sim.model import simulate
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    jit.first_use(simulate.MODEL)  # the warm-up's own runs are not the set's
    made = {"runs": 0, "run_cpu_s": 0.0}
    inner = simulate.run_sm

    def counted(*args):
        c0 = _cpu()
        try:
            return inner(*args)
        finally:
            made["runs"] += 1
            made["run_cpu_s"] += _cpu() - c0

    simulate.run_sm = counted
    gpu = load_gpu(variant)
    c0 = _cpu()
    try:
        kernels = list(TraceSet(TRACES / name).kernels())
        for k in kernels:
            simulate_kernel(k, gpu)
    finally:
        simulate.run_sm = inner
    return {"set": name, "gpu": variant, "kernels": len(kernels), **made,
            "cpu_s": _cpu() - c0}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--sets", default="")
    d.add_argument("--variants", default=",".join(VARIANTS))
    d.add_argument("-j", "--jobs", type=int, default=1)
    d.add_argument("--cache", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    sub.add_parser("time")
    r = sub.add_parser("runs")
    r.add_argument("set")
    r.add_argument("variant", nargs="?", default="h100")
    sub.add_parser("compile")
    sub.add_parser("_compile")
    sub.add_parser("cold-pair")
    sub.add_parser("inlining")
    sub.add_parser("order")
    order = sub.add_parser("_order")
    order.add_argument("way", choices=("turned", "configurations"))
    order.add_argument("out", type=Path)
    units = sub.add_parser("_units")
    units.add_argument("way", choices=("shared", "numba"))
    cold = sub.add_parser("_cold")
    cold.add_argument("set")
    one = sub.add_parser("_one")
    one.add_argument("set")
    one.add_argument("variant")
    one.add_argument("out", type=Path)
    tm = sub.add_parser("_time")
    tm.add_argument("variants", nargs="+")
    ap.add_argument("--baseline", type=Path)
    ap.add_argument("-j", "--jobs", dest="top_jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if args.cmd == "_one":
        _worker(args.set, args.variant, args.out)
        return 0
    if args.cmd == "_time":
        print(json.dumps(time_one(args.variants)))
        return 0
    if args.cmd == "dump":
        sets = args.sets.split(",") if args.sets else trace_sets()
        t0 = time.perf_counter()
        h = dump(args.out, sets, args.variants.split(","), args.jobs, args.cache)
        print(f"{args.out}: sha256 {h} ({time.perf_counter() - t0:.0f} s)")
        return 0
    if args.cmd == "compare":
        same, total, diffs = compare(args.a, args.b)
        print(f"{same} of {total} records identical")
        for line in diffs:
            print("  " + line)
        return 0 if same == total else 1
    if args.cmd == "time":
        print(json.dumps(time_fresh(), indent=1))
        return 0
    if args.cmd == "runs":
        print(json.dumps(count_runs(args.set, args.variant)))
        return 0
    if args.cmd == "_compile":
        print(json.dumps(compile_one()))
        return 0
    if args.cmd == "compile":
        print(json.dumps(compile_fresh(), indent=1))
        return 0
    if args.cmd == "_cold":
        print(json.dumps(_cold(args.set)))
        return 0
    if args.cmd == "_units":
        print(json.dumps(compile_units(args.way == "numba")))
        return 0
    if args.cmd == "_order":
        print(json.dumps(sweep_in_order(args.way, args.out)))
        return 0
    if args.cmd == "order":
        print(json.dumps(job_order(), indent=1))
        return 0
    if args.cmd == "inlining":
        print(json.dumps(inlining(), indent=1))
        return 0
    if args.cmd == "cold-pair":
        print(json.dumps(cold_pair(), indent=1))
        return 0
    return _bench(args.baseline, args.top_jobs)


def _bench(baseline: Path | None, jobs: int) -> int:
    t = time_fresh()
    out = REPO_ROOT / "out" / "bench_refactor" / "dump.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    sets = trace_sets()
    h = dump(out, sets, list(VARIANTS), jobs)
    n = sum(1 for _ in open(out))
    lines = [f"One configuration of `traces/{TIMED_SET}` ({t['records']} launches, H100) in a "
             f"fresh process with an empty model cache: {t['first_cpu_s']:.1f} CPU s "
             f"(imports {t['imports_cpu_s']:.1f} s apart); a second configuration (h100-tv8) "
             f"after it: {t['second_cpu_s']:.1f} CPU s; a third (h100-tv4) in a fresh process "
             f"reading the first's prepared kernels from disk: "
             f"{t['other_process_cpu_s']:.1f} CPU s; a fourth (h100-l2-25mb, another L2: a new "
             f"trace pass) in a fresh process reading the decoded traces from disk: "
             f"{t['new_geometry_cpu_s']:.1f} CPU s.", "",
             f"Every kernel of the {len(sets)} shipped sets on {', '.join(VARIANTS)}: "
             f"{n} records, sha256 `{h}`."]
    rc = 0
    if baseline is not None:
        same, total, diffs = compare(baseline, out)
        lines.append(f"Against `{baseline}`: {same} of {total} records identical.")
        rc = 0 if same == total else 1
        for line in diffs:
            print("  " + line)
    # bench/RESULTS.md's section on the model's speed is written by hand from this
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

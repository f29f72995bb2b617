"""Benchmark of the issue model's steady state (``issue.run_sm``): what adding the windows
of a steady SM instead of running them costs in accuracy and saves in time.

Every kernel of a set whose SM 0 runs repeating blocks (a sampled trace's, ``Prepared.
repeat_from``) is run twice at its unloaded DRAM latency, each distinct row set once: whole
(``steady_waves`` 0) and as the model runs it (``DEFAULT_PARAMS``). Reported per set and SM
count: the kernels that skipped, the largest and the mean change of SM 0's clocks and of
its stall counts, and the CPU time of the two, summed (numba compiled beforehand).

Run:
  python bench/bench_steady.py [--sets a,b] [--sms 132,33]   # updates its RESULTS section
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import numpy as np

from results_md import publish  # bench/results_md.py, beside this script

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu, with_variants
from simfront.sim.model import api, simulate
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.traces.reader import TraceSet

SECTION = "## The issue model's steady state (bench/bench_steady.py)"
TOPIC = "Sweeps and speed"
SETS = ("mamba2_lm-paper-box", "mamba1_lm-paper-box", "mamba2_lm-130m-box",
        "h200-ho-m2-d1024")
SMS = (132, 33)
WHOLE = DEFAULT_PARAMS.with_(**{"issue.steady_waves": 0})


@dataclass
class SetRow:
    name: str
    sms: int
    kernels: int = 0
    skipped: int = 0
    dev: list = field(default_factory=list)
    stall_dev: list = field(default_factory=list)
    cpu_whole: float = 0.0
    cpu_steady: float = 0.0
    worst: str = ""


def _run(prep, gpu, params):
    """SM 0's clocks, stall counts, skipped clocks and CPU seconds of one issue-model run
    at the unloaded DRAM latency."""
    _, _, t, out, st, cpu = simulate.unloaded_run(prep, gpu, params)
    return t, out.stall.sum(axis=0), int(st.steady_t[2]), cpu


def bench_set(name: str, sms: int) -> SetRow:
    gpu = load_gpu("h100")
    if sms != gpu.sm_count:
        gpu = with_variants(gpu, sm_count=sms)
    row = SetRow(name, sms)
    seen = set()
    for k in TraceSet(REPO_ROOT / "traces" / name).kernels():
        prep = api._prepared_kernel(k, gpu, None, DEFAULT_PARAMS)
        if not prep.repeat_from or not prep.timed_blocks:
            continue
        key = (prep.timed_blocks, prep.cols["pc"].tobytes(), prep.warp_off.tobytes())
        if key in seen:
            continue
        seen.add(key)
        t_w, s_w, _, c_w = _run(prep, gpu, WHOLE)
        t_s, s_s, skipped, c_s = _run(prep, gpu, DEFAULT_PARAMS)
        row.kernels += 1
        row.cpu_whole += c_w
        row.cpu_steady += c_s
        row.skipped += skipped > 0
        dev = t_s / t_w - 1 if t_w else 0.0
        row.dev.append(dev)
        row.stall_dev.append(float(np.abs(s_s - s_w).sum() / max(1, s_w.sum())))
        if abs(dev) >= max((abs(d) for d in row.dev), default=0):
            row.worst = f"{k.path.name.split('.')[0]} ({prep.timed_blocks} blocks)"
    return row


def render(rows: list[SetRow]) -> str:
    lines = [SECTION, "",
             "Issue 31, item 5. Each kernel of a set whose SM 0 runs repeating blocks, each "
             "distinct row set once, at its unloaded DRAM latency, on the H100 description (its "
             "SM count set), whole and with the steady "
             f"state added (`steady_waves` {DEFAULT_PARAMS.issue.steady_waves}, "
             f"`steady_tolerance` {DEFAULT_PARAMS.issue.steady_tolerance}); CPU seconds "
             "of the issue model alone, numba compiled beforehand, on this shared 2-core "
             "machine. The stall change is the share of SM 0's stall clocks that moved "
             "between reasons or came and went.", "",
             "| set | SMs | kernels | skipped | SM 0 clocks: largest change | mean abs | "
             "stall clocks moved, largest | CPU whole / steady | ratio | largest change in |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        a = np.abs(r.dev) * 100 if r.dev else np.zeros(1)
        big = max(r.dev, key=abs) * 100 if r.dev else 0.0
        ratio = r.cpu_whole / r.cpu_steady if r.cpu_steady else float("nan")
        lines.append(f"| {r.name} | {r.sms} | {r.kernels} | {r.skipped} | {big:+.3f}% | "
                     f"{a.mean():.4f}% | {max(r.stall_dev, default=0) * 100:.2f}% | "
                     f"{r.cpu_whole:.2f} / {r.cpu_steady:.2f} | {ratio:.2f}x | "
                     f"{r.worst} |")
    lines += ["", "`python bench/bench_steady.py` (the sets above on 132 and 33 SMs)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--sms", default=",".join(map(str, SMS)))
    ap.add_argument("--no-write", action="store_true", help="print, leave RESULTS alone")
    args = ap.parse_args(argv)
    rows = []
    for name in args.sets.split(","):
        for sms in map(int, args.sms.split(",")):
            print(f"{name} on {sms} SMs ...", flush=True)
            rows.append(bench_set(name, sms))
    publish(SECTION, render(rows), not args.no_write, TOPIC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

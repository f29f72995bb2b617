"""What a kernel costs beyond its work on this GPU, as a step's timeline sees it.

The H200 timelines of the paper steps show every kernel under 2 us about 0.22 us shorter
than on the H100 (bench/RESULTS.md, *What-ifs against hardware*), whatever the kernel
reads. This times kernels that do almost nothing, in a stream as a step runs them, with
CUPTI through ``torch.profiler`` (simfront.core.timeline.KernelTimer, as the what-if
timelines are timed), so the two GPUs' fixed cost per kernel can be told apart from what
their memory does:

- ``sleep0``: ``torch.cuda._sleep(0)``, one thread that returns at once;
- ``fill_4B``: one float written;
- ``add_4KB`` / ``add_1MB``: an in-place add over 4 KB / 1 MB the L2 holds (run just before);
- ``add_4KB_cold``: the same 4 KB after a 512 MB fill has pushed it out of the L2, so its
  read goes to DRAM (the fill's own launches are told apart by their grid and dropped).

    python bench/device/launch_cost.py OUT.csv [REPEATS]

One row per case: the device, the case, the launches kept, the median and the 10th and
90th percentile duration in ns. With ``--ncu`` it launches each case five times and
nothing else, for ``ncu --metrics gpu__time_duration.sum`` to time them alone.
"""

from __future__ import annotations

import csv
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from simfront.core.timeline import KernelTimer


def cases(dev: torch.device) -> dict[str, tuple]:
    x1 = torch.zeros(1, device=dev)
    a = torch.zeros(1024, device=dev)
    m = torch.zeros(1 << 18, device=dev)
    big = torch.empty(1 << 27, device=dev)  # 512 MB: ten times the L2
    return {
        "sleep0": (lambda: torch.cuda._sleep(0), None),
        "fill_4B": (lambda: x1.fill_(1.0), None),
        "add_4KB": (lambda: a.add_(1.0), None),
        "add_1MB": (lambda: m.add_(1.0), None),
        # the flush runs before each timed add; its launches have a grid far larger than
        # the add's, which is how they are dropped
        "add_4KB_cold": (lambda: a.add_(1.0), lambda: big.fill_(0.0)),
    }


def time_case(run, before, repeats: int, scratch: Path) -> list[float]:
    for _ in range(20):  # warm: module load, allocator, clocks
        if before:
            before()
        run()
    torch.cuda.synchronize()
    timer = KernelTimer()
    timer.start()
    for _ in range(repeats):
        if before:
            before()
        run()
    torch.cuda.synchronize()
    spans = timer.stop(scratch)
    if before:
        smallest = min(s.grid[0] * s.grid[1] * s.grid[2] for s in spans)
        spans = [s for s in spans if s.grid[0] * s.grid[1] * s.grid[2] == smallest]
    return [s.dur_ns for s in spans]


def main(argv: list[str]) -> int:
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    table = cases(dev)
    if "--ncu" in argv:
        for run, before in table.values():
            for _ in range(5):
                if before:
                    before()
                run()
        torch.cuda.synchronize()
        return 0
    out = Path(argv[0])
    repeats = int(argv[1]) if len(argv) > 1 else 300
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, (run, before) in table.items():
            d = sorted(time_case(run, before, repeats, Path(tmp) / f"{case}.json"))
            q = statistics.quantiles(d, n=10)
            rows.append((name, case, len(d), statistics.median(d), q[0], q[-1]))
            print(f"{case:14s} n={len(d):4d} median {rows[-1][3]:7.0f} ns "
                  f"p10 {q[0]:7.0f} p90 {q[-1]:7.0f}", flush=True)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("device", "case", "n", "median_ns", "p10_ns", "p90_ns"))
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

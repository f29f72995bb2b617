"""Does the persisting-L2 set-aside slow kernels that reuse nothing?

The L2 set-aside what-if (`simfront timeline --l2-setaside 25`) stands for the `l2_size`
variant. On the paper steps its slowdown sits in DRAM-bound streaming kernels (AdamW, large
elementwise kernels, the LM-head softmax: 1.2-1.4x), which an LRU L2 of any size serves the
same. This times streaming kernels with and without the set-aside, in one process:

- ``base``: the whole L2;
- ``setaside``: 25 MiB set aside and held by a pinned buffer read through a persisting
  access-policy window before every timed repetition (as the timelines do);
- ``limit-only``: the limit set, no persisting lines in the L2.

Each kernel: median of 30 repetitions (CUDA events) after 5 warm-ups, on buffers far larger
than the L2 (256 MiB) and one that fits (16 MiB). Prints CSV rows and writes
$OUT/l2_setaside_stream.csv.

    python3 bench/device/l2_setaside_stream.py [MIB]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from event_times import median_us  # noqa: E402
from simfront.workloads.timelines import L2SetAside  # noqa: E402


def kernels(n: int) -> dict:
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.empty(n, device="cuda")
    m = torch.zeros(n, device="cuda")
    v = torch.zeros(n, device="cuda")
    return {
        "read (sum)": (lambda: a.sum(), 4 * n),
        "write (fill)": (lambda: c.fill_(1.5), 4 * n),
        "copy": (lambda: c.copy_(a), 8 * n),
        "axpy c=a+2b": (lambda: torch.add(a, b, alpha=2.0, out=c), 12 * n),
        "adam-like m,v update": (lambda: (m.mul_(0.9).add_(a, alpha=0.1),
                                          v.mul_(0.99).addcmul_(a, a, value=0.01)), 16 * n),
    }


def time_it(fn, before=None, reps: int = 30) -> float:
    return median_us(fn, reps, before, warmups=5)


def main() -> None:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    p = torch.cuda.get_device_properties(0)
    print(f"# {p.name}, L2 {p.L2_cache_size >> 20} MiB, set-aside {mib} MiB", flush=True)
    rows = []
    for size_mib in (256, 16):
        ks = kernels(size_mib << 20 >> 2)
        res = {k: {} for k in ks}
        for k, (fn, _) in ks.items():
            res[k]["base"] = time_it(fn)
        aside = L2SetAside(mib)
        for k, (fn, _) in ks.items():
            res[k]["setaside"] = time_it(fn, before=aside.fill)
        aside.rt.cudaCtxResetPersistingL2Cache()
        for k, (fn, _) in ks.items():
            res[k]["limit-only"] = time_it(fn)
        aside.release()
        torch.cuda.synchronize()
        for k, (_, nbytes) in ks.items():
            r = res[k]
            rows.append((size_mib, k, r["base"], r["setaside"], r["limit-only"],
                         nbytes / r["base"] / 1e3, nbytes / r["setaside"] / 1e3))
    head = "buffer_mib,kernel,base_us,setaside_us,limit_only_us,base_GBps,setaside_GBps"
    lines = [head] + [f"{s},{k},{b:.1f},{a:.1f},{lo:.1f},{gb:.0f},{ga:.0f}"
                      for s, k, b, a, lo, gb, ga in rows]
    print("\n".join(lines))
    print("# slowdown (setaside/base): " + "; ".join(
        f"{s} MiB {k} {a / b:.3f}" for s, k, b, a, *_ in rows))
    out = os.environ.get("OUT")
    if out:
        Path(out, "l2_setaside_stream.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The paper step's log-softmax over its logits on fewer SMs: whether its rows' re-reads hit
the L2 as the rows in flight shrink with the SMs that hold them.

The design study reads a larger L2 paying the paper Mamba2 step through its loss kernels
(bench/RESULTS.md, *The design-space answer*): a block of PyTorch's log-softmax forward
(`cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>`, two 1024-thread
blocks an SM) takes one 201 KB row of fp32 logits and reads it more than once, so the L2
holds the re-reads only when the rows in flight fit. This runs the same kernels (forward,
and the backward `cunn_SoftMaxBackward`) on the step's logits, 8192 x 50280 fp32, on the
whole GPU and on green contexts of fewer SMs: the median of CUDA-event times of
back-to-back calls, and (``--once``, under ncu) one call of each, whose DRAM bytes and L2
hit rate ncu counts with the L2 flushed.

    python bench/device/softmax_l2.py [--sms 132,96,64,32] [--calls 20] [-o OUT.json]
    ncu ... python bench/device/softmax_l2.py --once --sms N

``--rows 128`` takes the first 128 rows only (25.7 MB of logits and as much written: the
L2 holds them between calls), and ``--flush`` writes 256 MiB before each timed call so that
every call starts from an empty L2: the same kernels with their rows resident or not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from event_times import emit, kernel_name, median_us, write_rows  # noqa: E402
from simfront.workloads.green import sm_subset  # noqa: E402

ROWS, VOCAB = 8192, 50280


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", default="132,96,64,32")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--once", action="store_true", help="one call of each kernel (for ncu)")
    ap.add_argument("--rows", type=int, default=ROWS, help="rows of logits (default 8192)")
    ap.add_argument("--flush", action="store_true", help="empty the L2 before each call")
    ap.add_argument("-o", "--out", default=None)
    a = ap.parse_args(argv)
    import torch

    total = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(a.rows, VOCAB, device="cuda", dtype=torch.float32)
    scrub = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    flush = (lambda: scrub.fill_(1)) if a.flush else None
    y = torch.log_softmax(x, -1)
    g = torch.randn_like(x)
    dx = torch.empty_like(x)
    ops = {"forward": lambda: torch.log_softmax(x, -1, out=y),
           "backward": lambda: torch.ops.aten._log_softmax_backward_data.out(
               g, y, -1, torch.float32, out=dx)}
    sms = [int(s) for s in a.sms.split(",")]
    if a.once:
        for n in sms:
            with sm_subset(None if n >= total else n):
                for fn in ops.values():
                    fn()
            torch.cuda.synchronize()
        return 0
    rows = []
    for name, fn in ops.items():
        kernel = kernel_name(fn)
        for n in sms:
            with sm_subset(None if n >= total else n):
                us = median_us(fn, a.calls, before=flush)
            emit(rows, {"op": name, "sms": min(n, total), "us": round(us, 2),
                        "logits_bytes": a.rows * VOCAB * 4, "flushed": a.flush,
                        "kernel": kernel})
    write_rows(a.out, a.calls, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

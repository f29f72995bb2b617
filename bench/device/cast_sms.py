"""Streaming casts and a copy on fewer SMs: how a memory-bound elementwise kernel's time grows
as a green context takes SMs away, with its reads and writes in different proportions.

The held-out steps' `unrolled_elementwise_kernel` (the logits' dtype cast, PyTorch's
``direct_copy_kernel_cuda`` with ``LoadWithCast``/``StoreWithCast``) takes 3.5-3.7x its
whole-GPU time on 32 SMs, the model 2.8-3.1x (bench/RESULTS.md, *Held-out accuracy*). This
times the same kernel, made by ``dst.copy_(src)`` across dtypes, on the logits' size (8192 x
50280 elements): bf16 -> fp32 (a byte read, two written), fp32 -> bf16 (two read, one
written), and a bf16 copy (one and one), on the whole GPU and on 96, 64 and 32 SMs. Each
figure is the median of CUDA-event times of back-to-back calls; the kernel names come from
one profiled call each.

    python bench/device/cast_sms.py [--sms 132,96,64,32] [--calls 20] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from event_times import emit, kernel_name, median_us, write_rows  # noqa: E402
from simfront.workloads.green import sm_subset  # noqa: E402

ELEMENTS = 8192 * 50280


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", default="132,96,64,32")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("-o", "--out", default=None)
    a = ap.parse_args(argv)
    import torch

    props = torch.cuda.get_device_properties(0)
    total = props.multi_processor_count
    b16 = torch.randn(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    f32 = torch.empty(ELEMENTS, device="cuda", dtype=torch.float32)
    b16_out = torch.empty_like(b16)
    ops = {"bf16->fp32": (f32, b16, 2, 4), "fp32->bf16": (b16_out, f32, 4, 2),
           "bf16 copy": (b16_out, b16, 2, 2)}
    rows = []
    for name, (dst, src, rb, wb) in ops.items():
        kernel = kernel_name(lambda: dst.copy_(src))
        for n in (int(s) for s in a.sms.split(",")):
            with sm_subset(None if n >= total else n):
                us = median_us(lambda: dst.copy_(src), a.calls)
            row = {"op": name, "sms": min(n, total), "us": round(us, 2),
                   "read_bytes": ELEMENTS * rb, "write_bytes": ELEMENTS * wb,
                   "tb_per_s": round(ELEMENTS * (rb + wb) / us / 1e6, 3), "kernel": kernel}
            emit(rows, row)
    write_rows(a.out, a.calls, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch's in-place foreach update over a large tensor on fewer SMs, alone and after a
kernel that leaves the L2 dirty.

The held-out hybrid step's `multi_tensor_apply_kernel` (`BinaryOpScalarFunctor`, 320 blocks of
512 threads, a float4 loaded and stored back a step) takes 1.27x its whole-GPU time on 64
SMs and 1.73x on 32 in the step's timelines on an H200, where bench/device/inplace.cu's
stream of the same shape, order and size moves its bytes 1.14x and 1.40x slower there. This
times the kernel itself (`torch._foreach_mul_` on one float32 tensor of 320 chunks of
65,536, 80 MiB) and PyTorch's grid-stride `mul_` on the same tensor, each alone (back to
back) and each after a 64 MiB fill that leaves the L2 dirty as the step's kernels before it
do (the fill untimed), on the whole GPU and fewer SMs (green contexts). Medians of CUDA-event
times of CALLS calls.

    python bench/device/foreach_sms.py [--sms 132,96,64,32] [--calls 20] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from event_times import emit, kernel_name, median_us, write_rows  # noqa: E402
from simfront.workloads.green import sm_subset  # noqa: E402

#: multi_tensor_apply's chunk, floats, and the step's launch of 320 chunks
CHUNK, CHUNKS = 65536, 320


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", default="132,96,64,32")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("-o", "--out", default=None)
    a = ap.parse_args(argv)
    import torch

    total = torch.cuda.get_device_properties(0).multi_processor_count
    t = torch.ones(CHUNK * CHUNKS, device="cuda", dtype=torch.float32)
    junk = torch.empty(64 << 18, device="cuda", dtype=torch.float32)  # 64 MiB
    cases = [("foreach_mul_", lambda: torch._foreach_mul_([t], 1.0)),
             ("mul_", lambda: t.mul_(1.0))]
    rows = []
    for name, fn in cases:
        kernel = kernel_name(fn)
        for n in (int(s) for s in a.sms.split(",")):
            for after, before in (("alone", None), ("after a dirty fill", lambda: junk.fill_(1.0))):
                with sm_subset(None if n >= total else n):
                    us = median_us(fn, a.calls, before=before)
                emit(rows, {"case": name, "after": after, "sms": min(n, total),
                            "us": round(us, 2), "bytes": 2 * t.numel() * 4,
                            "kernel": kernel[:90]})
    write_rows(a.out, a.calls, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

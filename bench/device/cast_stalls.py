"""One streaming cast of the logits' size, a few warm calls, then one call between
cudaProfilerStart/Stop for ncu (``--profile-from-start off``), on the whole GPU or a green
context of ``--sms`` SMs. Where a cast's warps wait, by ncu's warp states and per SASS
instruction (bench/device/cast_stalls.sh).

    python bench/device/cast_stalls.py OP [--sms N]    OP: bf16-fp32 | fp32-bf16
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simfront.workloads.green import sm_subset  # noqa: E402

ELEMENTS = 8192 * 50280  # the logits of a 4 x 2048 step, GPT-NeoX's vocabulary
DTYPES = {"bf16-fp32": ("bfloat16", "float32"), "fp32-bf16": ("float32", "bfloat16")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("op", choices=sorted(DTYPES))
    ap.add_argument("--sms", type=int, default=0)
    a = ap.parse_args(argv)
    import torch

    src_t, dst_t = (getattr(torch, n) for n in DTYPES[a.op])
    src = torch.randn(ELEMENTS, device="cuda", dtype=src_t)
    dst = torch.empty(ELEMENTS, device="cuda", dtype=dst_t)
    with sm_subset(a.sms or None):
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        dst.copy_(src)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

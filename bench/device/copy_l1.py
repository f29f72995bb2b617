"""The paper steps' transposing copy on fewer SMs: why it keeps its time on 64 SMs.

The Mamba2 LM step copies the conv input ``xBC`` (4 x 2048 x 1792 of the 3352-wide in_proj
output, bf16) to channels-first: PyTorch's ``direct_copy`` ``elementwise_kernel``, whose every
lane reads its bf16 from its own line (lanes 6704 B apart). On the H100 it took 105 us on
132 SMs and on 64 (CUPTI, bench/RESULTS.md), though one line a clock per SM (load_shapes.cu)
gives at least 116 us on 64. Blocks 64 apart read the same lines (a line holds 64 channels,
16 blocks a channel), so on 64 SMs an SM's blocks may share lines in its L1. This times the
copy on the whole GPU and in green contexts (``--sms``) for ncu to count its L1 and L2.

    python bench/device/copy_l1.py [--sms 132,64,32] [--calls 3] [--time]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simfront.workloads.timelines import sm_subset  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", default="132,64,32")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--time", action="store_true", help="print host-timed ms per call")
    a = ap.parse_args(argv)
    import torch

    total = torch.cuda.get_device_properties(0).multi_processor_count
    zx = torch.randn(4, 2048, 3352, device="cuda", dtype=torch.bfloat16)

    def op():
        return zx[..., 1536:1536 + 1792].transpose(1, 2).contiguous()

    for n in (int(s) for s in a.sms.split(",")):
        with sm_subset(None if n >= total else n):
            for _ in range(a.calls):
                op()
            torch.cuda.synchronize()
            if a.time:
                t0, k = time.perf_counter(), 200
                for _ in range(k):
                    op()
                torch.cuda.synchronize()
                print(f"{n} SMs: {(time.perf_counter() - t0) * 1e3 / k:.4f} ms per call",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

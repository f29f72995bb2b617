"""What ncu's L2 holds when a small kernel starts: PyTorch's one-block sum (the held-out
steps' `reduce_kernel` with grid (1,1,1)) of a tensor the kernel before wrote, beside
`ballast` GB of other allocations, under ncu with its caches flushed (--cache-control all).
The held-out profiles (`simfront profile --metrics core`, 13 replay passes, ~8 GB of the
step's memory saved and restored around each launch) counted 67% of those sums' L2 sectors
as hits; a one-pass profile and a microbenchmark's stream did not.

    python3 bench/device/ncu_replay_l2.py BALLAST_GB   (run under ncu by ncu_replay_l2.sh)
"""
import sys

import torch

ballast_gb = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
dev = torch.device("cuda")
keep = []
if ballast_gb > 0:
    # many tensors, as a training step holds: ncu saves and restores each one it may touch
    n = int(ballast_gb * 2**30 // (64 * 2**20))
    keep = [torch.ones(16 * 2**20, device=dev) for _ in range(n)]
sizes = {"24KiB": 6144, "1MiB": 2**18, "64MiB": 2**24}
src = {k: torch.randn(v, device=dev) for k, v in sizes.items()}
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(2):
    for k, x in src.items():
        y = x * 2.0          # the kernel before writes the sum's input
        s = y.sum()          # one block for 24 KiB (reduce_kernel), more for the others
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("ok", ballast_gb, float(s))

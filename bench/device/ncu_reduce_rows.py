"""The held-out Mamba2 steps' one-block sums on their own: PyTorch's sum of a (B, 16, 32)
fp32 tensor over its first two dimensions (a per-head sum over chunks: `reduce_kernel<128,
4>`, one block of 8 x 16 threads, one warp's 8 lanes loading a 128-byte row an iteration,
four rows in flight), for B rows groups from 3 to 48, the input written by the kernel before.
Run under ncu (bench/device/ncu_reduce_rows.sh): the slope over rows is an iteration's cost,
the intercept the launch's fixed one.

    python3 bench/device/ncu_reduce_rows.py
"""
import torch

dev = torch.device("cuda")
xs = {b: torch.randn(b, 16, 32, device=dev) for b in (3, 6, 12, 24, 48)}
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(3):
    for b, x in xs.items():
        y = x * 2.0
        s = y.sum(dim=(0, 1))
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("ok", float(s.sum()))

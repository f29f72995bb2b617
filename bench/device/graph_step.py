"""A torch step replayed from a CUDA graph (bf16 matmul through cuBLAS + elementwise),
for checking that the tracer sees graph kernel nodes. The replay inside the
cudaProfilerStart/Stop window is the one traced or profiled."""
import torch

torch.manual_seed(0)
x = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
w = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)


def step():
    return torch.relu(x @ w).sum(dim=1)


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):
        step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = step()
g.replay()
torch.cuda.synchronize()
ref = step()
torch.cuda.synchronize()
torch.cuda.profiler.start()
g.replay()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
err = (out.float() - ref.float()).abs().max().item()
print("graph_step ok" if err < 1e-2 else f"graph_step BAD {err}")

"""A user's own training step (not a simfront workload): a 2-layer Mamba2 language model,
d_model 768, headdim 64, d_state 128, chunk 256, batch 8 x 1024 tokens, vocabulary 8192,
AdamW. One steady-state iteration is bracketed by cudaProfilerStart/Stop."""
import argparse

import torch
from mamba_ssm.models.config_mamba import MambaConfig
from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--seqlen", type=int, default=1024)
a = ap.parse_args()

torch.manual_seed(0)
cfg = MambaConfig(d_model=768, n_layer=2, vocab_size=8192,
                  ssm_cfg={"layer": "Mamba2", "headdim": 64, "d_state": 128, "chunk_size": 256,
                           "use_mem_eff_path": False},  # no causal_conv1d installed
                  rms_norm=True, fused_add_norm=True, residual_in_fp32=True)
model = MambaLMHeadModel(cfg, device="cuda", dtype=torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, 8192, (a.batch, a.seqlen), device="cuda")
for it in range(3):
    if it == 2:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    logits = model(ids).logits
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]).float(),
                                             ids.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if it == 2:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
print("loss", float(loss))

"""Multi-head attention: ``mamba_ssm.modules.mha.MHA``'s parameters and training path
(no rotary embedding, no conv, no MLP), attention through torch SDPA as mamba_ssm does when
it runs without an inference cache."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class MHA(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, num_heads_kv: int | None = None,
                 head_dim: int | None = None, qkv_proj_bias: bool = True,
                 out_proj_bias: bool = True, softmax_scale: float | None = None,
                 causal: bool = False, layer_idx: int | None = None, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.layer_idx = layer_idx
        self.softmax_scale = softmax_scale
        self.causal = causal
        self.num_heads = num_heads
        self.num_heads_kv = num_heads_kv if num_heads_kv is not None else num_heads
        self.head_dim = head_dim if head_dim is not None else embed_dim // num_heads
        qkv_dim = self.head_dim * (self.num_heads + 2 * self.num_heads_kv)
        out_dim = self.head_dim * self.num_heads
        self.in_proj = nn.Linear(embed_dim, qkv_dim, bias=qkv_proj_bias, **factory_kwargs)
        self.out_proj = nn.Linear(out_dim, embed_dim, bias=out_proj_bias, **factory_kwargs)

    def forward(self, x: torch.Tensor, inference_params=None) -> torch.Tensor:
        b, s, _ = x.shape
        qkv = self.in_proj(x)
        q, kv = qkv.split([self.num_heads * self.head_dim,
                           self.num_heads_kv * 2 * self.head_dim], dim=-1)
        q = q.reshape(b, s, self.num_heads, self.head_dim)
        kv = kv.reshape(b, s, 2, self.num_heads_kv, self.head_dim)
        k, v = kv.unbind(dim=-3)
        rep = self.num_heads // self.num_heads_kv
        k = torch.repeat_interleave(k, dim=2, repeats=rep)
        v = torch.repeat_interleave(v, dim=2, repeats=rep)
        context = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=self.causal,
            scale=self.softmax_scale).transpose(1, 2)
        return self.out_proj(context.reshape(b, s, -1))

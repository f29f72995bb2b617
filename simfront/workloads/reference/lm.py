"""``mamba_ssm.models.mixer_seq_simple.MambaLMHeadModel`` in plain PyTorch: embedding, blocks
of Add -> RMSNorm -> mixer (Mamba, Mamba2 or MHA), final norm, tied LM head. Same module
tree, parameter names, construction order and initialisation as mamba_ssm 2.3.2, so one
seed gives the same weights on either path. The fused add+norm Triton kernel is replaced by
its unfused equivalent (same math)."""

from __future__ import annotations

import math
from collections import namedtuple
from functools import partial
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from simfront.workloads.reference.mamba1 import Mamba
from simfront.workloads.reference.mamba2 import Mamba2
from simfront.workloads.reference.mha import MHA
from simfront.workloads.reference.ops import rms_norm

CausalLMOutput = namedtuple("CausalLMOutput", ["logits"])


class RMSNorm(nn.Module):
    """``mamba_ssm.ops.triton.layer_norm.RMSNorm`` (weight only)."""

    def __init__(self, hidden_size: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class GatedMLP(nn.Module):
    def __init__(self, in_features: int, hidden_features: int | None = None,
                 out_features: int | None = None, bias: bool = False, multiple_of: int = 128,
                 device=None, dtype=None):
        super().__init__()
        out_features = out_features if out_features is not None else in_features
        hidden = hidden_features if hidden_features is not None else int(8 * in_features / 3)
        hidden = (hidden + multiple_of - 1) // multiple_of * multiple_of
        self.fc1 = nn.Linear(in_features, 2 * hidden, bias=bias, device=device, dtype=dtype)
        self.fc2 = nn.Linear(hidden, out_features, bias=bias, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, gate = self.fc1(x).chunk(2, dim=-1)
        return self.fc2(y * F.silu(gate))


class Block(nn.Module):
    def __init__(self, dim: int, mixer_cls, mlp_cls, norm_cls, residual_in_fp32: bool):
        super().__init__()
        self.residual_in_fp32 = residual_in_fp32
        self.norm = norm_cls(dim)
        self.mixer = mixer_cls(dim)
        if mlp_cls is not nn.Identity:
            self.norm2 = norm_cls(dim)
            self.mlp = mlp_cls(dim)
        else:
            self.mlp = None

    def forward(self, hidden_states, residual=None):
        residual = (hidden_states + residual) if residual is not None else hidden_states
        hidden_states = self.norm(residual.to(dtype=self.norm.weight.dtype))
        if self.residual_in_fp32:
            residual = residual.to(torch.float32)
        hidden_states = self.mixer(hidden_states)
        if self.mlp is not None:
            residual = hidden_states + residual
            hidden_states = self.norm2(residual.to(dtype=self.norm2.weight.dtype))
            if self.residual_in_fp32:
                residual = residual.to(torch.float32)
            hidden_states = self.mlp(hidden_states)
        return hidden_states, residual


def create_block(d_model, d_intermediate, ssm_cfg=None, attn_layer_idx=None, attn_cfg=None,
                 norm_epsilon=1e-5, rms_norm=False, residual_in_fp32=False, layer_idx=None,
                 device=None, dtype=None, **_unused):
    factory_kwargs = {"device": device, "dtype": dtype}
    ssm_cfg = dict(ssm_cfg or {})
    attn_layer_idx = attn_layer_idx or []
    if layer_idx not in attn_layer_idx:
        ssm_layer = ssm_cfg.pop("layer", "Mamba1")
        if ssm_layer not in ("Mamba1", "Mamba2"):
            raise ValueError(f"Invalid ssm_layer: {ssm_layer}")
        mixer_cls = partial(Mamba2 if ssm_layer == "Mamba2" else Mamba, layer_idx=layer_idx,
                            **ssm_cfg, **factory_kwargs)
    else:
        mixer_cls = partial(MHA, layer_idx=layer_idx, **(attn_cfg or {}), **factory_kwargs)
    norm_cls = partial(nn.LayerNorm if not rms_norm else RMSNorm, eps=norm_epsilon,
                       **factory_kwargs)
    mlp_cls = nn.Identity if d_intermediate == 0 else partial(
        GatedMLP, hidden_features=d_intermediate, out_features=d_model, **factory_kwargs)
    block = Block(d_model, mixer_cls, mlp_cls, norm_cls=norm_cls,
                  residual_in_fp32=residual_in_fp32)
    block.layer_idx = layer_idx
    return block


def _init_weights(module, n_layer, initializer_range=0.02, rescale_prenorm_residual=True,
                  n_residuals_per_layer=1):
    if isinstance(module, nn.Linear):
        if module.bias is not None and not getattr(module.bias, "_no_reinit", False):
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=initializer_range)
    if rescale_prenorm_residual:
        # GPT-2 scheme: residual-branch output projections scaled by 1/sqrt(n_layer).
        for name, p in module.named_parameters():
            if name in ("out_proj.weight", "fc2.weight"):
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                with torch.no_grad():
                    p /= math.sqrt(n_residuals_per_layer * n_layer)


class MixerModel(nn.Module):
    def __init__(self, d_model, n_layer, d_intermediate, vocab_size, ssm_cfg=None,
                 attn_layer_idx=None, attn_cfg=None, norm_epsilon=1e-5, rms_norm=False,
                 fused_add_norm=False, residual_in_fp32=False, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.residual_in_fp32 = residual_in_fp32
        self.fused_add_norm = fused_add_norm
        self.embedding = nn.Embedding(vocab_size, d_model, **factory_kwargs)
        self.layers = nn.ModuleList([
            create_block(d_model, d_intermediate=d_intermediate, ssm_cfg=ssm_cfg,
                         attn_layer_idx=attn_layer_idx, attn_cfg=attn_cfg,
                         norm_epsilon=norm_epsilon, rms_norm=rms_norm,
                         residual_in_fp32=residual_in_fp32, layer_idx=i, **factory_kwargs)
            for i in range(n_layer)])
        self.norm_f = (nn.LayerNorm if not rms_norm else RMSNorm)(d_model, eps=norm_epsilon,
                                                                  **factory_kwargs)
        self.apply(partial(_init_weights, n_layer=n_layer,
                           n_residuals_per_layer=1 if d_intermediate == 0 else 2))

    def forward(self, input_ids):
        hidden_states = self.embedding(input_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(hidden_states, residual)
        residual = (hidden_states + residual) if residual is not None else hidden_states
        return self.norm_f(residual.to(dtype=self.norm_f.weight.dtype))


class MambaLMHeadModel(nn.Module):
    """Takes the keyword arguments of mamba_ssm's ``MambaConfig`` (as a dict)."""

    def __init__(self, config: dict[str, Any], device=None, dtype=None):
        super().__init__()
        self.config = config
        vocab_size = config["vocab_size"]
        mult = config.get("pad_vocab_size_multiple", 8)
        if vocab_size % mult:
            vocab_size += mult - vocab_size % mult
        self.backbone = MixerModel(
            d_model=config["d_model"], n_layer=config["n_layer"],
            d_intermediate=config.get("d_intermediate", 0), vocab_size=vocab_size,
            ssm_cfg=config.get("ssm_cfg"), attn_layer_idx=config.get("attn_layer_idx"),
            attn_cfg=config.get("attn_cfg"), rms_norm=config.get("rms_norm", True),
            fused_add_norm=config.get("fused_add_norm", True),
            residual_in_fp32=config.get("residual_in_fp32", True), device=device, dtype=dtype)
        self.lm_head = nn.Linear(config["d_model"], vocab_size, bias=False, device=device,
                                 dtype=dtype)
        self.apply(partial(_init_weights, n_layer=config["n_layer"]))
        if config.get("tie_embeddings", True):
            self.lm_head.weight = self.backbone.embedding.weight

    def forward(self, input_ids):
        return CausalLMOutput(logits=self.lm_head(self.backbone(input_ids)))

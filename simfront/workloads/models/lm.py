"""Language models (Mamba1, Mamba2, Mamba2/attention hybrid): mamba_ssm's MambaLMHeadModel,
next-token cross-entropy on random token ids, exactly as the shared ncu data's lm_step.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from simfront.workloads import impl as impls
from simfront.workloads.presets import LMConfig


def build_model(cfg: LMConfig, impl: str, device: str) -> torch.nn.Module:
    return impls.lm_head_model_class(impl)(cfg.mamba_config_kwargs(), device)


def make_batch(cfg: LMConfig, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, cfg.vocab_size, (cfg.batch, cfg.seqlen + 1), generator=generator)
    return {"input_ids": ids.to(device)}


def loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    ids = batch["input_ids"]
    logits = model(ids[:, :-1]).logits
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), ids[:, 1:].reshape(-1))


def output_shape(cfg: LMConfig) -> tuple[int, ...]:
    return (cfg.batch, cfg.seqlen, cfg.padded_vocab)


def forward(model, batch):
    return model(batch["input_ids"][:, :-1]).logits

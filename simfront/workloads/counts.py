"""Analytic parameter counts of each workload, from the config alone (the formulas of the
modules' shapes). Tests check built models against these, so a model that drifts from
mamba_ssm's or MambaVision's layout shows up as a count mismatch."""

from __future__ import annotations

import math

from simfront.workloads.presets import Config, GraphConfig, LMConfig, VisionConfig


def mamba1_mixer(d_model: int, d_state: int, d_conv: int, expand: int) -> int:
    d_inner = expand * d_model
    dt_rank = math.ceil(d_model / 16)
    return (d_model * 2 * d_inner                      # in_proj (no bias)
            + d_inner * d_conv + d_inner               # depthwise conv1d + bias
            + d_inner * (dt_rank + 2 * d_state)        # x_proj
            + dt_rank * d_inner + d_inner              # dt_proj + bias
            + d_inner * d_state + d_inner              # A_log, D
            + d_inner * d_model)                       # out_proj


def mamba2_mixer(d_model: int, d_state: int, d_conv: int, expand: int, headdim: int,
                 ngroups: int) -> int:
    d_inner = expand * d_model
    nheads = d_inner // headdim
    conv_dim = d_inner + 2 * ngroups * d_state
    return (d_model * (2 * d_inner + 2 * ngroups * d_state + nheads)   # in_proj [z x B C dt]
            + conv_dim * d_conv + conv_dim                            # conv1d + bias
            + 3 * nheads                                              # dt_bias, A_log, D
            + d_inner                                                 # gated RMSNorm weight
            + d_inner * d_model)                                      # out_proj


def mha_mixer(d_model: int, num_heads: int) -> int:
    return d_model * 3 * d_model + 3 * d_model + d_model * d_model + d_model


def lm(cfg: LMConfig) -> int:
    d = cfg.d_model
    total = cfg.padded_vocab * d + d                   # embedding, final norm
    for i in range(cfg.n_layer):
        total += d                                     # block norm
        if i in cfg.attn_layer_idx:
            total += mha_mixer(d, cfg.attn_num_heads)
        elif cfg.layer == "Mamba1":
            total += mamba1_mixer(d, cfg.d_state, cfg.d_conv, cfg.expand)
        else:
            total += mamba2_mixer(d, cfg.d_state, cfg.d_conv, cfg.expand, cfg.headdim,
                                  cfg.ngroups)
        if cfg.d_intermediate:
            hidden = -(-cfg.d_intermediate // 128) * 128
            total += d + d * 2 * hidden + hidden * d   # norm2, GatedMLP fc1, fc2
    if not cfg.tie_embeddings:
        total += cfg.padded_vocab * d
    return total


def mambavision_mixer(c: int, d_state: int, d_conv: int, expand: int) -> int:
    d_inner = expand * c
    half = d_inner // 2
    dt_rank = math.ceil(c / 16)
    return (c * d_inner                                # in_proj
            + half * (dt_rank + 2 * d_state)           # x_proj
            + dt_rank * half + half                    # dt_proj + bias
            + half * d_state + half                    # A_log, D
            + d_inner * c                              # out_proj
            + 2 * half * d_conv)                       # conv1d_x, conv1d_z (no bias)


def vision(cfg: VisionConfig) -> int:
    total = cfg.in_chans * cfg.in_dim * 9 + 2 * cfg.in_dim + cfg.in_dim * cfg.dim * 9 + 2 * cfg.dim
    for i, (c, depth) in enumerate(zip(cfg.stage_dims(), cfg.depths, strict=True)):
        if i < 2:
            block = 2 * (c * c * 9 + c + 2 * c) + (c if cfg.layer_scale_conv is not None else 0)
            total += depth * block
        else:
            attn = set(cfg.transformer_blocks(depth))
            hidden = int(c * cfg.mlp_ratio)
            for j in range(depth):
                total += 2 * c + 2 * c                 # norm1, norm2
                if j in attn:
                    total += c * 3 * c + (3 * c if cfg.qkv_bias else 0) + c * c + c
                else:
                    total += mambavision_mixer(c, cfg.d_state, cfg.d_conv, cfg.expand)
                total += c * hidden + hidden + hidden * c + c
                total += 2 * c if cfg.layer_scale is not None else 0
        if i < 3:
            total += c * 2 * c * 9                     # downsample conv, no bias
    nf = cfg.stage_dims()[-1]
    return total + 2 * nf + nf * cfg.num_classes + cfg.num_classes


def graph(cfg: GraphConfig) -> int:
    d, f = cfg.d_model, cfg.ffn_ratio * cfg.d_model
    layer = (2 * (d * d + d) + 2 * d                   # GIN MLP, its BatchNorm
             + mamba1_mixer(d, cfg.d_state, cfg.d_conv, cfg.expand) + 2 * d
             + d * f + f + f * d + d + 2 * d)          # FFN, its BatchNorm
    return (cfg.in_features * cfg.d_model + cfg.d_model + cfg.n_layer * layer
            + cfg.d_model * cfg.num_classes + cfg.num_classes)


def param_count(config: Config) -> int:
    if isinstance(config, LMConfig):
        return lm(config)
    if isinstance(config, VisionConfig):
        return vision(config)
    return graph(config)

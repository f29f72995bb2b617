"""Typed workload configurations and the presets of each workload.

A config is a frozen dataclass holding every size that shapes the kernels a step launches.
Presets are plain factory functions returning one; ``with_overrides`` makes variants
(``--set seqlen=256``) without mutating anything. Nothing here imports torch, so the
registry can be listed on a machine without it.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from simfront.core.errors import ConfigError


@dataclass(frozen=True)
class LMConfig:
    """A `MambaLMHeadModel` (mamba_ssm's LM) training step.

    The model is mamba_ssm's ``MixerModel`` (embedding, ``n_layer`` blocks of
    Add -> RMSNorm -> mixer, final RMSNorm) with a tied LM head, as in the shared ncu data's
    ``lm_step.py``. Layers listed in ``attn_layer_idx`` are mamba_ssm ``MHA`` blocks
    (causal attention through ``torch.nn.functional.scaled_dot_product_attention``).
    """

    layer: str = "Mamba2"            # "Mamba1" (selective scan) or "Mamba2" (SSD)
    d_model: int = 768
    n_layer: int = 2
    vocab_size: int = 50280
    seqlen: int = 2048
    batch: int = 4
    d_state: int = 128               # mamba_ssm defaults: 16 for Mamba1, 128 for Mamba2
    d_conv: int = 4
    expand: int = 2
    headdim: int = 64                # Mamba2 only
    ngroups: int = 1                 # Mamba2 only
    chunk_size: int = 256            # Mamba2 only (SSD chunk length)
    attn_layer_idx: tuple[int, ...] = ()
    attn_num_heads: int = 12
    d_intermediate: int = 0          # 0: no MLP in the blocks (as mamba_ssm's Mamba LMs)
    rms_norm: bool = True
    fused_add_norm: bool = True
    residual_in_fp32: bool = True
    tie_embeddings: bool = True
    pad_vocab_size_multiple: int = 8
    lr: float = 1e-4
    seed: int = 0

    @property
    def d_inner(self) -> int:
        return self.expand * self.d_model

    @property
    def nheads(self) -> int:
        return self.d_inner // self.headdim

    @property
    def dt_rank(self) -> int:
        return -(-self.d_model // 16)

    @property
    def padded_vocab(self) -> int:
        m = self.pad_vocab_size_multiple
        return -(-self.vocab_size // m) * m

    def ssm_cfg(self) -> dict[str, Any]:
        """mamba_ssm's ``MambaConfig.ssm_cfg`` for these sizes."""
        cfg: dict[str, Any] = {"layer": self.layer, "d_state": self.d_state,
                               "d_conv": self.d_conv, "expand": self.expand}
        if self.layer == "Mamba2":
            # The fused (mem-eff) path calls causal_conv1d unconditionally, which the H100
            # machine lacks; the unfused path uses nn.Conv1d (CAPTURE-NOTES).
            cfg.update(headdim=self.headdim, ngroups=self.ngroups, chunk_size=self.chunk_size,
                       use_mem_eff_path=False)
        return cfg

    def attn_cfg(self) -> dict[str, Any]:
        return {"num_heads": self.attn_num_heads, "causal": True}

    def mamba_config_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``mamba_ssm.models.config_mamba.MambaConfig``."""
        return dict(d_model=self.d_model, d_intermediate=self.d_intermediate,
                    n_layer=self.n_layer, vocab_size=self.vocab_size, ssm_cfg=self.ssm_cfg(),
                    attn_layer_idx=list(self.attn_layer_idx), attn_cfg=self.attn_cfg(),
                    rms_norm=self.rms_norm, residual_in_fp32=self.residual_in_fp32,
                    fused_add_norm=self.fused_add_norm,
                    pad_vocab_size_multiple=self.pad_vocab_size_multiple,
                    tie_embeddings=self.tie_embeddings)

    def validate(self) -> None:
        if self.layer not in ("Mamba1", "Mamba2"):
            raise ConfigError(f"layer must be 'Mamba1' or 'Mamba2', not {self.layer!r}",
                              field="layer")
        if self.layer == "Mamba2" and self.d_inner % self.headdim:
            raise ConfigError(f"d_inner {self.d_inner} is not a multiple of headdim "
                              f"{self.headdim}", field="headdim")
        if self.layer == "Mamba2" and self.nheads % self.ngroups:
            raise ConfigError("nheads must be a multiple of ngroups", field="ngroups")
        bad = [i for i in self.attn_layer_idx if not 0 <= i < self.n_layer]
        if bad:
            raise ConfigError(f"attention layer indices {bad} outside 0..{self.n_layer - 1}",
                              field="attn_layer_idx")
        if self.attn_layer_idx and self.d_model % self.attn_num_heads:
            raise ConfigError("d_model must be a multiple of attn_num_heads",
                              field="attn_num_heads")


@dataclass(frozen=True)
class VisionConfig:
    """MambaVision (Hatamizadeh & Kautz, CVPR 2025; NVlabs/MambaVision) image classification.

    Four stages: two of residual conv blocks, two of windowed token blocks whose first half
    uses the MambaVision mixer (selective scan) and second half self-attention (SDPA).
    """

    dim: int = 80
    in_dim: int = 32
    depths: tuple[int, ...] = (1, 3, 8, 4)
    num_heads: tuple[int, ...] = (2, 4, 8, 16)
    window_size: tuple[int, ...] = (8, 8, 14, 7)
    mlp_ratio: float = 4.0
    drop_path_rate: float = 0.2
    layer_scale: float | None = None
    layer_scale_conv: float | None = None
    qkv_bias: bool = True
    d_state: int = 8                 # the MambaVision mixer's fixed sizes
    d_conv: int = 3
    expand: int = 1
    image_size: int = 224
    in_chans: int = 3
    num_classes: int = 1000
    batch: int = 128
    lr: float = 1e-4
    seed: int = 0

    def stage_dims(self) -> list[int]:
        return [self.dim * 2 ** i for i in range(len(self.depths))]

    def stage_resolutions(self) -> list[int]:
        """Feature-map side of each stage: the stem halves twice, each downsample once."""
        stem = self._down(self.image_size, 2)
        return [self._down(stem, i) for i in range(len(self.depths))]

    @staticmethod
    def _down(side: int, times: int) -> int:
        for _ in range(times):
            side = (side - 1) // 2 + 1      # conv 3x3, stride 2, padding 1
        return side

    def transformer_blocks(self, depth: int) -> list[int]:
        """Indices of a token stage's blocks that are attention (MambaVision's rule)."""
        return list(range(depth // 2 + 1, depth)) if depth % 2 else list(range(depth // 2, depth))

    def validate(self) -> None:
        n = len(self.depths)
        if n != 4 or len(self.num_heads) != n or len(self.window_size) != n:
            raise ConfigError("depths, num_heads and window_size need 4 entries each",
                              field="depths")
        for i, d in enumerate(self.stage_dims()):
            if d % self.num_heads[i]:
                raise ConfigError(f"stage {i} dim {d} not a multiple of num_heads "
                                  f"{self.num_heads[i]}", field="num_heads")


@dataclass(frozen=True)
class GraphConfig:
    """GraphMamba (Graph-Mamba, Wang et al. 2024): GraphGPS-style layers whose local part is
    message passing (torch_geometric ``GINConv``) and whose global part is a Mamba layer over
    each graph's nodes ordered by degree. Graph classification on synthetic random graphs."""

    d_model: int = 256
    n_layer: int = 4
    in_features: int = 32
    num_classes: int = 10
    graphs: int = 64                 # graphs per batch
    nodes_per_graph: int = 1024      # also the Mamba sequence length
    avg_degree: int = 8
    d_state: int = 16                # the Mamba (Mamba1) layer's sizes
    d_conv: int = 4
    expand: int = 2
    ffn_ratio: int = 2
    lr: float = 1e-4
    seed: int = 0

    @property
    def d_inner(self) -> int:
        return self.expand * self.d_model

    @property
    def dt_rank(self) -> int:
        return -(-self.d_model // 16)

    def validate(self) -> None:
        if self.nodes_per_graph < 2 or self.avg_degree < 1:
            raise ConfigError("graphs need at least 2 nodes and degree 1", field="nodes_per_graph")


Config = LMConfig | VisionConfig | GraphConfig


def with_overrides(config: Config, overrides: dict[str, Any] | None) -> Config:
    """A copy of ``config`` with fields replaced; values given as strings (from a command
    line) are converted to the field's type. Unknown fields raise ConfigError naming them."""
    if not overrides:
        return config
    hints = typing.get_type_hints(type(config))
    names = {f.name for f in dataclasses.fields(config)}
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in names:
            raise ConfigError(f"unknown setting {key!r}; valid: {', '.join(sorted(names))}",
                              field=key)
        changes[key] = _coerce(value, hints[key], key) if isinstance(value, str) else value
        if isinstance(changes[key], list):
            changes[key] = tuple(changes[key])
    new = dataclasses.replace(config, **changes)
    new.validate()
    return new


def _coerce(text: str, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    try:
        if hint is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if hint in (int, float, str):
            return hint(text)
        if origin is tuple:
            parts = [p for p in text.replace(" ", "").split(",") if p]
            return tuple(args[0](p) for p in parts)
        if type(None) in args:      # float | None
            if text.lower() in ("none", ""):
                return None
            return next(a for a in args if a is not type(None))(text)
    except (ValueError, StopIteration):
        pass
    raise ConfigError(f"cannot read {text!r} as {hint}", field=key)


def as_dict(config: Config) -> dict[str, Any]:
    return dataclasses.asdict(config)


# ---- presets ------------------------------------------------------------------------------
# `paper` sizes are the seed study's: the shared ncu data ran lm_step.py with 2 layers of
# d_model 768 (the width of the ~130M Mamba LMs), batch 4, length 2048, vocab 50280.
# `full` is the whole 24-layer ~130M model at the same batch and length.

def mamba1_lm(preset: str) -> LMConfig:
    base = LMConfig(layer="Mamba1", d_state=16)
    return _lm_preset(base, preset)


def mamba2_lm(preset: str) -> LMConfig:
    base = LMConfig(layer="Mamba2", d_state=128)
    return _lm_preset(base, preset)


def hybrid_lm(preset: str) -> LMConfig:
    # One attention block per four (as in the Mamba2-attention hybrids of mamba_ssm's
    # configs), 12 heads of 64 at d_model 768.
    base = LMConfig(layer="Mamba2", d_state=128, n_layer=4, attn_layer_idx=(2,),
                    attn_num_heads=12)
    if preset == "full":
        return dataclasses.replace(base, n_layer=24, attn_layer_idx=(5, 11, 17, 23))
    if preset == "tiny":
        return dataclasses.replace(_lm_preset(base, "tiny"), n_layer=2, attn_layer_idx=(1,),
                                   attn_num_heads=2)
    return base


# The published Mamba and Mamba2 checkpoints (state-spaces/mamba-*, mamba2-*): (n_layer,
# d_model). Both families use mamba_ssm's defaults otherwise (expand 2, d_conv 4; Mamba1
# d_state 16; Mamba2 d_state 128, headdim 64, ngroups 1, chunk 256), a vocabulary of 50277
# padded to a multiple of 8 (50280) and a tied head. Batch 4 x 2048 as the seed study.
PUBLISHED = {"130m": (24, 768), "370m": (48, 1024), "780m": (48, 1536), "1.3b": (48, 2048),
             "2.7b": (64, 2560)}

# The length/batch/chunk sweep on the 130M Mamba2 step: lengths at the preset's token count
# (4 x 2048 = 8192 tokens; 16384 cannot keep it and runs at batch 1), then batch at length
# 2048, then SSD chunk length. Each point is a set of overrides (``--set``).
SWEEP_130M = {
    "seqlen": [{"seqlen": 512, "batch": 16}, {"seqlen": 1024, "batch": 8},
               {"seqlen": 2048, "batch": 4}, {"seqlen": 4096, "batch": 2},
               {"seqlen": 8192, "batch": 1}, {"seqlen": 16384, "batch": 1}],
    "batch": [{"batch": b} for b in (1, 2, 4, 8, 16)],
    "chunk": [{"chunk_size": c} for c in (64, 128, 256)],
}


def _lm_preset(base: LMConfig, preset: str) -> LMConfig:
    if preset == "paper":
        return base
    if preset in PUBLISHED:
        n_layer, d_model = PUBLISHED[preset]
        return dataclasses.replace(base, n_layer=n_layer, d_model=d_model, vocab_size=50277)
    if preset == "full":
        return dataclasses.replace(base, n_layer=24)
    # tiny: small enough to trace every launch; two SSD chunks so state passing is real.
    return dataclasses.replace(base, d_model=64, n_layer=2, vocab_size=256, seqlen=128, batch=2,
                               d_state=16 if base.layer == "Mamba1" else 32, headdim=32,
                               chunk_size=64, lr=1e-3)


def mambavision(preset: str) -> VisionConfig:
    if preset == "paper":
        return VisionConfig()          # MambaVision-T at 224 px, 128 images per step
    return VisionConfig(dim=16, in_dim=8, depths=(1, 1, 2, 2), num_heads=(1, 2, 2, 4),
                        window_size=(8, 8, 4, 2), drop_path_rate=0.0, image_size=64,
                        num_classes=10, batch=2, lr=1e-3)


def graphmamba(preset: str) -> GraphConfig:
    if preset == "paper":
        return GraphConfig()
    return GraphConfig(d_model=32, n_layer=2, in_features=8, num_classes=3, graphs=4,
                       nodes_per_graph=16, avg_degree=3, lr=1e-3)


PRESET_NAMES = {"mamba1_lm": ("tiny", "paper", "full", *PUBLISHED),
                "mamba2_lm": ("tiny", "paper", "full", *PUBLISHED),
                "hybrid_lm": ("tiny", "paper", "full"), "mambavision": ("tiny", "paper"),
                "graphmamba": ("tiny", "paper")}

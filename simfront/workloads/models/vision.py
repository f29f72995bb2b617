"""MambaVision (NVlabs/MambaVision, ``mambavision/models/mamba_vision.py``), re-implemented
with the same module tree and parameter names. The ``mambavision`` package pins mamba-ssm
2.2.4, transformers 4.50.0 and timm 1.0.15, so it cannot sit beside our mamba_ssm 2.3.2;
this file needs neither it nor timm. The mixer's selective scan is mamba_ssm's CUDA kernel
or the reference scan, by implementation."""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from simfront.workloads import impl as impls
from simfront.workloads.presets import VisionConfig


def window_partition(x: torch.Tensor, window_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B * windows, window_size**2, C)"""
    B, C, H, W = x.shape
    x = x.view(B, C, H // window_size, window_size, W // window_size, window_size)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(-1, window_size * window_size, C)


def window_reverse(windows: torch.Tensor, window_size: int, H: int, W: int) -> torch.Tensor:
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.reshape(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 5, 1, 3, 2, 4).reshape(B, windows.shape[2], H, W)


class DropPath(nn.Module):
    """Stochastic depth per sample (timm's DropPath, scale_by_keep)."""

    def __init__(self, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        return x * x.new_empty(shape).bernoulli_(keep).div_(keep)


class Mlp(nn.Module):
    """timm's ``Mlp``: fc1, GELU, fc2 (biases on)."""

    def __init__(self, in_features: int, hidden_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Downsample(nn.Module):
    def __init__(self, dim: int, keep_dim: bool = False):
        super().__init__()
        self.reduction = nn.Sequential(nn.Conv2d(dim, dim if keep_dim else 2 * dim, 3, 2, 1,
                                                 bias=False))

    def forward(self, x):
        return self.reduction(x)


class PatchEmbed(nn.Module):
    def __init__(self, in_chans: int = 3, in_dim: int = 64, dim: int = 96):
        super().__init__()
        self.proj = nn.Identity()
        self.conv_down = nn.Sequential(
            nn.Conv2d(in_chans, in_dim, 3, 2, 1, bias=False), nn.BatchNorm2d(in_dim, eps=1e-4),
            nn.ReLU(), nn.Conv2d(in_dim, dim, 3, 2, 1, bias=False),
            nn.BatchNorm2d(dim, eps=1e-4), nn.ReLU())

    def forward(self, x):
        return self.conv_down(self.proj(x))


class ConvBlock(nn.Module):
    def __init__(self, dim: int, drop_path: float = 0.0, layer_scale: float | None = None,
                 kernel_size: int = 3):
        super().__init__()
        self.conv1 = nn.Conv2d(dim, dim, kernel_size=kernel_size, stride=1, padding=1)
        self.norm1 = nn.BatchNorm2d(dim, eps=1e-5)
        self.act1 = nn.GELU(approximate="tanh")
        self.conv2 = nn.Conv2d(dim, dim, kernel_size=kernel_size, stride=1, padding=1)
        self.norm2 = nn.BatchNorm2d(dim, eps=1e-5)
        self.layer_scale = isinstance(layer_scale, (int, float))
        if self.layer_scale:
            self.gamma = nn.Parameter(layer_scale * torch.ones(dim))
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        y = self.norm2(self.conv2(self.act1(self.norm1(self.conv1(x)))))
        if self.layer_scale:
            y = y * self.gamma.view(1, -1, 1, 1)
        return x + self.drop_path(y)


class MambaVisionMixer(nn.Module):
    """Selective scan on half the channels, a gated conv branch on the other half,
    concatenated (not multiplied) before the output projection."""

    def __init__(self, d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2,
                 dt_rank="auto", dt_min: float = 0.001, dt_max: float = 0.1,
                 dt_init_floor: float = 1e-4, conv_bias: bool = True, bias: bool = False,
                 scan: Callable | None = None):
        super().__init__()
        self.d_model, self.d_state, self.d_conv, self.expand = d_model, d_state, d_conv, expand
        self.d_inner = int(expand * d_model)
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else dt_rank
        half = self.d_inner // 2
        self.in_proj = nn.Linear(d_model, self.d_inner, bias=bias)
        self.x_proj = nn.Linear(half, self.dt_rank + d_state * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, half, bias=True)
        dt_init_std = self.dt_rank ** -0.5
        nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        dt = torch.exp(torch.rand(half) * (math.log(dt_max) - math.log(dt_min))
                       + math.log(dt_min)).clamp(min=dt_init_floor)
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.dt_proj.bias._no_reinit = True
        A = torch.arange(1, d_state + 1, dtype=torch.float32)[None, :].expand(half, d_state)
        self.A_log = nn.Parameter(torch.log(A).contiguous())
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(half))
        self.D._no_weight_decay = True
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias)
        # The original passes bias=conv_bias//2, i.e. 0: these convolutions have no bias.
        self.conv1d_x = nn.Conv1d(half, half, bias=conv_bias // 2, kernel_size=d_conv,
                                  groups=half)
        self.conv1d_z = nn.Conv1d(half, half, bias=conv_bias // 2, kernel_size=d_conv,
                                  groups=half)
        self.scan = scan if scan is not None else impls.selective_scan("reference")

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        _, seqlen, _ = hidden_states.shape
        half = self.d_inner // 2
        xz = self.in_proj(hidden_states).transpose(1, 2)
        x, z = xz.chunk(2, dim=1)
        A = -torch.exp(self.A_log.float())
        x = F.silu(F.conv1d(x, self.conv1d_x.weight, self.conv1d_x.bias, padding="same",
                            groups=half))
        z = F.silu(F.conv1d(z, self.conv1d_z.weight, self.conv1d_z.bias, padding="same",
                            groups=half))
        x_dbl = self.x_proj(x.transpose(1, 2).reshape(-1, half))
        dt, B, C = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        batch = hidden_states.shape[0]
        dt = self.dt_proj(dt).reshape(batch, seqlen, half).transpose(1, 2)
        B = B.reshape(batch, seqlen, self.d_state).transpose(1, 2).contiguous()
        C = C.reshape(batch, seqlen, self.d_state).transpose(1, 2).contiguous()
        y = self.scan(x, dt, A, B, C, self.D.float(), z=None,
                      delta_bias=self.dt_proj.bias.float(), delta_softplus=True)
        y = torch.cat([y, z], dim=1).transpose(1, 2)
        return self.out_proj(y)


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(self.q_norm(q), self.k_norm(k), v)
        return self.proj(x.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, dim: int, num_heads: int, counter: int, transformer_blocks: list[int],
                 cfg: VisionConfig, drop_path: float, scan: Callable):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        if counter in transformer_blocks:
            self.mixer = Attention(dim, num_heads=num_heads, qkv_bias=cfg.qkv_bias)
        else:
            self.mixer = MambaVisionMixer(d_model=dim, d_state=cfg.d_state, d_conv=cfg.d_conv,
                                          expand=cfg.expand, scan=scan)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * cfg.mlp_ratio))
        ls = cfg.layer_scale
        use_ls = isinstance(ls, (int, float))
        self.gamma_1 = nn.Parameter(ls * torch.ones(dim)) if use_ls else 1
        self.gamma_2 = nn.Parameter(ls * torch.ones(dim)) if use_ls else 1

    def forward(self, x):
        x = x + self.drop_path(self.gamma_1 * self.mixer(self.norm1(x)))
        return x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))


class MambaVisionLayer(nn.Module):
    def __init__(self, dim: int, depth: int, num_heads: int, window_size: int, conv: bool,
                 downsample: bool, cfg: VisionConfig, drop_path: list[float], scan: Callable):
        super().__init__()
        self.conv = conv
        self.transformer_block = not conv
        if conv:
            self.blocks = nn.ModuleList([ConvBlock(dim, drop_path=drop_path[i],
                                                   layer_scale=cfg.layer_scale_conv)
                                         for i in range(depth)])
        else:
            tb = cfg.transformer_blocks(depth)
            self.blocks = nn.ModuleList([Block(dim, num_heads, i, tb, cfg, drop_path[i], scan)
                                         for i in range(depth)])
        self.downsample = Downsample(dim) if downsample else None
        self.window_size = window_size

    def forward(self, x):
        _, _, H, W = x.shape
        if self.transformer_block:
            ws = self.window_size
            pad_r, pad_b = (ws - W % ws) % ws, (ws - H % ws) % ws
            if pad_r or pad_b:
                x = F.pad(x, (0, pad_r, 0, pad_b))
            Hp, Wp = x.shape[2], x.shape[3]
            x = window_partition(x, ws)
        for blk in self.blocks:
            x = blk(x)
        if self.transformer_block:
            x = window_reverse(x, self.window_size, Hp, Wp)
            if pad_r or pad_b:
                x = x[:, :, :H, :W].contiguous()
        return x if self.downsample is None else self.downsample(x)


class MambaVision(nn.Module):
    def __init__(self, cfg: VisionConfig, scan: Callable):
        super().__init__()
        depths = cfg.depths
        num_features = int(cfg.dim * 2 ** (len(depths) - 1))
        self.num_classes = cfg.num_classes
        self.patch_embed = PatchEmbed(in_chans=cfg.in_chans, in_dim=cfg.in_dim, dim=cfg.dim)
        dpr = [x.item() for x in torch.linspace(0, cfg.drop_path_rate, sum(depths),
                                                device="cpu")]
        self.levels = nn.ModuleList()
        for i, depth in enumerate(depths):
            self.levels.append(MambaVisionLayer(
                dim=int(cfg.dim * 2 ** i), depth=depth, num_heads=cfg.num_heads[i],
                window_size=cfg.window_size[i], conv=i in (0, 1), downsample=i < 3, cfg=cfg,
                drop_path=dpr[sum(depths[:i]):sum(depths[:i + 1])], scan=scan))
        self.norm = nn.BatchNorm2d(num_features)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(num_features, cfg.num_classes)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02, a=-2.0, b=2.0)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, (nn.LayerNorm, nn.BatchNorm2d)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.patch_embed(x)
        for level in self.levels:
            x = level(x)
        x = torch.flatten(self.avgpool(self.norm(x)), 1)
        return self.head(x)


def build_model(cfg: VisionConfig, impl: str, device: str) -> nn.Module:
    # Created on the device itself (as mamba_ssm's models are): no host-side init of 30M
    # parameters, and on the meta device no memory at all.
    with torch.device(device):
        return MambaVision(cfg, scan=impls.selective_scan(impl))


def make_batch(cfg: VisionConfig, device: str, generator: torch.Generator):
    images = torch.randn(cfg.batch, cfg.in_chans, cfg.image_size, cfg.image_size,
                         generator=generator)
    labels = torch.randint(0, cfg.num_classes, (cfg.batch,), generator=generator)
    return {"images": images.to(device), "labels": labels.to(device)}


def forward(model, batch):
    return model(batch["images"])


def loss(model, batch):
    return F.cross_entropy(forward(model, batch).float(), batch["labels"])


def output_shape(cfg: VisionConfig) -> tuple[int, ...]:
    return (cfg.batch, cfg.num_classes)

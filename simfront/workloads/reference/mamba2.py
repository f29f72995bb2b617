"""Mamba2 mixer: ``mamba_ssm.modules.mamba2.Mamba2``'s parameters and its
``use_mem_eff_path=False`` training path (nn.Conv1d, SSD chunk scan, gated RMSNorm)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from simfront.workloads.reference.ops import rms_norm_gated, ssd_chunk_scan_combined


class RMSNormGated(nn.Module):
    """``mamba_ssm.ops.triton.layernorm_gated.RMSNorm``: weight only, optional z gate."""

    def __init__(self, hidden_size: int, eps: float = 1e-5, group_size: int | None = None,
                 norm_before_gate: bool = True, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        self.register_parameter("bias", None)
        self.group_size = group_size
        self.norm_before_gate = norm_before_gate

    def forward(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        return rms_norm_gated(x, self.weight, z, self.eps, self.group_size,
                              self.norm_before_gate)


class Mamba2(nn.Module):
    def __init__(self, d_model: int, d_state: int = 128, d_conv: int = 4,
                 conv_init: float | None = None, expand: int = 2, headdim: int = 64,
                 d_ssm: int | None = None, ngroups: int = 1,
                 A_init_range: tuple[float, float] = (1, 16), D_has_hdim: bool = False,
                 rmsnorm: bool = True, norm_before_gate: bool = False, dt_min: float = 0.001,
                 dt_max: float = 0.1, dt_init_floor: float = 1e-4, bias: bool = False,
                 conv_bias: bool = True, chunk_size: int = 256, use_mem_eff_path: bool = False,
                 layer_idx: int | None = None, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.d_model = d_model
        self.d_state = d_state
        self.d_conv = d_conv
        self.expand = expand
        self.d_inner = expand * d_model
        self.headdim = headdim
        self.d_ssm = self.d_inner if d_ssm is None else d_ssm
        self.ngroups = ngroups
        assert self.d_ssm % headdim == 0
        self.nheads = self.d_ssm // headdim
        self.D_has_hdim = D_has_hdim
        self.rmsnorm = rmsnorm
        self.norm_before_gate = norm_before_gate
        self.chunk_size = chunk_size
        self.use_mem_eff_path = use_mem_eff_path
        self.layer_idx = layer_idx
        # Order: [z, x, B, C, dt]
        d_in_proj = 2 * self.d_inner + 2 * ngroups * d_state + self.nheads
        self.in_proj = nn.Linear(d_model, d_in_proj, bias=bias, **factory_kwargs)
        conv_dim = self.d_ssm + 2 * ngroups * d_state
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, bias=conv_bias, kernel_size=d_conv,
                                groups=conv_dim, padding=d_conv - 1, **factory_kwargs)
        if conv_init is not None:
            nn.init.uniform_(self.conv1d.weight, -conv_init, conv_init)
        self.act = nn.SiLU()
        dt = torch.exp(torch.rand(self.nheads, **factory_kwargs)
                       * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = torch.clamp(dt, min=dt_init_floor)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.dt_bias._no_weight_decay = True
        A = torch.empty(self.nheads, dtype=torch.float32, device=device).uniform_(*A_init_range)
        self.A_log = nn.Parameter(torch.log(A).to(dtype=dtype))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.d_ssm if D_has_hdim else self.nheads,
                                         device=device))
        self.D._no_weight_decay = True
        if rmsnorm:
            self.norm = RMSNormGated(self.d_ssm, eps=1e-5, norm_before_gate=norm_before_gate,
                                     group_size=self.d_ssm // ngroups, **factory_kwargs)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias, **factory_kwargs)

    def forward(self, u: torch.Tensor, inference_params=None) -> torch.Tensor:
        batch, seqlen, _ = u.shape
        zxbcdt = self.in_proj(u)
        A = -torch.exp(self.A_log.float())
        d_mlp = (zxbcdt.shape[-1] - 2 * self.d_ssm - 2 * self.ngroups * self.d_state
                 - self.nheads) // 2
        z0, x0, z, xBC, dt = torch.split(
            zxbcdt, [d_mlp, d_mlp, self.d_ssm, self.d_ssm + 2 * self.ngroups * self.d_state,
                     self.nheads], dim=-1)
        xBC = self.act(self.conv1d(xBC.transpose(1, 2)).transpose(1, 2)[:, :-(self.d_conv - 1)])
        x, B, C = torch.split(xBC, [self.d_ssm, self.ngroups * self.d_state,
                                    self.ngroups * self.d_state], dim=-1)
        D = self.D.reshape(self.nheads, self.headdim) if self.D_has_hdim else self.D
        y = ssd_chunk_scan_combined(
            x.reshape(batch, seqlen, self.nheads, self.headdim), dt, A,
            B.reshape(batch, seqlen, self.ngroups, self.d_state),
            C.reshape(batch, seqlen, self.ngroups, self.d_state),
            chunk_size=self.chunk_size, D=D,
            z=None if self.rmsnorm else z.reshape(batch, seqlen, self.nheads, self.headdim),
            dt_bias=self.dt_bias, dt_softplus=True)
        y = y.reshape(batch, seqlen, self.d_ssm)
        if self.rmsnorm:
            y = self.norm(y, z)
        if d_mlp > 0:
            y = torch.cat([nn.functional.silu(z0) * x0, y], dim=-1)
        return self.out_proj(y)

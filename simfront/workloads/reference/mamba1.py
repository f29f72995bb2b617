"""Mamba (Mamba1) mixer: ``mamba_ssm.modules.mamba_simple.Mamba``'s parameters and its
non-fused training path (conv1d, x/dt projections, selective scan, gate by z)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from simfront.workloads.reference.ops import selective_scan_ref


class Mamba(nn.Module):
    def __init__(self, d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2,
                 dt_rank: int | str = "auto", dt_min: float = 0.001, dt_max: float = 0.1,
                 dt_init: str = "random", dt_scale: float = 1.0, dt_init_floor: float = 1e-4,
                 conv_bias: bool = True, bias: bool = False, layer_idx: int | None = None,
                 device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.d_model = d_model
        self.d_state = d_state
        self.d_conv = d_conv
        self.expand = expand
        self.d_inner = int(expand * d_model)
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else int(dt_rank)
        self.layer_idx = layer_idx
        # Modules are created in mamba_ssm's order so one seed gives the same weights.
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=bias, **factory_kwargs)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, bias=conv_bias, kernel_size=d_conv,
                                groups=self.d_inner, padding=d_conv - 1, **factory_kwargs)
        self.activation = "silu"
        self.act = nn.SiLU()
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False,
                                **factory_kwargs)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True, **factory_kwargs)
        dt_init_std = self.dt_rank ** -0.5 * dt_scale
        if dt_init == "constant":
            nn.init.constant_(self.dt_proj.weight, dt_init_std)
        else:
            nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        dt = torch.exp(torch.rand(self.d_inner, **factory_kwargs)
                       * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
                       ).clamp(min=dt_init_floor)
        inv_dt = dt + torch.log(-torch.expm1(-dt))       # inverse softplus
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)
        self.dt_proj.bias._no_reinit = True
        A = torch.arange(1, d_state + 1, dtype=torch.float32, device=device)
        A = A[None, :].expand(self.d_inner, d_state).contiguous()
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.d_inner, device=device))
        self.D._no_weight_decay = True
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias, **factory_kwargs)

    def forward(self, hidden_states: torch.Tensor, inference_params=None) -> torch.Tensor:
        batch, seqlen, dim = hidden_states.shape
        # (d, b*l) product then a view to (b, d, l), as mamba_ssm lays it out for the scan.
        xz = self.in_proj.weight @ hidden_states.reshape(-1, dim).t()
        xz = xz.reshape(xz.shape[0], batch, seqlen).permute(1, 0, 2)
        if self.in_proj.bias is not None:
            xz = xz + self.in_proj.bias.to(dtype=xz.dtype)[:, None]
        A = -torch.exp(self.A_log.float())
        x, z = xz.chunk(2, dim=1)
        x = self.act(self.conv1d(x)[..., :seqlen])
        x_dbl = self.x_proj(x.permute(0, 2, 1).reshape(batch * seqlen, -1))
        dt, B, C = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = self.dt_proj.weight @ dt.t()
        dt = dt.reshape(self.d_inner, batch, seqlen).permute(1, 0, 2)
        B = B.reshape(batch, seqlen, self.d_state).permute(0, 2, 1).contiguous()
        C = C.reshape(batch, seqlen, self.d_state).permute(0, 2, 1).contiguous()
        y = selective_scan_ref(x, dt, A, B, C, self.D.float(), z=z,
                               delta_bias=self.dt_proj.bias.float(), delta_softplus=True)
        return self.out_proj(y.permute(0, 2, 1))

"""Reference kernels: mamba_ssm's selective scan and SSD (state-space dual) in plain PyTorch.

``selective_scan_ref`` follows ``mamba_ssm.ops.selective_scan_interface.selective_scan_ref``
(real A only); ``ssd_minimal_discrete`` is ``mamba_ssm.modules.ssd_minimal``'s (Listing 1 of
the Mamba2 paper); ``ssd_chunk_scan_combined`` wraps it with the argument handling of
``mamba_chunk_scan_combined`` (dt bias and softplus, groups, D skip, z gate, ragged length).
Everything runs in float32 outside autocast, as the kernels accumulate in float32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def _no_autocast(device_type: str):
    return torch.autocast(device_type=device_type, enabled=False)


def selective_scan_ref(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                       D: Tensor | None = None, z: Tensor | None = None,
                       delta_bias: Tensor | None = None, delta_softplus: bool = False,
                       return_last_state: bool = False):
    """Mamba1's selective scan.

    u, delta, z: (batch, dim, L); A: (dim, dstate); B, C: (dim, dstate) constant, or
    (batch, dstate, L), or (batch, groups, dstate, L) input-dependent; D, delta_bias: (dim,).
    Returns y (batch, dim, L) in u's dtype, and the last state (batch, dim, dstate) if asked.
    """
    dtype_in = u.dtype
    with _no_autocast(u.device.type):
        u = u.float()
        delta = delta.float()
        if delta_bias is not None:
            delta = delta + delta_bias[..., None].float()
        if delta_softplus:
            delta = F.softplus(delta)
        batch, dim, dstate = u.shape[0], A.shape[0], A.shape[1]
        A = A.float()
        variable_B, variable_C = B.dim() >= 3, C.dim() >= 3
        B, C = B.float(), C.float()
        deltaA = torch.exp(torch.einsum("bdl,dn->bdln", delta, A))
        if not variable_B:
            deltaB_u = torch.einsum("bdl,dn,bdl->bdln", delta, B, u)
        elif B.dim() == 3:
            deltaB_u = torch.einsum("bdl,bnl,bdl->bdln", delta, B, u)
        else:
            B = B.repeat_interleave(dim // B.shape[1], dim=1)
            deltaB_u = torch.einsum("bdl,bdnl,bdl->bdln", delta, B, u)
        if variable_C and C.dim() == 4:
            C = C.repeat_interleave(dim // C.shape[1], dim=1)
        x = u.new_zeros((batch, dim, dstate))
        # The recurrence is sequential; the read-out by C is one product over all steps.
        # unbind, not deltaA[:, :, i]: indexing's backward writes a full-size zero tensor
        # per step (quadratic in L); unbind's stacks the step gradients once.
        states = []
        for dA, dBu in zip(deltaA.unbind(2), deltaB_u.unbind(2), strict=True):
            x = dA * x + dBu
            states.append(x)
        hs = torch.stack(states, dim=2)                          # (batch, dim, L, dstate)
        if not variable_C:
            y = torch.einsum("bdln,dn->bdl", hs, C)
        elif C.dim() == 3:
            y = torch.einsum("bdln,bnl->bdl", hs, C)
        else:
            y = torch.einsum("bdln,bdnl->bdl", hs, C)
        out = y if D is None else y + u * D.float()[:, None]
        if z is not None:
            out = out * F.silu(z.float())
    out = out.to(dtype_in)
    return (out, x) if return_last_state else out


def segsum(x: Tensor) -> Tensor:
    """Stable segment sum: out[..., i, j] = sum(x[..., j+1 : i+1]) for j <= i, else -inf."""
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


def _chunks(t: Tensor, block_len: int) -> Tensor:
    """(b, c*l, ...) -> (b, c, l, ...)"""
    return t.reshape(t.shape[0], t.shape[1] // block_len, block_len, *t.shape[2:])


def ssd_minimal_discrete(X: Tensor, A: Tensor, B: Tensor, C: Tensor, block_len: int,
                         initial_states: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """SSD by chunks (mamba_ssm's ssd_minimal.py).

    X: (batch, L, heads, headdim); A: (batch, L, heads) (already multiplied by dt);
    B, C: (batch, L, heads, dstate). L must be a multiple of block_len.
    Returns Y (batch, L, heads, headdim) and the final state (batch, heads, headdim, dstate).
    """
    assert X.dtype == A.dtype == B.dtype == C.dtype
    assert X.shape[1] % block_len == 0
    X, A, B, C = (_chunks(t, block_len) for t in (X, A, B, C))
    A = A.permute(0, 3, 1, 2)                                   # b h c l
    A_cumsum = torch.cumsum(A, dim=-1)
    # 1. intra-chunk (diagonal blocks)
    L = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, L, X)
    # 2. each chunk's final state, from zero
    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_states, X)
    # 3. inter-chunk recurrence over chunk boundaries
    if initial_states is None:
        initial_states = torch.zeros_like(states[:, :1])
    states = torch.cat([initial_states, states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states, final_state = new_states[:, :-1], new_states[:, -1]
    # 4. state -> output within each chunk
    state_decay_out = torch.exp(A_cumsum)
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, state_decay_out)
    Y = (Y_diag + Y_off).reshape(X.shape[0], -1, *Y_diag.shape[3:])
    return Y, final_state


def ssd_chunk_scan_combined(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor,
                            chunk_size: int, D: Tensor | None = None, z: Tensor | None = None,
                            dt_bias: Tensor | None = None, dt_softplus: bool = False,
                            return_final_states: bool = False):
    """What ``mamba_chunk_scan_combined`` computes.

    x: (batch, L, heads, headdim); dt: (batch, L, heads); A: (heads,);
    B, C: (batch, L, groups, dstate); D: (heads,) or (heads, headdim); z like x.
    """
    batch, seqlen, nheads, headdim = x.shape
    ngroups = B.shape[2]
    dtype_in = x.dtype
    with _no_autocast(x.device.type):
        dt = dt.float()
        if dt_bias is not None:
            dt = dt + dt_bias.float()
        if dt_softplus:
            dt = F.softplus(dt)
        xf = x.float()
        Bh = B.float().repeat_interleave(nheads // ngroups, dim=2)
        Ch = C.float().repeat_interleave(nheads // ngroups, dim=2)
        pad = (-seqlen) % chunk_size
        X, Adt = xf * dt[..., None], A.float() * dt
        if pad:
            # Zero dt beyond the end: no input and no decay, so outputs up to L are exact.
            X, Adt = F.pad(X, (0, 0, 0, 0, 0, pad)), F.pad(Adt, (0, 0, 0, pad))
            Bh, Ch = F.pad(Bh, (0, 0, 0, 0, 0, pad)), F.pad(Ch, (0, 0, 0, 0, 0, pad))
        y, final_state = ssd_minimal_discrete(X, Adt, Bh, Ch, chunk_size)
        y = y[:, :seqlen]
        if D is not None:
            Df = D.float()
            y = y + xf * (Df[:, None] if Df.dim() == 1 else Df)
        if z is not None:
            y = y * F.silu(z.float())
    y = y.to(dtype_in)
    return (y, final_state) if return_final_states else y


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm in float32, cast back to x's dtype (mamba_ssm's Triton rms_norm_fn)."""
    with _no_autocast(x.device.type):
        xf = x.float()
        out = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.float()
    return out.to(x.dtype)


def rms_norm_gated(x: Tensor, weight: Tensor, z: Tensor | None, eps: float,
                   group_size: int | None, norm_before_gate: bool) -> Tensor:
    """mamba_ssm.ops.triton.layernorm_gated.rms_norm_ref (no bias)."""
    dtype = x.dtype
    with _no_autocast(x.device.type):
        xf = x.float()
        zf = z.float() if z is not None else None
        if zf is not None and not norm_before_gate:
            xf = xf * F.silu(zf)
        if group_size is None:
            group_size = xf.shape[-1]
        xg = xf.reshape(*xf.shape[:-1], xf.shape[-1] // group_size, group_size)
        rstd = torch.rsqrt(xg.square().mean(dim=-1, keepdim=True) + eps)
        out = (xg * rstd).reshape(xf.shape) * weight.float()
        if zf is not None and norm_before_gate:
            out = out * F.silu(zf)
    return out.to(dtype)

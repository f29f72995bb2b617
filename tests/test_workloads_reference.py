"""The CPU path's kernels against a naive sequential recurrence: this is what makes the
reference implementation (and so every CPU-side workload) trustworthy."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is needed for the workloads stage")
F = torch.nn.functional

from simfront.workloads.reference.ops import (  # noqa: E402
    rms_norm_gated, selective_scan_ref, ssd_chunk_scan_combined, ssd_minimal_discrete)


def naive_selective_scan(u, delta, A, B, C, D, z, delta_bias):
    """h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t ;  y_t = C_t . h_t + D u_t ; y *= silu(z),
    one time step and one (batch, channel) at a time, in float64."""
    u, delta, A, B, C = (t.double() for t in (u, delta, A, B, C))
    batch, dim, L = u.shape
    groups = B.shape[1]
    per_group = dim // groups
    y = torch.zeros(batch, dim, L, dtype=torch.float64)
    for b in range(batch):
        for d in range(dim):
            g = d // per_group
            h = torch.zeros(A.shape[1], dtype=torch.float64)
            for t in range(L):
                dt = F.softplus(delta[b, d, t] + delta_bias[d].double())
                h = torch.exp(dt * A[d]) * h + dt * B[b, g, :, t] * u[b, d, t]
                y[b, d, t] = (C[b, g, :, t] * h).sum() + D[d].double() * u[b, d, t]
    return y * F.silu(z.double())


def naive_ssd(x, dt, A, B, C, D, z, dt_bias):
    """Mamba2's scalar-decay SSM, token by token, in float64."""
    x, dt, A, B, C = (t.double() for t in (x, dt, A, B, C))
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    y = torch.zeros(batch, L, H, P, dtype=torch.float64)
    final = torch.zeros(batch, H, P, N, dtype=torch.float64)
    for b in range(batch):
        for h in range(H):
            g = h // (H // G)
            state = torch.zeros(P, N, dtype=torch.float64)
            for t in range(L):
                d = F.softplus(dt[b, t, h] + dt_bias[h].double())
                state = torch.exp(d * A[h]) * state + d * torch.outer(x[b, t, h], B[b, t, g])
                y[b, t, h] = state @ C[b, t, g] + D[h].double() * x[b, t, h]
            final[b, h] = state
    if z is not None:
        y = y * F.silu(z.double())
    return y, final


@pytest.mark.parametrize("groups", [1, 2])
def test_selective_scan_matches_naive_recurrence(groups):
    g = torch.Generator().manual_seed(1)
    batch, dim, N, L = 2, 4, 3, 9
    u = torch.randn(batch, dim, L, generator=g)
    delta = torch.randn(batch, dim, L, generator=g) * 0.5
    A = -torch.rand(dim, N, generator=g) - 0.1
    B = torch.randn(batch, groups, N, L, generator=g)
    C = torch.randn(batch, groups, N, L, generator=g)
    D = torch.randn(dim, generator=g)
    z = torch.randn(batch, dim, L, generator=g)
    bias = torch.randn(dim, generator=g) * 0.1
    Bk, Ck = (B[:, 0], C[:, 0]) if groups == 1 else (B, C)   # (b, n, l) form too
    out, last = selective_scan_ref(u, delta, A, Bk, Ck, D, z=z, delta_bias=bias,
                                   delta_softplus=True, return_last_state=True)
    want = naive_selective_scan(u, delta, A, B, C, D, z, bias)
    assert out.shape == (batch, dim, L) and last.shape == (batch, dim, N)
    torch.testing.assert_close(out.double(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("L,chunk,groups", [(16, 4, 1), (13, 4, 2), (8, 8, 1)])
def test_ssd_chunked_matches_naive_recurrence(L, chunk, groups):
    """Several chunks (state passing), a ragged last chunk, and grouped B/C."""
    g = torch.Generator().manual_seed(2)
    batch, H, P, N = 2, 4, 3, 5
    x = torch.randn(batch, L, H, P, generator=g)
    dt = torch.randn(batch, L, H, generator=g) * 0.5
    A = -torch.rand(H, generator=g) - 0.2
    B = torch.randn(batch, L, groups, N, generator=g)
    C = torch.randn(batch, L, groups, N, generator=g)
    D = torch.randn(H, generator=g)
    z = torch.randn(batch, L, H, P, generator=g)
    bias = torch.randn(H, generator=g) * 0.1
    y, final = ssd_chunk_scan_combined(x, dt, A, B, C, chunk, D=D, z=z, dt_bias=bias,
                                       dt_softplus=True, return_final_states=True)
    want, want_final = naive_ssd(x, dt, A, B, C, D, z, bias)
    assert y.shape == x.shape
    torch.testing.assert_close(y.double(), want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(final.double(), want_final, rtol=1e-4, atol=1e-4)


def test_ssd_minimal_is_a_selective_scan_with_scalar_decay():
    """Mamba2's SSD equals Mamba1's selective scan when A is one scalar per head."""
    g = torch.Generator().manual_seed(3)
    batch, L, H, P, N = 1, 12, 2, 2, 4
    x = torch.randn(batch, L, H, P, generator=g)
    dt = F.softplus(torch.randn(batch, L, H, generator=g))
    A = -torch.rand(H, generator=g) - 0.1
    B = torch.randn(batch, L, 1, N, generator=g)
    C = torch.randn(batch, L, 1, N, generator=g)
    y, _ = ssd_minimal_discrete(x * dt[..., None], A * dt, B.expand(-1, -1, H, -1),
                                C.expand(-1, -1, H, -1), block_len=4)
    u = x.permute(0, 2, 3, 1).reshape(batch, H * P, L)
    delta = dt.repeat_interleave(P, dim=2).permute(0, 2, 1)
    A_scan = A.repeat_interleave(P)[:, None].expand(H * P, N)
    y_scan = selective_scan_ref(u, delta, A_scan, B[:, :, 0].transpose(1, 2),
                                C[:, :, 0].transpose(1, 2))
    torch.testing.assert_close(y.permute(0, 2, 3, 1).reshape(batch, H * P, L), y_scan,
                               rtol=1e-4, atol=1e-5)


def test_gated_rms_norm_groups_and_gate_order():
    g = torch.Generator().manual_seed(4)
    x, z = torch.randn(3, 8, generator=g), torch.randn(3, 8, generator=g)
    w = torch.rand(8, generator=g) + 0.5
    out = rms_norm_gated(x, w, z, eps=1e-5, group_size=4, norm_before_gate=False)
    xg = (x * F.silu(z)).reshape(3, 2, 4)
    want = (xg / torch.sqrt(xg.pow(2).mean(-1, keepdim=True) + 1e-5)).reshape(3, 8) * w
    torch.testing.assert_close(out, want)
    before = rms_norm_gated(x, w, z, eps=1e-5, group_size=None, norm_before_gate=True)
    want_b = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w * F.silu(z)
    torch.testing.assert_close(before, want_b)


def test_reference_kernels_keep_dtype_under_autocast():
    """Inside bf16 autocast the kernels still compute in float32 and return the input dtype."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, 8, 2, 4, generator=g).bfloat16()
    dt = torch.rand(1, 8, 2, generator=g)
    B = torch.randn(1, 8, 1, 3, generator=g).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ssd_chunk_scan_combined(x, dt, -torch.ones(2), B, B, 4, dt_softplus=True)
    ref = ssd_chunk_scan_combined(x.float(), dt, -torch.ones(2), B.float(), B.float(), 4,
                                  dt_softplus=True)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)

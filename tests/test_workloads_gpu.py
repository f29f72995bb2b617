"""On a CUDA machine with mamba_ssm: the reference path against mamba_ssm's kernels, and
the capture window. Skipped elsewhere (the capture engineer runs these on the H100)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is needed for the workloads stage")

from simfront.workloads import WORKLOADS, build, counts  # noqa: E402
from simfront.workloads.impl import mamba_ssm_import_error  # noqa: E402
from simfront.workloads.runner import run_workload  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def cuda_and_mamba_ssm():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    err = mamba_ssm_import_error()
    if err:
        pytest.skip(err)


def _needs(name):
    if name == "graphmamba":
        pytest.importorskip("torch_geometric", reason="graphmamba needs torch_geometric")


@pytest.mark.parametrize("name", ["mamba1_lm", "mamba2_lm", "hybrid_lm"])
def test_reference_lm_has_mamba_ssms_parameters_and_init(name):
    real = build(name, "tiny", device="cuda", impl="mamba_ssm", amp="none")
    ref = build(name, "tiny", device="cuda", impl="reference", amp="none")
    a, b = real.model.state_dict(), ref.model.state_dict()
    assert list(a) == list(b)
    assert all(a[k].shape == b[k].shape and a[k].dtype == b[k].dtype for k in a)
    assert real.param_count == ref.param_count == counts.param_count(real.config)
    # Same construction order, same seed: the same initial weights.
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_reference_kernels_agree_with_mamba_ssms(name):
    _needs(name)
    real = build(name, "tiny", device="cuda", impl="mamba_ssm", amp="none")
    ref = build(name, "tiny", device="cuda", impl="reference", amp="none")
    ref.model.load_state_dict(real.model.state_dict())
    real.model.eval(), ref.model.eval()
    with torch.no_grad():
        out_real, out_ref = real.forward(), ref.forward(real.batch)
    torch.testing.assert_close(out_ref, out_real, rtol=2e-2, atol=2e-2)
    real.model.train(), ref.model.train()
    l_real, l_ref = float(real.step()), float(ref.step())
    assert abs(l_real - l_ref) < 1e-2 * max(1.0, abs(l_real))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_gpu_step_and_window(name):
    _needs(name)
    wl = build(name, "tiny", device="cuda")
    assert wl.impl == "mamba_ssm"
    calls = []
    s = run_workload(wl, iterations=3, window=2, on_window_start=lambda w: calls.append(1),
                     on_window_end=lambda w: calls.append(2))
    assert calls == [1, 2] and s.nvtx_range == "simfront.step" and s.window == 2
    assert all(v == v for v in s.losses) and s.device_name

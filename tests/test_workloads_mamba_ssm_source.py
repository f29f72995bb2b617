"""The reference modules against mamba_ssm 2.3.2's own Python source (the wheel in
shared/wheels), on the CPU.

mamba_ssm cannot be imported here (its CUDA extension), so this file, run as a script in a
subprocess, loads the wheel's .py files with the compiled extension, Triton and
transformers replaced by inert stand-ins that are never called, then:
1. builds mamba_ssm's MambaLMHeadModel for each LM preset and compares it with ours:
   the same parameter names, shapes and dtypes (paper presets on the meta device), and
   for `tiny` the same initial values from the same seed;
2. runs mamba_ssm's module code (its Block, Mamba, Mamba2, MHA forward paths) with our
   reference kernels put in place of the CUDA/Triton ones, and compares logits and
   gradients with our modules'.
So the CPU path is mamba_ssm's model code up to the kernels, and the kernels are checked
against a naive recurrence in test_workloads_reference.py."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simfront.core.paths import REPO_ROOT, shared_dir

WHEEL_GLOB = "mamba_ssm-2.3.2*.whl"


def _wheel() -> Path | None:
    wheels = sorted((shared_dir() / "wheels").glob(WHEEL_GLOB))
    return wheels[-1] if wheels else None


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pytest.importorskip("torch", reason="torch is needed for the workloads stage")
    pytest.importorskip("einops", reason="mamba_ssm's source needs einops (pip install einops)")
    wheel = _wheel()
    if wheel is None:
        pytest.skip(f"no {WHEEL_GLOB} in {shared_dir() / 'wheels'}")
    src = tmp_path_factory.mktemp("mamba_ssm_src")
    with zipfile.ZipFile(wheel) as zf:     # the Python files only, never the .so
        for name in zf.namelist():
            if name.startswith("mamba_ssm/") and name.endswith(".py"):
                zf.extract(name, src)
    proc = subprocess.run([sys.executable, __file__, str(src)], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_same_parameters_and_initial_values_as_mamba_ssm(report):
    assert len(report["build"]) == 6
    for row in report["build"]:
        assert row["names_equal"], row
        assert row["mismatched"] == [], row
        assert row["params_real"] == row["params_ref"] == row["params_formula"], row


def test_same_forward_and_gradients_as_mamba_ssms_module_code(report):
    assert len(report["forward"]) == 6
    for row in report["forward"]:
        assert row["logit_diff"] < 1e-5, row
        assert row["grad_rel_diff"] < 1e-4, row


# ---- the subprocess -----------------------------------------------------------------------

def _install_stand_ins() -> None:
    import importlib.abc
    import importlib.machinery
    import types
    from unittest import mock

    stubbed = ("triton", "selective_scan_cuda", "transformers", "tilelang", "quack", "cutlass",
               "apache_tvm_ffi", "tvm_ffi", "cuda")

    class Kernel:
        def __init__(self, fn, configs=()):
            self.fn, self.configs = fn, list(configs)

        def __getitem__(self, grid):
            raise RuntimeError("a Triton kernel was launched in a CPU-only check")

    class Config:
        def __init__(self, kwargs=None, num_warps=4, num_stages=2, **kw):
            self.kwargs, self.num_warps, self.num_stages = kwargs or {}, num_warps, num_stages
            self.__dict__.update(kw)

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in stubbed:
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            m = mock.MagicMock(name=spec.name)
            m.__path__, m.__spec__, m.__name__ = [], spec, spec.name
            m.__version__ = "3.6.0"
            if spec.name == "triton":
                m.Config = Config
                m.autotune = lambda configs=(), key=(), **kw: (lambda fn: Kernel(fn, configs))
                m.jit = lambda fn=None, **kw: Kernel(fn) if fn is not None else Kernel
                m.heuristics = lambda d: (lambda fn: fn)
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, Finder())
    hub = types.ModuleType("huggingface_hub")
    hub.PyTorchModelHubMixin = type("PyTorchModelHubMixin", (), {})
    sys.modules["huggingface_hub"] = hub


def _patch_kernels() -> None:
    """Put our reference kernels where mamba_ssm's modules call CUDA/Triton ones."""
    import mamba_ssm.models.mixer_seq_simple as mss
    import mamba_ssm.modules.block as mb
    import mamba_ssm.modules.mamba2 as m2
    import mamba_ssm.modules.mamba_simple as ms
    import mamba_ssm.ops.triton.layer_norm as ln
    import mamba_ssm.ops.triton.layernorm_gated as lng

    from simfront.workloads.reference import ops

    ms.selective_scan_fn = ops.selective_scan_ref

    def chunk_scan(x, dt, A, B, C, chunk_size, D=None, z=None, dt_bias=None,
                   dt_softplus=False, **unused):
        return ops.ssd_chunk_scan_combined(x, dt, A, B, C, chunk_size, D=D, z=z,
                                           dt_bias=dt_bias, dt_softplus=dt_softplus)
    m2.mamba_chunk_scan_combined = chunk_scan

    def rmsnorm_fn(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
        return lng.rms_norm_ref(x, weight, bias, z=z, eps=eps, group_size=group_size,
                                norm_before_gate=norm_before_gate)
    lng.rmsnorm_fn = rmsnorm_fn

    def layer_norm_fn(x, weight, bias, residual=None, eps=1e-6, prenorm=False,
                      residual_in_fp32=False, is_rms_norm=False, **unused):
        ref = ln.rms_norm_ref if is_rms_norm else ln.layer_norm_ref
        out = ref(x, weight, bias, residual=residual, eps=eps, prenorm=prenorm, upcast=True)
        if prenorm:
            return out[0], (out[1].float() if residual_in_fp32 else out[1])
        return out
    mss.layer_norm_fn = mb.layer_norm_fn = layer_norm_fn
    ln.rms_norm_fn = (lambda x, weight, bias, residual=None, eps=1e-6, prenorm=False,
                      residual_in_fp32=False, **kw:
                      layer_norm_fn(x, weight, bias, residual, eps, prenorm, residual_in_fp32,
                                    True))


def _main(src: str) -> None:
    sys.path.insert(0, src)
    _install_stand_ins()
    import torch
    from mamba_ssm.models.config_mamba import MambaConfig
    from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel

    from simfront.workloads import build, counts, get_spec

    out = {"build": [], "forward": []}
    for name in ("mamba1_lm", "mamba2_lm", "hybrid_lm"):
        for preset in ("tiny", "paper"):
            cfg = get_spec(name).config(preset)
            # Values on the CPU for tiny; names, shapes and dtypes only (meta) for paper.
            device = "cpu" if preset == "tiny" else "meta"
            torch.manual_seed(cfg.seed)
            real = MambaLMHeadModel(MambaConfig(**cfg.mamba_config_kwargs()), device=device)
            ref = build(name, preset, device=device, impl="reference").model
            a, b = real.state_dict(), ref.state_dict()
            out["build"].append({
                "workload": name, "preset": preset, "names_equal": list(a) == list(b),
                "mismatched": [k for k in a if k not in b or a[k].shape != b[k].shape
                               or a[k].dtype != b[k].dtype
                               or (device == "cpu" and not torch.equal(a[k], b[k]))],
                "params_real": sum(p.numel() for p in real.parameters()),
                "params_ref": sum(p.numel() for p in ref.parameters()),
                "params_formula": counts.param_count(cfg)})
    _patch_kernels()
    for name in ("mamba1_lm", "mamba2_lm", "hybrid_lm"):
        for fused in (True, False):
            wl = build(name, "tiny", device="cpu", impl="reference", amp="none",
                       overrides={"fused_add_norm": fused, "seqlen": 48, "chunk_size": 16})
            real = MambaLMHeadModel(MambaConfig(**wl.config.mamba_config_kwargs()), device="cpu")
            real.load_state_dict(wl.model.state_dict())
            ids = wl.batch["input_ids"][:, :-1]
            la, lb = real(ids).logits, wl.model(ids).logits
            la.float().square().mean().backward()
            lb.float().square().mean().backward()
            rel = max(((p.grad - q.grad).norm() / q.grad.norm().clamp_min(1e-12)).item()
                      for p, q in zip(real.parameters(), wl.model.parameters(), strict=True))
            out["forward"].append({"workload": name, "fused_add_norm": fused,
                                   "logit_diff": (la - lb).abs().max().item(),
                                   "grad_rel_diff": rel})
    print(json.dumps(out))


if __name__ == "__main__":
    _main(sys.argv[1])

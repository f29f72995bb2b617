"""Our MambaVision against NVlabs' own source (``mambavision`` 1.2.0 from PyPI), on the CPU.

The package cannot be installed beside our pins (it wants mamba-ssm 2.2.4, timm 1.0.15,
transformers 4.50.0) and timm needs torchvision, so this file, run as a script in a
subprocess, loads ``mambavision/models/mamba_vision.py`` from the wheel with small
stand-ins for the timm helpers it imports (trunc_normal_, DropPath, Mlp with timm's
defaults) and with our reference scan as ``selective_scan_fn``; then compares parameter
names, shapes, initial values (same seed), logits and gradients with our model.

Opt-in: set SIMFRONT_MAMBAVISION_WHEEL to the wheel
(``pip download --no-deps mambavision==1.2.0``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simfront.core.paths import REPO_ROOT

ENV = "SIMFRONT_MAMBAVISION_WHEEL"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pytest.importorskip("torch", reason="torch is needed for the workloads stage")
    pytest.importorskip("einops", reason="MambaVision's source needs einops")
    wheel = os.environ.get(ENV)
    if not wheel or not Path(wheel).is_file():
        pytest.skip(f"set {ENV} to mambavision-1.2.0-py3-none-any.whl "
                    "(pip download --no-deps mambavision==1.2.0) to compare with NVlabs' source")
    src = tmp_path_factory.mktemp("mambavision_src")
    with zipfile.ZipFile(wheel) as zf:
        zf.extract("mambavision/models/mamba_vision.py", src)
    proc = subprocess.run([sys.executable, __file__,
                           str(src / "mambavision" / "models" / "mamba_vision.py")],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_same_parameters_and_initial_values_as_nvlabs(report):
    for row in report["build"]:
        assert row["names_equal"] and row["shape_mismatches"] == [], row
        assert row["value_mismatches"] == 0, row
        assert row["params_real"] == row["params_ours"], row


def test_same_logits_and_gradients_as_nvlabs(report):
    assert report["logit_diff"] < 1e-5 and report["grad_diff"] < 1e-5, report


def _main(path: str) -> None:
    import importlib.util
    import types

    import torch
    import torch.nn.functional as F

    from simfront.workloads import build, get_spec
    from simfront.workloads.models import vision as ours
    from simfront.workloads.reference.ops import selective_scan_ref

    def mod(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    class TimmMlp(torch.nn.Module):     # timm.layers.Mlp with its defaults
        def __init__(self, in_features, hidden_features=None, out_features=None,
                     act_layer=torch.nn.GELU, drop=0.0):
            super().__init__()
            self.fc1 = torch.nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.drop1 = torch.nn.Dropout(drop)
            self.norm = torch.nn.Identity()
            self.fc2 = torch.nn.Linear(hidden_features, out_features or in_features)
            self.drop2 = torch.nn.Dropout(drop)

        def forward(self, x):
            return self.drop2(self.fc2(self.norm(self.drop1(self.act(self.fc1(x))))))

    mod("timm")
    mod("timm.models")
    mod("timm.models.registry", register_model=lambda f: f)
    mod("timm.models.layers", DropPath=ours.DropPath,
        trunc_normal_=lambda t, mean=0.0, std=1.0, a=-2.0, b=2.0:
        torch.nn.init.trunc_normal_(t, mean, std, a, b),
        LayerNorm2d=type("LayerNorm2d", (torch.nn.Module,), {}))
    mod("timm.models._builder", _update_default_kwargs=lambda *a, **k: None,
        resolve_pretrained_cfg=lambda n: types.SimpleNamespace(to_dict=dict))
    mod("timm.models.vision_transformer", Mlp=TimmMlp, PatchEmbed=None)
    mod("mamba_ssm")
    mod("mamba_ssm.ops")
    mod("mamba_ssm.ops.selective_scan_interface", selective_scan_fn=selective_scan_ref)
    mod("mambavision")
    mod("mambavision.models")
    mod("mambavision.models.registry", register_pip_model=lambda f: f)
    spec = importlib.util.spec_from_file_location("mambavision.models.mamba_vision", path)
    mv = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mv
    spec.loader.exec_module(mv)

    out = {"build": []}
    for preset in ("tiny", "paper"):
        cfg = get_spec("mambavision").config(preset)
        torch.manual_seed(cfg.seed)
        real = mv.MambaVision(dim=cfg.dim, in_dim=cfg.in_dim, depths=list(cfg.depths),
                              window_size=list(cfg.window_size), mlp_ratio=cfg.mlp_ratio,
                              num_heads=list(cfg.num_heads), drop_path_rate=cfg.drop_path_rate,
                              num_classes=cfg.num_classes)
        wl = build("mambavision", preset, device="cpu", impl="reference", amp="none")
        a, b = real.state_dict(), wl.model.state_dict()
        out["build"].append({
            "preset": preset, "names_equal": list(a) == list(b),
            "shape_mismatches": [k for k in a if k not in b or a[k].shape != b[k].shape],
            "value_mismatches": sum(not torch.equal(a[k], b[k]) for k in a if k in b),
            "params_real": sum(p.numel() for p in real.parameters()),
            "params_ours": wl.param_count})
        if preset == "tiny":
            x, y = wl.batch["images"], wl.batch["labels"]
            out["logit_diff"] = (real(x) - wl.model(x)).abs().max().item()
            F.cross_entropy(real(x), y).backward()
            F.cross_entropy(wl.model(x), y).backward()
            pairs = zip(real.parameters(), wl.model.parameters(), strict=True)
            out["grad_diff"] = max((p.grad - q.grad).abs().max().item() for p, q in pairs)
    print(json.dumps(out))


if __name__ == "__main__":
    _main(sys.argv[1])

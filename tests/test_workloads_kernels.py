"""The kernels a step must launch, against the real H100 ncu profiles of the paper-size LM
steps (shared/data/h100/ncu, made by lm_step.py with our paper sizes)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from simfront.workloads import get_spec
from simfront.workloads.kernels import SSD_BWD, SSD_FWD, base_name, check_kernels, expected_kernels

from conftest import NCU_DIR


def _kernel_names(ncu_dir, stem):
    path = ncu_dir / f"{stem}.ncu.csv.xz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    df = pd.read_csv(path, skiprows=[1], usecols=["Kernel Name"])   # row 2 holds units
    return df["Kernel Name"].astype(str).tolist()


@pytest.mark.parametrize("name,stem,launches", [
    ("mamba2_lm", "mamba2_lm_2x768_L2048_B4", 232),
    ("mamba1_lm", "mamba1_lm_2x768_L2048_B4", 190)])
def test_paper_step_launches_what_the_h100_profile_holds(name, stem, launches):
    names = _kernel_names(NCU_DIR, stem)
    assert len(names) == launches          # data/README: one row per launch
    assert check_kernels(names, get_spec(name).config("paper")) == []


@pytest.mark.parametrize("trace_set,name,preset", [
    ("mamba2_lm-tiny", "mamba2_lm", "tiny"), ("mamba1_lm-tiny", "mamba1_lm", "tiny"),
    ("hybrid_lm-tiny", "hybrid_lm", "tiny"), ("mambavision-tiny", "mambavision", "tiny"),
    ("graphmamba-tiny", "graphmamba", "tiny"), ("mamba2_lm-paper", "mamba2_lm", "paper"),
    ("mamba1_lm-paper", "mamba1_lm", "paper")])
def test_captured_steps_launch_what_is_expected(repo_root, trace_set, name, preset):
    """The H100 captures of every workload (trace headers carry mangled names)."""
    from simfront.traces.reader import TraceSet

    d = repo_root / "traces" / trace_set
    if not (d / "kernelslist.g").exists():
        pytest.skip(f"trace set {trace_set} not shipped")
    names = [k.header.name for k in TraceSet(d).kernels()]
    assert check_kernels(names, get_spec(name).config(preset)) == []


def test_missing_triton_kernels_are_reported():
    """What the 2024 tracer's blind spot looks like: every Triton launch gone."""
    names = _kernel_names(NCU_DIR, "mamba2_lm_2x768_L2048_B4")
    triton = set(SSD_FWD + SSD_BWD) | {"_layer_norm_fwd_1pass_kernel", "_layer_norm_bwd_kernel"}
    kept = [n for n in names if base_name(n) not in triton and not n.startswith("nvjet")]
    problems = check_kernels(kept, get_spec("mamba2_lm").config("paper"))
    assert len(problems) == len(triton) + 1          # + the GEMM family
    assert all("cuLaunchKernelEx" in p for p in problems)
    cfg4 = dataclasses.replace(get_spec("mamba2_lm").config("paper"), n_layer=4)
    assert "_chunk_scan_fwd_kernel: 2 launches, expected 4" in check_kernels(names, cfg4)


def test_expectations_scale_with_the_config():
    hybrid = {e.name: e.count for e in expected_kernels(get_spec("hybrid_lm").config("paper"))}
    assert hybrid["_chunk_scan_fwd_kernel"] == 3 and hybrid["_chunk_state_fwd_kernel"] == 6
    assert hybrid["_layer_norm_fwd_1pass_kernel"] == 4 + 1 + 3
    vt = {e.name: e.count for e in expected_kernels(get_spec("mambavision").config("paper"))}
    assert vt["selective_scan_fwd_kernel"] == 6          # 4 + 2 mixer blocks in MambaVision-T

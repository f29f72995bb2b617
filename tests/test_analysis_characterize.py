"""Hardware characterization of the two real H100 training steps (tests/data/h100/ncu),
checked against the facts the data README states."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simfront.analysis.characterize import PIPE_USE_THRESHOLD, characterize, pipe_class
from simfront.core.ncu import read_ncu_csv

from conftest import MAMBA1_NCU, MAMBA2_NCU, NCU_DIR

MAMBA2 = MAMBA2_NCU
MAMBA1 = MAMBA1_NCU


@pytest.fixture(scope="module")
def steps():
    return {"mamba2": characterize(read_ncu_csv(MAMBA2), "mamba2"),
            "mamba1": characterize(read_ncu_csv(MAMBA1), "mamba1")}


def test_time_weighted_dram_use_about_54_percent_in_both(steps):
    for ch in steps.values():
        assert ch.dram_util_time_weighted == pytest.approx(0.54, abs=0.015)
        # the loader's time column agrees with the raw metric
        assert ch.step_time_s == pytest.approx(ch.kernels["duration_s"].sum())


def test_category_shares(steps):
    for ch in steps.values():
        assert ch.categories["share"].sum() == pytest.approx(1.0)
        assert ch.categories["launches"].sum() == ch.launches
    # README: Mamba2's SSD kernels ~8.5% of the step, Mamba1's selective_scan ~14%
    assert steps["mamba2"].categories.loc["ssm", "share"] == pytest.approx(0.085, abs=0.005)
    assert steps["mamba1"].categories.loc["ssm", "share"] == pytest.approx(0.14, abs=0.005)
    # README: with two layers and a 50k vocabulary the loss and the LM-head GEMMs dominate:
    # the two longest launches are log-softmax forward/backward, and the longest GEMMs are
    # the LM head (2 * 8192 tokens * 50280 * 768 FLOPs)
    for ch in steps.values():
        k = ch.kernels.sort_values("duration_s", ascending=False)
        assert set(k["short_name"].iloc[:2]) == {"cunn_SoftMaxForward", "cunn_SoftMaxBackward"}
        gemms = k[k["category"] == "gemm"].iloc[:3]
        assert np.allclose(gemms["tensor_flops"], 2 * 8192 * 50280 * 768, rtol=0.02)
        assert ch.categories.loc["loss", "share"] > 0.2


def test_ssm_kernel_table(steps):
    m2 = steps["mamba2"].ssm_table
    # the README's families: _chunk_*, _bmm_chunk_*, _state_passing_*
    assert all(n.startswith(("_chunk_", "_bmm_chunk_", "_state_passing_")) for n in m2.index)
    for n in ("_chunk_scan_fwd_kernel", "_chunk_state_fwd_kernel", "_state_passing_fwd_kernel",
              "_bmm_chunk_fwd_kernel", "_chunk_cumsum_fwd_kernel", "_chunk_scan_bwd_dc_kernel"):
        assert n in m2.index
    assert m2["share"].sum() == pytest.approx(steps["mamba2"].categories.loc["ssm", "share"])
    m1 = steps["mamba1"].ssm_table
    assert set(m1.index) == {"selective_scan_fwd_kernel", "selective_scan_bwd_kernel"}
    # the backward scan is the larger part (recomputation plus gradients)
    assert m1.loc["selective_scan_bwd_kernel", "time_us"] > 2 * m1.loc["selective_scan_fwd_kernel", "time_us"]


def test_pipe_classes(steps):
    m2, m1 = steps["mamba2"], steps["mamba1"]
    k2 = m2.kernels
    # the big GEMMs are tensor-only; Mamba1's scan is vector-only; Mamba2's SSD chunk
    # kernels that do matmuls use both pipes and are vector-bound
    big_gemm = k2[k2["category"] == "gemm"].sort_values("duration_s").iloc[-1]
    assert big_gemm["pipe_class"] == "tensor-only"
    assert (m1.kernels.loc[m1.kernels["category"] == "ssm", "pipe_class"] == "vector-only").all()
    mixed = k2[k2["pipe_class"] == "tensor+vector"]
    assert set(mixed["category"]) == {"ssm"}
    assert m2.pipe_classes.loc["tensor+vector", "vector_bound_share"] > 0.85
    for ch in steps.values():
        assert ch.pipe_classes["share"].sum() == pytest.approx(1.0)


def test_pipe_class_rule():
    df = pd.DataFrame({"pipe_busy_tensor": [0.9, 0.2, 0.01, 0.0],
                       "pipe_busy_fp32": [0.0, 0.1, 0.5, 0.0],
                       "pipe_busy_int": [0.04, 0.3, 0.1, 0.02]})
    assert list(pipe_class(df)) == ["tensor-only", "tensor+vector", "vector-only", "vector-only"]
    assert PIPE_USE_THRESHOLD == 0.05


def test_ceilings_measured_from_records(steps):
    c = steps["mamba2"].ceilings
    # the HBM3 peak ncu's percentages refer to (H100 SXM datasheet: 3.35 TB/s)
    assert c.dram_bw == pytest.approx(3.35e12, rel=0.02)
    # dense BF16: 4096 FLOP per SM per tensor-active cycle (989 TFLOP/s / 132 SMs / 1.83 GHz)
    assert c.tensor_flop_per_sm_cycle == pytest.approx(4096, rel=0.01)
    assert c.tensor_flops_achieved < c.tensor_flops_peak


def test_comparison_with_published(steps):
    cmp = steps["mamba2"].comparison.set_index("figure")
    assert cmp.loc["DRAM bandwidth use, time-weighted", "published"] == 0.575
    assert cmp.loc["SSM share of step time", "ours"] < 0.20
    assert cmp["why"].str.len().min() > 20


def test_texts_are_true_for_the_step_they_describe(repo_root):
    """Two captures of different models (manifest.json beside each ncu.csv): each text names
    its own model and shape and the shares its own records give; none carries the other's."""
    from simfront.analysis.studies import characterize_ncu

    big, tiny = characterize_ncu([repo_root / "traces" / "mamba2_lm-paper" / "ncu.csv",
                                  repo_root / "traces" / "mamba1_lm-tiny" / "ncu.csv"])
    assert (big.workload, tiny.workload) == ("mamba2_lm-paper", "mamba1_lm-tiny")
    why = {ch.workload: " ".join(ch.comparison["why"]) for ch in (big, tiny)}
    assert "d_model-768 Mamba2 model with a 50k vocabulary" in why["mamba2_lm-paper"]
    assert "sequence 2048, batch 4 (8,192 tokens)" in why["mamba2_lm-paper"]
    assert "d_model-64 Mamba1 model with a vocabulary of 256" in why["mamba1_lm-tiny"]
    assert "sequence 128, batch 2 (256 tokens)" in why["mamba1_lm-tiny"]
    assert "768" not in why["mamba1_lm-tiny"] and "50k" not in why["mamba1_lm-tiny"]
    for ch in (big, tiny):
        share = ch.categories["share"]
        assert f"here GEMMs take {share['gemm']:.0%}" in why[ch.workload]
        top = share.idxmax()
        assert f"goes to {top} {share[top]:.0%}" in why[ch.workload]
    # Mamba1's scan is vector-only: its text says so; Mamba2's SSD kernels are mixed
    assert "its SSM kernels are vector-only" in why["mamba1_lm-tiny"]
    assert "the SSM kernels among them are vector-bound" in why["mamba2_lm-paper"]


def test_without_a_manifest_no_model_is_named(steps):
    why = " ".join(steps["mamba1"].comparison["why"])
    assert "d_model" not in why.replace("d_model squared", "").replace("with d_model:", "")
    assert "vocabulary" not in why.replace("a large vocabulary", "")
    assert "this step spends more of it in" in why

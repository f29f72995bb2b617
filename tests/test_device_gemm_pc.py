"""Where cuBLAS's GEMMs' warps wait on the H200 (bench/device/gemm_pc.sh, data in
bench/data/device/gemm_pc_h200/; bench/RESULTS.md, *Where cuBLAS's GEMMs' warps wait*):
ncu's per-instruction samples of the fit step's nvjet GEMMs against the model's waits on
the set's traces of the same kernels."""

from __future__ import annotations

import pytest

from simfront.core.ncu import read_source_pages
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.waits import against_ncu, by_family, pc_waits
from simfront.traces.reader import KernelTrace

DATA = REPO_ROOT / "bench/data/device/gemm_pc_h200/source.csv.xz"
TRACES = REPO_ROOT / "traces/mamba2_lm-paper-box"
#: the non-cooperative 96x128 tile (the model 1.30x ncu's cycles) and a cooperative one
#: (0.99x)
KERNELS = {"kernel-222907.traceg.xz": "nvjet_sm90_tst_96x128_64x6_4x2_h_bz_NTN",
           "kernel-222908.traceg.xz": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"}


@pytest.fixture(scope="module")
def pages():
    return read_source_pages(DATA)


def test_cublas_chose_the_traced_kernels_on_the_h200(pages):
    traced = {KernelTrace(p).header.name for p in TRACES.glob("kernel-*.traceg.xz")}
    profiled = set(pages)
    assert len(profiled) == 8
    assert profiled <= traced


@pytest.fixture(scope="module")
def families(pages):
    out = {}
    for file, name in KERNELS.items():
        k = KernelTrace(TRACES / file)
        assert k.header.name == name
        out[name] = by_family(against_ncu(pc_waits(k, load_gpu("h200")), pages[name]))
    return out


def test_hardware_warps_wait_after_their_mmas_where_the_models_wait_at_them(families):
    """The known miss: the model's warps wait for the tensor pipe at each HGMMA; the
    H200's issue them and wait at WARPGROUP.DEPBAR (and, in the non-cooperative tile, at
    NANOSLEEP). A model of the MMAs' pace that fixes it changes this."""
    for name, f in families.items():
        assert f.loc["HGMMA", "share_model"] > f.loc["HGMMA", "share_hw"] + 0.15, name
        assert f.loc["WARPGROUP", "share_hw"] > 0.15, name
        assert f.loc["WARPGROUP", "share_model"] < 0.02, name
    ntn = families[KERNELS["kernel-222907.traceg.xz"]]
    assert ntn.loc["NANOSLEEP", "share_hw"] > 0.35

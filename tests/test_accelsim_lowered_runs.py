"""Lowered and sampled kernels through Accel-Sim 1.x, and the sampled-launch scaling.

The ``accelsim``-marked tests run real shipped kernels to completion on an install named by
ACCELSIM_ROOT (skipped, saying so, without one): a lowered SSD kernel (Triton wgmma), a
lowered nvjet_sm90 GEMM (wgmma + TMA + mbarriers + clusters), and the sampled depthwise
convolution that made Accel-Sim assert (``warp_traces.size() > 0``) before re-gridding.
The scaling tests need no simulator.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from simfront.sim.accelsim import sampling

ROOT = Path(__file__).resolve().parents[1]
M2 = ROOT / "traces" / "mamba2_lm-tiny"
M1 = ROOT / "traces" / "mamba1_lm-tiny"


@pytest.fixture(scope="module")
def h100_config(tmp_path_factory) -> Path:
    from simfront.sim.accelsim.config import write_accelsim_config
    from simfront.gpu.presets import load_gpu

    out = tmp_path_factory.mktemp("cfg")
    write_accelsim_config(load_gpu("h100"), out)
    return out / "gpgpusim.config"


def test_sm_limits_and_coresident_blocks_from_the_config(h100_config):
    from simfront.gpu.presets import load_gpu

    gpu = load_gpu("h100")
    lim = sampling.sm_limits(h100_config)
    assert lim.sm_count == gpu.sm_count
    assert lim.max_threads == gpu.sm.max_warps * 32
    # kernel-266: 1024 threads, 32 registers, no shared memory -> bound by threads
    assert sampling.blocks_per_sm(lim, 1024, 32, 0) == lim.max_threads // 1024
    # 128 threads, 168 registers (an nvjet GEMM's), 164 KB shared -> bound by shared memory
    per = sampling.blocks_per_sm(lim, 384, 168, 164308)
    assert per == min(lim.shared_bytes // 164308, lim.registers // (168 * 384)) == 1


def test_sample_scale_follows_the_model(h100_config):
    lim = sampling.sm_limits(h100_config)
    wave = lim.sm_count * 2
    # one wave traced of four: time x4; counts by block share without a census
    s = sampling.sample_scale(32, 4 * wave, 1000, None, lim, 2)
    assert s.count_scale == 4 * wave / 32 and s.work_scale == 1.0
    assert s.time_scale == 4.0
    # the census says the traced blocks did 29% of an average block's work (a persistent
    # GEMM's slow instrumented blocks): counts by census, time stretched by the work scale
    census = int(1000 * (4 * wave / 32) / 0.29)
    s = sampling.sample_scale(32, 4 * wave, 1000, census, lim, 2)
    assert s.count_scale == census / 1000
    assert math.isclose(s.work_scale, 1 / 0.29, rel_tol=1e-3)
    assert math.isclose(s.time_scale, 4 / 0.29, rel_tol=1e-3)
    # within one wave (kernel-266: 32 of 33 blocks on 132 SMs): time unscaled
    s = sampling.sample_scale(32, 33, 1000, None, lim, 2)
    assert s.time_scale == 1.0 and s.count_scale == 33 / 32


def test_records_of_sampled_launches_are_scaled_and_say_so(h100_config):
    from simfront.sim.accelsim.runner import scale_sampled_records

    recs = [{"kernel_uid": 1, "complete": True, "cycles": 5000.0, "time_us": 2.5,
             "instructions": 3.0e5, "dram_read_bytes": 1.0e5},
            {"kernel_uid": 2, "complete": True, "cycles": 100.0, "instructions": 10.0}]
    sent = [{"uid": 1, "file": "kernel-266.traceg.xz", "block": "1024,1,1",
             "sampled": {"traced": 32, "total": 1000, "traced_instructions": 3.0e5,
                         "census": None, "nregs": 32, "shmem": 0}},
            {"uid": 2, "file": "kernel-267.traceg.xz", "block": "128,1,1"}]
    prov: dict = {}
    out = scale_sampled_records(recs, sent, h100_config, prov)
    lim = sampling.sm_limits(h100_config)
    waves = math.ceil(1000 / (lim.sm_count * 2))
    assert out[0]["cycles"] == 5000.0 * waves and out[0]["accelsim_unscaled_cycles"] == 5000.0
    assert out[0]["instructions"] == 3.0e5 * 1000 / 32
    assert out[0]["accelsim_sampled"] is True and out[0]["accelsim_traced_blocks"] == 32
    assert out[1] == recs[1]  # unsampled: untouched
    assert prov["sampling"]["kernel-266.traceg.xz"]["time_scale"] == waves


# --------------------------------------------------------------------------- on Accel-Sim


@pytest.fixture
def accelsim_root() -> str:
    root = os.environ.get("ACCELSIM_ROOT")
    if not root:
        pytest.skip("ACCELSIM_ROOT is not set: no Accel-Sim 1.x install to run lowered "
                    "kernels on (docs/accelsim.md says what to install)")
    return root


def _run(tmp_path, trace_dir: Path, kernel: str, root: str):
    from simfront.gpu.presets import load_gpu
    from simfront.sim.accelsim.runner import AccelSimBackend
    from simfront.sim.backend import SimJob

    job = SimJob(job_id=kernel, trace_dir=trace_dir, gpu=load_gpu("h100"),
                 out_dir=tmp_path / "job", kernels=(kernel,),
                 options={"isa_compat": "ampere", "accelsim_root": root,
                          "memory_limit_gb": 16}, timeout_s=1800)
    res = AccelSimBackend().run(job)
    assert res.ok, res.reason
    (rec,) = res.records
    assert rec["complete"] and rec["cycles"] > 0 and rec["instructions"] > 0
    return res, rec


@pytest.mark.accelsim
def test_lowered_ssd_kernel_runs_to_completion(tmp_path, accelsim_root):
    res, rec = _run(tmp_path, M2, "kernel-96340.traceg.xz", accelsim_root)
    assert rec["kernel_name"] == "_chunk_scan_bwd_dc_kernel"
    k = res.provenance["isa_compat"]["kernels"]["kernel-96340.traceg.xz"]
    assert k["rewritten"]["HGMMA"] == 128 and k["emitted"]["HMMA"] == 512
    assert k["tensor_flops_in"] == k["tensor_flops_out"] > 0


@pytest.mark.accelsim
def test_lowered_nvjet_gemm_runs_to_completion(tmp_path, accelsim_root):
    res, rec = _run(tmp_path, M2, "kernel-96278.traceg.xz", accelsim_root)
    assert rec["kernel_name"].startswith("nvjet_sm90")
    k = res.provenance["isa_compat"]["kernels"]["kernel-96278.traceg.xz"]
    for op in ("HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "UCGABAR_WAIT"):
        assert k["rewritten"][op] > 0
    assert rec["l2_accesses"] > 0  # the lowered TMA traffic reached the memory system


@pytest.mark.accelsim
def test_sampled_launch_runs_and_is_scaled(tmp_path, accelsim_root):
    """The issue's crash: grid 33, traced 32 of 33 asserted in trace_driven.cc:82."""
    res, rec = _run(tmp_path, M1, "kernel-266.traceg.xz", accelsim_root)
    assert rec["accelsim_sampled"] is True
    assert (rec["accelsim_traced_blocks"], rec["accelsim_total_blocks"]) == (32, 33)
    assert rec["accelsim_count_scale"] == 33 / 32
    assert "kernel-266.traceg.xz" in res.provenance["sampling"]

"""The trace sets captured on the H100 with simfront's tracer and shipped in traces/: what
they must hold (every SSD Triton kernel forward and backward, the cuBLAS sm90 GEMMs,
launches through cuLaunchKernel, cuLaunchKernelEx and CUDA graphs), correct headers, and
their kernel lists against the ncu profiles of the same steps."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from simfront.capture.validate import validate_trace_set
from simfront.core.categories import short_name
from simfront.core.launches import read_sidecar, window_launches
from simfront.core.paths import repo_dir
from simfront.traces.reader import TraceSet

TRACES = repo_dir("traces")
SSD = ["_chunk_cumsum_fwd_kernel", "_chunk_state_fwd_kernel", "_state_passing_fwd_kernel",
       "_bmm_chunk_fwd_kernel", "_chunk_scan_fwd_kernel", "_chunk_cumsum_bwd_kernel",
       "_chunk_state_bwd_db_kernel", "_state_passing_bwd_kernel", "_bmm_chunk_bwd_kernel",
       "_chunk_scan_bwd_dstates_kernel", "_chunk_scan_chunk_state_bwd_dx_kernel",
       "_chunk_scan_bwd_dc_kernel", "_chunk_scan_bwd_dcb_kernel",
       "_chunk_scan_bwd_ddAcs_stable_kernel"]


def stored(name: str):
    d = TRACES / name
    if not (d / "kernelslist.g").exists():
        pytest.skip(f"trace set {name} not in {TRACES}")
    return d


def headers(d):
    return [k.header for k in TraceSet(d).kernels()]


def tb_sampling(h) -> tuple[int, int]:
    """(traced, total) thread blocks from the header line the tracer writes."""
    text = dict(h.extra)["tb sampling"]
    traced, _, total = text.split("traced ")[1].partition(" of ")
    return int(traced), int(total)


def test_mamba2_tiny_holds_every_ssd_kernel_and_the_gemms():
    d = stored("mamba2_lm-tiny")
    hs = headers(d)
    names = Counter(short_name(h.name) for h in hs)
    missing = [k for k in SSD if names[k] == 0]
    assert not missing, missing
    gemms = [n for n in names if n.startswith("nvjet_sm90")]
    assert gemms, "no cuBLAS sm90 GEMM traced"
    # every header is sm_90 with a real register count and shared-memory size
    assert {h.binary_version for h in hs} == {90}
    assert all(1 <= h.nregs <= 255 and 0 <= h.shmem <= 232448 for h in hs)


def test_mamba2_tiny_launch_apis_and_headers_match_launch_records():
    d = stored("mamba2_lm-tiny")
    side = window_launches(read_sidecar(d / "launches.jsonl"))
    apis = Counter(x.api for x in side)
    # Triton (SSD, layer norm) and cuBLAS sm90 launch through cuLaunchKernelEx
    assert apis["cuLaunchKernelEx"] > 0 and apis["cuLaunchKernel"] > 0
    ex = {x.key for x in side if x.api == "cuLaunchKernelEx"}
    assert set(SSD) <= ex
    rep = validate_trace_set(d, "simfront", sidecar=side)
    assert rep.ok and not rep.defects, [str(f) for f in rep.findings][:5]


@pytest.mark.parametrize("name,n", [("mamba2_lm-tiny", 197), ("mamba1_lm-tiny", 151),
                                    ("hybrid_lm-tiny", 142), ("mambavision-tiny", 551),
                                    ("graphmamba-tiny", 409), ("mamba2_lm-paper", 232),
                                    ("mamba1_lm-paper", 190)])
def test_kernel_list_matches_ncu_one_to_one(name, n):
    """The ncu profile of the same step, stored beside the set: every launch pairs by name
    in order. Grid/block of Triton-autotuned kernels may differ (two processes autotune)."""
    from simfront.capture.driver import match_profile

    d = stored(name)
    if not (d / "ncu.csv").exists():
        pytest.skip("no ncu profile beside the set")
    m = match_profile(d / "ncu.csv", d)
    assert m["one_to_one"] and m["n_trace"] == m["n_ncu"] == n
    # only autotuned Triton kernels may come with another configuration, and the torch
    # reductions that sum their per-block partial results (as many as the chosen block
    # size makes)
    for text in m["config_mismatches"]:
        kernel = text.split("(")[1].split(")")[0]
        assert kernel.startswith("_") or kernel == "reduce_kernel", text


def test_mamba1_tiny_holds_the_selective_scan():
    hs = headers(stored("mamba1_lm-tiny"))
    names = {short_name(h.name) for h in hs}
    assert {"selective_scan_fwd_kernel", "selective_scan_bwd_kernel"} <= names
    assert {h.binary_version for h in hs} == {90}


def test_sampled_headers_say_how_many_blocks_were_traced():
    d = stored("mamba2_lm-tiny")
    for k in list(TraceSet(d).kernels())[:40]:
        traced, total = tb_sampling(k.header)
        assert total == k.header.n_blocks and traced == min(total, 32)
        blocks = sum(len(c.tb_coords) for c in k.iter_chunks())
        assert blocks == traced


def test_smoke_app_launch_apis():
    """cuLaunchKernel, cuLaunchKernelEx and graph kernel nodes; registers as ptxas reported
    them (axpy 10, shared_sum 9: `nvcc -Xptxas -v`, stated in the manifest)."""
    d = stored("smoke_app-launch_apis")
    manifest = json.loads((d / "manifest.json").read_text())
    regs = manifest["compiled_registers"]
    ks = list(TraceSet(d).kernels())
    apis = [dict(k.header.extra)["launch api"] for k in ks]
    assert apis == ["cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel"] + ["cuGraphLaunch"] * 4
    for k in ks:
        h = k.header
        assert h.nregs == regs[h.name] and h.binary_version == 90
        n = sum(len(c) for c in k.iter_chunks())
        assert n > 0
    # the graph was launched twice: both launches traced the same instructions
    by_id = {k.header.kernel_id: k for k in ks}
    counts = {kid: sum(len(c) for c in by_id[kid].iter_chunks()) for kid in (5, 6, 7, 8)}
    assert counts[5] == counts[7] and counts[6] == counts[8]
    # the Ex launch asked for 2048 bytes of dynamic shared memory
    assert ks[1].header.shmem == 2048


# What each workload's step must contain beyond the GEMMs, by kernel name.
SUITE = {
    # Mamba2 SSD kernels and attention through torch SDPA (cuDNN's flash kernels on sm_90)
    "hybrid_lm-tiny": SSD + ["sdpa_sm90_flash_fprop", "sdpa_sm90_flash_bprop"],
    # the MambaVision mixer's selective scan, its attention blocks and the conv stages
    "mambavision-tiny": ["selective_scan_fwd_kernel", "selective_scan_bwd_kernel",
                         "sdpa_sm90_flash_fprop", "fprop_implicit_gemm"],
    # message passing (torch_geometric scatter/gather) and the Mamba layer over node order
    "graphmamba-tiny": ["_scatter_gather_elementwise_kernel", "selective_scan_fwd_kernel",
                        "selective_scan_bwd_kernel"],
    "mamba2_lm-paper": SSD + ["cunn_SoftMaxForward"],
    "mamba1_lm-paper": ["selective_scan_fwd_kernel", "selective_scan_bwd_kernel"],
}


@pytest.mark.parametrize("name", sorted(SUITE))
def test_suite_step_holds_its_kernels_with_valid_headers(name):
    d = stored(name)
    hs = headers(d)
    names = [h.name for h in hs]
    missing = [k for k in SUITE[name] if not any(k in n for n in names)]
    assert not missing, missing
    assert any("nvjet_sm90" in n for n in names), "no cuBLAS sm90 GEMM traced"
    assert {h.binary_version for h in hs} == {90}
    side = window_launches(read_sidecar(d / "launches.jsonl"))
    assert len(side) == len(hs)
    rep = validate_trace_set(d, "simfront", sidecar=side)
    assert rep.ok and not rep.defects, [str(f) for f in rep.findings][:5]
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["workload"]["name"] == name.rsplit("-", 1)[0]
    assert manifest["gpu"].startswith("NVIDIA H100")


@pytest.mark.parametrize("name", ["mamba2_lm-paper", "mamba1_lm-paper"])
def test_paper_captures_carry_a_census_of_every_sampled_launch(name):
    """A sampled launch's header counts the warp instructions of every block (tracer 1.1):
    at least what the traced blocks hold, and for the persistent cuBLAS GEMMs much more
    than N/T times it, since their traced blocks got fewer tiles."""
    d = stored(name)
    sampled = 0
    under = []
    for k in TraceSet(d).kernels():
        h = k.header
        traced, total = tb_sampling(h)
        if traced == total:
            continue
        sampled += 1
        census = h.census_warp_instructions
        assert census is not None, k.path.name
        n = k.instruction_count()
        assert census >= n, (k.path.name, census, n)
        if census > 1.5 * n * total / traced:
            under.append(h.name)
    assert sampled > 50
    if name == "mamba2_lm-paper":
        # the LM head's GEMM: traced blocks did ~1/3 of an average block's work
        assert any("nvjet_sm90_tst_160x256" in n for n in under), under

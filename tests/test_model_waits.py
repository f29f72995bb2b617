"""The model's per-instruction waits (simfront.sim.model.waits) on shipped real data: ncu's
source page and a trace of the same binaries of the fit step mamba2_lm-hd128's SSD kernels
(bench/data/device/ssd_pc_hd128), and the paper step's source page, another tiling."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.ncu import read_source_pages
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import simulate as S
from simfront.sim.model.issue import new_state, run_sm
from simfront.sim.model.waits import against_ncu, by_family, pc_waits
from simfront.traces.reader import TraceSet

DATA = REPO_ROOT / "bench" / "data" / "device"
PAIR = DATA / "ssd_pc_hd128"
KERNEL = "_chunk_scan_fwd_kernel"


@pytest.fixture(scope="module")
def source():
    return read_source_pages(PAIR / "source.csv.xz")


@pytest.fixture(scope="module")
def kernel():
    return next(k for k in TraceSet(PAIR / "trace").kernels() if k.header.name == KERNEL)


@pytest.fixture(scope="module")
def waits(kernel):
    return pc_waits(kernel, "h200")


def test_source_pages_hold_each_kernel_by_code_offset(source):
    assert set(source) == {KERNEL, "_chunk_scan_chunk_state_bwd_dx_kernel",
                           "_chunk_state_fwd_kernel", "_chunk_scan_bwd_dstates_kernel",
                           "_chunk_state_bwd_db_kernel"}
    page = source[KERNEL]
    assert page.pc.iat[0] == 0 and (np.diff(page.pc) == 16).all()  # one SASS word apart
    assert page["Warp Stall Sampling (All Samples)"].sum() > 10_000
    assert page["Source"].iat[0].startswith("LDC R1")


def test_waits_are_shares_of_sm0s_warp_time(waits, kernel):
    assert (waits.wait >= 0).all()
    assert waits.share.sum() == pytest.approx(1.0)
    assert waits.issues.sum() > 0
    # every address the warps issued at is one of the trace's code addresses
    assert waits.pc.max() < 16 * 4096 and (waits.pc % 16 == 0).all()


def test_keeping_row_waits_leaves_the_run_unchanged(kernel):
    gpu = load_gpu("h200")
    prep = S.prepare_kernel(kernel, gpu, None)
    issue = S._Issuer(prep, S.op_timing(prep, gpu),
                      S._sm_config(prep, gpu, S.DEFAULT_PARAMS, S.occupancy(prep.launch, gpu)))
    rows = issue._rows()
    cfg = issue.cfg._replace(lat_dram=S.memory_latencies(gpu, S.DEFAULT_PARAMS)["dram"])
    plain, kept = S.new_counters(cfg.sub_partitions), S.new_counters(
        cfg.sub_partitions, rows.pc.shape[0], cfg.blocks_per_sm * cfg.warps_per_block)
    t0 = run_sm(rows, issue.ops, cfg, new_state(rows, issue.ops, cfg), plain)
    t1 = run_sm(rows, issue.ops, cfg, new_state(rows, issue.ops, cfg), kept)
    assert t0 == t1
    for a, b in zip(plain[:4], kept[:4]):
        np.testing.assert_array_equal(a, b)
    # no warp waits longer, summed over its rows, than SM 0 ran
    assert kept.row_wait.sum() <= t1 * cfg.blocks_per_sm * cfg.warps_per_block * \
        -(-cfg.n_blocks // cfg.blocks_per_sm)


def test_the_same_binary_pairs_address_by_address(waits, source):
    joined = against_ncu(waits, source[KERNEL])
    assert joined.share_hw.sum() == pytest.approx(1.0)
    assert joined.share_model.sum() == pytest.approx(1.0)
    fam = by_family(joined)
    assert fam.share_hw.sum() == pytest.approx(1.0)
    assert {"HGMMA", "FMUL", "LDGSTS"} <= set(fam.index)


def test_another_tiling_of_the_kernel_is_refused(source):
    # the trace's _chunk_state_bwd_db and ncu's are two Triton tilings of the kernel
    k = next(k for k in TraceSet(PAIR / "trace").kernels()
             if k.header.name == "_chunk_state_bwd_db_kernel")
    with pytest.raises(ValueError, match="not the same binary"):
        against_ncu(pc_waits(k, "h200"), source["_chunk_state_bwd_db_kernel"])


def test_the_paper_steps_source_page_reads_too():
    pages = read_source_pages(DATA / "ssd_source" / "source.csv.xz")
    assert {"_chunk_state_fwd_kernel", "_bmm_chunk_fwd_kernel", KERNEL} <= set(pages)


def test_a_file_without_kernels_is_named(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("==PROF== nothing\n")
    with pytest.raises(Exception, match="x.csv"):
        read_source_pages(f)

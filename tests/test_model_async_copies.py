"""cp.async pipelines in the model: group waits keep the newest N groups in flight, and a
pipelined loop's prefetches past its end read nothing (simfront.sim.model.prefetch)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import simulate_kernel
from simfront.sim.model.decode import (K_ASYNC_COMMIT, K_ASYNC_COPY, K_ASYNC_WAIT, K_FENCE,
                                       build_optable)
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.prefetch import _unwaited_copies, drop_addresses
from simfront.sim.model.simulate import prepare_kernel, time_prepared
from simfront.traces.reader import TraceSet

C, G = K_ASYNC_COPY, K_ASYNC_COMMIT
PAPER_BOX = REPO_ROOT / "traces" / "mamba2_lm-paper-box"
SSD_NCU = REPO_ROOT / "bench" / "data" / "device" / "ssd_stalls" / "ncu_mamba2_lm_paper_all.csv.xz"


def W(n):  # a wait that leaves the newest n groups in flight
    return (K_ASYNC_WAIT, n)


def flags(seq):
    kind = np.array([s[0] if isinstance(s, tuple) else s for s in seq], np.int64)
    imm = np.array([s[1] if isinstance(s, tuple) else 0 for s in seq], np.int64)
    return _unwaited_copies(kind, np.zeros(len(seq), np.int64), imm).tolist()


def test_opcodes_of_a_cp_async_pipeline_decode_to_their_kinds():
    t = build_optable(["LDGSTS.E.BYPASS.128", "LDGDEPBAR", "DEPBAR.LE", "MEMBAR.ALL.CTA"],
                      load_gpu("h100"))
    assert t.kind.tolist() == [K_ASYNC_COPY, K_ASYNC_COMMIT, K_ASYNC_WAIT, K_FENCE]


def test_a_pipelines_prefetches_past_the_loop_end_read_nothing():
    # three stages ahead (prologue), a loop of two iterations each waiting for the oldest
    # stage (N = 2) and copying one more, the drain at exit: the last three groups (the
    # prologue's third stage and both loop copies) are never waited for
    seq = [C, G, C, G, C, G, W(2), C, G, W(2), C, G, W(0)]
    assert flags(seq) == [False, False, True, True, True]


def test_waits_for_everything_or_none_mark_nothing():
    assert flags([C, G, W(0), C, G, W(0)]) == [False, False]   # no pipeline
    assert flags([C, G, C, G]) == [False, False]               # no wait at all


def test_a_wait_for_everything_before_the_last_copy_is_a_use_the_last_is_the_drain():
    assert flags([C, G, C, G, W(1), C, G, W(0), C, G, W(0)]) == [False] * 3 + [True]


def test_dropping_rows_keeps_the_other_rows_lanes():
    off, addrs = drop_addresses(np.array([0, 2, 3, 5]), np.arange(5), np.array([1]))
    assert off.tolist() == [0, 2, 2, 4] and addrs.tolist() == [0, 1, 3, 4]


def first_kernel(trace_dir, name):
    ts = TraceSet(trace_dir)
    for ref in ts.kernel_refs:
        k = ts.kernel(ref.stem)
        if k.header.name == name:
            return k
    pytest.fail(f"no {name} in {trace_dir}")


@pytest.fixture(scope="module")
def scan_fwd():
    return first_kernel(PAPER_BOX, "_chunk_scan_fwd_kernel")


def test_the_ssd_forward_reads_the_l2_sectors_ncu_counts(scan_fwd):
    # ncu (bench/device/ssd_stalls.sh, the same step): the kernel's L2 sectors from the SMs.
    # Counting every traced lane of the copies, the model read 2.06x as many.
    ncu = read_ncu_csv(SSD_NCU)
    row = ncu[ncu["Kernel Name"].astype(str).str.startswith("_chunk_scan_fwd")]
    hw = float(row["lts__t_sectors_srcunit_tex.sum"].astype(float).median())
    rec = simulate_kernel(scan_fwd, "h100", launch={"regs": 168, "shmem": 35840})
    assert 0.85 < rec["l2_accesses"] / hw < 1.3


def test_waiting_for_the_oldest_stage_only_overlaps_the_copies():
    # the held-out d_model-1024 step's forward SSD kernel, one warp a sub-partition: its
    # copies' latency shows unless two stages stay in flight
    kernel = first_kernel(REPO_ROOT / "traces" / "ho-m2-d1024", "_chunk_scan_fwd_kernel")
    gpu = load_gpu("h100")
    prep = prepare_kernel(kernel, gpu, {"regs": 172, "shmem": 86784}, DEFAULT_PARAMS)
    every = dict(prep.cols, imm=np.full_like(prep.cols["imm"], -1))  # wait for all copies
    t_pipe = time_prepared(prep, gpu).t_sm
    t_all = time_prepared(dataclasses.replace(prep, cols=every), gpu).t_sm
    assert (prep.cols["imm"] == 8).any()
    assert t_pipe < 0.95 * t_all

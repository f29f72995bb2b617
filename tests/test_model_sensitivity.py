"""The model against hardware facts and each variant parameter, on real H100 traces
(issue 5). Traces are prepared once per cache geometry; variants that leave the caches and
SM count alone reuse the prepared kernel."""

from __future__ import annotations

import pytest

from simfront.core.paths import REPO_ROOT

from conftest import LM_PARTIAL


def _prep(ts_dir, kid, gpu):
    from simfront.sim.model.simulate import prepare_kernel
    from simfront.traces.reader import TraceSet

    return prepare_kernel(TraceSet(ts_dir).kernel(kid), gpu)


def _rec(prep, gpu):
    from simfront.sim.model.api import timed_record

    return timed_record(prep, gpu)


def _model(ts_dir, kid, gpu):
    return _rec(_prep(ts_dir, kid, gpu), gpu)


@pytest.fixture(scope="module")
def lm():
    return LM_PARTIAL


@pytest.fixture(scope="module")
def scan_fwd(scan_step, h100):
    return _prep(scan_step, "kernel-35636", h100)


def test_selective_scan_fwd_is_latency_bound_and_near_hardware(scan_fwd, h100):
    from simfront.sim.model.validation import read_ncu

    rec = _rec(scan_fwd, h100)
    assert rec["bound"] == "latency"
    assert rec["stall_memory_latency"] + rec["stall_dependency"] > 0.5
    ncu = read_ncu(REPO_ROOT / "bench" / "data" / "h100_ncu" / "mamba1_scan_step.ncu.csv.xz")
    hw = ncu.loc[ncu["short_name"] == "selective_scan_fwd_kernel", "cycles"].iloc[0]
    assert abs(rec["cycles"] - hw) / hw < 0.25


def test_selective_scan_fwd_ignores_vector_units_and_half_l2(scan_step, scan_fwd, h100):
    # Accel-Sim found the same: one warp per SM does not feel 2x vector units or half the L2.
    from simfront.gpu import with_variants

    base = _rec(scan_fwd, h100)["cycles"]
    vec2 = _rec(scan_fwd, with_variants(h100, tensor_vector_ratio=8))["cycles"]
    l2h = _model(scan_step, "kernel-35636", with_variants(h100, l2_size="25 MiB"))["cycles"]
    assert abs(vec2 - base) / base < 0.02
    assert abs(l2h - base) / base < 0.02


def test_tensor_vector_ratio_moves_an_issue_bound_kernel(lm, h100):
    # The depthwise convolution (195 blocks of 1024 threads) keeps the vector pipes and the
    # issue slots busy: more vector units (ratio 8 = 2x) speed it up, fewer (32) slow it.
    from simfront.gpu import with_variants

    prep = _prep(lm, "kernel-25249", h100)
    base = _rec(prep, h100)
    assert base["bound"] in ("issue", "fp32", "int")
    more = _rec(prep, with_variants(h100, tensor_vector_ratio=8))["cycles"]
    fewer = _rec(prep, with_variants(h100, tensor_vector_ratio=32))["cycles"]
    assert more < 0.95 * base["cycles"]
    assert fewer > 1.05 * base["cycles"]


def test_dram_bandwidth_and_clock_move_a_dram_bound_kernel(lm, h100):
    # 12,570 blocks streaming 51 MB: DRAM-bound (ncu measured 51.49 MB read).
    from simfront.gpu import with_variants

    prep = _prep(lm, "kernel-25254", h100)
    base = _rec(prep, h100)
    assert base["bound"] == "dram"
    assert base["dram_read_bytes"] == pytest.approx(51.49e6, rel=0.02)
    fast = _rec(prep, with_variants(h100, dram_bandwidth="6.7 TB/s"))
    slow = _rec(prep, with_variants(h100, dram_bandwidth="1.675 TB/s"))
    assert fast["time_us"] < 0.75 * base["time_us"]
    assert slow["time_us"] > 1.5 * base["time_us"]
    # A faster core clock does not speed up DRAM: more cycles, about the same time.
    hi = _rec(prep, with_variants(h100, clock="2970 MHz"))
    assert hi["cycles"] > 1.2 * base["cycles"]
    assert hi["time_us"] < base["time_us"] and hi["time_us"] > 0.8 * base["time_us"]


def test_clock_speeds_up_a_latency_bound_kernel(scan_fwd, h100):
    from simfront.gpu import with_variants

    base = _rec(scan_fwd, h100)
    slow = _rec(scan_fwd, with_variants(h100, clock="990 MHz"))
    # Half the clock: the pipe latencies (in clocks) take twice as long, the DRAM part of
    # its memory latency (in ns) does not.
    assert 1.2 * base["time_us"] < slow["time_us"] < 2.0 * base["time_us"]


def test_fewer_sms_slow_a_grid_filling_kernel(lm, h100):
    from simfront.gpu import with_variants

    base = _model(lm, "kernel-25249", h100)
    half = _model(lm, "kernel-25249", with_variants(h100, sm_count=66))
    assert half["cycles"] > 1.1 * base["cycles"]
    assert half["sim_timed_blocks"] > base["sim_timed_blocks"]


def test_smaller_l2_lowers_the_hit_rate_of_reuse(lm, h100):
    # kernel-25254 writes 51 MB: with an L2 of 1.25 MiB its written lines are evicted
    # during the kernel (DRAM writes appear), and it rereads nothing it could keep, so its
    # time grows. With 50 MiB nothing dirty is evicted.
    from simfront.gpu import with_variants

    base = _model(lm, "kernel-25254", h100)
    small = _model(lm, "kernel-25254", with_variants(h100, l2_size="1.25 MiB"))
    assert base["dram_write_bytes"] < small["dram_write_bytes"]
    assert small["cycles"] > base["cycles"]

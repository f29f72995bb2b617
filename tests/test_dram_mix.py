"""The DRAM's sustained share by write share and by bytes in flight: the H100's and the
H200's measured streams (bench/data/device/dram_mix/, bench/bench_dram_mix.py), and the
synthetic traces of the same kernel that put the model on them."""

from __future__ import annotations

import sys

import pytest

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.api import simulate_kernel
from simfront.traces.reader import KernelTrace

sys.path.insert(0, str(REPO_ROOT / "bench"))
bench = pytest.importorskip("bench_dram_mix")


def _best(tag):
    gpu = load_gpu(bench.RUNS[tag])
    return bench.sustained_shares(bench.whole_gpu_runs(tag), gpu.dram.bandwidth.bytes_per_s / 1e9)


@pytest.mark.parametrize("tag", sorted(bench.RUNS))
def test_mixing_reads_and_writes_costs_bandwidth(tag):
    best = _best(tag)
    assert len(best) == 6 and best.write_share.tolist() == pytest.approx(
        [0, 0.25, 1 / 3, 0.5, 2 / 3, 1])
    # every mixed stream sustains less than either pure one, and runs agree far closer
    # than that
    mixed = best[(best.r > 0) & (best.w > 0)]
    pure = min(best.share.iloc[0], best.share.iloc[-1])
    assert mixed.share.max() < pure and pure - mixed.share.min() > 0.08
    assert best.spread.max() < 0.015


def test_the_h200_loses_more_to_mixing_than_the_h100():
    one = {t: float(b[(b.r == 1) & (b.w == 1)].share.iloc[0])
           for t, b in ((t, _best(t)) for t in ("h100", "h200"))}
    assert one["h200"] < one["h100"] - 0.02


def test_in_flight_reads_needed_are_found_in_the_data():
    for tag in ("h100", "h200"):
        d = bench.read_mix(tag)
        need = bench.reads_in_flight_needed(d, _best(tag))
        assert need in set(d[(d.r == 1) & (d.w == 1)].inflight_kib_per_sm)
        assert 4 < need <= 64


def test_a_warp_with_more_loads_out_waits_longer_on_the_h200():
    # the same lines in flight a SM, fewer warps with more loads each: a longer wait
    waits = bench.warp_waits(bench.read_mix("h200_sms32"), 32, 128)
    assert sorted(waits) == [1, 2, 4]
    assert waits[1] < waits[2] < waits[4] and waits[4] > 1.25 * waits[1]


@pytest.mark.parametrize("r,w,ilp", [(1, 0, 4), (1, 1, 2), (0, 1, 1)])
def test_the_synthetic_stream_moves_what_the_kernel_moves(tmp_path, r, w, ilp):
    grid = 64
    path = bench.mix_trace(tmp_path / "mix.traceg.xz", r, w, ilp, grid, stream_bytes=16 << 20)
    kernel = KernelTrace(path)
    assert kernel.header.grid[0] == grid
    rec = simulate_kernel(kernel, load_gpu("h200"), cache=False)
    # cold: every line read once from the DRAM; the writes left in the L2 at the end are
    # not written back within the kernel
    assert rec["dram_read_bytes"] == pytest.approx(r * (16 << 20), rel=0.01)
    assert rec["dram_write_bytes"] <= w * (16 << 20)


def test_the_model_on_the_streams_pairs_each_measured_shape(tmp_path):
    hw = bench.read_mix("h200_sms32")
    hw = hw[(hw.r == 1) & (hw.w == 0) & (hw.blocks_per_sm == 1) & (hw.ilp <= 2)]
    t = bench.model_on_mix(hw, load_gpu("h200"), tmp_path)
    assert len(t) == 2 and set(t.sms) == {32}
    # one load a warp at a time: the model within 10% of the H200
    assert abs(float(t[t.ilp == 1].ratio.iloc[0]) - 1) < 0.10



def test_the_turn_cost_fitted_on_the_h100_holds_on_the_h200():
    h100, h200 = load_gpu("h100"), load_gpu("h200")
    e100, k100 = bench.turn_fit(_best("h100"), h100.dram.bandwidth.bytes_per_s)
    assert 0.92 < e100 < 0.95 and 0.05 < k100 < 0.07
    # held out: the H200's mixed streams from its read-only share and the H100's cost
    best = _best("h200")
    e200, k200 = bench.turn_fit(best, h200.dram.bandwidth.bytes_per_s)
    pred = bench.turned_shares(best, h200.dram.bandwidth.bytes_per_s, e200, k100)
    mixed = (best.r > 0) & (best.w > 0)
    assert ((pred[mixed] / best.share[mixed] - 1).abs() < 0.04).all()
    # without the turns (the read-only share for every mix) the mixes miss by far more
    flat = bench.turned_shares(best, h200.dram.bandwidth.bytes_per_s, e200, 0.0)
    assert ((flat[mixed] / best.share[mixed] - 1).abs() > 0.05).any()
    # a turn costs about as long in time on both GPUs (within a sixth), not as many bytes
    assert abs(k200 / k100 - 1) < 1 / 6
    # and the model takes the H100's
    from simfront.sim.model.params import DEFAULT_PARAMS

    assert k100 == pytest.approx(DEFAULT_PARAMS.dram.turn_ps_per_byte, abs=5e-4)


def test_the_model_s_dram_bound_counts_the_turns(tmp_path):
    from simfront.sim.model.params import DEFAULT_PARAMS
    from simfront.sim.model.simulate import bandwidths, dram_time, dram_turn_clk

    gpu = load_gpu("h200")
    bw = bandwidths(gpu, DEFAULT_PARAMS)["dram"]
    turn = dram_turn_clk(gpu, DEFAULT_PARAMS)
    mb = 1 << 20
    # reads alone and writes alone at the sustainable share; mixed, a turn a byte written,
    # at most twice the bytes read
    assert dram_time(8 * mb, 0, bw, turn) == pytest.approx(8 * mb / bw)
    assert dram_time(0, 8 * mb, bw, turn) == pytest.approx(8 * mb / bw)
    assert dram_time(4 * mb, 4 * mb, bw, turn) == pytest.approx(8 * mb / bw + 4 * mb * turn)
    assert dram_time(1 * mb, 7 * mb, bw, turn) == pytest.approx(8 * mb / bw + 2 * mb * turn)
    # the 1:1 stream's record (more written than the L2 keeps dirty): its DRAM bound is
    # its bytes' time with their turns
    path = bench.mix_trace(tmp_path / "mix.traceg.xz", 1, 1, 2, 264, stream_bytes=64 << 20)
    rec = simulate_kernel(KernelTrace(path), gpu, cache=False)
    r, w = rec["dram_read_bytes"], rec["dram_write_bytes"]
    assert r > 0 and w > 0
    assert rec["sim_dram_bound_cycles"] == pytest.approx(dram_time(r, w, bw, turn))
    assert rec["sim_dram_bound_cycles"] > 1.05 * (r + w) / bw


def test_an_sm_s_stores_slow_its_loads_on_fewer_sms(tmp_path):
    from simfront.sim.model.params import DEFAULT_PARAMS

    hw = bench.read_mix("h200_sms32")
    hw = hw[(hw.ilp == 1) & (hw.blocks_per_sm == 2) & (hw.r == 1) & (hw.w <= 1)]
    with_wait = bench.model_on_mix(hw, load_gpu("h200"), tmp_path)
    without = bench.model_on_mix(hw, load_gpu("h200"), tmp_path,
                                 DEFAULT_PARAMS.with_(**{"stores.load_wait_ns": 0.0}))
    mixed = (with_wait.w == 1).to_numpy()
    # reads alone do not wait; beside their stores, the reads of 16 warps an SM on 32 SMs
    # take the wait, and the model's 1:1 stream comes nearer the H200's
    assert with_wait.model_gbps[~mixed].tolist() == without.model_gbps[~mixed].tolist()
    assert float(with_wait.model_gbps[mixed].iloc[0]) < 0.96 * float(
        without.model_gbps[mixed].iloc[0])
    err_with = abs(float(with_wait.ratio[mixed].iloc[0]) - 1)
    err_without = abs(float(without.ratio[mixed].iloc[0]) - 1)
    assert err_without > 0.15 and err_with < err_without - 0.05

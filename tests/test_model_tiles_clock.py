"""The model's tile schedules (simfront.sim.model.tiles) and kernel clocks
(simfront.sim.model.clock), on the shipped box-sampled Mamba2 paper step: its cuBLAS sm90
GEMMs and the H100 ncu profile of the same step (traces/mamba2_lm-paper-box)."""

from __future__ import annotations

import pytest

from simfront.core.paths import repo_dir
from simfront.gpu import load_gpu, with_variants
from simfront.sim.model import tiles
from simfront.sim.model.clock import MAX, POWER, TENSOR, kernel_clock, power_share, tensor_share

SET = "mamba2_lm-paper-box"
#: nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT: grid 132, no atomic (static), 256 tiles
STATIC_GEMM = "kernel-222869.traceg.xz"
#: nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB_NTN: grid 132, takes tiles with ATOMG
DYNAMIC_GEMM = "kernel-222902.traceg.xz"
#: nvjet_sm90_tst_96x128_64x6_4x2_h_bz_NTN: grid 96, a tile a block
SMALL_GEMM = "kernel-222907.traceg.xz"


# ------------------------------------------------------------------ schedules, pure


def test_static_workers_take_every_grid_th_tile():
    per = tiles.worker_tiles(256, 132)
    assert sum(per) == 256
    assert per[:124] == [2] * 124 and per[124:] == [1] * 8


@pytest.mark.parametrize("total,grid,slots,busiest", [
    (256, (2, 66, 1), 132, 2),  # every worker resident: the first ones' two tiles
    (256, (2, 66, 1), 96, 4),   # 36 workers wait for a slot: two rounds of two tiles
    # the one-tile workers (y >= 58 of x = 1) launch among two-tile ones: the third round
    # holds a two-tile worker, which lands on a slot that ran one tile: 2 + 2 + 1
    (256, (2, 66, 1), 64, 5),
    (256, (132, 1, 1), 64, 4),  # numbered in launch order, the one-tile workers come last
    (256, (2, 66, 1), 32, 9),
    (96, (8, 12, 1), 132, 1),   # a grid smaller than the GPU: one wave
    (96, (8, 12, 1), 64, 2),
    (96, (8, 12, 1), 32, 3),
])
def test_busiest_slot_of_a_static_schedule(total, grid, slots, busiest):
    assert tiles.busiest_slot(total, grid, slots) == busiest


def test_blocks_launch_x_first_and_number_their_tiles_y_first():
    order = tiles.launch_order_tiles(256, (2, 66, 1))
    assert len(order) == 132 and sum(order) == 256
    # block (x=1, y) is worker 66 + y: one tile from y = 58 on
    assert [order[1 + 2 * y] for y in (57, 58)] == [2, 1]
    assert all(order[2 * y] == 2 for y in range(66))


def test_total_tiles_counts_traced_blocks_and_stays_in_the_first_workers_bounds():
    every = {b: 2 if b < 124 else 1 for b in range(132)}
    assert tiles.total_tiles(every, 132, 0, None) == 256
    some = {b: 2 for b in range(8)}
    # tensor instructions: 16 traced tiles at 10 each, the grid 2560 -> 256 tiles
    assert tiles.total_tiles(some, 132, 160, 2560) == 256
    # a census inflated by spin loops cannot push the first worker's two tiles to three
    assert tiles.total_tiles(some, 132, 160, 5000) == 264
    assert tiles.total_tiles(some, 132, 160, 100) == 133
    assert tiles.total_tiles({}, 132, 160, 2560) == 0


# ------------------------------------------------------------------ schedules, real traces


def _pairs():
    from simfront.sim.model.validation import pair_launches, read_ncu

    d = repo_dir("traces") / SET
    pairs, _ = pair_launches(d, read_ncu(d / "ncu.csv"))
    return {p.kernel.path.name: p for p in pairs}


@pytest.fixture(scope="module")
def pairs():
    return _pairs()


def test_the_trace_tells_a_static_gemm_from_a_dynamic_one(pairs):
    gpu = load_gpu("h100")
    (static, _), (dynamic, _) = (tiles.scan(pairs[n].kernel, gpu)
                                 for n in (STATIC_GEMM, DYNAMIC_GEMM))
    assert static.atomics == 0 and dynamic.atomics > 0
    # the eight traced workers of the static GEMM each stored two tiles
    assert static.tiles() == {b: 2 for b in range(8)}
    # ncu counted the grid's tensor instructions: 256 tiles of 64 x 192 x 128 ... exactly
    launch = pairs[STATIC_GEMM].launch
    assert launch["tensor_instructions"] > 0


def _ratios(pair, sms_list=(96, 64, 32)):
    from simfront.sim.model.api import simulate_kernel

    h100 = load_gpu("h100")
    base = simulate_kernel(pair.kernel, h100, pair.launch, cache=False)
    out = {}
    for sms in sms_list:
        out[sms] = simulate_kernel(pair.kernel, with_variants(h100, sm_count=sms), pair.launch,
                                   cache=False)
    return base, out


def test_a_static_gemm_on_fewer_sms_runs_in_rounds_of_its_workers(pairs):
    """256 tiles on 132 workers: on 96 SMs two rounds of two tiles (hardware: 1.89-2.02x
    the cycles, ncu in green contexts), on 64 a fifth tile (2.29-2.47x), on 32 nine (4.33-
    4.74x); the even spread of a dynamic scheduler would give 1.375x on 96."""
    base, recs = _ratios(pairs[STATIC_GEMM])
    assert base["sim_schedule"] == tiles.STATIC and base["sim_work_scale"] == 1.0
    for sms, want in ((96, 2.0), (64, 2.5), (32, 4.5)):
        rec = recs[sms]
        assert rec["sim_schedule"] == tiles.STATIC
        assert rec["sim_work_scale"] == pytest.approx(want)


def test_a_small_grid_goes_in_whole_waves(pairs):
    """96 blocks, a tile each: no slower on 96 SMs (hardware 1.00x), two waves on 64
    (1.94x), three on 32 (2.99-3.04x)."""
    base, recs = _ratios(pairs[SMALL_GEMM])
    assert base["sim_schedule"] == tiles.STATIC
    assert [recs[s]["sim_work_scale"] for s in (96, 64, 32)] == [1.0, 2.0, 3.0]


def test_a_dynamic_gemm_spreads_its_tiles(pairs):
    base, recs = _ratios(pairs[DYNAMIC_GEMM], (64,))
    assert base["sim_schedule"] == tiles.DYNAMIC
    assert recs[64]["sim_work_scale"] == pytest.approx(base["sim_work_scale"] * 132 / 64)


# ------------------------------------------------------------------ clocks


def test_the_h100_clock_by_kernel_and_sm_count():
    """The limits the H100 description holds (gpu_configs/h100.yaml) give the clocks ncu
    measured on the paper steps' kernels: non-tensor 1.98 GHz anywhere, tensor work
    1.80-1.85 GHz on 64-132 SMs and 1.88-1.91 on 32, the 192x192 GEMM (tensor pipes 97%
    busy) 1.514 GHz on 132 SMs and 1.72-1.73 on 96."""
    h100 = load_gpu("h100")
    assert kernel_clock(h100, 132, False, 0.0) == (1.98e9, MAX)
    hz, lim = kernel_clock(h100, 132, True, 0.13)          # _chunk_scan_fwd
    assert lim == TENSOR and 1.80e9 <= hz <= 1.85e9
    hz, lim = kernel_clock(h100, 32, True, 0.97)
    assert lim == TENSOR and 1.88e9 <= hz <= 1.91e9
    hz, lim = kernel_clock(h100, 132, True, 0.971)
    assert lim == POWER and hz == pytest.approx(1.514e9, rel=0.015)
    hz, lim = kernel_clock(h100, 96, True, 0.971)
    assert lim == POWER and hz == pytest.approx(1.725e9, rel=0.03)
    # interpolated between the measured counts, held beyond them
    cl = h100.clock_limits
    assert tensor_share(cl, 48) == pytest.approx((0.963 + 0.924) / 2)
    assert tensor_share(cl, 8) == pytest.approx(0.963)
    assert power_share(cl, 132, 0.0) == float("inf")


def test_without_clock_limits_every_kernel_runs_at_the_core_clock():
    one = with_variants(load_gpu("h100"), clock_limits="none")
    assert one.clock_limits is None
    assert kernel_clock(one, 132, True, 0.97) == (1.98e9, MAX)
    slow = with_variants(load_gpu("h100"), clock="1500 MHz")
    hz, _ = kernel_clock(slow, 64, True, 0.2)
    assert hz == pytest.approx(1.5e9 * 0.924)


def test_a_power_capped_gemm_is_timed_at_its_clock(pairs):
    from simfront.sim.model.api import simulate_kernel

    p = pairs[DYNAMIC_GEMM]
    h100 = load_gpu("h100")
    capped = simulate_kernel(p.kernel, h100, p.launch, cache=False)
    one = simulate_kernel(p.kernel, with_variants(h100, clock_limits="none"), p.launch,
                          cache=False)
    assert capped["sim_clock_limit"] == POWER and one["sim_clock_limit"] == MAX
    assert 1.45e3 < capped["sim_clock_mhz"] < 1.65e3
    assert capped["time_us"] == pytest.approx(capped["cycles"] / capped["sim_clock_mhz"])
    # a compute-bound GEMM keeps its cycles and loses time at the lower clock
    assert capped["cycles"] == pytest.approx(one["cycles"], rel=0.03)
    assert capped["time_us"] > 1.2 * one["time_us"]


def test_clock_limits_are_checked_by_field():
    from simfront.core.errors import ConfigError
    from simfront.gpu.gpu import ClockLimits, TensorClock
    from simfront.gpu.validate import validate

    h100 = load_gpu("h100")
    bad = h100.replace(clock_limits=ClockLimits((TensorClock(64, 1.2),), 0.76, 132, 0.4))
    with pytest.raises(ConfigError) as e:
        validate(bad)
    assert e.value.field == "clock_limits.tensor[0].share"
    twice = h100.replace(clock_limits=ClockLimits((TensorClock(64, 0.9), TensorClock(64, 0.9)),
                                                  0.76, 132, 0.4))
    with pytest.raises(ConfigError) as e:
        validate(twice)
    assert e.value.field == "clock_limits.tensor[1].sms"

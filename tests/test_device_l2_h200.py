"""The H200's L2 against the H100's, and an L2 hit's latency under the whole GPU's load
(bench/device/load_shapes.sh, l2_ports.sh and l2_loaded.sh on both or on the H200; data in
bench/data/device/; bench/RESULTS.md, *The H200's L2*): what the `h200` description's L2
bandwidth rests on, and what does not explain the loss kernels' miss on fewer SMs."""

from __future__ import annotations

import statistics
import sys

import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT
from simfront.gpu import derived, load_gpu

sys.path.insert(0, str(REPO_ROOT / "bench"))
import bench_l2_h200 as l2  # noqa: E402  (bench/bench_l2_h200.py)


@pytest.fixture(scope="module")
def rates():
    return l2.per_clock("h100"), l2.per_clock("h200")


@pytest.fixture(scope="module")
def chase():
    return l2.chase()


def test_the_h200s_l2_moves_a_sixth_more_a_clock_on_every_kind_that_fills_it(rates):
    h100, h200 = rates
    filling = [k for k in h100 if k != l2.PORTS[1][0]]
    ratios = [h200[k] / h100[k] for k in filling]
    assert all(1.12 < r < 1.25 for r in ratios), dict(zip(filling, ratios))
    # the one held by the SMs (a lane a line) moves the same on both
    one_lane = l2.PORTS[1][0]
    assert h200[one_lane] / h100[one_lane] == pytest.approx(1.0, abs=0.05)


def test_the_descriptions_l2_bandwidth_follows_the_measured_ratio(rates):
    h100, h200 = rates
    measured = statistics.median(h200[k] / h100[k] for k in h100 if k != l2.PORTS[1][0])
    model = (derived(load_gpu("h200")).l2_bandwidth.bytes_per_s
             / derived(load_gpu("h100")).l2_bandwidth.bytes_per_s)
    assert model == pytest.approx(measured, rel=0.05)
    # and the bus ncu reports is as much wider (the slices come with the controllers)
    f100, f200 = l2.memory_facts("h100"), l2.memory_facts("h200")
    bus = f200["device__attribute_fb_bus_width"] / f100["device__attribute_fb_bus_width"]
    assert bus == pytest.approx(measured, rel=0.03)
    assert f200["device__attribute_l2_cache_size"] == load_gpu("h200").l2.size.bytes


def test_an_l2_hit_waits_as_long_on_any_sm_count_until_the_l2_fills(chase):
    idle = chase[chase.s == 0]
    assert idle.hop.max() / idle.hop.min() < 1.05
    # loads alone, each SM moving at most 8 warps' worth and the L2 under 100 sectors a
    # clock (a block's own stores, and an SM near its own limit, lengthen its loads at the
    # SM, whatever the L2's load)
    light = chase[(chase["mode"] == "read") & (chase.s <= 8) & (chase.sectors < 100)]
    assert (light.hop < 1.05 * idle.hop.median()).all()
    busy_sm = chase[(chase["mode"] == "read") & (chase.s == 31) & (chase.n <= 32)]
    assert (busy_sm.hop > 1.1 * idle.hop.median()).all()
    # the whole GPU's L2 tops out, and the hop grows with the requests queued there
    full = chase[(chase["mode"] == "read") & (chase.s == 31)].set_index("n")
    assert full.loc[96, "sectors"] == pytest.approx(full.loc[132, "sectors"], rel=0.05)
    assert full.loc[132, "hop"] > 2 * idle.hop.median()


def test_the_log_softmax_forward_on_64_sms_loads_the_l2_too_little_to_queue(chase):
    rates = l2.softmax_rates()
    assert 50 < rates[64] < 90 and rates[32] < rates[64]
    idle = chase[chase.s == 0].hop.median()
    assert l2.hop_at(chase, 64, rates[64]) < 1.05 * idle


def test_a_blocks_warps_reach_a_barrier_apart_after_the_same_l2_hits():
    """barrier_spread.cu: 32 warps each reading K L2-resident lines arrive at the barrier
    spread over a good part of an L2 hit, at any K, on few SMs or all of them: a wait the
    model, with one latency for every hit, does not have."""
    for n in (8, 132):
        d = pd.read_csv(l2.DEVICE / "barrier_spread" / f"barrier_spread_h200_n{n}.csv")
        med = d.groupby("k")[["spread", "mean_wait"]].median()
        assert list(med.index) == [1, 2, 4, 8, 16]
        assert (med.spread > 200).all() and (med.mean_wait > 60).all(), med

"""The paper step's log-softmax on fewer SMs of the H200 (bench/device/softmax_l2.sh, data in
bench/data/device/softmax_l2/; bench/RESULTS.md, *The loss kernels' rows on fewer SMs*):
its rows' re-reads hit the L2 once the rows in flight fit, on the hardware and in the
model."""

from __future__ import annotations

import sys

import pytest

from simfront.core.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import bench_loss_l2 as loss  # noqa: E402  (bench/bench_loss_l2.py)

LOGITS_GB = 8192 * 50280 * 4 / 1e9


@pytest.fixture(scope="module")
def table():
    return loss.hardware().merge(loss.model(), on=["kernel", "sms"]).set_index(["kernel", "sms"])


def test_the_h200_reads_each_row_once_only_where_the_rows_in_flight_fit(table):
    fwd = table.loc["forward"]
    # 264 rows of 201 KB on 132 SMs do not fit 60 MiB: the logits read 2.7 times
    assert fwd.loc[132, "hw_dram_gb"] > 2.5 * LOGITS_GB
    # 64 rows on 32 SMs do: read once (ncu's bytes within 1% of the tensor's)
    assert fwd.loc[32, "hw_dram_gb"] == pytest.approx(LOGITS_GB, rel=0.01)
    assert list(fwd["hw_dram_gb"]) == sorted(fwd["hw_dram_gb"], reverse=True)


def test_the_model_reads_what_the_h200_reads_at_every_sm_count(table):
    err = (table["model_dram_gb"] / table["hw_dram_gb"] - 1).abs()
    assert err.max() < 0.10, err


def test_on_64_sms_the_forward_waits_on_l2_hits_that_the_model_overlaps():
    """With its 128 rows resident in the L2 (softmax_resident.sh) the H200's warps still
    wait most of their time on loads, and the DRAM adds little to the one wave; the
    model's forward hardly moves with the L2 hit latency: its loads overlap."""
    w = loss.waits(64, "h200_rows128")
    assert w["long_scoreboard"] > 15 and w["issue_active"] < 0.5
    res = loss.resident()
    assert res[("forward", 64, True)] == pytest.approx(res[("forward", 64, False)], rel=0.05)
    assert loss.forward_at_hit_latency(300) < 1.03 * loss.forward_at_hit_latency(200)


def test_the_h200s_warps_wait_at_the_barrier_after_the_max_where_the_models_arrive_together():
    """ncu's warp samples by instruction on 64 SMs (softmax_pc.sh) beside the model's waits
    of the same binary: the block barrier after the row's maximum holds the H200's warps,
    not the model's; the two kernels' waits otherwise fall on the same instructions."""
    pcs = loss.where_the_forward_waits(64)
    bssy = pcs[pcs.family == "BSSY"]
    worst = bssy.loc[(bssy.hw - bssy.model).idxmax()]
    assert worst.hw > 0.04 and worst.model < 0.005
    top = pcs.sort_values("hw", ascending=False).head(3)
    assert (top.model > 0.5 * top.hw).all()

"""The H200's read-modify-write streams, its in-place foreach update on fewer SMs and its
reads beside stores, as measured (bench/data/device/inplace/, foreach_sms/, rw_split/;
bench/RESULTS.md, *Writing back in place, on fewer SMs* and *Whose stores slow a read*):
what the model's fewer-SM miss on the held-out steps' streaming updates is and is not."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT

DATA = REPO_ROOT / "bench" / "data" / "device"


def _streams() -> pd.DataFrame:
    runs = [pd.read_csv(DATA / "inplace" / f"inplace_h200{s}.csv")
            for s in ("", "_sms64", "_sms32")]
    return pd.concat(runs, ignore_index=True)


def test_every_order_and_shape_was_measured_on_each_sm_count():
    d = _streams()
    assert set(d["mode"]) == {"out", "in", "lag", "chunk"}
    assert set(d.sms) == {132, 64, 32}
    # the step's launch shape, 320 blocks of 512 threads, on every SM count
    assert set(d[d.grid == 320].sms) == {132, 64, 32}
    assert (d.gbps > 500).all() and (d.gbps < 4800).all()  # under the H200's 4.8 TB/s


def test_writing_back_in_place_costs_nothing():
    d = _streams()
    p = d.pivot_table(index=["sms", "grid", "ilp"], columns="mode", values="gbps")
    for mode in ("in", "lag", "chunk"):
        ratio = (p[mode] / p["out"]).dropna()
        assert len(ratio) >= 20
        assert ((ratio - 1).abs() < 0.10).all(), (mode, ratio.describe())
        assert abs(ratio.median() - 1) < 0.02


def test_fewer_sms_slow_the_stream_by_less_than_their_count():
    d = _streams()
    one = d[(d["mode"] == "in") & (d.grid == 320) & (d.ilp == 1)].set_index("sms").ms
    assert one[132] < one[64] < one[32]
    assert one[32] / one[132] < 2.0  # a quarter of the SMs, not four times the time


def test_the_foreach_update_alone_scales_less_than_in_the_step():
    rows = pd.DataFrame(json.loads((DATA / "foreach_sms" / "foreach_sms_h200.json")
                                   .read_text())["rows"])
    alone = rows[(rows.case == "foreach_mul_") & (rows.after == "alone")].set_index("sms").us
    assert set(alone.index) == {132, 96, 64, 32}
    assert "multi_tensor_apply_kernel" in rows[rows.case == "foreach_mul_"].kernel.iloc[0]
    # the same launches of the held-out hybrid step, in its own timelines on the H200
    step = {}
    for cond, sms in (("all", 132), ("sms64", 64), ("sms32", 32)):
        t = pd.read_csv(REPO_ROOT / "traces" / "h200-ho-hybrid" / "whatif" / f"h200-{cond}.csv.xz",
                        skiprows=[1])
        t = t[t["Kernel Name"].str.contains("multi_tensor_apply_kernel.*BinaryOpScalarFunctor<")
              & (t["Grid Size"] == "(320, 1, 1)")]
        assert len(t) >= 4
        step[sms] = float(t["gpu__time_duration.sum"].median())
    assert step[64] / step[132] == pytest.approx(1.24, abs=0.02)
    assert step[32] / step[132] == pytest.approx(1.51, abs=0.02)
    # alone the kernel takes less on fewer SMs than it does in the step
    assert alone[64] / alone[132] < step[64] / step[132] - 0.05
    assert alone[32] / alone[132] < step[32] / step[132] - 0.08


def test_stores_slow_the_sm_s_reads_whichever_warp_issues_them():
    d = pd.concat([pd.read_csv(DATA / "rw_split" / f"rw_split_h200{s}.csv")
                   for s in ("", "_sms64", "_sms32")], ignore_index=True)
    p = d.pivot_table(index="sms", columns="mode", values="ms")
    assert set(p.index) == {132, 64, 32}
    # the same bytes each way: a store from the reader's own warp or from its partner
    assert ((p.split / p.half - 1).abs() < 0.03).all()
    # and either way the reads are slower than alone, by less on fewer SMs, but by a fifth
    # still on 32, where the stream moves a fifth of the DRAM's peak
    slow = p.split / p.reads
    assert (slow > 1.15).all()
    assert slow[132] > slow[64] > slow[32]

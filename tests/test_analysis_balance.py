"""The balance finder on synthetic curves whose answers are known in closed form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simfront.analysis.balance import (balance_study, crossing_ratio, knee_point, limiter_class,
                                       stop_paying_point)

RATIOS = np.array([32.0, 16.0, 8.0, 4.0, 2.0, 1.0])   # 16 = H100; smaller = more vector units


def test_crossing_of_power_laws_is_exact_between_grid_points():
    # tensor-limited time constant 10, vector-limited time 30 * r/16: equal at r = 16/3
    tl = np.full_like(RATIOS, 10.0)
    vl = 30.0 * RATIOS / 16.0
    assert crossing_ratio(RATIOS, tl, vl) == pytest.approx(16.0 / 3.0, rel=1e-9)
    # on a grid point
    vl2 = 10.0 * RATIOS / 4.0
    assert crossing_ratio(RATIOS, tl, vl2) == pytest.approx(4.0)
    # no crossing within the range
    assert crossing_ratio(RATIOS, tl, tl * 3) is None


def test_knee_of_a_capped_curve_is_the_cap():
    # speedup = min(v, 4) with v = vector scale: more vector units pay until 4x, then nothing
    v = 16.0 / RATIOS
    x = np.log2(v)
    s = np.minimum(v, 4.0)
    assert knee_point(x, s) == pytest.approx(2.0)                 # log2(4)
    assert stop_paying_point(x, s, 0.02) == pytest.approx(2.0)
    # a straight line in log space never bends, and keeps paying
    assert knee_point(x, 1 + x - x.min()) is None
    assert stop_paying_point(x, 2.0 ** x, 0.02) is None
    # a flat curve: nothing ever pays; the first point is where it stops
    assert knee_point(x, np.ones_like(x)) is None
    assert stop_paying_point(x, np.ones_like(x), 0.02) == pytest.approx(x.min())


def test_stop_paying_of_amdahl_curve():
    # Amdahl, half the time vector-bound: S(v) = 1 / (0.5 + 0.5 / v). Doubling v gains
    # S(2v)/S(v) - 1 = 0.5 / (v + 0.5), under 2% once v > 24.5: from v = 32 on (a power of 2).
    v = 2.0 ** np.arange(0, 9)
    s = 1.0 / (0.5 + 0.5 / v)
    assert stop_paying_point(np.log2(v), s, 0.02) == pytest.approx(np.log2(32.0))
    # 0.5 / (v + 0.5) < 0.10 once v > 4.5: from v = 8 on
    assert stop_paying_point(np.log2(v), s, 0.10) == pytest.approx(np.log2(8.0))


def _records(times: dict[str, list[float]], limiters: dict[str, list[str]],
             categories: dict[str, str]) -> pd.DataFrame:
    rows = []
    for uid, (name, ts) in enumerate(times.items(), start=1):
        for r, t, lim in zip(RATIOS, ts, limiters[name]):
            rows.append({"workload": "w", "kernel_uid": uid, "kernel_name": name,
                         "category": categories[name], "ratio": r, "time_us": t,
                         "bound": lim, "complete": True})
    return pd.DataFrame(rows)


def test_study_on_a_synthetic_step():
    # gemm: tensor-bound, 10 us at every ratio. scan: vector-bound, 40 us at r=16, time
    # proportional to the ratio until it hits a latency floor of 5 us. copy: memory-bound 5 us.
    scan = [max(40.0 * r / 16.0, 5.0) for r in RATIOS]          # 80 40 20 10 5 5
    times = {"gemm": [10.0] * 6, "scan": scan, "copy": [5.0] * 6}
    limiters = {"gemm": ["tensor"] * 6,
                "scan": ["fp32" if t > 5.0 else "latency" for t in scan],
                "copy": ["dram"] * 6}
    cats = {"gemm": "gemm", "scan": "ssm", "copy": "elementwise"}
    res = balance_study(_records(times, limiters, cats), n_boot=0)
    step = res.step
    assert res.baseline_ratio == 16.0
    assert list(res.ratios) == list(RATIOS)
    np.testing.assert_allclose(step["time"], [10 + s + 5 for s in scan])
    np.testing.assert_allclose(step["speedup"], 55.0 / (15.0 + np.array(scan)))
    # tensor-limited 10 everywhere; vector-limited 80,40,20,10,0,0: equal at exactly r = 4
    assert res.crossing == pytest.approx(4.0)
    # speedup stops growing once the scan hits its floor at r = 2 (vector scale 8)
    assert res.stop_paying == pytest.approx(2.0)
    assert res.knee is not None and 2.0 <= res.knee <= 8.0
    assert res.kernels.loc["w/2", "limiter_at_base"] == "fp32"
    assert res.category_speedup.loc["ssm", 2.0] == pytest.approx(8.0)
    assert res.category_speedup.loc["gemm", 1.0] == pytest.approx(1.0)


def test_bootstrap_intervals_contain_the_estimate():
    rng = np.random.default_rng(1)
    times, limiters, cats = {}, {}, {}
    for i in range(40):
        base = rng.uniform(5, 50)
        if i % 2:
            ts = [max(base * r / 16.0, base / 6) for r in RATIOS]
            lim = ["fp32" if t > base / 6 else "latency" for t in ts]
        else:
            ts, lim = [base] * 6, ["tensor"] * 6
        times[f"k{i}"], limiters[f"k{i}"], cats[f"k{i}"] = ts, lim, "x"
    res = balance_study(_records(times, limiters, cats), n_boot=300, seed=3)
    lo, hi = res.intervals["crossing_ratio"]
    assert lo <= res.crossing <= hi
    lo, hi = res.intervals["step_speedup_max"]
    assert lo <= res.step["speedup"].max() <= hi
    assert hi > lo


def test_incomplete_kernels_are_left_out_and_named():
    times = {"a": [10.0] * 6, "b": [20.0] * 6}
    limiters = {"a": ["tensor"] * 6, "b": ["fp32"] * 6}
    df = _records(times, limiters, {"a": "gemm", "b": "ssm"})
    df = df[~((df["kernel_name"] == "b") & (df["ratio"] == 2.0))]
    res = balance_study(df, n_boot=0)
    assert len(res.kernels) == 1
    assert any("lack a result" in n for n in res.notes)


def test_limiter_class():
    assert limiter_class("tensor") == "tensor"
    assert limiter_class("pipe:fp32") == "vector"
    assert limiter_class("pipe_busy_sfu") == "vector"
    assert limiter_class("dram") == "other"
    assert limiter_class(None) == "other"


def test_a_record_standing_for_several_launches_counts_each():
    """A deduplicated set's record carries its launch count: the step is the one whose
    launches are all listed."""
    scan = [max(40.0 * r / 16.0, 5.0) for r in RATIOS]
    limiters = {"gemm": ["tensor"] * 6, "scan": ["fp32" if t > 5.0 else "latency" for t in scan],
                "copy": ["dram"] * 6}
    cats = {"gemm": "gemm", "scan": "ssm", "copy": "elementwise"}
    times = {"gemm": [10.0] * 6, "scan": scan, "copy": [5.0] * 6}
    listed = {**times, "scan2": scan, "scan3": scan}
    full = _records(listed, {**limiters, "scan2": limiters["scan"], "scan3": limiters["scan"]},
                    {**cats, "scan2": "ssm", "scan3": "ssm"})
    dedup = _records(times, limiters, cats)
    dedup["launch_count"] = dedup["kernel_name"].map({"gemm": 1, "scan": 3, "copy": 1})
    a, b = balance_study(full, n_boot=0), balance_study(dedup, n_boot=0)
    np.testing.assert_allclose(b.step["time"], a.step["time"])
    np.testing.assert_allclose(b.step["speedup"], a.step["speedup"])
    assert b.crossing == pytest.approx(a.crossing)
    assert b.kernels["share"].sum() == pytest.approx(1.0)
    assert b.kernels.set_index("kernel_name")["launch_count"]["scan"] == 3
    # without the count the scan's share of the step is a third of what it is
    plain = balance_study(_records(times, limiters, cats), n_boot=0)
    assert plain.step["time"].iloc[0] < a.step["time"].iloc[0]

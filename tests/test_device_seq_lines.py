"""One warp's loads of whole lines on the H200, in order, at random, or of what the kernel
before wrote (bench/device/seq_lines.cu, bench/data/device/seq_lines/; bench/RESULTS.md,
*A DRAM load's latency, page by page*): what the one-block sums' iterations should take."""

from __future__ import annotations

import pandas as pd

from simfront.core.paths import REPO_ROOT

DATA = REPO_ROOT / "bench" / "data" / "device" / "seq_lines"


def _ncu(name: str) -> pd.DataFrame:
    path = DATA / name
    lines = path.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    d = pd.read_csv(path, skiprows=list(range(head)) + [head + 1], thousands=",",
                    usecols=["Kernel Name", "sm__cycles_active.max"])
    d["case"] = d["Kernel Name"].str.extract(r"lines_walk<([^>]*)>")[0]
    d["per_iter"] = d["sm__cycles_active.max"] / 256
    return d


def test_a_warp_s_lines_from_dram_take_longer_the_more_it_asks_for():
    d = pd.read_csv(DATA / "seq_lines_h200.csv")
    ns = d.groupby(["order", "load", "lines"]).ns_per_iter.median()
    # one line an iteration, in order: about the chase's 350 ns; four: ~480; eight: ~770
    for load in ("ldcg", "plain"):
        assert 340 < ns["seq", load, 1] < 400
        assert ns["seq", load, 1] < ns["seq", load, 4] < ns["seq", load, 8]
        assert 450 < ns["seq", load, 4] < 520
    # at random the single line waits longer than in order; four lines about the same
    assert ns["rand", "ldcg", 1] > 1.1 * ns["seq", "ldcg", 1]
    assert abs(ns["rand", "plain", 4] / ns["seq", "plain", 4] - 1) < 0.05
    # what the kernel before wrote is in the L2: under half the time
    assert ns["seq_fresh", "plain", 4] < 0.5 * ns["seq", "plain", 4]


def test_ncu_times_four_lines_an_iteration_at_dram_latency_with_or_without_its_flush():
    for name in ("seq_lines_h200_ncu.csv", "seq_lines_h200_ncu_nocache.csv"):
        d = _ncu(name)
        four = d[d.case.isin(["4, 1, 1", "4, 1, 0"])].per_iter
        # every in-order four-line walk, the one that reads the previous kernel's writes
        # included (the last three launches): 900-970 clocks an iteration, where the
        # held-out steps' one-block sums take 510 under ncu
        assert len(four) == 9
        assert four.between(900, 970).all()

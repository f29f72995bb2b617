"""One thread's dependent DRAM loads on the H200, in one page or a new 2 MiB page a step
(bench/device/tlb_chase.cu, bench/data/device/tlb_chase/; bench/RESULTS.md, *A DRAM load's
latency, page by page*): the latency the model takes for a DRAM load, and what it is not."""

from __future__ import annotations

import pandas as pd

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import memory_latencies

DATA = REPO_ROOT / "bench" / "data" / "device" / "tlb_chase"


def _ncu() -> pd.DataFrame:
    path = DATA / "tlb_chase_h200_ncu.csv"
    lines = path.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    d = pd.read_csv(path, skiprows=list(range(head)) + [head + 1], thousands=",",
                    usecols=["Kernel Name", "sm__cycles_active.max"])
    d["case"] = d["Kernel Name"].str.extract(r"chase<(\d)>")[0].astype(int)
    d["per_step"] = d["sm__cycles_active.max"] / 256
    return d


def test_a_dram_load_waits_as_long_whatever_page_it_is_in():
    timed = pd.read_csv(DATA / "tlb_chase_h200.csv")
    cold = timed[timed.state != "l2_warm"].groupby("case").ns_per_step.median()
    warm = timed[timed.state == "l2_warm"].groupby("case").ns_per_step.median()
    # in one page, or a new 2 MiB page every step, with the TLBs thrashed or warm: ~350 ns
    assert set(cold.index) == {"seq128", "seq4k", "page2m", "page32m"}
    assert cold.max() / cold.min() < 1.05 and 330 < cold.min() < 370
    # an L2 hit takes less than half of it
    assert (warm < 0.5 * cold.reindex(warm.index)).all()


def test_the_model_s_dram_latency_is_the_chase_s_under_ncu_within_8_percent():
    d = _ncu()
    assert set(d.case) == {0, 1, 2, 3}
    per_step = d.groupby("case").per_step.median()
    assert per_step.max() / per_step.min() < 1.03  # no page effect under ncu either
    model = memory_latencies(load_gpu("h200"), DEFAULT_PARAMS)["dram"]
    assert abs(model / per_step.median() - 1) < 0.08

"""The held-out Mamba2 steps' one-block per-head sums on their own, on the H200 (bench/device/
ncu_reduce_rows.py, bench/data/device/ncu_reduce_rows/; bench/RESULTS.md, *A DRAM load's
latency, page by page*): ncu times an iteration of four lines from the DRAM near the model's
850 clocks, and the held-out launches it paired were sums of half the traced rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT
from simfront.sim.model.validation import read_ncu

DATA = REPO_ROOT / "bench" / "data" / "device" / "ncu_reduce_rows"
HELD_OUT = REPO_ROOT / "traces" / "h200-ho-m2-d512"


def _sums(name: str) -> pd.DataFrame:
    d = read_ncu(DATA / f"ncu_reduce_rows_h200_{name}.csv")
    d["lines"] = d["lts__t_sectors_srcunit_tex_op_read.sum"] / 4
    return d


def _per_iteration(d: pd.DataFrame) -> float:
    """Clocks per iteration (four lines) of the one-warp sums (48-192 lines), least squares."""
    one = d[d.lines <= 192].groupby("lines")["sm__cycles_active.max"].median()
    return float(np.polyfit(one.index / 4, one.values, 1)[0])


@pytest.mark.parametrize("name", ["all", "core"])
def test_four_lines_from_the_dram_take_about_the_model_s_850_clocks(name):
    assert 700 < _per_iteration(_sums(name)) < 950


def test_four_lines_from_the_l2_take_under_half_that():
    assert 300 < _per_iteration(_sums("none")) < 420


def test_the_held_out_sums_ncu_timed_were_the_96_line_case():
    mine = _sums("all")
    ninety_six = mine[mine.lines == 96]
    held = read_ncu(HELD_OUT / "ncu.csv")
    held = held[held.kernel_name.str.contains("reduce_kernel")
                & (held["sm__inst_executed.sum"]
                   == ninety_six["smsp__inst_executed.sum"].iloc[0])]
    # the same warp instructions (1,563) and DRAM bytes as a sum of 96 lines, where the
    # traced launches read 192 (2,499 warp instructions)
    assert len(held) == 3
    assert (held["dram__bytes_read.sum"] - ninety_six["dram__bytes_read.sum"].median()).abs().max() < 1024
    ratio = held["gpc__cycles_elapsed.max"].median() / ninety_six["gpc__cycles_elapsed.max"].median()
    assert 0.85 < ratio < 1.1

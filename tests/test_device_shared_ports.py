"""Shared-memory reads and writes on one SM's data path, measured on the H200
(bench/device/shared_ports.sh, data in bench/data/device/shared_ports/; bench/RESULTS.md,
*Shared-memory reads and writes share one path*): the rate and the one path the model's
L1TEX queue (``issue.SHARED_WAVEFRONT_BYTES``, shared rows' wavefronts) assumes."""

from __future__ import annotations

import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT
from simfront.sim.model.issue import SHARED_WAVEFRONT_BYTES

DATA = REPO_ROOT / "bench/data/device/shared_ports/shared_ports_h200.csv"
WAVEFRONTS = 512 // SHARED_WAVEFRONT_BYTES  # a warp's 128-bit access, conflict-free


@pytest.fixture(scope="module")
def clk() -> pd.Series:
    d = pd.read_csv(DATA)
    assert d.groupby("mode").size().eq(5).all()
    return d.groupby("mode").clk_per_instruction.median()


def test_reads_and_writes_each_move_one_wavefront_a_clock(clk):
    assert clk["read"] == pytest.approx(WAVEFRONTS, rel=0.06)
    assert clk["write"] == pytest.approx(WAVEFRONTS, rel=0.06)


def test_reads_and_writes_together_share_the_path(clk):
    """Half the warps reading and half writing take as long a warp instruction as either
    alone: one path, not a port each (which would halve it)."""
    assert clk["read+write"] == pytest.approx(WAVEFRONTS, rel=0.06)
    assert clk["read+write"] > 0.75 * min(clk["read"], clk["write"])

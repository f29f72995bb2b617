"""The sectors a sampled grid's strided reads leave to its untraced blocks (``fill``)."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.paths import repo_dir
from simfront.sim.model import fill
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.decode import K_LOAD_GLOBAL, K_STORE_GLOBAL
from simfront.sim.model.validation import pair_launches, read_ncu
from simfront.traces.reader import TraceSet

SECTOR_SHIFT = 5


def _rows(rows):
    """Rows of (kind, width, lane addresses) as the trace pass's arrays."""
    kind = np.array([k for k, _, _ in rows], np.int64)
    width = np.array([w for _, w, _ in rows], np.int64)
    addrs = np.concatenate([np.asarray(a, np.int64) for _, _, a in rows])
    off = np.concatenate([[0], np.cumsum([len(a) for _, _, a in rows])]).astype(np.int64)
    return kind, width, off, addrs


def _fill(rows, data_bytes, n_sets=4096, ways=16):
    kind, width, off, addrs = _rows(rows)
    strides = np.where(fill.is_read(kind), fill.strided_rows(off, addrs, 32), 0)
    sectors = fill.new_sector_bytes()
    fill.mark_sector_bytes(kind, width, off, addrs, strides, SECTOR_SHIFT, sectors)
    sf = fill.SectorFill(sectors, data_bytes, float(strides.max()), 32, 128, n_sets, ways)
    first = addrs[off[:-1]] >> SECTOR_SHIFT
    return sf.factors(first, strides), strides


def test_a_column_read_shares_each_sector_with_the_next_columns_readers():
    # a transposing bf16 copy: lanes one row (4,352 bytes) apart, 2 bytes each
    column = 0x10000 + 4352 * np.arange(32)
    f, strides = _fill([(K_LOAD_GLOBAL, 2, column)], data_bytes=36e6)
    assert strides.tolist() == [4352]
    assert f.tolist() == [pytest.approx(2 / 32)]
    # two columns traced: each sector's 4 bytes are the sample's, 28 the grid's others'
    f, _ = _fill([(K_LOAD_GLOBAL, 2, column), (K_LOAD_GLOBAL, 2, column + 2)], 36e6)
    assert f.tolist() == pytest.approx([4 / 32, 4 / 32])


def test_rows_whose_lanes_share_sectors_or_fill_them_are_left_alone():
    contiguous = 0x20000 + 4 * np.arange(32)          # a warp's 128 bytes
    holes = 0x40000 + 4 * np.arange(32)               # a [..., ::2] view of bf16
    wide = 0x80000 + 4352 * np.arange(32)             # 32 bytes a lane, a row apart
    f, strides = _fill([(K_LOAD_GLOBAL, 4, contiguous), (K_LOAD_GLOBAL, 2, holes),
                        (K_LOAD_GLOBAL, 32, wide), (K_STORE_GLOBAL, 2, wide)], 36e6)
    assert strides.tolist() == [0, 0, 4352, 0]
    assert f.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_a_column_pass_longer_than_the_l2_holds_is_fetched_by_every_reader():
    column = 0x10000 + 4352 * np.arange(32)
    # a pass down the column touches a line per row: 1e12 / 4,352 lines, more than any L2
    f, _ = _fill([(K_LOAD_GLOBAL, 2, column)], data_bytes=1e12)
    assert f.tolist() == [1.0]


D1024 = repo_dir("traces") / "ho-m2-d1024"
BOX = repo_dir("traces") / "mamba2_lm-paper-box"


@pytest.mark.parametrize("trace_dir,kid", [
    (D1024, "kernel-219873"),   # bf16 transposing copy, 34,842 blocks, 8 traced
    (D1024, "kernel-219930"),   # CatArrayBatchedCopy, 264x3 blocks, 8 traced
    (BOX, "kernel-222950"),     # the fit step's CatArrayBatchedCopy
])
def test_strided_copies_read_what_the_h100_reads(h100, trace_dir, kid):
    # by block count the model read 12.8-16x ncu's DRAM bytes on the held-out step's copies
    # (model-1.20), and timed the transposing copy 1.45x ncu's cycles
    pairs, _ = pair_launches(trace_dir, read_ncu(trace_dir / "ncu.csv"))
    pair = next(p for p in pairs if p.kernel.path.name.startswith(kid + "."))
    hw = float(pair.row["dram_read_bytes"])
    rec = simulate_kernel(TraceSet(trace_dir).kernel(kid), h100, pair.launch, cache=False)
    assert 0.75 * hw < rec["dram_read_bytes"] < 1.3 * hw
    # the untraced blocks' copies of the input's lines enter the L2 at their sectors' read
    # share, and push the output out as the grid's own lines do: the model writes the
    # whole output, the H100 all but what its L2 keeps dirty at the end (counted once per
    # line, not diluted among the read lines: 0.06 of ncu's writes when it was)
    hw_w = float(pair.row["dram_write_bytes"])
    assert 0.8 * hw_w < rec["dram_write_bytes"] < 1.6 * hw_w

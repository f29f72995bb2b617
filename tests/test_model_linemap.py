"""The trace pass's line maps (``sim.model.linemap``): what numba's typed dict held, in
numpy arrays that grow as lines come."""

from __future__ import annotations

import numpy as np

from simfront.sim.model import sharing
from simfront.sim.model.cache import SHARED_LINE, mark_line_owners, new_line_owners
from simfront.sim.model.decode import K_LOAD_GLOBAL, K_STORE_GLOBAL
from simfront.sim.model.linemap import LineMap


def _rows(block_lines):
    """One 4-byte access per (block, line), loads for even lines, stores for odd."""
    kind, tb, width, off, addrs = [], [], [], [0], []
    for b, lines in enumerate(block_lines):
        for line in lines:
            kind.append(K_STORE_GLOBAL if line % 2 else K_LOAD_GLOBAL)
            tb.append(b)
            width.append(4)
            addrs.append(line << 7)
            off.append(len(addrs))
    return (np.array(kind, np.int32), np.array(tb, np.int64), np.zeros(len(tb), np.int64),
            np.array(width, np.int64), np.array(off, np.int64), np.array(addrs, np.int64))


def test_owners_of_many_lines_grow_the_map_and_keep_every_entry():
    rng = np.random.default_rng(7)
    # 3 blocks; lines drawn from a range with repeats, so some lines are shared
    block_lines = [rng.integers(0, 6000, 4000) for _ in range(3)]
    owners = new_line_owners()
    size0 = owners.keys.shape[0]
    kind, tb, warp, width, off, addrs = _rows(block_lines)
    # two chunks, as the trace pass hands them
    half = len(kind) // 2
    for sl in (slice(0, half), slice(half, None)):
        o = off[sl.start or 0:(sl.stop + 1 if sl.stop else None)]
        mark_line_owners(kind[sl], tb[sl], warp[sl], width[sl], o - o[0],
                         addrs[o[0]:o[-1]], 1, 7, owners)
    expected: dict[int, int] = {}
    for b, lines in enumerate(block_lines):
        for line in map(int, lines):
            o = expected.get(line, -1)
            expected[line] = b if o in (-1, b) else SHARED_LINE
    assert owners.keys.shape[0] > size0  # grew
    assert len(owners) == len(expected)
    assert all(owners.get(k, -1) == v for k, v in expected.items())
    assert owners.get(10 ** 9, -7) == -7
    assert sorted(owners.values().tolist()) == sorted(expected.values())


def test_readers_map_holds_each_lines_coordinate_bits():
    coords = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    readers = sharing.new_line_readers()
    lines = [list(range(2000)), list(range(1000, 3000, 2)), [5]]
    kind, tb, _, width, off, addrs = _rows(lines)
    kind[:] = K_LOAD_GLOBAL
    sharing.mark_line_readers(kind, tb, width, off, addrs, sharing.coordinate_ranks(coords),
                              7, readers)
    assert len(readers) == len(set(range(2000)) | set(range(1000, 3000, 2)) | {5})
    # x ranks 0, 1, 2 set bits 0, 1, 2; y and z rank 0 set their own first bits
    yz = (1 << sharing._RANK_BITS) | (1 << (2 * sharing._RANK_BITS))
    assert readers.get(5, 0) == 0b101 | yz
    assert readers.get(1500, 0) == 0b011 | yz
    assert readers.get(2500, 0) == 0b010 | yz
    assert readers.get(1501, 0) == 0b001 | yz
    assert readers.get(4000, 0) == 0


def test_an_empty_map_reads_as_empty():
    m = LineMap(capacity=3)
    assert len(m) == 0 and m.values().size == 0 and m.keys.shape[0] >= 16
    assert m.get(0, 42) == 42

"""The bytes of a sector the traced blocks of a sampled grid leave to the untraced ones.

A copy that transposes or concatenates reads its input down a column: each lane one bf16
element of another row (lanes 4,352 bytes apart in the held-out Mamba2 step's copies), so
each sector's 32 bytes hold one lane's 2 and the other 30 are the next 15 columns, which
other blocks of the grid read (``ncu``: 36 MB read from DRAM for 571 MB of sectors, an L2
hit rate of 93%). A sampled trace holds none of those blocks, and scaling its sector
misses by block count fetches every sector once per reader: 16 times the DRAM reads.

The rule: a strided read row (each lane in a sector of its own, lanes evenly spaced) whose
sector the traced blocks read only ``c`` of 32 bytes of is taken to share that sector with
``32 / c`` readers of the grid, who fetch it once while it survives in the L2 between
them: its DRAM reads are multiplied by ``c / 32``. Between two readers lies one pass down
the column: a line per row, the rows being the data such rows read over the row pitch
(the lanes' stride). Where a row's line is already shared along a grid dimension
(``sharing``), that correction holds and this one does not apply. Rows whose lanes share
sectors are left alone: holes between their lanes (a ``[..., ::2]`` view) are data nobody
reads, not data others read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from simfront.sim.model import linemap
from simfront.sim.model.cache import survives
from simfront.sim.model.decode import K_ASYNC_COPY, K_LOAD_GLOBAL
from simfront.sim.model.linemap import LineMap

#: the map value's bit saying a strided row read the sector (its bytes: bits 0-31)
STRIDED = np.int64(1) << 40
_BYTES = (np.int64(1) << 32) - 1


def new_sector_bytes() -> LineMap:
    """An empty map from a sector to the bit mask of its bytes the traced reads touched."""
    return LineMap()


def mark_sector_bytes(kind, width, addr_off, addrs, strides, sector_shift,
                      sectors: LineMap) -> None:
    """Marks the bytes of every sector global loads and asynchronous copies read, and the
    sectors strided rows (``strides`` > 0, :func:`strided_rows`) read."""
    sectors.grown(*_mark(kind, width, addr_off, addrs, strides, sector_shift, sectors.keys,
                         sectors.vals, sectors.n))


def is_read(kind: np.ndarray) -> np.ndarray:
    """The rows whose bytes :func:`mark_sector_bytes` marks."""
    return (kind == K_LOAD_GLOBAL) | (kind == K_ASYNC_COPY)


@numba.njit(cache=True)
def _mark(kind, width, addr_off, addrs, strides, sector_shift, keys, vals, n):
    smask = (np.int64(1) << sector_shift) - 1
    for i in range(kind.shape[0]):
        k = kind[i]
        if not (k == K_LOAD_GLOBAL or k == K_ASYNC_COPY):
            continue
        w = width[i]
        if w <= 0:
            continue
        flag = STRIDED if strides[i] > 0 else np.int64(0)
        # neighbouring lanes in one sector (a contiguous row's eight 4-byte lanes) gather
        # their bits before the map is touched: one lookup a sector, not a lane
        cur = np.int64(-1)
        acc = np.int64(0)
        for j in range(addr_off[i], addr_off[i + 1]):
            a = addrs[j]
            end = a + w
            while a < end:
                sec = a >> sector_shift
                lo = a & smask
                hi = min(end - (sec << sector_shift), smask + 1)
                bits = ((np.int64(1) << (hi - lo)) - 1) << lo
                if sec != cur:
                    if cur >= 0:
                        keys, vals, s = linemap.entry(keys, vals, n, cur, 0)
                        vals[s] |= acc | flag
                    cur, acc = sec, np.int64(0)
                acc |= bits
                a = (sec + 1) << sector_shift
        if cur >= 0:
            keys, vals, s = linemap.entry(keys, vals, n, cur, 0)
            vals[s] |= acc | flag
    return keys, vals


def strided_rows(addr_off: np.ndarray, addrs: np.ndarray, sector_bytes: int) -> np.ndarray:
    """Per row, the lanes' stride in bytes where the row is strided: at least two lanes,
    evenly spaced, at least a sector apart (each lane in a sector of its own); else 0."""
    n_addr = addr_off[1:] - addr_off[:-1]
    out = np.zeros(n_addr.shape[0], np.int64)
    ok = n_addr >= 2
    if not ok.any():
        return out
    first = addrs[addr_off[:-1][ok]]
    stride = addrs[addr_off[:-1][ok] + 1] - first
    last = addrs[addr_off[1:][ok] - 1]
    even = (last - first) == stride * (n_addr[ok] - 1)
    out[np.nonzero(ok)[0]] = np.where(even & (np.abs(stride) >= sector_bytes),
                                      np.abs(stride), 0)
    return out


@numba.njit(cache=True, inline="always")
def _read_share(v, sector_bytes):
    """The share of a sector's bytes a map value says the traced reads touched."""
    m = v & _BYTES
    c = 0
    while m:
        m &= m - 1
        c += 1
    return c / sector_bytes


@numba.njit(cache=True)
def _factors(sectors, strides, keys, vals, data_bytes, sector_bytes, line_bytes, n_sets,
             ways):
    out = np.ones(sectors.shape[0], np.float64)
    for i in range(sectors.shape[0]):
        if strides[i] <= 0:
            continue
        f = _read_share(linemap.get(keys, vals, sectors[i], np.int64(0)), sector_bytes)
        if f <= 0.0 or f >= 1.0:
            continue
        if survives(sectors[i], data_bytes / max(strides[i], line_bytes), n_sets, ways):
            out[i] = f
    return out


@numba.njit(cache=True)
def _line_weights(tags, keys, vals, per_line, sector_bytes, survive_lines, n_sets, ways):
    out = np.ones(tags.shape[0], np.float64)
    for i in range(tags.shape[0]):
        if tags[i] < 0:
            continue
        total = 0.0
        n = 0
        for q in range(per_line):
            v = linemap.get(keys, vals, tags[i] * per_line + q, np.int64(0))
            if v & STRIDED:
                total += _read_share(v, sector_bytes)
                n += 1
        if n and survives(tags[i], survive_lines, n_sets, ways):
            out[i] = total / n
    return out


@dataclass
class SectorFill:
    """What a sampled kernel's strided reads leave of their sectors, ready to apply."""

    sectors: LineMap
    data_bytes: float        # the grid's bytes read by strided rows
    stride: float            # their lanes' mean stride, bytes
    sector_bytes: int
    line_bytes: int
    n_sets: int
    ways: int

    def factors(self, first_sectors: np.ndarray, strides: np.ndarray) -> np.ndarray:
        """What each row's DRAM reads are multiplied by (1 where the rule does not apply);
        ``first_sectors``, ``strides``: the rows' first sector and ``strided_rows``'."""
        return _factors(first_sectors.astype(np.int64), strides.astype(np.int64),
                        self.sectors.keys, self.sectors.vals, float(self.data_bytes),
                        self.sector_bytes, self.line_bytes, self.n_sets, self.ways)

    def line_weights(self, tags: np.ndarray) -> np.ndarray:
        """Per L2 line (``tags``, -1 empty), how many lines of its own each untraced block
        that touches it stands for: the read share of the strided rows' sectors in it
        (the others read the very lines), 1 for lines no strided row read."""
        between = self.data_bytes / max(self.stride, self.line_bytes)
        return _line_weights(tags.ravel().astype(np.int64), self.sectors.keys,
                             self.sectors.vals, self.line_bytes // self.sector_bytes,
                             self.sector_bytes, between, self.n_sets,
                             self.ways).reshape(tags.shape)

"""What the blocks a sampled trace left out share with the blocks it kept.

A sampled trace holds a few blocks of a grid, and the model scales their DRAM traffic by
how many blocks the grid has. That is right for data each block reads alone and wrong for
data every block along some grid dimension re-reads: the 24 heads of a Triton SSD kernel
(grid z) all read the same B and C (``ngroups = 1``), which the H100 fetches from DRAM once
and serves from its L2 23 times. A trace whose blocks span two values of a dimension (box
sampling, tracer 1.3) shows which lines blocks share along it; this module turns that into
the DRAM traffic of the whole grid:

- a line read at every traced value of a dimension ``d`` the trace holds part of (``s_d``
  of the grid's ``G_d`` values, at least two) is read by all ``G_d`` blocks along it (a
  line only some traced values read, a tile's edge, is local: the trace's pattern repeats
  along ``d`` and scaling by block count is right for it); the traced blocks
  fetched it once, so scaling by ``G_d / s_d`` counts it ``G_d / s_d`` times where the grid
  fetches it once while it survives in the L2 between those blocks: its DRAM reads are
  multiplied by ``s_d / G_d``;
- if it does not survive (the blocks between two of its readers along ``d`` touch more than
  the L2 holds), every reader fetches it: ``G_d`` fetches where the trace saw one, a factor
  ``s_d``.

Dimensions the trace covers whole need nothing (the trace pass saw every reader), nor do
dimensions it saw one value of (no evidence of sharing: the model keeps N/T scaling), nor
dimensions along which nearly every line is shared (:func:`shared_dims`: neighbours on one
tile, a group whose size the sample cannot tell). "Read" includes L2 atomics and reductions,
which fetch their line. The simulate module applies the factors to the kernel's DRAM reads,
to SM 0's rows (:func:`diffuse`; the latency of a row left without DRAM reads is an L2
hit's only if the line's nearest sharer ran a wave earlier, :func:`nearest_sharer`) and to
the untraced blocks' write-backs (shared lines are the same lines for them, not copies).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from simfront.sim.model import linemap
from simfront.sim.model.linemap import LineMap
from simfront.sim.model.cache import row_lines, survives
from simfront.sim.model.decode import (K_ASYNC_COPY, K_ATOMIC, K_LOAD_GLOBAL, K_PREFETCH,
                                       K_REDUCTION)

#: value layout of the readers map: per grid dimension, a bit per traced coordinate (its
#: rank among the traced blocks' values along that dimension) that read the line
_RANK_BITS = 20
_RANK_MASK = (1 << _RANK_BITS) - 1


@dataclass(frozen=True)
class SampledGrid:
    """The grid and the traced blocks' extent along each dimension."""

    grid: tuple[int, int, int]
    traced: tuple[int, int, int]   # distinct coordinates the trace holds per dimension

    @property
    def partial_dims(self) -> tuple[int, ...]:
        """Dimensions with at least two traced values but not all of them: where sharing can
        be seen and must be extrapolated (up to 20 traced values: the readers map's width)."""
        return tuple(d for d in range(3)
                     if 1 < self.traced[d] < self.grid[d] and self.traced[d] <= _RANK_BITS)

    def block_stride(self, d: int) -> int:
        """Blocks launched between two blocks one apart along ``d`` (x fastest)."""
        return int(np.prod(self.grid[:d], dtype=np.int64))


def sampled_grid(grid: tuple[int, int, int], coords: np.ndarray) -> SampledGrid:
    """``coords``: the traced blocks' (x, y, z), one row per block."""
    traced = tuple(int(np.unique(coords[:, d]).size) if coords.size else 1 for d in range(3))
    return SampledGrid(tuple(int(g) for g in grid), traced)  # type: ignore[arg-type]


def coordinate_ranks(coords: np.ndarray) -> np.ndarray:
    """Each traced block's rank along each dimension among the traced values there (the
    bit it sets in the readers map), capped at the map's width."""
    ranks = np.zeros(coords.shape, np.int64)
    for d in range(3):
        if coords.shape[0]:
            ranks[:, d] = np.unique(coords[:, d], return_inverse=True)[1].reshape(-1)
    return np.minimum(ranks, _RANK_BITS - 1)


def new_line_readers() -> LineMap:
    """An empty map from a 128-byte line to the traced coordinates, per dimension, of the
    blocks that read it (or update it at the L2); filled by :func:`mark_line_readers`."""
    return LineMap()


def mark_line_readers(kind, tb, width, addr_off, addrs, tb_rank, line_shift,
                      readers: LineMap) -> None:
    """For every line global loads, atomics and reductions read: which traced coordinates
    along x, y and z read it (``tb_rank`` from :func:`coordinate_ranks`). Atomics count: an
    L2 atomic that misses reads its line from DRAM, and the selective scan's backward adds
    every channel's dB and dC into the same lines of its batch."""
    readers.grown(*_mark_readers(kind, tb, width, addr_off, addrs, tb_rank, line_shift,
                                 readers.keys, readers.vals, readers.n))


@numba.njit(cache=True)
def _mark_readers(kind, tb, width, addr_off, addrs, tb_rank, line_shift, keys, vals, n):
    buf = np.empty(512, np.int64)
    for i in range(kind.shape[0]):
        k = kind[i]
        if not (k == K_LOAD_GLOBAL or k == K_ASYNC_COPY or k == K_PREFETCH
                or k == K_ATOMIC or k == K_REDUCTION):
            continue
        w = width[i]
        if w <= 0:
            continue
        b = tb[i]
        bits = ((np.int64(1) << tb_rank[b, 0])
                | (np.int64(1) << (tb_rank[b, 1] + _RANK_BITS))
                | (np.int64(1) << (tb_rank[b, 2] + 2 * _RANK_BITS)))
        for q in range(row_lines(addr_off, addrs, i, w, line_shift, buf)):
            keys, vals, s = linemap.entry(keys, vals, n, buf[q], 0)
            vals[s] |= bits
    return keys, vals


def first_lines(addr_off: np.ndarray, addrs: np.ndarray, line_shift: int) -> np.ndarray:
    """Each row's first address's line (-1 for rows without addresses): the line that stands
    for the row's sharing (a warp's load reads one tensor)."""
    n = addr_off.shape[0] - 1
    out = np.full(n, -1, np.int64)
    has = addr_off[1:] > addr_off[:-1]
    out[has] = addrs[addr_off[:-1][has]] >> line_shift
    return out


@numba.njit(cache=True, inline="always")
def _read_everywhere(v, d, traced_d):
    """Whether a readers-map value says every traced value along ``d`` read the line."""
    m = (v >> (d * _RANK_BITS)) & _RANK_MASK
    n = 0
    while m:
        m &= m - 1
        n += 1
    return n == traced_d


@numba.njit(cache=True)
def _line_factors(lines, keys, vals, partial_mask, grid, traced, stride_lines, n_sets, ways):
    out = np.ones(lines.shape[0], np.float64)
    for i in range(lines.shape[0]):
        v = linemap.get(keys, vals, lines[i], np.int64(0))
        if v == 0:
            continue
        f = 1.0
        for d in range(3):
            if not (partial_mask >> d) & 1:
                continue
            # read at every traced value along d: the grid's blocks along d share it (a
            # line only neighbours read, a tile's edge, repeats along d as the trace shows)
            if _read_everywhere(v, d, traced[d]):
                if survives(lines[i], stride_lines[d], n_sets, ways):
                    f *= traced[d] / grid[d]
                else:
                    f *= traced[d]
        out[i] = f
    return out


#: A dimension along which at least this share of the lines read is read at every traced
#: value is not extrapolated (:func:`shared_dims`).
ALL_SHARED = 0.95


@numba.njit(cache=True)
def _shared_counts(values, traced):
    n = np.zeros(3, np.int64)
    total = 0
    for v in values:
        total += 1
        for d in range(3):
            if _read_everywhere(v, d, traced[d]):
                n[d] += 1
    return n, total


def shared_dims(readers, sg: SampledGrid) -> tuple[int, ...]:
    """The partial dimensions along which the trace shows data the grid's blocks share:
    some lines read at every traced value, but not (nearly) all of them. Where every line is
    (a transposing copy's tile, which all eight traced neighbours read; a row of a tiled
    product's tiles), the traced blocks along ``d`` are neighbours working on one tile, a group whose
    size the sample cannot tell; blocks that share grid-wide data also read data of their
    own (an SSD kernel's heads: their x and states beside the shared B and C)."""
    if not sg.partial_dims or len(readers) == 0:
        return ()
    n, total = _shared_counts(readers.values(), np.array(sg.traced, np.int64))
    return tuple(d for d in sg.partial_dims if 0 < n[d] < ALL_SHARED * total)


def line_factors(lines: np.ndarray, readers, sg: SampledGrid, lines_per_block: float,
                 n_sets: int, ways: int, dims: tuple[int, ...] | None = None) -> np.ndarray:
    """What each row's DRAM reads are multiplied by (1 for rows of unshared lines), along
    ``dims`` (default: :func:`shared_dims`). The lines between two readers along ``d`` are
    the lines of the blocks launched between them (``lines_per_block`` each)."""
    mask = 0
    for d in (shared_dims(readers, sg) if dims is None else dims):
        mask |= 1 << d
    stride_lines = np.array([sg.block_stride(d) * lines_per_block for d in range(3)],
                            np.float64)
    return _line_factors(lines.astype(np.int64), readers.keys, readers.vals, np.int64(mask),
                         np.array(sg.grid, np.float64), np.array(sg.traced, np.float64),
                         stride_lines, n_sets, ways)


@numba.njit(cache=True)
def _nearest_sharer(lines, keys, vals, mask, traced, stride):
    out = np.full(lines.shape[0], np.inf)
    for i in range(lines.shape[0]):
        v = linemap.get(keys, vals, lines[i], np.int64(0))
        for d in range(3):
            if (mask >> d) & 1 and stride[d] < out[i] and _read_everywhere(v, d, traced[d]):
                out[i] = stride[d]
    return out


def nearest_sharer(lines: np.ndarray, readers, sg: SampledGrid,
                   dims: tuple[int, ...]) -> np.ndarray:
    """Per line, the blocks launched between two of its readers along the nearest
    dimension it is shared along (``inf`` for lines not shared): a reader in the same wave as
    the first waits for that first fetch; a later one finds the line in the L2."""
    mask = 0
    for d in dims:
        mask |= 1 << d
    return _nearest_sharer(lines.astype(np.int64), readers.keys, readers.vals, np.int64(mask),
                           np.array(sg.traced, np.float64),
                           np.array([sg.block_stride(d) for d in range(3)], np.float64))


def diffuse(counts: np.ndarray, factors: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``counts * factors`` in whole numbers, the remainders carried from row to row so the
    sum holds (error diffusion), each at most ``cap``."""
    want = np.cumsum(counts * factors)
    whole = np.floor(want + 1e-9).astype(np.int64)
    out = np.diff(np.concatenate([[0], whole]))
    return np.minimum(np.maximum(out, 0), cap)


@dataclass
class GridShare:
    """What a sampled kernel's traced blocks share, ready to apply: the dimensions it is
    extrapolated along and the L2 it must survive in."""

    sg: SampledGrid
    readers: object
    lines_per_block: float
    n_sets: int
    ways: int
    dims: tuple[int, ...]

    @classmethod
    def of(cls, grid: tuple[int, int, int], coords: np.ndarray, readers, n_sets: int,
           ways: int) -> "GridShare | None":
        """None when the trace shows no dimension to extrapolate sharing along."""
        sg = sampled_grid(grid, coords)
        dims = shared_dims(readers, sg)
        if not dims:
            return None
        return cls(sg, readers, len(readers) / max(1, coords.shape[0]), n_sets, ways, dims)

    def factors(self, lines: np.ndarray) -> np.ndarray:
        return line_factors(lines, self.readers, self.sg, self.lines_per_block, self.n_sets,
                            self.ways, self.dims)

    def nearest_sharer(self, lines: np.ndarray) -> np.ndarray:
        return nearest_sharer(lines, self.readers, self.sg, self.dims)

    def grid_wide(self, tags: np.ndarray) -> np.ndarray:
        """Which of these lines the grid's blocks all share and find in the L2."""
        return (self.factors(tags.ravel()) < 1.0).reshape(tags.shape)

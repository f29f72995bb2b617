"""How a persistent grid hands out its tiles, read from the trace: one of two schedules.

cuBLAS's sm90 GEMMs (``nvjet_sm90_*``) launch workers, not one block per output tile: a grid
sized to the GPU they were tuned on (132 blocks on the H100, or fewer where there are fewer
tiles). Measured on the H100 in green contexts (bench/RESULTS.md, *Clocks and tile schedules
on fewer SMs*), they come in two kinds, which the trace tells apart:

- **dynamic**: a warp of each cluster takes the next tile with a global atomic (``ATOMG``),
  so on fewer SMs the resident workers share the tiles out evenly (``persistent_spread``);
- **static**: no atomic; worker w takes tiles w, w + B, w + 2B, ... of the T tiles, and
  workers that are not resident wait for a slot, in launch order (x fastest). On fewer SMs
  the kernel lasts as long as its busiest slot. Workers number their tiles along y first
  (w = y + gy x): of the two orders, the one that fits the 192x128 GEMMs (grid 2 x 66,
  256 tiles; ncu in green contexts, bench/RESULTS.md, *The SM clock in a step*): 1.89-2.02 /
  2.29-2.47 / 4.33-4.74x their cycles on 96 / 64 / 32 SMs, where y first gives 2.0 / 2.5 /
  4.5, x first 2.0 / 2.0 / 4.0 and an even spread 1.375 / 2.06 / 4.1.

A worker's tile count is the number of times its epilogue runs: for each warp, the fewest
times any of its global-store instructions (by PC) ran (a store inside a per-tile loop runs
more often; one outside it, once a tile), the most over the worker's warps (warps that store
nothing, the producers, do not count). Pure functions; the trace pass feeds
:class:`StoreCounts` chunk by chunk (``scan`` reads a trace for it alone).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from simfront.sim.model.decode import (K_ATOMIC, K_REDUCTION, K_STORE_GLOBAL, PIPE_INDEX,
                                       build_optable)

#: the two schedules a persistent grid can have, as records name them
DYNAMIC, STATIC = "dynamic", "static"


@dataclass
class StoreCounts:
    """Per (block, warp, PC): how many times a global store ran; and whether any global
    atomic or reduction ran (the dynamic scheduler's sign)."""

    counts: dict[tuple[int, int, int], int] = field(default_factory=dict)
    atomics: int = 0

    def add(self, tb: np.ndarray, warp: np.ndarray, pc: np.ndarray, is_store: np.ndarray,
            is_atomic: np.ndarray) -> None:
        self.atomics += int(np.count_nonzero(is_atomic))
        if not is_store.any():
            return
        keys = np.stack([tb[is_store], warp[is_store], pc[is_store]], axis=1).astype(np.int64)
        uniq, n = np.unique(keys, axis=0, return_counts=True)
        for (b, w, p), k in zip(uniq.tolist(), n.tolist()):
            self.counts[(b, w, p)] = self.counts.get((b, w, p), 0) + k

    def tiles(self) -> dict[int, int]:
        """Tiles per traced block (blocks that stored nothing are absent)."""
        per_warp: dict[tuple[int, int], int] = {}
        for (b, w, _), k in self.counts.items():
            per_warp[(b, w)] = min(per_warp.get((b, w), k), k)
        out: dict[int, int] = {}
        for (b, _), k in per_warp.items():
            out[b] = max(out.get(b, 0), k)
        return out


def scan(kernel, gpu) -> tuple[StoreCounts, int]:
    """A kernel trace's global stores and atomics and its traced tensor-pipe instructions,
    read on their own (the model's trace pass gathers the same as it goes)."""
    stores, tensor = StoreCounts(), 0
    for ch in kernel.iter_chunks():
        table = build_optable(ch.opcodes, gpu)
        op = ch.op.astype(np.int64)
        kind = table.kind[op]
        stores.add(ch.tb.astype(np.int64), ch.warp.astype(np.int64), ch.pc,
                   kind == K_STORE_GLOBAL, (kind == K_ATOMIC) | (kind == K_REDUCTION))
        tensor += int(np.count_nonzero(table.pipe[op] == PIPE_INDEX["tensor"]))
    return stores, tensor


def total_tiles(tiles: dict[int, int], n_blocks: int, traced_work: float,
                grid_work: float | None) -> int:
    """The grid's tiles. Every block traced: their sum. Sampled: the grid's work at the
    traced blocks' work a tile, the work being tensor-pipe instructions where ncu counted
    the grid's (exact: an MMA instruction runs a fixed number of times a tile), else the
    census's warp instructions (which count the mbarrier spin loops, whose trips depend on
    timing: 264 tiles for the 256 of the 192x128 GEMMs); without either, the traced
    blocks' mean for every block. A static schedule gives the first workers the most
    tiles, so the total lies in ((t0 - 1) B, t0 B] for the first worker's t0."""
    done = sum(tiles.values())
    if not tiles or done == 0:
        return 0
    if len(tiles) >= n_blocks:
        return done
    if grid_work and traced_work > 0:
        est = int(round(grid_work * done / traced_work))
    else:
        est = int(round(done / len(tiles) * n_blocks))
    t0 = max(tiles.values())
    return min(max(est, (t0 - 1) * n_blocks + 1), t0 * n_blocks)


def worker_tiles(total: int, n_blocks: int) -> list[int]:
    """Tiles of each worker under the static schedule: worker w takes w, w + B, ..."""
    return [len(range(w, total, n_blocks)) for w in range(n_blocks)]


def launch_order_tiles(total: int, grid: tuple[int, int, int]) -> list[int]:
    """Tiles of each block in the order the GPU launches them (x fastest), its worker
    number running along y first."""
    gx, gy, gz = grid
    per = worker_tiles(total, gx * gy * gz)
    return [per[y + gy * (x + gx * z)] for z in range(gz) for y in range(gy)
            for x in range(gx)]


def busiest_slot(total: int, grid: tuple[int, int, int], slots: int) -> int:
    """Tiles of the busiest of ``slots`` worker slots (SMs x resident workers an SM) under
    the static schedule: the first ``slots`` blocks start at once, each later one (in launch
    order) takes the slot that frees first."""
    per = launch_order_tiles(total, grid)
    if not per:
        return 0
    load = sorted(per[:slots])
    heapq.heapify(load)
    for k in per[slots:]:
        heapq.heappush(load, heapq.heappop(load) + k)
    return max(load)


def static_scale(tiles: dict[int, int], grid: tuple[int, int, int], traced_work: float,
                 grid_work: float | None, slots: int, timed_block: int = 0) -> float | None:
    """What SM 0's time (one round of its resident workers, the first of which is traced
    block ``timed_block``, worker 0) is multiplied by under the static schedule: the
    busiest slot's tiles over the timed worker's. None where the trace shows no tiles."""
    t0 = tiles.get(timed_block, 0)
    n_blocks = grid[0] * grid[1] * grid[2]
    total = total_tiles(tiles, n_blocks, traced_work, grid_work)
    if t0 <= 0 or total <= 0:
        return None
    return busiest_slot(total, grid, slots) / t0

"""A split reduction's finishing walk, which no traced block need show.

PyTorch's ``reduce_kernel``, when a column of outputs takes more than one block (grid.y =
its ``ctas_per_output`` > 1), has every block store its partial sums, fence
(``MEMBAR.SC.GPU``) and count itself in on its column's semaphore (one lane's ``ATOMG``); the block
that counts in last walks all grid.y partials, one dependent L2 round trip a step, and
stores the result. The walk runs after its column's other blocks are done, on one SM a
column, so it adds to the kernel's time whatever the SM count. A sampled trace (a box of
low block indices) seldom holds a last block, and the census spreads its instructions over
all blocks, so the walk is timed here, not through the issue model: steps x
``GridParams.last_block_step_cycles`` (measured, bench/device/split_tail.cu).

A step covers block.y partials (each thread keeps its own outputs along x), or all the
block's threads' where the block also reduces along x (its warps shuffle: ``SHFL.BFLY`` or
``SHFL.DOWN``). Where the trace holds a last block (a warp runs on past an ``EXIT`` that no
lane took), its walk is already among the traced rows, scaled with them: no walk is added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _gpu_fence(op: str) -> bool:
    return op.startswith("MEMBAR.SC.GPU") or op.startswith("MEMBAR.GPU")


@dataclass
class FinishSeen:
    """What the trace pass saw of the idiom, chunk by chunk (``add``)."""

    fence: bool = False
    atomic: bool = False
    x_reduce: bool = False
    last_traced: bool = False

    def add(self, opcodes, op: np.ndarray, mask: np.ndarray) -> None:
        present = set(np.unique(op).tolist())
        names = [o for i, o in enumerate(opcodes) if i in present]
        self.fence |= any(_gpu_fence(o) for o in names)
        # the semaphore: one lane's atomic (Triton's atomics, also fenced, take many lanes)
        atomics = [i for i, o in enumerate(opcodes) if o.startswith("ATOMG") and i in present]
        if atomics and not self.atomic:
            one_lane = (mask != 0) & ((mask & (mask - 1)) == 0)
            self.atomic = bool(np.any(np.isin(op, atomics) & one_lane))
        self.x_reduce |= any(o.startswith(("SHFL.BFLY", "SHFL.DOWN")) for o in names)
        exits = [i for i, o in enumerate(opcodes) if o == "EXIT" and i in present]
        if exits and not self.last_traced:
            self.last_traced = bool(np.any(np.isin(op, exits) & (mask == 0)))


def walk_steps(seen: FinishSeen, grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> int:
    """Steps of the finishing walk a column's last block takes (0: none to add)."""
    ctas = grid[1]
    if ctas <= 1 or not (seen.fence and seen.atomic) or seen.last_traced:
        return 0
    per_step = block[0] * block[1] if seen.x_reduce else block[1]
    return -(-ctas // max(1, per_step))

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

from simfront.sim.model.decode import K_ATOMIC, K_EXIT, K_FENCE

_X_REDUCE = ("SHFL.BFLY", "SHFL.DOWN")


def _gpu_fence(op: str) -> bool:
    return op.startswith("MEMBAR.SC.GPU") or op.startswith("MEMBAR.GPU")


@dataclass
class FinishSeen:
    """What the trace pass saw of the idiom, chunk by chunk (``add``). ``watch`` False (a
    grid of one row, where no column has several blocks): nothing is looked at."""

    watch: bool = True
    fence: bool = False
    atomic: bool = False
    x_reduce: bool = False
    last_traced: bool = False

    def add(self, table, kind: np.ndarray, op: np.ndarray, lanes: np.ndarray) -> None:
        """One chunk's rows: their kinds (``decode.K_*``), opcode indices into ``table``'s
        ``opcodes`` and active lanes."""
        if not self.watch:
            return
        names = table.opcodes
        if not self.fence:
            self.fence = any(_gpu_fence(names[i]) for i in np.unique(op[kind == K_FENCE]))
        # the semaphore: one lane's atomic (Triton's atomics, also fenced, take many lanes)
        if not self.atomic:
            self.atomic = bool(np.any((kind == K_ATOMIC) & (lanes == 1)))
        if not self.last_traced:
            self.last_traced = bool(np.any((kind == K_EXIT) & (lanes == 0)))
        if not self.x_reduce:
            shfl = [i for i, o in enumerate(names) if o.startswith(_X_REDUCE)]
            self.x_reduce = bool(shfl) and bool(np.isin(op, shfl).any())


def walk_steps(seen: FinishSeen, grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> int:
    """Steps of the finishing walk a column's last block takes (0: none to add)."""
    ctas = grid[1]
    if ctas <= 1 or not (seen.fence and seen.atomic) or seen.last_traced:
        return 0
    per_step = block[0] * block[1] if seen.x_reduce else block[1]
    return -(-ctas // max(1, per_step))

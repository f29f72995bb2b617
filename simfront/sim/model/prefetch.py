"""Copies that read nothing: a software-pipelined loop's prefetches past its end.

Triton's multistage loops (and CUTLASS's) copy global memory into shared memory with
``LDGSTS`` some stages ahead of the compute, close each stage's copies into a group
(``LDGDEPBAR``) and, before computing on a stage, wait until only the newest N groups are
in flight (``DEPBAR.LE SB0, N``). The copies issued for iterations past the loop's end are
predicated to zero-fill (their ``LDGSTS`` source predicate is false): they execute, and the
trace lists every lane's address, but they read no global memory. On the H100, ncu's
per-instruction L2 sectors of the Mamba2 paper step's ``_chunk_scan_fwd_kernel`` show it:
55% of the loop's copies and a quarter of the prologue's third stage fetch nothing
(bench/RESULTS.md, *What the SSD kernels' copies read*).

The trace does not hold that predicate, but the warp's waits say which groups it ever
needs: a group no later ``DEPBAR`` of the warp waits for holds copies whose data the warp
never reads, which the pipeline predicated off. The wait for every group
(``DEPBAR.LE SB0, 0``) that such a loop ends with is its drain, not a use; a warp that
never waits with N > 0 (no pipeline) has nothing marked.
"""

from __future__ import annotations

import numba
import numpy as np

from simfront.sim.model.decode import K_ASYNC_COMMIT, K_ASYNC_COPY, K_ASYNC_WAIT

_KINDS = (K_ASYNC_COPY, K_ASYNC_COMMIT, K_ASYNC_WAIT)


def uses_async_waits(kinds: np.ndarray) -> bool:
    """Whether a chunk's rows (their kinds) hold cp.async copies and waits on them."""
    return bool((kinds == K_ASYNC_COPY).any() and (kinds == K_ASYNC_WAIT).any())


class AsyncRows:
    """The rows a prefetch reading needs, gathered chunk by chunk in trace order: each
    copy, commit and wait with its block, warp and immediate (a wait's N)."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, kind: np.ndarray, tb: np.ndarray, warp: np.ndarray, imm: np.ndarray) -> None:
        sel = np.isin(kind, _KINDS)
        if sel.any():
            self.parts.append((kind[sel].astype(np.int64), tb[sel].astype(np.int64),
                               warp[sel].astype(np.int64), imm[sel].astype(np.int64)))

    def zero_fill(self, warps_per_block: int) -> np.ndarray:
        """One flag per copy row, in trace order: True where it reads nothing."""
        if not self.parts:
            return np.zeros(0, np.bool_)
        kind, tb, warp, imm = (np.concatenate([p[i] for p in self.parts]) for i in range(4))
        return _unwaited_copies(kind, tb * warps_per_block + warp, imm)


@numba.njit(cache=True)
def _unwaited_copies(kind, slot, imm):
    """Flags the copies (rows of kind K_ASYNC_COPY, in order) whose group no later wait of
    their warp (``slot``) reaches. A copy belongs to the group its warp's next commit
    closes; a wait with immediate N reaches every group committed before it but the newest
    N (an immediate below 0, unknown, counts as 0). In a warp that waits with N > 0 (a
    pipeline), a wait for everything after its last copy is the loop's drain at exit, not
    a use, and reaches nothing."""
    n_slots = int(slot.max()) + 1
    last_copy = np.full(n_slots, -1, np.int64)
    pipelined = np.zeros(n_slots, np.bool_)
    for i in range(kind.shape[0]):
        if kind[i] == K_ASYNC_COPY:
            last_copy[slot[i]] = i
        elif kind[i] == K_ASYNC_WAIT and imm[i] > 0:
            pipelined[slot[i]] = True
    commits = np.zeros(n_slots, np.int64)     # groups committed so far, per warp
    reached = np.zeros(n_slots, np.int64)     # groups below this index are waited for
    group = np.zeros(kind.shape[0], np.int64)
    n_copies = 0
    for i in range(kind.shape[0]):
        s = slot[i]
        if kind[i] == K_ASYNC_COPY:
            group[i] = commits[s]
            n_copies += 1
        elif kind[i] == K_ASYNC_COMMIT:
            commits[s] += 1
        else:
            keep = max(imm[i], 0)
            if keep == 0 and pipelined[s] and i > last_copy[s]:
                continue
            reached[s] = max(reached[s], commits[s] - keep)
    out = np.zeros(n_copies, np.bool_)
    j = 0
    for i in range(kind.shape[0]):
        if kind[i] == K_ASYNC_COPY:
            out[j] = pipelined[slot[i]] and group[i] >= reached[slot[i]]
            j += 1
    return out


def drop_addresses(addr_off: np.ndarray, addrs: np.ndarray,
                   rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lane addresses with those of ``rows`` removed (rows that read nothing)."""
    counts = np.diff(addr_off)
    keep_row = np.ones(counts.shape[0], np.bool_)
    keep_row[rows] = False
    keep = np.repeat(keep_row, counts)
    counts = np.where(keep_row, counts, 0)
    off = np.zeros(counts.shape[0] + 1, addr_off.dtype)
    np.cumsum(counts, out=off[1:])
    return off, addrs[keep]

"""The L2 carried from one kernel to the next (a warm L2), for step-level what-ifs.

By default every kernel starts with an empty L2, because the model's yardstick, Nsight
Compute, flushes the caches before each kernel it profiles. A step that runs unprofiled
(the CUPTI timelines the what-ifs are checked against) keeps in the L2 what earlier kernels
left: a kernel that reads what the previous one wrote may find it there, and a kernel that
evicts lines another kernel left dirty writes them back. ``L2Carry`` holds the simulated
L2 between the kernels of a step run in launch order:

- the L2 a kernel leaves, dirty sectors included, is the next kernel's L2 at its start (the
  L1s start empty: they are not kept coherent and are invalidated between kernels);
- a sampled kernel (the tracer kept the first T of the grid's N blocks) ran its other
  blocks after the traced ones, and they touched about ``sample_scale - 1`` times the lines
  the traced blocks touched. Those lines are not known, so they enter the L2 as *untraced
  lines* (:func:`add_untraced`): each set gets its share of them as its most recently used
  lines, dirty like the traced lines they stand for, and the set's oldest lines make room.
  When the grid's real footprint exceeds the L2, the traced blocks' own lines are pushed
  out, as LRU would; when it fits, they stay for the next kernel's traced blocks (the first
  blocks of consecutive kernels touch the first rows of the same tensors);
- DRAM reads are, as when cold, the traced blocks' L2 misses scaled to the grid: an
  untraced block is taken to find as much of its input in the L2 as the traced ones did;
- DRAM writes are the dirty sectors a kernel evicts: those its traced blocks evict (not
  scaled: the untraced lines stand for the rest of the grid) plus those the untraced lines
  push out, and the untraced lines' own dirt that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from simfront.sim.model.cache import CacheState, l2_state

#: Tag of an untraced line: a line some untraced block touched. No address maps to a
#: negative line, so such a line is never hit; -1 already means an empty way.
UNTRACED = -2

_POP8 = np.array([bin(i).count("1") for i in range(256)], np.int64)


@dataclass
class L2Carry:
    """The L2 between the kernels of one step, and the L2 description it was made for."""

    state: CacheState
    l2: object                      # the GPU description's L2 (a kernel on another refuses)

    @classmethod
    def empty(cls, gpu) -> "L2Carry":
        return cls(l2_state(gpu), gpu.l2)

    def check(self, gpu) -> None:
        if gpu.l2 != self.l2:
            raise ValueError("L2Carry: the kernel's GPU has another L2 than the carried one")

    def start_clock(self) -> int:
        """The LRU clock before a kernel: the lines it touches are stamped later."""
        return int(self.state.clock[0])


def untraced_writeback(state: CacheState, clock_before: int, sample_scale: float,
                       grid_wide: np.ndarray | None = None,
                       weights: np.ndarray | None = None) -> int:
    """A sampled kernel's untraced blocks through the L2 after its traced ones
    (``clock_before``: the LRU clock before the kernel): they touch ``sample_scale - 1`` times
    the lines the traced blocks touched, as untraced lines (:func:`add_untraced`). Returns
    the dirty sectors that pushes out to DRAM. Used cold as well as warm: a grid that writes
    more than the L2 holds writes most of it back before it ends, whoever wrote it.
    ``grid_wide`` (shaped like the L2's tags) marks lines every block of the grid shares
    (``sharing``): the untraced blocks touch those very lines, not copies of them (the
    selective scan's backward adds all 1,536 channels' dB into one batch's lines).
    ``weights`` (shaped likewise) counts each line's untraced copies at that share
    (``fill``: a strided read's line, whose other sectors' readers touch the very line)."""
    if sample_scale <= 1:
        return 0
    touched = (state.stamp[0] > clock_before) & (state.tags[0] >= 0)
    if grid_wide is not None:
        touched &= ~grid_wide
    # the weighted lines apart, so their untraced copies carry their own (clean) sectors;
    # their dirt is read before the whole lines' copies take their ways
    part = touched & (weights < 1.0) if weights is not None else np.zeros_like(touched)
    whole = touched & ~part
    part_dirt, n_part = state.dirty[0][part], float(weights[part].sum()) if part.any() else 0.0
    out = add_untraced(state, round(int(np.count_nonzero(whole)) * (sample_scale - 1)),
                       state.dirty[0][whole])
    return out + add_untraced(state, round(n_part * (sample_scale - 1)), part_dirt)


def add_untraced(state: CacheState, n_lines: int, dirty_like: np.ndarray) -> int:
    """Put ``n_lines`` untraced lines into the L2 as its most recently used lines, spread
    evenly over the sets (the address hash spreads real lines so); each set's oldest lines,
    empty ways first, make room. Untraced line *i* is dirty like ``dirty_like[i % len]``
    (sector masks of the traced lines it stands for). Returns the dirty sectors written
    back: those of the lines pushed out, and of the untraced lines beyond what a set holds
    (later untraced lines push them out in turn)."""
    if n_lines <= 0:
        return 0
    # The untraced lines' dirt: all of it, less what the placed lines keep.
    masks = np.asarray(dirty_like, np.uint8).ravel()
    if masks.size == 0:
        masks = np.zeros(1, np.uint8)
    pop = _POP8[masks]
    total_dirt = (n_lines // masks.size) * int(pop.sum()) + int(pop[: n_lines % masks.size].sum())
    state.clock[0] += 1
    return total_dirt + int(_place_untraced(state.tags[0], state.stamp[0], state.valid[0],
                                            state.dirty[0], n_lines, masks,
                                            int(state.clock[0])))


#: An empty way's age: older than any line.
_EMPTY_AGE = np.iinfo(np.int64).min


@numba.njit(cache=True)
def _place_untraced(tags, stamp, valid, dirty, n_lines, masks, clock):
    """``add_untraced``'s placement, set by set: the set's share of the ``n_lines`` (the
    remainder one line each to the first sets) replaces its oldest ways (empty ways first,
    then by LRU stamp, ties by way), the j-th line placed (sets in order, ways in order)
    dirty like ``masks[j % len]``. Returns the dirty sectors pushed out less those the
    placed lines keep."""
    n_sets, ways = tags.shape
    age = np.empty(ways, np.int64)
    order = np.empty(ways, np.int64)
    out = np.empty(ways, np.bool_)
    written = 0
    j = 0
    for s in range(n_sets):
        placed = min(n_lines // n_sets + (1 if s < n_lines % n_sets else 0), ways)
        if placed == 0:
            continue
        for w in range(ways):
            age[w] = _EMPTY_AGE if tags[s, w] == -1 else stamp[s, w]
            order[w] = w
            out[w] = placed == ways  # a whole set needs no order
        if placed < ways:
            for a in range(1, ways):  # a stable insertion sort of the ways by age
                o = order[a]
                b = a - 1
                while b >= 0 and age[order[b]] > age[o]:
                    order[b + 1] = order[b]
                    b -= 1
                order[b + 1] = o
            for r in range(placed):
                out[order[r]] = True
        for w in range(ways):
            if out[w]:
                new = masks[j % masks.shape[0]]
                j += 1
                written += _popcount8(dirty[s, w]) - _popcount8(new)
                tags[s, w] = UNTRACED
                stamp[s, w] = clock
                valid[s, w] = 0
                dirty[s, w] = new
    return written


@numba.njit(cache=True, inline="always")
def _popcount8(d):
    n = 0
    while d:
        n += d & 1
        d >>= 1
    return n


def limit_dirty(state: CacheState, max_sectors: int) -> int:
    """Write back (clean, not evict) the oldest dirty lines until at most ``max_sectors``
    dirty sectors remain; returns the sectors written. The H100 does not keep a whole L2 of
    dirty data at a kernel's end: ncu counts as written during the kernel all but 10-22 MB
    of what a kernel dirties, from a 1.6 GB fill to 84 MB of AdamW state (LRU alone would
    keep up to the L2's 50 MiB)."""
    dirty = state.dirty[0]
    if _dirty_sectors(dirty) <= max_sectors:
        return 0  # the common case, counted without a 400K-entry table lookup
    pop = _POP8[dirty]
    lines = np.flatnonzero(pop)
    newest_first = lines[np.argsort(state.stamp[0].ravel()[lines], kind="stable")[::-1]]
    kept = np.cumsum(pop.ravel()[newest_first]) <= max_sectors
    clean = newest_first[~kept]
    dirty.ravel()[clean] = 0
    return int(pop.ravel()[clean].sum())


@numba.njit(cache=True)
def _dirty_sectors(dirty):
    """The dirty sectors of an L2's ``[sets, ways]`` masks."""
    n = 0
    for s in range(dirty.shape[0]):
        for w in range(dirty.shape[1]):
            n += _popcount8(dirty[s, w])
    return n

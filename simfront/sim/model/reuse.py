"""Issue-model runs reused within a process.

The issue model (``issue.run_sm``) is a function of SM 0's rows, the opcodes' timing and the
SM's configuration alone, and a model of a network asks it the same question many times:
a layer's kernels repeat layer after layer on rows that differ only in addresses, which the
rows do not hold (the cache results they do hold come out the same), and a kernel's DRAM
latency search and its run at its own clock can land on a configuration already run. About
half of one configuration's runs of ``traces/mamba2_lm-paper-box`` are such repeats.

Rows are matched by content: a cheap fingerprint finds the candidates, and every column is
compared in full before a run is reused, so a reused run is the run the rows would give.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

#: Row sets remembered (least recently used dropped): a model's distinct kernels, with room,
#: and at most this many bytes of rows held only here (the prepared kernels they belong to
#: may have left the model cache).
MAX_ROW_SETS = 64
MAX_ROW_BYTES = 2 << 30
#: Rows of each column the fingerprint samples, evenly spread.
SAMPLES = 257


class IssueRun(NamedTuple):
    """What one issue-model run gives: SM 0's clocks and its ``SmCounters``' arrays."""

    t: int
    stall: np.ndarray
    pipe_busy: np.ndarray
    issued_pipe: np.ndarray
    warp_cycles: np.ndarray

    def copy(self) -> "IssueRun":
        """A copy whose arrays a caller may change without changing the remembered run."""
        return IssueRun(self.t, *(a.copy() for a in self[1:]))


@dataclass
class RowSet:
    """SM 0's rows as prepared (``Prepared.cols``, ``warp_off``, repeated from
    ``repeat_from`` up to ``timed_blocks`` blocks) and the runs made on them, by opcode
    timing and SM configuration."""

    cols: dict
    warp_off: np.ndarray
    repeat_from: int
    timed_blocks: int
    runs: dict = field(default_factory=dict)

    def same_rows(self, cols: dict, warp_off: np.ndarray, repeat_from: int,
                  timed_blocks: int) -> bool:
        if (repeat_from, timed_blocks) != (self.repeat_from, self.timed_blocks):
            return False
        if cols.keys() != self.cols.keys() or not _equal(warp_off, self.warp_off):
            return False
        return all(_equal(cols[k], self.cols[k]) for k in cols)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b))


def _fingerprint(cols: dict, warp_off: np.ndarray, repeat_from: int,
                 timed_blocks: int) -> tuple:
    """Shapes, types and a spread sample of every column: equal rows have equal
    fingerprints, and rows that differ mostly differ here too."""
    parts: list = [repeat_from, timed_blocks, warp_off.tobytes()]
    for name in sorted(cols):
        a = cols[name]
        idx = np.linspace(0, a.shape[0] - 1, SAMPLES).astype(np.int64) if a.shape[0] else []
        parts += [name, a.dtype.str, a.shape, a[idx].tobytes()]
    return tuple(parts)


_row_sets: OrderedDict[tuple, list[RowSet]] = OrderedDict()


def row_set(prep) -> RowSet:
    """The remembered rows equal to a prepared kernel's (``simulate.Prepared``), or them,
    remembered now."""
    args = (prep.cols, prep.warp_off, prep.repeat_from, prep.timed_blocks)
    key = _fingerprint(*args)
    found = _row_sets.get(key)
    if found is not None:
        _row_sets.move_to_end(key)
        for rs in found:
            if rs.same_rows(*args):
                return rs
    else:
        found = _row_sets[key] = []
    rs = RowSet(*args)
    found.append(rs)
    while len(_row_sets) > 1 and (len(_row_sets) > MAX_ROW_SETS
                                  or _held_bytes() > MAX_ROW_BYTES):
        _row_sets.popitem(last=False)
    return rs


def _held_bytes() -> int:
    return sum(a.nbytes for sets in _row_sets.values() for rs in sets
               for a in rs.cols.values())


def ops_key(ops) -> tuple:
    """An ``issue.OpTiming`` as a dictionary key (its arrays' types and bytes)."""
    return tuple((a.dtype.str, a.tobytes()) for a in ops)

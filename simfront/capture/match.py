"""Matching two launch lists of the same step launch by launch (the trace's and ncu's).

Both lists are in launch order, so the match is an alignment: launches pair when their
function name (reduced to the function's own name), grid and block agree. A clean capture
aligns one to one with nothing left over; anything else is reported, never papered over.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from simfront.capture.launches import Launch


@dataclass(frozen=True)
class LaunchMatch:
    """The alignment of launch list ``a`` (e.g. the trace) against ``b`` (e.g. ncu)."""

    pairs: tuple[tuple[int, int], ...]        # (order in a, order in b)
    only_a: tuple[int, ...]                   # launches of a with no partner in b
    only_b: tuple[int, ...]
    n_a: int
    n_b: int
    field_mismatches: tuple[str, ...] = field(default=())  # regs/shmem disagreements of pairs

    @property
    def one_to_one(self) -> bool:
        return not self.only_a and not self.only_b and self.n_a == self.n_b == len(self.pairs)

    def summary(self) -> str:
        s = f"{len(self.pairs)} matched of {self.n_a} / {self.n_b}"
        if self.only_a:
            s += f", {len(self.only_a)} only in the first"
        if self.only_b:
            s += f", {len(self.only_b)} only in the second"
        if self.field_mismatches:
            s += f", {len(self.field_mismatches)} field mismatches"
        return s


def _sig(x: Launch) -> tuple:
    return (x.key, x.grid, x.block)


def match_launches(a: list[Launch], b: list[Launch], compare_fields: bool = True) -> LaunchMatch:
    """Align ``a`` with ``b`` by (function name, grid, block) in order."""
    sa, sb = [_sig(x) for x in a], [_sig(x) for x in b]
    sm = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    pairs: list[tuple[int, int]] = []
    for blk in sm.get_matching_blocks():
        pairs.extend((blk.a + k, blk.b + k) for k in range(blk.size))
    pa = {i for i, _ in pairs}
    pb = {j for _, j in pairs}
    mism: list[str] = []
    if compare_fields:
        for i, j in pairs:
            x, y = a[i], b[j]
            for attr in ("regs", "shmem"):
                vx, vy = getattr(x, attr), getattr(y, attr)
                if vx is not None and vy is not None and vx != vy:
                    mism.append(f"launch {i} ({x.key}): {attr} {vx} vs {vy}")
    return LaunchMatch(pairs=tuple(pairs), only_a=tuple(i for i in range(len(a)) if i not in pa),
                       only_b=tuple(j for j in range(len(b)) if j not in pb), n_a=len(a),
                       n_b=len(b), field_mismatches=tuple(mism))

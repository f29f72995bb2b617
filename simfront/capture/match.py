"""Matching two launch lists of the same step launch by launch (the trace's and ncu's).

Both lists are in launch order, so the match is an alignment on the function's own name
(what a mangled and a demangled name both reduce to). A clean capture aligns one to one
with nothing left over; anything else is reported, never papered over. Paired launches
whose grid or block differ are listed apart (``config_mismatches``): Triton autotunes in
every process, so two processes (a traced run and an ncu run) can pick different block
sizes and hence grids for the same kernel at the same place in the step. Register counts
are compared too, but ncu's ``launch__registers_per_thread`` is not the compiled count
(it read 16 where ptxas and cuFuncGetAttribute say 10), so those differences are notes.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from simfront.core.launches import Launch


@dataclass(frozen=True)
class LaunchMatch:
    """The alignment of launch list ``a`` (e.g. the trace) against ``b`` (e.g. ncu)."""

    pairs: tuple[tuple[int, int], ...]        # (order in a, order in b)
    only_a: tuple[int, ...]                   # launches of a with no partner in b
    only_b: tuple[int, ...]
    n_a: int
    n_b: int
    field_mismatches: tuple[str, ...] = field(default=())  # regs/shmem disagreements of pairs
    config_mismatches: tuple[str, ...] = field(default=())  # grid/block disagreements of pairs

    @property
    def one_to_one(self) -> bool:
        """Every launch paired, in order, by function name."""
        return not self.only_a and not self.only_b and self.n_a == self.n_b == len(self.pairs)

    @property
    def exact(self) -> bool:
        """One to one, and every pair with the same grid and block."""
        return self.one_to_one and not self.config_mismatches

    def summary(self) -> str:
        s = f"{len(self.pairs)} matched of {self.n_a} / {self.n_b}"
        if self.only_a:
            s += f", {len(self.only_a)} only in the first"
        if self.only_b:
            s += f", {len(self.only_b)} only in the second"
        if self.config_mismatches:
            s += f", {len(self.config_mismatches)} pairs with another grid/block"
        if self.field_mismatches:
            s += f", {len(self.field_mismatches)} field mismatches"
        return s


def _sig(x: Launch) -> str:
    return x.key


def match_launches(a: list[Launch], b: list[Launch], compare_fields: bool = True) -> LaunchMatch:
    """Align ``a`` with ``b`` by function name, in order."""
    sa, sb = [_sig(x) for x in a], [_sig(x) for x in b]
    sm = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    pairs: list[tuple[int, int]] = []
    for blk in sm.get_matching_blocks():
        pairs.extend((blk.a + k, blk.b + k) for k in range(blk.size))
    pa = {i for i, _ in pairs}
    pb = {j for _, j in pairs}
    mism: list[str] = []
    config = [f"launch {i} ({a[i].key}): grid {a[i].grid} block {a[i].block} vs grid "
              f"{b[j].grid} block {b[j].block}" for i, j in pairs
              if (a[i].grid, a[i].block) != (b[j].grid, b[j].block)]
    if compare_fields:
        for i, j in pairs:
            x, y = a[i], b[j]
            for attr in ("regs", "shmem"):
                vx, vy = getattr(x, attr), getattr(y, attr)
                if vx is not None and vy is not None and vx != vy:
                    mism.append(f"launch {i} ({x.key}): {attr} {vx} vs {vy}")
    return LaunchMatch(pairs=tuple(pairs), only_a=tuple(i for i in range(len(a)) if i not in pa),
                       only_b=tuple(j for j in range(len(b)) if j not in pb), n_a=len(a),
                       n_b=len(b), field_mismatches=tuple(mism), config_mismatches=tuple(config))

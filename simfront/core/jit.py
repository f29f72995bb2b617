"""numba's first compilation, shared among the processes of one machine.

simfront's compiled parts (each a *unit*: the trace scanner, the timing model) take about 20
and 25 s of one core to compile on a fresh checkout (numba's inliner made cheaper while they
compile: :mod:`simfront.core.numba_inlining`), and well under a second to load from
numba's cache on disk (``cache=True``) once one process wrote it. Left alone, every process
that starts at once compiles every unit itself: a sweep's two workers on two cores spend
their first 50 s compiling the same code side by side.

So a unit's first use in a process (:func:`first_use`) runs the unit's ``warm`` function (a
tiny input through the compiled code) under an exclusive lock on
``$SIMFRONT_CACHE/jit/<unit>.lock``: one process compiles while the others wait (up to
:data:`WAIT_S`, then they compile it themselves), and then load what it wrote. And a
process about to work (a model job) first compiles the units no other process is compiling
yet (:func:`warm_ahead`), so two workers compile the two units at the same time instead of
both in turn. A unit's ``warm`` must not need another unit, or
the two would be compiled one after the other again.

Nothing here changes what the code computes: a lock that cannot be had (no cache folder, a
file system without locks) only means the unit is warmed without it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from simfront.core.numba_inlining import shared_scope_copies
from simfront.core.paths import cache_root


@dataclass(frozen=True)
class Unit:
    """A compiled part of simfront and how to compile it: ``warm`` runs a tiny input through
    every compiled function of the part."""

    name: str
    warm: Callable[[], None]


#: units warm in this process (a forked worker inherits its parent's, and the code with it)
_warm: set[str] = set()


def first_use(unit: Unit, wait: bool = True) -> bool:
    """Make ``unit`` ready in this process: run its ``warm`` once, under the unit's lock.
    ``wait`` False: give up (False) when another process holds the lock. True once the unit
    is ready, at once when it already was or is being warmed by this very process."""
    if unit.name in _warm:
        return True
    try:
        folder = cache_root() / "jit"
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / f"{unit.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        fd = None
    try:
        if fd is not None and not _lock(fd, WAIT_S if wait else 0.0):
            if not wait:
                return False
            # the holder is stuck (a process stopped with ^Z): compile here rather than wait
        _warm.add(unit.name)  # before warming: its own uses inside ``warm`` return at once
        try:
            with shared_scope_copies():
                unit.warm()
        except BaseException:
            _warm.discard(unit.name)
            raise
        return True
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


#: the longest a process waits for another to compile a unit (compiling takes 20-25 s of
#: one core) before it compiles the unit itself
WAIT_S = 600.0


def _lock(fd: int, wait_s: float) -> bool:
    """Whether the lock on ``fd`` is had within ``wait_s`` seconds (True on a file system
    without locks, such as some NFS mounts: the unit is then warmed unlocked)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        except OSError:
            return True


def warm_ahead(units: Iterable[Unit]) -> None:
    """Compile (or load) now, in this order, each of ``units`` that no other process is
    compiling at the moment; the others are left to their first use."""
    for unit in units:
        first_use(unit, wait=False)

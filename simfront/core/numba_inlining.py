"""A cheaper copy of an inlined function's IR while simfront's units compile.

numba (0.68) inlines a function marked ``inline="always"`` by copying its IR twice
(``InlineWorker.inline_ir``), block by block, one ``copy.deepcopy`` a block. Every block
refers to the function's scope, which holds every variable of the function, so each
block's copy copies the whole scope again: a copy costs blocks x variables. The issue
model's scheduler, once its own callees are inlined into it, has 306 blocks and 2,955
variables. Known upstream: numba issues 8989 and 9204, numba-cuda issue 688.

:func:`shared_scope_copies` copies the blocks of one function with one memo, as one
``deepcopy`` of the blocks together would: they share one copy of the scope, as the
original blocks share one scope. The inliner renames that copy's variables into the
caller's scope either way, so the compiled code is the same: `python
bench/bench_refactor.py inlining` compiles the model and the scanner both ways and finds
the same machine code for every compiled signature, the model in 25 instead of 42 s of one
core and the scanner in 19 instead of 26 (bench/RESULTS.md, *numba's compilation in a
fresh checkout*); tests/test_core_numba_inlining.py does the same on a small function.

Where numba's inliner is not as described (another numba), nothing is changed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager


class _BlockCopies:
    """Stands for the ``copy`` module inside numba's inliner: a block is deep-copied with
    the memo of the other blocks of its scope, within one ``inline_ir`` call."""

    def __init__(self, block_type: type):
        self.block_type = block_type
        self.memos: dict[int, dict] | None = None

    def __getattr__(self, name: str):
        return getattr(copy, name)

    def deepcopy(self, x, memo=None):
        if memo is None and self.memos is not None and isinstance(x, self.block_type):
            memo = self.memos.setdefault(id(x.scope), {})
        return copy.deepcopy(x, memo)


def _inliner():
    """numba's inliner module and its Block class, or None where they are not as this
    module expects."""
    try:
        from numba.core import inline_closurecall as icc
        from numba.core import ir
    except ImportError:
        return None
    worker = getattr(icc, "InlineWorker", None)
    if getattr(icc, "copy", None) is not copy or not isinstance(getattr(ir, "Block", None), type) \
            or not callable(getattr(worker, "__dict__", {}).get("inline_ir")):
        return None
    return icc, ir.Block


@contextmanager
def shared_scope_copies() -> Iterator[None]:
    """Within the block: numba's inliner copies a function's blocks with one memo (see the
    module's docstring). Not for threads: it swaps a module attribute of numba's."""
    found = _inliner()
    if found is None:
        yield
        return
    icc, block_type = found
    worker = icc.InlineWorker
    original = worker.__dict__["inline_ir"]
    copies = _BlockCopies(block_type)

    def inline_ir(self, *args, **kwargs):
        outer, copies.memos = copies.memos, {}  # a memo per call: two sites get two copies
        try:
            return original(self, *args, **kwargs)
        finally:
            copies.memos = outer

    icc.copy = copies
    worker.inline_ir = inline_ir
    try:
        yield
    finally:
        worker.inline_ir = original
        icc.copy = copy

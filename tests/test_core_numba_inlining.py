"""The shared-memo copy of inlined IR (simfront.core.numba_inlining): numba's inliner
copies a function's blocks so that they share one scope, the compiled code is the same,
and numba is left as it was."""

import copy
import re

import numba
import numpy as np
import pytest
from numba.core import inline_closurecall as icc
from numba.core import ir
from numba.core.compiler import run_frontend

from simfront.core import numba_inlining
from simfront.core.numba_inlining import _BlockCopies, shared_scope_copies


@numba.njit(inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@numba.njit(inline="always")
def _step(a, i, lo, hi):
    v = a[i] * 2.0
    if i % 3 == 0:
        v = _clip(v, lo, hi)
    elif i % 3 == 1:
        v = _clip(-v, lo, hi) + 1.0
    return v


def _kernel(a, lo, hi):
    total = 0.0
    for i in range(a.shape[0]):
        total += _step(a, i, lo, hi)
        if total > 1e6:
            total = _clip(total, 0.0, 1e6)
    return total


def _asm(dispatcher) -> str:
    (text,) = dispatcher.inspect_asm().values()
    # names carry per-process hashes (constants) and a count of the functions compiled
    text = re.sub(r"\"?\.bytes\.-?\d+\"?", ".bytes.N", text)
    return re.sub(r"B\d+v\d+B", "BvB", text)


def test_blocks_of_one_function_share_one_copy_of_its_scope():
    blocks = run_frontend(_kernel).blocks
    assert len(blocks) > 3
    # numba's own way, a deepcopy a block: a copy of the scope each (blocks x variables);
    # the copies are kept alive, so that no two share an address by reuse
    plain = [copy.deepcopy(b) for b in blocks.values()]
    assert len({id(b.scope) for b in plain}) == len(blocks)
    copies = _BlockCopies(ir.Block)
    copies.memos = {}
    new = {label: copies.deepcopy(b) for label, b in blocks.items()}
    scopes = {id(b.scope) for b in new.values()}
    assert len(scopes) == 1
    (scope,) = {b.scope for b in new.values()}
    original = next(iter(blocks.values())).scope
    assert scope is not original
    assert sorted(scope.localvars._con) == sorted(original.localvars._con)
    assert [str(s) for b in new.values() for s in b.body] \
        == [str(s) for b in blocks.values() for s in b.body]
    # another call (another inlining site) gets copies of its own
    copies.memos = {}
    again = copies.deepcopy(next(iter(blocks.values())))
    assert again.scope is not scope


def test_compiled_code_and_results_are_the_same(monkeypatch):
    shared_copies = []
    own = _BlockCopies.deepcopy

    def spy(self, x, memo=None):
        shared_copies.append(isinstance(x, ir.Block) and self.memos is not None)
        return own(self, x, memo)

    monkeypatch.setattr(_BlockCopies, "deepcopy", spy)
    a = np.linspace(-3.0, 5.0, 101)
    plain = numba.njit(_kernel)
    want = plain(a, -1.0, 2.0)
    assert not shared_copies
    with shared_scope_copies():
        shared = numba.njit(_kernel)
        got = shared(a, -1.0, 2.0)
    assert any(shared_copies)  # the inliner copied through the shared memo
    assert got == want
    assert _asm(shared) == _asm(plain)


def test_numba_is_restored_after_the_block_even_on_an_error():
    inline_ir = icc.InlineWorker.__dict__["inline_ir"]
    with pytest.raises(RuntimeError):
        with shared_scope_copies():
            assert isinstance(icc.copy, _BlockCopies)
            assert icc.InlineWorker.__dict__["inline_ir"] is not inline_ir
            raise RuntimeError("stop")
    assert icc.copy is copy
    assert icc.InlineWorker.__dict__["inline_ir"] is inline_ir


def test_another_numba_is_left_alone(monkeypatch):
    """An inliner that no longer copies with the ``copy`` module is not touched."""
    stand_in = type("OtherCopy", (), {"deepcopy": staticmethod(copy.deepcopy)})()
    monkeypatch.setattr(icc, "copy", stand_in)
    assert numba_inlining._inliner() is None
    inline_ir = icc.InlineWorker.__dict__["inline_ir"]
    with shared_scope_copies():
        assert icc.copy is stand_in
        assert icc.InlineWorker.__dict__["inline_ir"] is inline_ir

"""numba's first compilation shared among processes (simfront.core.jit) and the sample
kernels that compile the scanner and the model (simfront.traces.samples)."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import numba
import numpy as np
import pytest

from simfront.core import jit
from simfront.core.paths import REPO_ROOT
from simfront.traces import decoded, samples
from simfront.traces.reader import KernelTrace, TraceSet


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    monkeypatch.setattr(jit, "_warm", set())
    return tmp_path


def _unit(name, calls, fail=False):
    def warm():
        calls.append(name)
        if fail:
            raise RuntimeError("no compiler")
    return jit.Unit(name, warm)


def _held(cache, name):
    """The unit's lock as another process holds it (flock: per open file)."""
    (cache / "jit").mkdir(exist_ok=True)
    fd = os.open(cache / "jit" / f"{name}.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_unit_is_warmed_once_per_process(cache):
    calls = []
    u = _unit("a", calls)
    assert jit.first_use(u) and jit.first_use(u)
    assert calls == ["a"]
    assert (cache / "jit" / "a.lock").exists()


def test_a_unit_another_process_compiles_is_waited_for(cache):
    calls = []
    u = _unit("b", calls)
    fd = _held(cache, "b")
    assert jit.first_use(u, wait=False) is False and calls == []
    threading.Timer(0.3, os.close, [fd]).start()
    t0 = time.monotonic()
    assert jit.first_use(u)
    assert time.monotonic() - t0 >= 0.25 and calls == ["b"]


def test_warm_ahead_takes_the_units_nobody_holds(cache):
    calls = []
    busy, free = _unit("busy", calls), _unit("free", calls)
    fd = _held(cache, "busy")
    try:
        jit.warm_ahead([busy, free])
    finally:
        os.close(fd)
    assert calls == ["free"]
    assert jit.first_use(busy) and calls == ["free", "busy"]


def test_a_warm_that_fails_is_tried_again(cache):
    calls = []
    u = _unit("c", calls, fail=True)
    with pytest.raises(RuntimeError):
        jit.first_use(u)
    with pytest.raises(RuntimeError):
        jit.first_use(u)
    assert calls == ["c", "c"]


def test_without_a_cache_folder_a_unit_is_still_warmed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SIMFRONT_CACHE", str(blocker))  # a file: no jit/ folder under it
    monkeypatch.setattr(jit, "_warm", set())
    calls = []
    assert jit.first_use(_unit("d", calls)) and calls == ["d"]


def test_the_samples_decoded_copies_are_their_texts_chunks():
    kept = samples.decoded_kernels()
    assert kept is not None, "the sample kernels' .chunks do not read"
    for path, k in zip(samples.texts(), kept, strict=True):
        text = KernelTrace(path)
        chunks = list(text.scan_text())
        why = ("the decoding changed: write the copies again with samples.rewrite_decoded("
               "(KernelTrace(p).header, list(KernelTrace(p).scan_text())) for p in "
               "samples.texts())")
        assert k.header == text.header, why
        assert len(k.chunks) == len(chunks), why
        for a, b in zip(k.chunks, chunks):
            for name in decoded._COLUMNS:
                assert np.array_equal(getattr(a, name), getattr(b, name)), (name, why)
            assert a.opcodes == b.opcodes and np.array_equal(a.tb_coords, b.tb_coords), why


def _dispatchers(modules):
    for mod in modules:
        for name, obj in vars(mod).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher) \
                    and obj.py_func.__module__ == mod.__name__:
                yield mod, name, obj


def test_the_model_warm_up_calls_every_compiled_function_the_steps_do(monkeypatch,
                                                                       tmp_path):
    """What a step's kernels call of the model's compiled code from Python, the warm-up's
    samples call too: so a process that warmed the model compiles nothing more later."""
    from simfront.gpu import load_gpu
    from simfront.sim.model import (cache, carry, fill, issue, linemap, prefetch, sharing,
                                    simulate)
    from simfront.sim.model.carry import L2Carry

    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    jit.first_use(simulate.MODEL)  # compiled before the wrappers go in (numba would see them)
    called: dict[str, set] = {"warm": set(), "steps": set()}
    phase = ["warm"]
    for mod, name, disp in _dispatchers([cache, carry, fill, issue, linemap, prefetch,
                                         sharing, simulate]):
        def counted(*a, _n=f"{mod.__name__}.{name}", _d=disp, **k):
            called[phase[0]].add(_n)
            return _d(*a, **k)
        monkeypatch.setattr(mod, name, counted)
    simulate._warm_model()
    phase[0] = "steps"
    gpu = load_gpu("h100")
    for name in ("mamba2_lm-tiny", "mamba1_lm-tiny", "mambavision-tiny"):
        l2 = L2Carry.empty(gpu)
        for k in TraceSet(REPO_ROOT / "traces" / name).kernels():
            for carried in (None, l2):
                prep = simulate.prepare_kernel(k, gpu, None, l2=carried)
                simulate.time_prepared(prep, gpu)
    assert called["steps"], "no compiled function was called: the wrappers missed them"
    assert called["steps"] <= called["warm"], sorted(called["steps"] - called["warm"])


def test_a_file_system_without_locks_still_warms(cache, monkeypatch):
    def no_locks(fd, op):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(jit.fcntl, "flock", no_locks)
    calls = []
    assert jit.first_use(_unit("e", calls), wait=False) and calls == ["e"]


def test_a_stuck_holder_is_waited_for_only_so_long(cache, monkeypatch):
    monkeypatch.setattr(jit, "WAIT_S", 0.3)
    calls = []
    fd = _held(cache, "g")
    try:
        t0 = time.monotonic()
        assert jit.first_use(_unit("g", calls))
        assert calls == ["g"] and time.monotonic() - t0 >= 0.3
    finally:
        os.close(fd)


def test_the_model_warms_from_the_texts_when_the_copies_do_not_read(monkeypatch, tmp_path):
    from simfront.sim.model import simulate

    from simfront.traces.reader import SCANNER

    jit.first_use(SCANNER)  # its own warm-up reads the texts too
    monkeypatch.setattr(jit, "_warm", {SCANNER.name})  # the model not yet warm
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    monkeypatch.setattr(samples, "decoded_kernels", lambda: None)
    read = []
    inner = KernelTrace.scan_text
    monkeypatch.setattr(KernelTrace, "scan_text",
                        lambda self, *a: read.append(self.path.name) or inner(self, *a))
    assert jit.first_use(simulate.MODEL)
    assert read == [p.name for p in samples.texts()]
    assert not (tmp_path / "decoded").exists() and not (tmp_path / "runs").exists()

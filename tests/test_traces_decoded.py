"""Decoded traces on disk (simfront.traces.decoded): the same chunks as the text, written
only for a trace read to its end, and a damaged copy never changes what a reader gets."""

from __future__ import annotations

import lzma
import shutil

import numpy as np
import pytest

from simfront.core.errors import TraceFormatError
from simfront.traces import KernelTrace, decoded

BWD = "kernel-35643.traceg.xz"
SMALL = 1 << 16  # several chunks of the backward scan kernel's 1.3 MB of text


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(decoded.ENV, raising=False)
    return tmp_path / "cache" / "decoded"


@pytest.fixture()
def bwd(tmp_path, scan_step):
    dst = tmp_path / BWD
    shutil.copy(scan_step / BWD, dst)
    return dst


def _text_chunks(path, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv(decoded.ENV, "off")
        return list(KernelTrace(path).iter_chunks(SMALL))


def _same(a, b):
    assert len(a) == len(b) > 1
    for x, y in zip(a, b):
        for name in decoded._COLUMNS:
            u, v = getattr(x, name), getattr(y, name)
            assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), name
            assert v.flags.writeable
        assert x.opcodes == y.opcodes and x.tb_coords == y.tb_coords


def test_a_trace_read_once_comes_back_from_its_copy(cache, bwd, monkeypatch):
    text = _text_chunks(bwd, monkeypatch)
    assert not cache.exists()  # off: nothing written
    first = list(KernelTrace(bwd).iter_chunks(SMALL))
    kept = list(cache.glob("*.chunks"))
    assert len(kept) == 1 and not list(cache.glob("*.tmp"))
    second = KernelTrace(bwd)
    again = list(second.iter_chunks(SMALL))
    _same(text, first)
    _same(text, again)
    assert second.header == KernelTrace(bwd).header
    # another chunk size is another copy
    list(KernelTrace(bwd).iter_chunks(SMALL * 2))
    assert len(list(cache.glob("*.chunks"))) == 2


def test_a_read_stopped_early_keeps_nothing(cache, bwd):
    it = KernelTrace(bwd).iter_chunks(SMALL)
    next(it)
    it.close()
    assert not cache.exists() or not list(cache.iterdir())


def test_a_truncated_trace_raises_and_keeps_nothing(cache, bwd, scan_step):
    text = lzma.open(scan_step / BWD, "rb").read()
    lzma.open(bwd, "wb").write(text[: len(text) * 2 // 3])
    with pytest.raises(TraceFormatError) as err:
        list(KernelTrace(bwd).iter_chunks(SMALL))
    assert BWD in str(err.value)
    assert not cache.exists() or not list(cache.iterdir())
    with pytest.raises(TraceFormatError):  # and again: still from the text
        list(KernelTrace(bwd).iter_chunks(SMALL))


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.97])
def test_a_damaged_copy_gives_the_texts_chunks_and_is_dropped(cache, bwd, monkeypatch, keep):
    text = _text_chunks(bwd, monkeypatch)
    list(KernelTrace(bwd).iter_chunks(SMALL))
    (kept,) = cache.glob("*.chunks")
    blob = kept.read_bytes()
    kept.write_bytes(blob[: int(len(blob) * keep)])
    _same(text, list(KernelTrace(bwd).iter_chunks(SMALL)))
    # dropped, or (a copy without even its header: read as none) written again whole
    assert not kept.exists() or kept.read_bytes() == blob
    _same(text, list(KernelTrace(bwd).iter_chunks(SMALL)))

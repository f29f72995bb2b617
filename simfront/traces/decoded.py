"""Decoded traces kept on disk: a kernel's columnar chunks as the reader made them.

Reading a kernel's trace text (``reader.KernelTrace.iter_chunks``) is the largest fixed
cost of timing it: the paper-size Mamba2 step's 1.2 GB of text takes about 10 s of one core
to decompress and scan, and every GPU configuration with another cache geometry or SM
count reads it again. The chunks it yields do not depend on the GPU, so the first read of a
trace file writes them here, each column compressed with zstd (the paper step's largest
kernel: 715 MB of columns in 11 MB), and later reads, by any process, take them back in a
tenth of the time.

A file is ``$SIMFRONT_CACHE/decoded/<trace sha256>-<chunk bytes>-<code hash>.chunks``: a
pickled ``KernelHeader``, then one record per chunk (its columns, opcodes and block
coordinates), then an end record with the chunk count. It is written to a temporary name
and renamed only once the text was read to its end without an error, so a trace with a bad
line never has one and keeps raising its ``TraceFormatError``. ``SIMFRONT_TRACE_CACHE=off``
reads the text every time.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import zstandard

from simfront.core.paths import cache_root
from simfront.core.provenance import sha256_code, sha256_file
from simfront.traces.header import KernelHeader
from simfront.traces.instructions import InstructionChunk

ENV = "SIMFRONT_TRACE_CACHE"
#: bump when the record layout changes (the code hash covers the decoding itself)
FORMAT = 1
_COLUMNS = ("tb", "warp", "pc", "mask", "op", "ndst", "dst", "nsrc", "src", "mem_width",
            "addr_mode", "addr_off", "addrs", "imm", "line")
#: the modules whose code decides what a chunk holds
_DECODERS = ("instructions.py", "reader.py", "header.py", "opcodes.py", "decoded.py")
_code: str | None = None


def cache_dir() -> Path | None:
    """``$SIMFRONT_CACHE/decoded``; None when ``SIMFRONT_TRACE_CACHE`` is off."""
    if os.environ.get(ENV, "").lower() in ("off", "0", "no", "false"):
        return None
    return cache_root() / "decoded"


def _code_hash() -> str:
    global _code
    if _code is None:
        here = Path(__file__).parent
        _code = sha256_code((here / n for n in _DECODERS), str(FORMAT).encode()).hexdigest()[:16]
    return _code


def path_for(trace: Path, chunk_bytes: int) -> Path | None:
    """Where ``trace``'s chunks of ``chunk_bytes`` of text are kept (None: no cache)."""
    where = cache_dir()
    if where is None:
        return None
    return where / f"{sha256_file(trace)}-{chunk_bytes}-{_code_hash()}.chunks"


def _packed(chunk: InstructionChunk, zc: zstandard.ZstdCompressor) -> tuple:
    cols = []
    for name in _COLUMNS:
        a = np.ascontiguousarray(getattr(chunk, name))
        cols.append((a.dtype.str, a.shape, zc.compress(a.data)))
    return ("chunk", cols, chunk.opcodes, chunk.tb_coords)


def _unpacked(record: tuple, zd: zstandard.ZstdDecompressor) -> InstructionChunk:
    kind, cols, opcodes, coords = record
    if kind != "chunk" or len(cols) != len(_COLUMNS):
        raise ValueError("not a chunk record")
    arrays = []
    for dtype, shape, blob in cols:
        a = np.empty(shape, np.dtype(dtype))
        view = memoryview(a).cast("B") if a.nbytes else memoryview(bytearray(0))
        with zd.stream_reader(blob) as r:
            got = 0
            while got < a.nbytes:
                n = r.readinto(view[got:])
                if not n:
                    raise ValueError("a column is shorter than its shape")
                got += n
        arrays.append(a)
    return InstructionChunk(*arrays, opcodes, coords)


def read(path: Path) -> tuple[KernelHeader, Iterator[InstructionChunk]] | None:
    """A kept trace's header and its chunks, or None when there is none (or it is not one
    this code wrote). The chunks raise ValueError past a damaged record."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    try:
        header = pickle.load(f)
        if not isinstance(header, KernelHeader):
            raise ValueError("no header")
    except Exception:  # noqa: BLE001 - any damage means: read the text instead
        f.close()
        return None

    def chunks() -> Iterator[InstructionChunk]:
        zd = zstandard.ZstdDecompressor()
        with f:
            n = 0
            while True:
                try:
                    record = pickle.load(f)
                except Exception as e:  # noqa: BLE001
                    raise ValueError(f"damaged record after chunk {n}") from e
                if record[0] == "end":
                    if record[1] != n:
                        raise ValueError("the end record's count differs")
                    return
                yield _unpacked(record, zd)
                n += 1

    return header, chunks()


class Writer:
    """Chunks written as the text is read (``add``), kept only by ``commit``."""

    def __init__(self, path: Path, header: KernelHeader):
        self.path = path
        self.tmp = path.with_name(f"{path.name}.{os.getpid()}.{id(self)}.tmp")
        self.n = 0
        self.zc = zstandard.ZstdCompressor(level=3)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.tmp, "wb")
            pickle.dump(header, self.f, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:
            self.f = None  # a cache that cannot be written only costs time

    def add(self, chunk: InstructionChunk) -> None:
        if self.f is None:
            return
        try:
            pickle.dump(_packed(chunk, self.zc), self.f, protocol=pickle.HIGHEST_PROTOCOL)
            self.n += 1
        except OSError:
            self.abandon()

    def commit(self) -> None:
        if self.f is None:
            return
        try:
            pickle.dump(("end", self.n), self.f, protocol=pickle.HIGHEST_PROTOCOL)
            self.f.close()
            os.replace(self.tmp, self.path)
        except OSError:
            self.abandon()
        self.f = None

    def abandon(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None
        try:
            self.tmp.unlink()
        except OSError:
            pass

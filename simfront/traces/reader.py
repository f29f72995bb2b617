"""Reading a trace directory: ``kernelslist.g`` plus one ``kernel-N.traceg[.xz|.zst]`` per launch.

Everything streams: a kernel is read in buffers of complete lines (``chunk_bytes`` of text at
a time), each turned into an :class:`InstructionChunk` of numpy columns, so memory stays
bounded whatever the kernel's size.

    ts = TraceSet("traces/scan_fwd")
    for kernel in ts.kernels():
        print(kernel.header.name, kernel.header.grid)
        for chunk in kernel.iter_chunks():
            ...  # numpy columns
"""

from __future__ import annotations

import io
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zstandard

from simfront.core import jit
from simfront.core.errors import TraceFormatError
from simfront.traces import decoded, samples
from simfront.traces.header import KernelHeader, parse_header
from simfront.traces.instructions import (
    OPTABLE_SIZE, Instruction, InstructionChunk, error_field, finish_warp_state,
    new_warp_state, parse_line, scan_body,
)
from simfront.traces.kernelslist import Entry, KernelRef, MemcpyEvent, parse_kernelslist
from simfront.traces.multiplicity import MULTIPLICITY, count_of, read_multiplicity

DEFAULT_CHUNK_BYTES = 8 << 20
TRACE_SUFFIXES = (".traceg", ".traceg.xz", ".traceg.zst", ".trace", ".trace.xz")
_KERNEL_ID = re.compile(r"kernel-(\d+)")


def open_trace_file(path: Path) -> io.BufferedIOBase:
    """A binary stream of a trace file's text, decompressing ``.xz`` or ``.zst``."""
    name = path.name
    try:
        if name.endswith(".xz"):
            return lzma.open(path, "rb")  # type: ignore[return-value]
        if name.endswith(".zst"):
            return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb"),
                                                                                closefd=True))
        return open(path, "rb")
    except FileNotFoundError:
        raise TraceFormatError("trace file not found", path) from None


class _Stream:
    """A trace file's bytes with line numbering, turning decompression errors into
    TraceFormatErrors that name the file and the last line read."""

    def __init__(self, path: Path):
        self.path = path
        self._f = open_trace_file(path)
        self.line = 1  # number of the next line to be read

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc) -> None:
        self._f.close()

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except (lzma.LZMAError, EOFError, OSError) as exc:
            raise TraceFormatError(f"cannot decompress ({exc}) after line {self.line - 1}",
                                   self.path, self.line) from None
        except Exception as exc:  # zstandard raises its own error type
            if type(exc).__name__ == "ZstdError":
                raise TraceFormatError(f"cannot decompress ({exc})", self.path, self.line) from None
            raise

    def readline(self) -> bytes:
        data = self._guard(self._f.readline)
        if data:
            self.line += 1
        return data

    def read(self, n: int) -> bytes:
        return self._guard(self._f.read, n)


def _read_header(stream: _Stream) -> tuple[KernelHeader, bytes]:
    """Read the ``-key = value`` lines; return the header and the first body line."""
    lines: list[tuple[int, str]] = []
    while True:
        lineno = stream.line
        raw = stream.readline()
        if not raw:
            break
        if not raw.startswith(b"-"):
            if not lines and not raw.strip():
                continue
            try:
                return parse_header(lines, stream.path), raw
            except TraceFormatError:
                raise
        try:
            lines.append((lineno, raw.decode().rstrip("\r\n")))
        except UnicodeDecodeError:
            raise TraceFormatError("header line is not text", stream.path, lineno) from None
    if not lines:
        raise TraceFormatError("empty trace file (no kernel header)", stream.path, 1)
    return parse_header(lines, stream.path), b""


@dataclass(frozen=True)
class Warp:
    warp_id: int
    instructions: list[Instruction]


@dataclass(frozen=True)
class ThreadBlock:
    index: int
    coords: tuple[int, int, int]
    warps: list[Warp]


class KernelTrace:
    """One launch's trace file. Opening it reads only the header; the body is read on demand."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._header: KernelHeader | None = None

    def __repr__(self) -> str:
        return f"KernelTrace({str(self.path)!r})"

    @property
    def header(self) -> KernelHeader:
        if self._header is None:
            with _Stream(self.path) as stream:
                self._header, _ = _read_header(stream)
        return self._header

    @property
    def kernel_id(self) -> int:
        m = _KERNEL_ID.match(self.path.name)
        return int(m.group(1)) if m else self.header.kernel_id

    def iter_chunks(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[InstructionChunk]:
        """The body as columnar chunks, checked as it goes: a malformed line, a warp whose
        instruction count differs from its ``insts =`` line, or a file cut mid-line raise
        TraceFormatError naming the file and line. A trace read before comes from its
        decoded copy (``decoded``), the same chunks."""
        kept_at = decoded.path_for(self.path, chunk_bytes)
        kept = decoded.read(kept_at) if kept_at is not None else None
        if kept is None:
            yield from self._scan(chunk_bytes, kept_at)
            return
        self._header, chunks = kept
        n = 0
        try:
            for chunk in chunks:
                yield chunk
                n += 1
            return
        except ValueError:
            kept_at.unlink(missing_ok=True)
        # the copy is damaged past its n-th chunk: the text's chunks from there
        for i, chunk in enumerate(self._scan(chunk_bytes, None)):
            if i >= n:
                yield chunk

    def scan_text(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[InstructionChunk]:
        """The body's chunks scanned from the text, never from or into a decoded copy."""
        return self._scan(chunk_bytes, None)

    def _scan(self, chunk_bytes: int, keep_at: Path | None) -> Iterator[InstructionChunk]:
        """The body's chunks scanned from the text; written to ``keep_at`` (``decoded``)
        once all of it was read without an error."""
        jit.first_use(SCANNER)
        with _Stream(self.path) as stream:
            header, first = _read_header(stream)
            self._header = header
            keep = decoded.Writer(keep_at, header) if keep_at is not None else None
            try:
                yield from self._scan_body(stream, header, first, chunk_bytes, keep)
                if keep is not None:
                    keep.commit()
            finally:
                if keep is not None:
                    keep.abandon()

    def _scan_body(self, stream: "_Stream", header: KernelHeader, first: bytes,
                   chunk_bytes: int, keep: "decoded.Writer | None") -> Iterator[InstructionChunk]:
        """The scan itself (``instructions.scan_body``), buffer by buffer, each chunk
        handed to ``keep`` too."""
        version = header.tracer_version
        lineinfo = header.lineinfo
        op_keys = np.zeros(OPTABLE_SIZE, np.uint64)
        op_vals = np.full(OPTABLE_SIZE, -1, np.int32)
        op_count = np.zeros(1, np.int64)
        op_first = np.zeros((OPTABLE_SIZE, 3), np.int64)
        opcodes: list[str] = []
        tb, warp, line = -1, -1, stream.line - (1 if first else 0)
        carry = first
        wst = new_warp_state(header.warps_per_block)
        eof = False
        while not eof:
            block = stream.read(chunk_bytes)
            eof = not block
            data = carry + block
            if eof:
                cut = len(data)
                if data and not data.endswith(b"\n"):
                    tail = data[data.rfind(b"\n") + 1:]
                    if tail.strip():
                        bad = line + data.count(b"\n")
                        raise TraceFormatError(
                            "file ends in the middle of a line (truncated?)", self.path, bad)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    carry = data
                    continue
            carry = data[cut:]
            if cut == 0:
                continue
            buf = np.frombuffer(data, dtype=np.uint8, count=cut)
            before = int(op_count[0])
            out = scan_body(buf, 0, cut, line, tb, warp, version, lineinfo,
                            op_keys, op_vals, op_count, op_first, wst)
            (n, c_tb, c_warp, pc, mask, op, ndst, dst, nsrc, src, width, mode, addr_off,
             addrs, imm, c_line, tb_xyz, tb, warp, next_line, err,
             err_line) = out
            if err:
                self._raise_line_error(data, line, err, err_line, version, lineinfo, header)
            for k in range(before, int(op_count[0])):
                off, length = int(op_first[k, 0]), int(op_first[k, 1])
                opcodes.append(data[off:off + length].decode())
            line = next_line
            coords = {int(tb - len(tb_xyz) + 1 + i): (int(x), int(y), int(z))
                      for i, (x, y, z) in enumerate(tb_xyz)}
            chunk = InstructionChunk(c_tb, c_warp, pc, mask, op, ndst, dst, nsrc, src,
                                     width, mode, addr_off, addrs, imm, c_line,
                                     list(opcodes), coords)
            if keep is not None:
                keep.add(chunk)
            yield chunk
        err, err_line = finish_warp_state(wst, tb)
        if err:
            self._raise_line_error(b"", line, err, err_line, version, lineinfo, header)

    def _raise_line_error(self, data: bytes, first_line: int, err: int, err_line: int,
                          version: int, lineinfo: bool, header: KernelHeader) -> None:
        lines = data.split(b"\n")
        idx = err_line - first_line
        text = lines[idx].decode(errors="replace") if 0 <= idx < len(lines) else ""
        field = error_field(err)
        if err in (13, 16):
            what = ("instruction outside a warp (no 'warp =' before it)" if err == 16
                    else f"cannot read structure line '{text.strip()}'")
            raise TraceFormatError(what, self.path, err_line, field)
        if err == 17:
            raise TraceFormatError("the warp's instruction lines do not add up to its 'insts =' "
                                   "(truncated or corrupted?)", self.path, err_line, "insts")
        if err == 18:
            raise TraceFormatError(
                f"this thread block does not hold the {header.warps_per_block} warps that a block "
                f"of {header.block} has (truncated?)", self.path, err_line, "block dim")
        if err == 15:
            raise TraceFormatError("too many distinct opcodes in one kernel", self.path, err_line)
        parse_line(text, err_line, self.path, version, lineinfo)  # raises with the field named
        raise TraceFormatError(f"cannot read '{text.strip()}'", self.path, err_line, field)

    def iter_blocks(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[ThreadBlock]:
        """The body as readable records, one thread block at a time."""
        pending: dict[int, list[Instruction]] = {}
        cur_tb, cur_coords = -1, (0, 0, 0)
        coords: dict[int, tuple[int, int, int]] = {}
        for chunk in self.iter_chunks(chunk_bytes):
            coords.update(chunk.tb_coords)
            for i in range(len(chunk)):
                t = int(chunk.tb[i])
                if t != cur_tb:
                    if cur_tb >= 0:
                        yield ThreadBlock(cur_tb, cur_coords,
                                          [Warp(w, ins) for w, ins in pending.items()])
                    cur_tb, cur_coords, pending = t, coords.pop(t, (0, 0, 0)), {}
                pending.setdefault(int(chunk.warp[i]), []).append(chunk.instruction(i))
        if cur_tb >= 0:
            yield ThreadBlock(cur_tb, cur_coords, [Warp(w, ins) for w, ins in pending.items()])

    def instruction_count(self) -> int:
        """Warp instructions in the file (reads the whole body)."""
        return sum(len(c) for c in self.iter_chunks())


class TraceSet:
    """A trace directory. Kernel files listed in ``kernelslist.g`` must exist."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise TraceFormatError("not a directory", self.path)
        self.kernelslist = self.path / "kernelslist.g"
        self.entries: list[Entry] = parse_kernelslist(self.kernelslist)
        for e in self.entries:
            if isinstance(e, KernelRef) and not (self.path / e.file).is_file():
                raise TraceFormatError(f"lists '{e.file}', which does not exist",
                                       self.kernelslist, e.line)
        #: file -> launches it stands for (deduplicated sets; empty otherwise)
        self.multiplicity: dict[str, int] = read_multiplicity(self.path)
        listed = {e.file for e in self.entries if isinstance(e, KernelRef)}
        stray = sorted(set(self.multiplicity) - listed)
        if stray:
            raise TraceFormatError(f"counts {stray[0]}, which kernelslist.g does not list",
                                   self.path / MULTIPLICITY)

    def count(self, file: str | Path) -> int:
        """How many launches of the window a kernel file stands for (1 unless deduplicated)."""
        return count_of(self.multiplicity, str(file))

    @property
    def launches(self) -> int:
        """Launches of the window: kernels counted as many times as they ran."""
        return sum(self.count(r.file) for r in self.kernel_refs)

    def __repr__(self) -> str:
        return f"TraceSet({str(self.path)!r}, {len(self.kernel_refs)} kernels)"

    @property
    def kernel_refs(self) -> list[KernelRef]:
        return [e for e in self.entries if isinstance(e, KernelRef)]

    @property
    def memcpys(self) -> list[MemcpyEvent]:
        return [e for e in self.entries if isinstance(e, MemcpyEvent)]

    def __len__(self) -> int:
        return len(self.kernel_refs)

    def kernels(self) -> Iterator[KernelTrace]:
        for ref in self.kernel_refs:
            yield KernelTrace(self.path / ref.file)

    def kernel(self, key: str | int) -> KernelTrace:
        """A kernel by file name (``kernel-35636.traceg.xz``), stem (``kernel-35636``) or id."""
        for ref in self.kernel_refs:
            stem = ref.stem
            if key in (ref.file, stem) or (isinstance(key, int) and stem == f"kernel-{key}") \
                    or (isinstance(key, str) and key.isdigit() and stem == f"kernel-{key}"):
                return KernelTrace(self.path / ref.file)
        raise TraceFormatError(f"no kernel '{key}' in this trace set", self.kernelslist)


def _warm_scanner() -> None:
    for path in samples.texts():
        for _ in KernelTrace(path).scan_text():
            pass


#: The scanner as a compiled unit (``simfront.core.jit``): compiled by the first process
#: to scan a trace's text, loaded by the others.
SCANNER = jit.Unit("scanner", _warm_scanner)

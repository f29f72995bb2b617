"""Issue-model runs reused within a process, and across processes through the disk.

The issue model (``issue.run_sm``) is a function of SM 0's rows, the opcodes' timing and the
SM's configuration alone, and a model of a network asks it the same question many times:
a layer's kernels repeat layer after layer on rows that differ only in addresses, which the
rows do not hold (the cache results they do hold come out the same), and a kernel's DRAM
latency search and its run at its own clock can land on a configuration already run. About
half of one configuration's runs of ``traces/mamba2_lm-paper-box`` are such repeats.

Rows are matched by content: a cheap fingerprint finds the candidates, and every column is
compared in full before a run is reused, so a reused run is the run the rows would give.

Runs are also kept on disk (``runs_dir``), a file per row set named by a hash of its rows
and of the model's code, so that another process asking the same question reads the
answer: a sweep's L2 sizes leave many kernels' rows, and so their runs, as they were (the
paper step at 50-100 MiB against 25 MiB: a third of the issue loop's time, bench/RESULTS.md,
*Model speed and the refactor*). Each file is a log of framed records, appended with one
write each; a reader takes the records whose checksums hold and reads on from there when
the file grows, so a torn or foreign record costs a run, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from simfront.core.paths import cache_root
from simfront.traces import reader

#: Row sets remembered (least recently used dropped): a model's distinct kernels, with room,
#: and at most this many bytes of rows held only here (the prepared kernels they belong to
#: may have left the model cache).
MAX_ROW_SETS = 64
MAX_ROW_BYTES = 2 << 30
#: Rows of each column the fingerprint samples, evenly spread.
SAMPLES = 257
#: ``SIMFRONT_MODEL_CACHE=off`` keeps runs and prepared kernels in memory only.
DISK_CACHE_ENV = "SIMFRONT_MODEL_CACHE"
#: A record on disk: its payload's length and the payload's blake2b-128, then the payload
#: (a pickled (question, run) pair).
_FRAME = struct.Struct("<I16s")


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
    #: ``rows_digest`` of the rows, where known
    digest: str = ""
    #: the runs' file on disk (``runs_file``) and how far it has been read; None: not
    #: looked for yet, or no disk cache
    path: Path | None = None
    read_to: int = 0

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
    rs = RowSet(*args, digest=prep.rows_digest)
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


def model_code_hash() -> str:
    """The model's and the trace reader's code: a change to either makes what the disk
    holds of them (prepared kernels, issue-model runs) stale."""
    global _source_hash
    if _source_hash is None:
        h = hashlib.sha256()
        for d in (Path(__file__).parent, Path(reader.__file__).parent):
            for p in sorted(d.glob("*.py")):
                h.update(p.name.encode() + b"\0" + p.read_bytes())
        _source_hash = h.hexdigest()
    return _source_hash


_source_hash: str | None = None


def model_disk_dir(name: str) -> Path | None:
    """``$SIMFRONT_CACHE/<name>``, where the model keeps what it made for later processes;
    None when ``SIMFRONT_MODEL_CACHE`` is off."""
    if os.environ.get(DISK_CACHE_ENV, "").lower() in ("off", "0", "no", "false"):
        return None
    return cache_root() / name


def runs_dir() -> Path | None:
    """Where issue-model runs are kept between processes: ``$SIMFRONT_CACHE/runs``."""
    return model_disk_dir("runs")


def rows_digest(cols: dict, warp_off: np.ndarray, repeat_from: int,
                timed_blocks: int) -> str:
    """A hash of SM 0's rows as prepared (``simulate.Prepared``): every column's name,
    type, shape and bytes."""
    h = hashlib.blake2b(repr((repeat_from, timed_blocks)).encode(), digest_size=20)
    h.update(warp_off.dtype.str.encode() + np.ascontiguousarray(warp_off).data)
    for name in sorted(cols):
        a = np.ascontiguousarray(cols[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.data)
    return h.hexdigest()


def runs_file(rs: RowSet) -> Path | None:
    """The file of a row set's runs: named by a hash of its rows and the model's code."""
    where = runs_dir()
    if where is None:
        return None
    if not rs.digest:
        rs.digest = rows_digest(rs.cols, rs.warp_off, rs.repeat_from, rs.timed_blocks)
    name = hashlib.blake2b((model_code_hash() + rs.digest).encode(), digest_size=20)
    return where / f"{name.hexdigest()}.runs"


def question_key(ops_key: tuple, cfg) -> bytes:
    """An issue-model question (opcode timing and ``SmConfig``) as bytes fit for disk."""
    h = hashlib.blake2b(repr(tuple(cfg)).encode(), digest_size=16)
    for dtype, raw in ops_key:
        h.update(dtype.encode() + b"\0" + raw)
    return h.digest()


def stored_run(rs: RowSet, question: bytes) -> IssueRun | None:
    """A run another process (or an earlier one) made on these rows and this question,
    read from the row set's file, or None. What the file holds is remembered in
    ``rs.runs`` under ``question``."""
    if rs.path is None:
        rs.path = runs_file(rs)
        if rs.path is None:
            return None
    try:
        size = rs.path.stat().st_size
    except OSError:
        return None
    if size > rs.read_to:
        _read_on(rs)
    return rs.runs.get(question)


def _read_on(rs: RowSet) -> None:
    """The records past ``rs.read_to`` into ``rs.runs``, up to the first that is not
    whole (another process may be writing it: read again when the file grows)."""
    try:
        with open(rs.path, "rb") as f:
            f.seek(rs.read_to)
            data = f.read()
    except OSError:
        return
    at = 0
    while at + _FRAME.size <= len(data):
        n, check = _FRAME.unpack_from(data, at)
        body = data[at + _FRAME.size: at + _FRAME.size + n]
        if len(body) < n or hashlib.blake2b(body, digest_size=16).digest() != check:
            break
        try:
            question, run = pickle.loads(body)
            rs.runs[question] = IssueRun(*run)
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError):
            break
        at += _FRAME.size + n
    rs.read_to += at


def store_run(rs: RowSet, question: bytes, run: IssueRun) -> None:
    """Append a run to the row set's file (one write, O_APPEND): a disk that cannot be
    written only costs time."""
    if rs.path is None:
        return
    body = pickle.dumps((question, tuple(run)), protocol=pickle.HIGHEST_PROTOCOL)
    frame = _FRAME.pack(len(body), hashlib.blake2b(body, digest_size=16).digest()) + body
    try:
        rs.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(rs.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, frame)
        finally:
            os.close(fd)
    except OSError:
        pass

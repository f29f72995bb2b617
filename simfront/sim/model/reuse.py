"""Issue-model runs reused within a process, and across processes through the disk.

The issue model (``issue.run_sm``) is a function of SM 0's rows, the opcodes' timing and the
SM's configuration alone, and a model of a network asks it the same question many times:
a layer's kernels repeat layer after layer on rows that differ only in addresses, which the
rows do not hold (the cache results they do hold come out the same), and a kernel's DRAM
latency search and its run at its own clock can land on a configuration already run. About
half of one configuration's runs of ``traces/mamba2_lm-paper-box`` are such repeats.

Rows are matched by a hash of their content (``rows_digest``: every column's type, shape
and bytes), worked out once per prepared kernel and kept with it on disk, so a reused run
is the run the rows would give and the rows themselves need not be held here.

Runs are also kept on disk (``runs_dir``), a file per row set named by a hash of its rows
and of the model's code, so that another process asking the same question reads the
answer: a sweep's L2 sizes leave many kernels' rows, and so their runs, as they were (the
paper step on 132 SMs at 50, 75, 100 MiB after 25 MiB: 241, 179, 136 runs where each made
about 430; bench/RESULTS.md, *Model speed and the refactor*). Each file is a log of framed
records, appended with one write each; a reader takes the records whose checksums hold and
reads on from there when the file grows, so a torn or foreign record costs a run, never a
wrong answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import struct
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from simfront.core.paths import cache_root
from simfront.core.provenance import sha256_code
from simfront.traces import reader

#: Row sets remembered (least recently used dropped): a few sets' distinct kernels; each
#: holds only its runs, a few kilobytes, and the disk (``runs_dir``) keeps the rest.
MAX_ROW_SETS = 1024
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
    """The runs made on one set of SM 0's rows (``Prepared.cols``, ``warp_off``, repeated
    from ``repeat_from`` up to ``timed_blocks`` blocks), by question (``question_key``)."""

    digest: str
    runs: dict = field(default_factory=dict)
    #: the runs' file on disk (``runs_file``) and how far it has been read; None: not
    #: looked for yet, or no disk cache
    path: Path | None = None
    read_to: int = 0


_row_sets: OrderedDict[str, RowSet] = OrderedDict()


def row_set(prep) -> RowSet:
    """The remembered runs of rows equal to a prepared kernel's (``simulate.Prepared``),
    or an empty set of them, remembered now."""
    digest = digest_of(prep)
    rs = _row_sets.get(digest)
    if rs is not None:
        _row_sets.move_to_end(digest)
        return rs
    rs = _row_sets[digest] = RowSet(digest)
    while len(_row_sets) > MAX_ROW_SETS:
        _row_sets.popitem(last=False)
    return rs


def digest_of(prep) -> str:
    """``prep.rows_digest``, worked out on first use (a copy of a prepared kernel with
    other rows, ``dataclasses.replace``, starts without one)."""
    if not prep.rows_digest:
        prep.rows_digest = rows_digest(prep.cols, prep.warp_off, prep.repeat_from,
                                       prep.timed_blocks)
    return prep.rows_digest


def ops_key(ops) -> bytes:
    """A hash of an ``issue.OpTiming`` (its arrays' types and bytes)."""
    h = hashlib.blake2b(digest_size=16)
    for a in ops:
        h.update(a.dtype.str.encode() + b"\0" + np.ascontiguousarray(a).data)
    return h.digest()


def model_code_hash() -> str:
    """The model's and the trace reader's code: a change to either makes what the disk
    holds of them (prepared kernels, issue-model runs) stale."""
    global _source_hash
    if _source_hash is None:
        _source_hash = sha256_code(p for d in (Path(__file__).parent, Path(reader.__file__).parent)
                                   for p in sorted(d.glob("*.py"))).hexdigest()
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


_memory_only = 0


@contextlib.contextmanager
def kept_in_memory() -> Iterator[None]:
    """Runs made inside are neither read from nor written to disk (the model's warm-up:
    its sample kernels are nobody's results)."""
    global _memory_only
    _memory_only += 1
    try:
        yield
    finally:
        _memory_only -= 1


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
    name = hashlib.blake2b((model_code_hash() + rs.digest).encode(), digest_size=20)
    return where / f"{name.hexdigest()}.runs"


def question_key(ops_key: bytes, cfg) -> bytes:
    """An issue-model question (``ops_key`` of its opcode timing and its ``SmConfig``) as
    bytes fit for disk."""
    return hashlib.blake2b(ops_key + repr(tuple(cfg)).encode(), digest_size=16).digest()


def stored_run(rs: RowSet, question: bytes) -> IssueRun | None:
    """A run another process (or an earlier one) made on these rows and this question,
    read from the row set's file, or None. What the file holds is remembered in
    ``rs.runs`` under ``question``."""
    if _memory_only:
        return None
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
    if rs.path is None or _memory_only:
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

"""Per-kernel statistics of a trace: what the kernel asks of each pipe and of memory.

For each kernel: warp-instruction counts by category (:mod:`simfront.traces.opcodes`), by
pipe, by MUFU function and by memory operation and space (with bytes moved), thread-level
FLOPs of tensor and vector work and their ratio, the active-lane fraction, the distinct
128-byte lines and 32-byte sectors of global memory touched, and a signature that
identifies repeated launches of the same work.

Everything is computed from the columnar chunks of the reader, streaming: per chunk, a
``bincount`` over the opcode index gives warp instructions, active lanes and bytes per
distinct opcode string; the classification is applied once per distinct opcode. Only the
set of touched global lines (8 bytes per distinct line) grows with the kernel.

Conventions:
- counts are warp instructions (what the tracer's ``insts =`` lines count; the record's
  ``instructions`` column, as in ``simfront.stats.schema``); ``thread_instructions`` sums
  the active lanes;
- bytes of a memory instruction = ``mem_width`` x active lanes (``bytes_per_lane`` of the
  opcode table where the tracer's width is known wrong); a predicated-off instruction
  (mask 0) counts as issued but moves no bytes;
- lines and sectors are counted for global, local and generic accesses (shared-memory and
  constant addresses are not in the global address space); an access that straddles a
  boundary counts both lines.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from simfront.core.atomic import write_text
from simfront.core.errors import InputError
from simfront.core.provenance import sha256_code, sha256_file
from simfront.traces import decoded
from simfront.traces.opcodes import CATEGORIES, PIPES, classify
from simfront.traces.reader import KernelTrace, TraceSet

LINE_BYTES = 128
SECTOR_BYTES = 32
_SECTOR_SHIFT = np.uint64(SECTOR_BYTES.bit_length() - 1)
_LINE_PER_SECTOR_SHIFT = np.uint64((LINE_BYTES // SECTOR_BYTES).bit_length() - 1)
_FOOTPRINT_SPACES = frozenset({"global", "local", "generic"})


@dataclass
class KernelStats:
    """Statistics of one kernel launch; build with :func:`kernel_stats`."""

    file: str
    kernel_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    #: per distinct opcode string: warp instructions, active lanes, bytes moved
    warps_by_opcode: dict[str, int] = field(default_factory=dict)
    lanes_by_opcode: dict[str, int] = field(default_factory=dict)
    bytes_by_opcode: dict[str, int] = field(default_factory=dict)
    lines_128b: int = 0
    sectors_32b: int = 0

    # -- totals ---------------------------------------------------------------------------
    @property
    def warp_instructions(self) -> int:
        return sum(self.warps_by_opcode.values())

    @property
    def thread_instructions(self) -> int:
        return sum(self.lanes_by_opcode.values())

    @property
    def active_lane_fraction(self) -> float:
        n = self.warp_instructions
        return self.thread_instructions / (32 * n) if n else 0.0

    def _sum_by(self, key, source: dict[str, int]) -> dict[str, int]:
        out: Counter[str] = Counter()
        for op, v in source.items():
            k = key(classify(op))
            if k is not None:
                out[k] += v
        return dict(out)

    def by_category(self) -> dict[str, int]:
        """Warp instructions per category; sums to :attr:`warp_instructions`."""
        got = self._sum_by(lambda c: c.category, self.warps_by_opcode)
        return {c: got.get(c, 0) for c in CATEGORIES}

    def by_pipe(self) -> dict[str, int]:
        got = self._sum_by(lambda c: c.pipe, self.warps_by_opcode)
        return {p: got.get(p, 0) for p in PIPES}

    def sfu_by_function(self) -> dict[str, int]:
        return self._sum_by(lambda c: (c.sfu_function or "?") if c.category == "sfu" else None,
                            self.warps_by_opcode)

    def memory_instructions(self) -> dict[str, int]:
        return self._sum_by(lambda c: c.mem_key, self.warps_by_opcode)

    def memory_bytes(self) -> dict[str, int]:
        return self._sum_by(lambda c: c.mem_key, self.bytes_by_opcode)

    def unknown_opcodes(self) -> dict[str, int]:
        return {op: n for op, n in self.warps_by_opcode.items() if not classify(op).known}

    # -- FLOPs ----------------------------------------------------------------------------
    def flops(self) -> dict[str, float]:
        """Thread-level FLOPs: tensor (per warp instruction, from the MMA shape) and vector
        (per active lane) by category."""
        out = {"tensor": 0.0, "fp32": 0.0, "fp16": 0.0, "fp64": 0.0}
        for op, warps in self.warps_by_opcode.items():
            c = classify(op)
            if c.flops_per_warp:
                out["tensor"] += c.flops_per_warp * warps
            if c.flops_per_lane and c.category in out:
                out[c.category] += c.flops_per_lane * self.lanes_by_opcode.get(op, 0)
        out["vector"] = out["fp32"] + out["fp16"] + out["fp64"]
        return out

    @property
    def tensor_vector_ratio(self) -> float:
        """Tensor FLOPs per vector FLOP (inf with tensor work and no vector work, nan with
        neither)."""
        f = self.flops()
        if f["vector"]:
            return f["tensor"] / f["vector"]
        return math.inf if f["tensor"] else math.nan

    # -- identity -------------------------------------------------------------------------
    @property
    def histogram_hash(self) -> str:
        text = json.dumps(sorted(self.warps_by_opcode.items()), separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def signature(self) -> str:
        """Same name, grid, block and instruction histogram: the same work launched again."""
        text = f"{self.name}|{self.grid}|{self.block}|{self.histogram_hash}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_record(self) -> dict[str, Any]:
        """A flat row: fixed columns first, then open ``sfu_*``, ``inst_<op>_<space>`` and
        ``bytes_<op>_<space>`` columns for what this kernel has."""
        f = self.flops()
        # counts and dimensions named and formatted as in simfront.stats.schema
        rec: dict[str, Any] = {
            "file": self.file, "kernel_id": self.kernel_id, "name": self.name,
            "grid": ",".join(map(str, self.grid)), "block": ",".join(map(str, self.block)),
            "instructions": self.warp_instructions,
            "thread_instructions": self.thread_instructions,
            "active_lane_fraction": self.active_lane_fraction,
        }
        rec.update({f"inst_{c}": n for c, n in self.by_category().items()})
        rec.update({f"inst_pipe_{p}": n for p, n in self.by_pipe().items()})
        rec.update({f"flops_{k}": v for k, v in f.items()})
        rec["tensor_vector_ratio"] = self.tensor_vector_ratio
        rec["lines_128b"] = self.lines_128b
        rec["sectors_32b"] = self.sectors_32b
        rec.update({f"sfu_{k.lower()}": v for k, v in sorted(self.sfu_by_function().items())})
        rec.update({f"inst_{k}": v for k, v in sorted(self.memory_instructions().items())})
        rec.update({f"bytes_{k}": v for k, v in sorted(self.memory_bytes().items())})
        unknown = self.unknown_opcodes()
        rec["unknown_opcodes"] = ",".join(sorted(unknown))
        rec["histogram_hash"] = self.histogram_hash
        rec["signature"] = self.signature
        return rec


def _op_tables(opcodes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per opcode index: bytes-per-lane override (-1 = use the trace's width) and whether
    its addresses count toward the global footprint."""
    override = np.full(len(opcodes), -1, np.int64)
    footprint = np.zeros(len(opcodes), bool)
    for i, op in enumerate(opcodes):
        c = classify(op)
        if c.bytes_per_lane is not None:
            override[i] = c.bytes_per_lane
        footprint[i] = c.space in _FOOTPRINT_SPACES
    return override, footprint


def kernel_stats(kernel: KernelTrace, footprint: bool = True) -> KernelStats:
    """Stream one kernel's body into its statistics; kept on disk by the trace's content
    for later calls, in any process (``$SIMFRONT_CACHE/stats``, beside the decoded copies
    and off with them: ``SIMFRONT_TRACE_CACHE=off``)."""
    path = _kept_path(kernel, footprint)
    if path is not None:
        try:
            kept = json.loads(path.read_text())
            return KernelStats(**{**kept, "file": kernel.path.name,
                                  "grid": tuple(kept["grid"]), "block": tuple(kept["block"])})
        except (OSError, ValueError, TypeError, KeyError):
            pass  # none yet, or torn: count again
    stats = _counted(kernel, footprint)
    if path is not None:
        try:
            write_text(path, json.dumps(asdict(stats)))
        except OSError:
            pass  # a cache that cannot be written only costs time
    return stats


#: the modules whose code decides a kernel's statistics
_CODE = ("stats.py", "opcodes.py", "instructions.py", "reader.py", "header.py", "decoded.py")
_code: str | None = None


def _kept_path(kernel: KernelTrace, footprint: bool) -> Path | None:
    global _code
    where = decoded.cache_dir()
    if where is None:
        return None
    if _code is None:
        _code = sha256_code(Path(__file__).parent / n for n in _CODE).hexdigest()[:16]
    return where.parent / "stats" / f"{sha256_file(kernel.path)}-{int(footprint)}-{_code}.json"


def _counted(kernel: KernelTrace, footprint: bool) -> KernelStats:
    hdr = kernel.header
    warps = np.zeros(0, np.int64)
    lanes = np.zeros(0, np.int64)
    nbytes = np.zeros(0, np.int64)
    footprint_sectors = _SortedSetAccumulator()
    opcodes: list[str] = []
    for chunk in kernel.iter_chunks():
        opcodes = chunk.opcodes
        n_ops = len(opcodes)
        if len(chunk) == 0:
            continue
        op = chunk.op.astype(np.int64)
        active = popcount32(chunk.mask)
        override, counts_footprint = _op_tables(opcodes)
        width = chunk.mem_width.astype(np.int64)
        per_lane = np.where(override[op] >= 0, override[op], width)
        per_lane = np.where(width > 0, per_lane, 0)
        warps = _add(warps, np.bincount(op, minlength=n_ops))
        lanes = _add(lanes, np.bincount(op, weights=active, minlength=n_ops).astype(np.int64))
        nbytes = _add(nbytes, np.bincount(op, weights=active * per_lane,
                                          minlength=n_ops).astype(np.int64))
        if footprint and chunk.addrs.shape[0]:
            per_inst = np.diff(chunk.addr_off)
            sel = counts_footprint[op] & (per_inst > 0)
            if sel.any():
                addr_sel = np.repeat(sel, per_inst)
                a = chunk.addrs[addr_sel]
                w = np.repeat(np.maximum(width, 1), per_inst)[addr_sel].astype(np.uint64)
                last = a + w - np.uint64(1)
                # sectors of the first and last byte of each access; lines follow from
                # sectors (4 per 128-B line), so only one set is kept
                footprint_sectors.add(np.concatenate([a >> _SECTOR_SHIFT,
                                                      last >> _SECTOR_SHIFT]))
    sectors = footprint_sectors.result()
    n = min(len(opcodes), len(warps))
    present = [i for i in range(n) if warps[i]]
    return KernelStats(
        file=kernel.path.name, kernel_id=hdr.kernel_id, name=hdr.name, grid=hdr.grid,
        block=hdr.block,
        warps_by_opcode={opcodes[i]: int(warps[i]) for i in present},
        lanes_by_opcode={opcodes[i]: int(lanes[i]) for i in present},
        bytes_by_opcode={opcodes[i]: int(nbytes[i]) for i in present if nbytes[i]},
        lines_128b=int(_sorted_unique(sectors >> _LINE_PER_SECTOR_SHIFT).shape[0]),
        sectors_32b=int(sectors.shape[0]))


_POPCOUNT16 = np.array([bin(i).count("1") for i in range(1 << 16)], np.int64)


def popcount32(mask: np.ndarray) -> np.ndarray:
    """Active lanes of 32-bit masks (two 16-bit table lookups)."""
    m = mask.astype(np.uint32, copy=False)
    return _POPCOUNT16[m & 0xFFFF] + _POPCOUNT16[m >> 16]


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: numpy 2.x's hash-based unique is pathologically slow on
    address-like uint64 values (2 s for 2 M sectors, against 0.1 s to sort)."""
    if values.shape[0] > 1:
        # a warp's lanes touch a few sectors each, one after another: dropping repeats of
        # the value before leaves the sort a quarter of the values or fewer
        ahead = np.empty(values.shape[0], bool)
        ahead[0] = True
        np.not_equal(values[1:], values[:-1], out=ahead[1:])
        values = values[ahead]
    v = np.sort(values)
    if v.shape[0] < 2:
        return v
    keep = np.empty(v.shape[0], bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


class _SortedSetAccumulator:
    """Distinct values over many chunks at amortised O(N log N): each chunk's values are
    made unique and kept aside; they are merged into the sorted set only once they
    outweigh it (re-merging the whole set per chunk would be quadratic)."""

    def __init__(self) -> None:
        self._merged = np.zeros(0, np.uint64)
        self._pending: list[np.ndarray] = []
        self._pending_size = 0

    def add(self, values: np.ndarray) -> None:
        u = _sorted_unique(values)
        self._pending.append(u)
        self._pending_size += u.shape[0]
        if self._pending_size > max(self._merged.shape[0], 1 << 20):
            self._merge()

    def _merge(self) -> None:
        if self._pending:
            self._merged = _sorted_unique(np.concatenate([self._merged, *self._pending]))
            self._pending, self._pending_size = [], 0

    def result(self) -> np.ndarray:
        self._merge()
        return self._merged


def _add(acc: np.ndarray, new: np.ndarray) -> np.ndarray:
    if new.shape[0] > acc.shape[0]:
        acc = np.concatenate([acc, np.zeros(new.shape[0] - acc.shape[0], acc.dtype)])
    acc[: new.shape[0]] += new
    return acc


def iter_set_stats(path: str | Path, kernels: Iterable[str] | None = None,
                   progress: bool = False, footprint: bool = True) -> Iterator[KernelStats]:
    ts = TraceSet(path)
    chosen = [ts.kernel(k) for k in kernels] if kernels else list(ts.kernels())
    if progress:
        chosen = tqdm(chosen, desc="stats", unit="kernel", disable=None)
    for k in chosen:
        yield kernel_stats(k, footprint=footprint)


def stats_frame(stats: Iterable[KernelStats]) -> pd.DataFrame:
    """One row per kernel; open columns absent from a kernel are 0."""
    rows = [s.to_record() for s in stats]
    df = pd.DataFrame(rows)
    open_cols = [c for c in df.columns if c.startswith(("sfu_", "bytes_"))
                 or (c.startswith("inst_") and df[c].isna().any())]
    for c in open_cols:
        df[c] = df[c].fillna(0).astype(np.int64)
    return df


def write_stats(df: pd.DataFrame, out: str | Path, attrs: dict[str, Any] | None = None) -> Path:
    """Write the table as CSV (``.csv``) or HDF5 (``.h5``/``.hdf5``: group ``/trace_stats``,
    one dataset per column), atomically."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".h5", ".hdf5"):
        raise InputError("output must end in .csv, .h5 or .hdf5", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        else:
            import h5py

            with h5py.File(tmp, "w") as h5:
                g = h5.create_group("trace_stats")
                g.attrs["format"] = "simfront-trace-stats"
                g.attrs["format_version"] = 1
                g.attrs["columns"] = json.dumps([str(c) for c in df.columns])
                for k, v in (attrs or {}).items():
                    g.attrs[k] = json.dumps(v) if not isinstance(v, (str, int, float)) else v
                for col in df.columns:
                    values = df[col]
                    if values.dtype == object:
                        g.create_dataset(col, data=values.astype(str).to_numpy().astype(object),
                                         dtype=h5py.string_dtype())
                    else:
                        g.create_dataset(col, data=values.to_numpy())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def read_stats_h5(path: str | Path) -> pd.DataFrame:
    import h5py

    with h5py.File(path, "r") as h5:
        g = h5["trace_stats"]
        data = {}
        for col in g:
            v = g[col][()]
            if v.dtype == object:
                v = [x.decode() if isinstance(x, bytes) else x for x in v]
            data[col] = v
        order = json.loads(g.attrs.get("columns", "[]")) or list(data)
    return pd.DataFrame(data)[order]

"""Checks of a trace directory before anything trusts it.

Two levels:

- **headers**: the launch attributes a simulator sizes occupancy with. The 2024 NVBit
  tracer writes garbage ``-nregs``, ``-shmem`` and ``-binary version`` (it reads the launch
  parameters with an old layout), so these are range-checked: ``nregs`` 1..255,
  ``shmem`` 0..228 KiB, ``binary version`` a real SM version (70, 75, 80, 86, 89, 90...),
  grid and block dimensions positive and within CUDA's limits. A shared-memory figure that
  passes its range check but sits in a header whose ``nregs`` or ``binary version`` is
  garbage came from the same failed attribute query: it is reported too.
- **structure** (``body=True``): every file listed in ``kernelslist.g`` exists and parses;
  every warp's ``insts =`` count matches its lines (the reader checks that); thread-block
  indices lie inside the grid, none repeats, and the trace holds every block of the grid;
  shared-memory accesses stay within ``shmem`` plus the driver's 1 KiB reserve.

:func:`validate_set` never raises on a bad trace: it returns a :class:`ValidationReport`
whose problems each name the file, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from simfront.core.errors import TraceFormatError
from simfront.traces.header import KernelHeader, header_key
from simfront.traces.opcodes import classify
from simfront.traces.reader import TRACE_SUFFIXES, KernelTrace, TraceSet

#: SM versions (compute capability x 10) of real NVIDIA GPUs, Kepler onwards.
SM_VERSIONS = frozenset({30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87,
                         89, 90, 100, 101, 103, 110, 120, 121})
MAX_REGS = 255
MAX_SHMEM = 228 * 1024
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2 ** 31 - 1, 65535, 65535)
#: Shared memory the driver reserves at the start of each block's window (sm_80, sm_90).
SHARED_RESERVE = 1024
#: The header fields a launch record can repair.
LAUNCH_FIELDS = ("nregs", "shmem", "binary_version")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a trace: where it is and what it is."""

    path: Path
    line: int | None
    field: str | None
    message: str
    severity: str = "error"  # or "warning"

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}: {self.severity}: {what}{self.message}"

    @classmethod
    def from_error(cls, exc: TraceFormatError) -> "Problem":
        return cls(exc.path or Path("?"), exc.line, exc.field, exc.reason)


@dataclass
class ValidationReport:
    path: Path
    problems: list[Problem] = field(default_factory=list)
    kernels: int = 0
    instructions: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        state = "OK" if self.ok else "FAILED"
        return (f"{self.path}: {state}: {self.kernels} kernels, {self.instructions:,} warp "
                f"instructions checked, {len(self.errors)} errors, {len(self.warnings)} warnings")


def header_problems(header: KernelHeader, path: Path) -> list[Problem]:
    """Range checks of one kernel header; each problem names the header line and field."""
    out: list[Problem] = []

    def bad(attr: str, message: str, severity: str = "error") -> None:
        out.append(Problem(path, header.field_lines.get(attr), header_key(attr), message,
                           severity))

    garbage_launch = False
    if "nregs" not in header.field_lines:
        bad("nregs", "missing")
        garbage_launch = True
    elif not 1 <= header.nregs <= MAX_REGS:
        bad("nregs", f"{header.nregs} registers per thread is impossible (1..{MAX_REGS}); "
                     "repair it from a launch record (simfront traces repair)")
        garbage_launch = True
    if "binary_version" not in header.field_lines:
        bad("binary_version", "missing")
        garbage_launch = True
    elif header.binary_version not in SM_VERSIONS:
        bad("binary_version", f"{header.binary_version} is not an SM version (e.g. 90 for "
                              "sm_90); repair it with --binary-version")
        garbage_launch = True
    if "shmem" not in header.field_lines:
        bad("shmem", "missing")
    elif not 0 <= header.shmem <= MAX_SHMEM:
        bad("shmem", f"{header.shmem} bytes of shared memory per block is impossible "
                     f"(0..{MAX_SHMEM})")
    elif garbage_launch:
        bad("shmem", f"{header.shmem} bytes is in range, but this header's nregs/binary "
                     "version are garbage, so the tracer's attribute query failed and "
                     "this value is untrusted too", "warning")
    for attr, limit_all in (("grid", MAX_GRID), ("block", (1024, 1024, 64))):
        dims = getattr(header, attr)
        if any(d < 1 for d in dims) or any(d > lim for d, lim in zip(dims, limit_all)):
            bad(attr, f"{dims} is not a launchable {attr} (limits {limit_all})")
    if header.threads_per_block > MAX_THREADS_PER_BLOCK:
        bad("block", f"{header.threads_per_block} threads per block (at most "
                     f"{MAX_THREADS_PER_BLOCK})")
    return out


def _is_trace_file(name: str) -> bool:
    return any(name.endswith(s) for s in TRACE_SUFFIXES)


#: On sm_90 a thread block cluster's shared memory is one window per block, 16 MiB apart:
#: the bits above are the rank of the block whose shared memory is accessed (distributed
#: shared memory, as the cuBLAS sm90 cluster GEMMs use), the bits below the offset in it.
SHARED_WINDOW_BITS = 24


def _shared_end(chunk) -> int:
    """One past the highest shared-memory byte, within a block's window, that the chunk's
    shared-space accesses touch."""
    is_shared = np.array([classify(op).space == "shared" for op in chunk.opcodes], bool)
    per_inst = np.diff(chunk.addr_off)
    sel = is_shared[chunk.op] & (per_inst > 0)
    if not sel.any():
        return 0
    addr_sel = np.repeat(sel, per_inst)
    offsets = chunk.addrs[addr_sel] & np.uint64((1 << SHARED_WINDOW_BITS) - 1)
    ends = offsets + np.repeat(chunk.mem_width, per_inst)[addr_sel].astype(np.uint64)
    return int(ends.max())


def structure_problems(kernel: KernelTrace, header: KernelHeader | None = None
                       ) -> tuple[list[Problem], int]:
    """Read a kernel's body; return its structural problems and its warp-instruction count.
    ``header`` replaces the file's own (repair checks a body against the header it will
    get)."""
    header = header or kernel.header
    seen: dict[tuple[int, int, int], int] = {}
    problems: list[Problem] = []
    n = 0
    shared_end = 0
    try:
        for chunk in kernel.iter_chunks():
            n += len(chunk)
            shared_end = max(shared_end, _shared_end(chunk))
            for idx, coords in chunk.tb_coords.items():
                if coords in seen:
                    problems.append(Problem(kernel.path, None, "thread block",
                                            f"block {coords} appears twice"))
                seen[coords] = idx
                if any(not 0 <= c < g for c, g in zip(coords, header.grid)):
                    problems.append(Problem(kernel.path, None, "thread block",
                                            f"block {coords} lies outside the grid {header.grid}"))
    except TraceFormatError as exc:
        problems.append(Problem.from_error(exc))
        return problems, n
    # Shared addresses are offsets into the block's window, which starts with the driver's
    # reserve (1 KiB on sm_80/sm_90, none before): accesses beyond shmem + reserve mean the
    # header's shmem is too small.
    if 0 <= header.shmem <= MAX_SHMEM and shared_end > header.shmem + SHARED_RESERVE:
        problems.append(Problem(kernel.path, header.field_lines.get("shmem"), "shmem",
                                f"the trace accesses shared memory up to byte {shared_end}, "
                                f"beyond shmem {header.shmem} + the {SHARED_RESERVE}-byte "
                                "driver reserve: the header's shmem is too small"))
    sampled = header.sampled_blocks
    expected = sampled[0] if sampled else header.n_blocks
    if len(seen) != expected:
        what = (f"its '-tb sampling' line says {expected} of {header.n_blocks} were traced"
                if sampled else f"the grid {header.grid} has {header.n_blocks}")
        problems.append(Problem(kernel.path, header.field_lines.get("grid"), "grid dim",
                                f"the trace holds {len(seen)} thread blocks but {what}"))
    return problems, n


def validate_set(path: str | Path, body: bool = True, progress: bool = False) -> ValidationReport:
    """Check a trace directory; problems are collected, never raised."""
    path = Path(path)
    report = ValidationReport(path)
    try:
        ts = TraceSet(path)
    except TraceFormatError as exc:
        report.problems.append(Problem.from_error(exc))
        return report
    listed = {ref.file for ref in ts.kernel_refs}
    for f in sorted(path.iterdir()):
        if _is_trace_file(f.name) and f.name not in listed:
            report.problems.append(Problem(f, None, None, "trace file not listed in "
                                           "kernelslist.g (ignored by simulators)", "warning"))
    kernels = list(ts.kernels())
    iterator = kernels
    if progress:
        iterator = tqdm(kernels, desc="validate", unit="kernel", disable=None)
    for kernel in iterator:
        report.kernels += 1
        try:
            header = kernel.header
        except TraceFormatError as exc:
            report.problems.append(Problem.from_error(exc))
            continue
        report.problems.extend(header_problems(header, kernel.path))
        if body:
            problems, n = structure_problems(kernel)
            report.problems.extend(problems)
            report.instructions += n
    return report


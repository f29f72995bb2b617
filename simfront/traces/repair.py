"""Repair the launch attributes of trace headers from another record of the same launches.

The 2024 NVBit tracer writes garbage ``-nregs``, ``-shmem`` and ``-binary version``. The
true values come from a launch record:

- a **sidecar** JSON-lines file (one object per launch, as the capture stage's tracer
  writes it): ``{"kernel_id": 35636, "name": "_Z25...", "grid": [1,128,1],
  "block": [32,1,1], "regs": 93, "shmem": 4192, "binary_version": 90, "source": "..."}``
  (``binary_version`` and ``source`` optional; ``shmem_static`` + ``shmem_dynamic`` stand
  for ``shmem``; records with ``"captured": true``, made while a CUDA graph was captured,
  are skipped); matched by kernel id, else by name, grid and block;
- **ncu** CSV rows (``launch__registers_per_thread``, static + dynamic shared memory),
  matched by kernel name (demangled and normalised), grid and block;
- the **cubin** (a ``.cubin``, a library with an embedded fatbin, or a wheel): register
  counts by exact function name (:mod:`simfront.traces.cubin`), never shared memory;
- the binary version from the capture GPU (``--binary-version 90`` for sm_90), or the
  record's compute capability.

:func:`repair_set` writes a corrected copy, never edits in place, and writes nothing on
failure (a temporary directory renamed into place at the end). Kernel files keep their
compression (``.xz`` files are recompressed, since a header cannot be swapped inside an
xz stream). The copy carries ``repairs.json``: each changed field, old and new value, and
where the new value came from.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import zstandard

from tqdm import tqdm
from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT, shared_dir
from simfront.traces.cubin import read_kernels
from simfront.traces.header import KernelHeader
from simfront.traces.kernelslist import KernelRef, format_kernelslist
from simfront.traces.reader import TraceSet, _read_header, _Stream
from simfront.traces.validate import (
    MAX_REGS, MAX_SHMEM, SM_VERSIONS, header_problems, structure_problems, validate_set,
)

_COPY = 1 << 20


@dataclass(frozen=True)
class LaunchRecord:
    """What another tool recorded about one kernel launch."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int | None = None
    shmem: int | None = None
    binary_version: int | None = None
    kernel_id: int | None = None
    source: str = ""
    #: dynamic shared memory of this launch, where the record separates it (ncu does)
    shmem_dynamic: int | None = None


# --- reading launch records ---------------------------------------------------------------

def _dims(value: Any, what: str, path: Path, line: int) -> tuple[int, int, int]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s()]+", value) if v]
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(f"'{value}' is not three dimensions", path, line, what) from None
    if len(dims) != 3:
        raise InputError(f"'{value}' is not three dimensions", path, line, what)
    return dims  # type: ignore[return-value]


def load_sidecar(path: str | Path) -> list[LaunchRecord]:
    """Launch records from a JSON-lines sidecar file."""
    path = Path(path)
    records = []
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise InputError("launch record file not found", path) from None
    for lineno, text in enumerate(lines, start=1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON ({exc.msg})", path, lineno) from None
        if not isinstance(obj, dict):
            raise InputError("a launch record must be a JSON object", path, lineno)
        for key in ("name", "grid", "block"):
            if key not in obj:
                raise InputError("launch record lacks this field", path, lineno, key)

        def opt_int(key: str) -> int | None:
            v = obj.get(key)
            if v is None:
                return None
            try:
                return int(v)
            except (TypeError, ValueError):
                raise InputError(f"'{v}' is not an integer", path, lineno, key) from None

        if obj.get("captured"):
            continue  # a launch recorded while a CUDA graph was captured: it runs later
        shmem = opt_int("shmem")
        if shmem is None and obj.get("shmem_static") is not None:
            # the capture stage's tracer records the two parts separately
            shmem = opt_int("shmem_static") + (opt_int("shmem_dynamic") or 0)
        records.append(LaunchRecord(
            name=str(obj["name"]), grid=_dims(obj["grid"], "grid", path, lineno),
            block=_dims(obj["block"], "block", path, lineno),
            regs=opt_int("regs") if "regs" in obj else opt_int("nregs"),
            shmem=shmem, binary_version=opt_int("binary_version"),
            kernel_id=opt_int("kernel_id"),
            source=str(obj.get("source", f"sidecar {path.name}:{lineno}")),
            shmem_dynamic=opt_int("shmem_dynamic")))
    return records


def load_ncu(path: str | Path) -> list[LaunchRecord]:
    """Launch records from an ``ncu --csv --page raw`` file (via simfront.core.ncu)."""
    path = Path(path)
    df = read_ncu_csv(path)
    records = []
    for i, row in enumerate(df.itertuples(index=False)):
        get = row._asdict().get
        cc = get("CC")
        binary = None
        if cc is not None and str(cc) not in ("", "nan"):
            try:
                binary = int(round(float(cc) * 10))
            except ValueError:
                binary = None
        regs = get("regs_per_thread")
        shmem = get("shmem_per_block")
        dyn = get("launch__shared_mem_per_block_dynamic")
        records.append(LaunchRecord(
            name=str(get("kernel_name")), grid=_dims(get("grid"), "grid", path, i + 3),
            block=_dims(get("block"), "block", path, i + 3),
            regs=None if regs is None or regs != regs else int(regs),
            shmem=None if shmem is None or shmem != shmem else int(shmem),
            binary_version=binary, source=f"ncu {path.name} row {i + 3}",
            shmem_dynamic=None if dyn is None or dyn != dyn else int(dyn)))
    return records


# --- matching --------------------------------------------------------------------------

_LAMBDA = re.compile(r"\{lambda\(([^{}]*?)\)#(\d+)\}")


@lru_cache(maxsize=None)
def demangle(name: str) -> str:
    """A C++ symbol demangled with ``c++filt`` when available, else unchanged."""
    if not name.startswith("_Z"):
        return name
    if name in _DEMANGLED:
        return _DEMANGLED[name]
    return demangle_many([name])[0]


def demangle_many(names: list[str]) -> list[str]:
    """Demangle many symbols with one ``c++filt`` run (names it cannot read stay as they
    are); the results also fill :func:`demangle`'s cache."""
    todo = sorted({n for n in names
                   if n.startswith("_Z") and "\n" not in n and n not in _DEMANGLED})
    result: dict[str, str] = {}
    if todo:
        try:
            out = subprocess.run(["c++filt"], input="\n".join(todo) + "\n",
                                 capture_output=True, text=True, timeout=60)
            lines = out.stdout.splitlines()
            if out.returncode == 0 and len(lines) == len(todo):
                result = dict(zip(todo, lines))
        except (OSError, subprocess.SubprocessError):
            pass
    _DEMANGLED.update(result)
    return [_DEMANGLED.get(n, result.get(n, n)) for n in names]


_DEMANGLED: dict[str, str] = {}


@lru_cache(maxsize=None)
def normalize_name(name: str) -> str:
    """A kernel name reduced to what ncu's and c++filt's spellings share.

    The two differ in parameter lists (ncu prints ``(at::TensorIteratorBase &, const T1 &)``
    where c++filt spells the types out), lambda spelling (``[lambda(int) (instance 1)]`` vs
    ``{lambda(int)#1}``), ``void`` and the ``at::`` prefix. The normal form keeps
    namespaces, template arguments and lambda instance numbers, and drops every
    parenthesised list.
    """
    n = _LAMBDA.sub(r"[lambda(\1) (instance \2)]", name)
    n = re.sub(r"\(instance (\d+)\)", r"#\1", n)
    n = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", n))  # ncu prints bools as 1/0
    n = n.replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in n:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    n = "".join(out)
    n = re.sub(r"\bvoid\b", "", n).replace("at::", "")
    return re.sub(r"\s+", "", n)


def base_name(name: str) -> str:
    """The function's own identifier (no namespaces, template or parameter lists)."""
    if name.startswith("_Z"):
        name = demangle(name)
    n = re.sub(r"^void\s+", "", name).replace("(anonymous namespace)::", "")
    depth, out = 0, []
    for ch in n:
        if ch in "<(":
            if depth == 0 and out:
                break
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).split("::")[-1].strip()


@dataclass(frozen=True)
class Match:
    record: LaunchRecord
    how: str  # "kernel id", "name+grid+block", "name"


def match_record(header: KernelHeader, records: list[LaunchRecord]) -> Match | None:
    """The launch record of a kernel: by kernel id, else exact (normalised) name with grid
    and block when every such record agrees on the values, else the name alone for the
    per-function value (registers only). None when nothing matches or candidates disagree.
    A match on the base name alone is never accepted: template instances of one function
    differ in registers."""
    by_id = [r for r in records if r.kernel_id is not None and r.kernel_id == header.kernel_id]
    same_shape = [r for r in records if r.grid == header.grid and r.block == header.block]
    if by_id:
        r = by_id[0]
        if r.grid == header.grid and r.block == header.block:
            return Match(r, "kernel id")
    demangle_many([header.name] + [r.name for r in records])
    full = normalize_name(demangle(header.name))
    exact = [r for r in same_shape
             if r.name == header.name or normalize_name(demangle(r.name)) == full]
    if exact and len({(r.regs, r.shmem) for r in exact}) == 1:
        return Match(exact[0], "name+grid+block")
    if exact:
        return None
    # Same function launched with another grid: registers are a property of the compiled
    # function, so they carry over; shared memory does not (the dynamic part is chosen per
    # launch, e.g. PyTorch's reduce_kernel sizes it from the block).
    same_name = [r for r in records if r.name == header.name
                 or normalize_name(demangle(r.name)) == full]
    regs = {r.regs for r in same_name}
    if same_name and len(regs) == 1 and None not in regs:
        r0 = same_name[0]
        rec = LaunchRecord(r0.name, header.grid, header.block, r0.regs, None,
                           r0.binary_version, None, r0.source)
        return Match(rec, "name only (registers are per function; shmem not taken)")
    return None


# --- writing ----------------------------------------------------------------------------

@dataclass
class RepairReport:
    source: Path
    out: Path
    kernels: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"source": portable_path(self.source), "kernels": self.kernels}


def portable_path(path: Path) -> str:
    """A path as it reads on any checkout: ``../shared/...`` for the shared data, relative
    for the repository, else as given."""
    p = Path(path).resolve()
    for root, prefix in ((shared_dir().resolve(), "../shared"), (REPO_ROOT.resolve(), ".")):
        try:
            return f"{prefix}/{p.relative_to(root).as_posix()}"
        except ValueError:
            continue
    return str(path)


def _copy_body(stream: _Stream, first: bytes, dst) -> None:
    dst.write(first)
    while True:
        block = stream.read(_COPY)
        if not block:
            break
        dst.write(block)


def _write_kernel(src: Path, dst: Path, header: KernelHeader, xz_preset: int) -> None:
    with _Stream(src) as stream:
        _, first = _read_header(stream)
        if dst.name.endswith(".xz"):
            out = lzma.open(dst, "wb", preset=xz_preset)
        elif dst.name.endswith(".zst"):
            out = zstandard.ZstdCompressor(level=10).stream_writer(open(dst, "wb"))
        else:
            out = open(dst, "wb")
        with out:
            out.write(header.format().encode())
            _copy_body(stream, first, out)


def repaired_header(header: KernelHeader, match: Match | None,
                    binary_version: int | None, path: Path) -> tuple[KernelHeader, list[dict]]:
    """The corrected header and the list of changes (field, old, new, source)."""
    changes: list[dict[str, Any]] = []
    new: dict[str, int] = {}
    rec = match.record if match else None
    bv = binary_version if binary_version is not None else (rec.binary_version if rec else None)
    if bv is not None:
        if bv not in SM_VERSIONS:
            raise InputError(f"{bv} is not an SM version", None, None, "binary_version")
        src = (f"--binary-version {bv}" if binary_version is not None
               else f"{rec.source} (compute capability)")
        new["binary_version"] = bv
        changes.append({"field": "binary_version", "old": header.binary_version, "new": bv,
                        "from": src})
    if rec is not None:
        if rec.regs is not None:
            if not 1 <= rec.regs <= MAX_REGS:
                raise InputError(f"launch record gives {rec.regs} registers", path, None, "nregs")
            new["nregs"] = rec.regs
            changes.append({"field": "nregs", "old": header.nregs, "new": rec.regs,
                            "from": f"{rec.source} (matched by {match.how})"})
        if rec.shmem is not None:
            if not 0 <= rec.shmem <= MAX_SHMEM:
                raise InputError(f"launch record gives {rec.shmem} bytes of shared memory",
                                 path, None, "shmem")
            new["shmem"] = rec.shmem
            changes.append({"field": "shmem", "old": header.shmem, "new": rec.shmem,
                            "from": f"{rec.source} (matched by {match.how})"})
    if "shmem" not in new and changes:
        changes.append({"field": "shmem", "old": header.shmem, "new": header.shmem,
                        "from": "kept from the trace header: no launch record gave it "
                                "(unverified; the tracer adds static and dynamic bytes)"})
    return header.with_fields(**new), changes


def repair_set(src: str | Path, out: str | Path, records: list[LaunchRecord] | None = None,
               binary_version: int | None = None, kernels: list[str] | None = None,
               xz_preset: int = 6, progress: bool = False,
               check_body: bool = True) -> RepairReport:
    """Write a copy of the trace set ``src`` at ``out`` with repaired headers.

    ``kernels`` (file names, stems or ids) selects a subset of the launches (memcpy events
    are kept). Raises InputError, writing nothing, when ``out`` exists, a kernel has no
    launch record, a kernel body does not read (``check_body``), or the repaired copy would
    still fail validation.
    """
    src, out = Path(src), Path(out)
    if out.exists():
        raise InputError("output exists; repair never overwrites (choose a new --out)", out)
    if out.resolve() == src.resolve():
        raise InputError("repair never edits in place", out)
    ts = TraceSet(src)
    records = records or []
    wanted = None
    if kernels:
        wanted = {ts.kernel(k).path.name for k in kernels}
    refs = [r for r in ts.kernel_refs if wanted is None or r.file in wanted]
    entries = [e for e in ts.entries if not isinstance(e, KernelRef) or e in refs]

    plans = []
    unmatched, still_bad = [], []
    for ref in refs:
        path = src / ref.file
        header = ts.kernel(ref.file).header
        match = match_record(header, records) if records else None
        new_header, changes = repaired_header(header, match, binary_version, path)
        problems = [p for p in header_problems(new_header, path) if p.severity == "error"]
        if problems:
            what = (f"{ref.file} ({base_name(header.name)}, grid {header.grid}, "
                    f"block {header.block})")
            if match is None and any(p.field in ("nregs", "shmem") for p in problems):
                unmatched.append(what)
            elif match is not None and match.record.shmem is None and \
                    any(p.field == "shmem" for p in problems):
                unmatched.append(f"{what}: {match.how}, but no record gives this launch's "
                                 "shared memory")
            still_bad.extend(str(p) for p in problems)
        plans.append((ref, header, new_header, changes, match))
    if not unmatched and not still_bad and check_body:
        # a body the reader cannot read would be copied as it is: refuse it here, naming
        # the source file and line, before anything is written
        for ref, _old, new_header, *_ in plans:
            problems, _n = structure_problems(ts.kernel(ref.file), new_header)
            still_bad.extend(str(p) for p in problems if p.severity == "error")
    if unmatched or still_bad:
        msg = "repair would not give a valid trace set; nothing written."
        if unmatched:
            msg += "\n  launch records missing or incomplete:" + "\n    ".join([""] + unmatched)
        msg += "\n  remaining problems:\n    " + "\n    ".join(still_bad[:20])
        raise InputError(msg, src)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would survive the rename
    report = RepairReport(src, out)
    try:
        iterator = plans
        if progress:
            iterator = tqdm(plans, desc="repair", unit="kernel", disable=None)
        for ref, header, new_header, changes, match in iterator:
            if changes:
                _write_kernel(src / ref.file, tmp / ref.file, new_header, xz_preset)
            else:
                shutil.copy2(src / ref.file, tmp / ref.file)
            report.kernels.append({"file": ref.file, "kernel_id": header.kernel_id,
                                   "name": header.name, "changes": changes})
        (tmp / "kernelslist.g").write_text(format_kernelslist(entries))
        (tmp / "repairs.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
        final = validate_set(tmp, body=False)
        if not final.ok:
            raise InputError("repaired copy fails validation; nothing written:\n  "
                             + "\n  ".join(str(p) for p in final.errors[:20]), src)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def load_cubin(path: str | Path, sm: int | None = None) -> list[LaunchRecord]:
    """Register counts of the kernels compiled into a cubin, library or wheel
    (:mod:`simfront.traces.cubin`), as name-only records (registers are per function;
    they never give shared memory). ``sm`` keeps only cubins of that SM version."""
    return [LaunchRecord(k.name, (0, 0, 0), (0, 0, 0), regs=k.regs, source=f"cubin {k.origin}")
            for k in read_kernels(path) if sm is None or k.sm == sm]


def load_records(launches: str | Path | None = None, ncu: str | Path | None = None,
                 cubin: str | Path | None = None, sm: int | None = None) -> list[LaunchRecord]:
    records: list[LaunchRecord] = []
    if launches:
        records += load_sidecar(launches)
    if ncu:
        records += load_ncu(ncu)
    if cubin:
        records += load_cubin(cubin, sm)
    return records


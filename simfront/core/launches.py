"""Kernel launches as records: the tracer's launch sidecar (``launches.jsonl``) and the rows
of an ncu profile, in one shape so the two can be matched launch by launch."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from simfront.core.categories import short_name
from simfront.core.errors import InputError

SIDECAR = "launches.jsonl"


@dataclass(frozen=True)
class Launch:
    """One kernel launch, as the tracer or ncu saw it."""

    order: int                       # position among the launches of its source
    name: str                        # as recorded (mangled from the tracer, demangled by ncu)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    kernel_id: int | None = None     # the tracer's process-wide launch counter
    regs: int | None = None
    shmem_static: int | None = None
    shmem_dynamic: int | None = None
    binary_version: int | None = None
    stream: int | None = None
    api: str | None = None           # cuLaunchKernel, cuLaunchKernelEx, cuGraphLaunch
    graph: bool = False
    traced: bool = False
    in_window: bool = False
    file: str | None = None          # trace file name: its own, or its representative's
    traced_ctas: int | None = None
    same_as: int | None = None       # deduplicated: kernel_id of the traced launch standing for it
    params_hash: str | None = None   # the tracer's hash of the masked launch key (dedup runs)

    @property
    def key(self) -> str:
        """The function's own name: what both the tracer's mangled name and ncu's
        demangled one reduce to."""
        return short_name(self.name)

    @property
    def shmem(self) -> int | None:
        if self.shmem_static is None:
            return None
        return self.shmem_static + (self.shmem_dynamic or 0)

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def read_sidecar(path: str | Path) -> list[Launch]:
    """Every launch the tracer recorded, in launch order (graph-capture records skipped:
    their launches appear when the graph runs). A deduplicated repeat
    (``{"kernel_id", "same_as"}``) comes back as a copy of the launch standing for it, not
    traced, with its own ``kernel_id`` and ``same_as`` set; counts of launches outside the
    window (compact records) are read by :func:`outside_counts`."""
    path = Path(path)
    if path.is_dir():
        path = path / SIDECAR
    if not path.exists():
        raise InputError("launch sidecar not found (was the tracer simfront's?)", path)
    out: list[Launch] = []
    by_id: dict[int, Launch] = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc.msg}", path, lineno) from None
            if rec.get("captured") or rec.get("outside_window"):
                continue
            if "same_as" in rec:
                rep = by_id.get(rec["same_as"])
                if rep is None:
                    raise InputError(f"repeat of launch {rec['same_as']}, which has no record "
                                     f"before it", path, lineno)
                out.append(replace(rep, order=len(out), kernel_id=rec.get("kernel_id"),
                                   traced=False, in_window=True, same_as=rep.kernel_id,
                                   params_hash=rec.get("params_hash", rep.params_hash)))
                continue
            try:
                out.append(Launch(
                    order=len(out), name=rec["name"], grid=tuple(rec["grid"]),
                    block=tuple(rec["block"]), kernel_id=rec.get("kernel_id"),
                    regs=rec.get("regs"), shmem_static=rec.get("shmem_static"),
                    shmem_dynamic=rec.get("shmem_dynamic"),
                    binary_version=rec.get("binary_version"), stream=rec.get("stream"),
                    api=rec.get("api"), graph=bool(rec.get("graph")),
                    traced=bool(rec.get("traced")), in_window=bool(rec.get("window_open")),
                    file=rec.get("file"), traced_ctas=rec.get("traced_ctas"),
                    params_hash=rec.get("params_hash")))
            except (KeyError, TypeError) as exc:
                raise InputError(f"launch record lacks {exc}", path, lineno) from None
            if out[-1].kernel_id is not None:
                by_id[out[-1].kernel_id] = out[-1]
    return out


def outside_counts(path: str | Path) -> dict[str, int]:
    """Launches outside the capture window, per kernel name: the compact records the tracer
    writes at exit instead of a full record per launch."""
    path = Path(path)
    if path.is_dir():
        path = path / SIDECAR
    out: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            if '"outside_window"' not in line:
                continue
            rec = json.loads(line)
            out[rec["name"]] = out.get(rec["name"], 0) + int(rec["count"])
    return out


def dedup_key(x: Launch) -> tuple:
    """What makes two launches one for deduplication, as the tracer decides it: function,
    grid, block, dynamic shared memory and the masked parameter bytes (their hash; records
    without one, from runs without deduplication, key on the launch configuration only)."""
    return (x.name, x.grid, x.block, x.shmem_dynamic, x.params_hash)


def dedup_groups(launches: list[Launch], key=dedup_key) -> list[list[int]]:
    """Positions of ``launches`` grouped by ``key``, in order of first appearance: the first
    of each group is the launch that would be traced."""
    groups: dict[tuple, list[int]] = {}
    for i, x in enumerate(launches):
        groups.setdefault(key(x), []).append(i)
    return list(groups.values())


def multiplicity(launches: list[Launch]) -> dict[str, int]:
    """Trace file -> how many launches of the window it stands for (itself included)."""
    out: dict[str, int] = {}
    for x in launches:
        if x.file and (x.traced or x.same_as is not None):
            out[x.file] = out.get(x.file, 0) + 1
    return out


def window_launches(launches: list[Launch]) -> list[Launch]:
    """The launches inside the capture window (traced ones, or in list-only runs the ones
    that ran while the window was open), renumbered from 0."""
    sel = ([x for x in launches if x.traced or x.same_as is not None]
           or [x for x in launches if x.in_window])
    return [_renumber(x, i) for i, x in enumerate(sel)]


def traced_launches(launches: list[Launch]) -> list[Launch]:
    """The launches that have a trace file of their own (repeats left out), renumbered."""
    return [_renumber(x, i) for i, x in enumerate(x for x in launches if x.traced)]


def _renumber(x: Launch, i: int) -> Launch:
    return replace(x, order=i)


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, str):
        parts = [int(float(p)) for p in v.strip("() ").split(",") if p.strip()]
    else:
        parts = [int(p) for p in v]
    parts += [1] * (3 - len(parts))
    return tuple(parts[:3])  # type: ignore[return-value]


def ncu_launches(df) -> list[Launch]:
    """Launch records from a DataFrame of ``simfront.core.ncu.read_ncu_csv``."""
    out: list[Launch] = []
    for i, r in enumerate(df.to_dict("records")):
        def num(col: str) -> int | None:
            v = r.get(col)
            try:
                return None if v is None or v != v else int(v)
            except (TypeError, ValueError):
                return None

        out.append(Launch(order=i, name=str(r.get("kernel_name", "")), grid=_dim3(r["grid"]),
                          block=_dim3(r["block"]), regs=num("regs_per_thread"),
                          shmem_static=num("launch__shared_mem_per_block_static"),
                          shmem_dynamic=num("launch__shared_mem_per_block_dynamic"),
                          stream=num("stream"), in_window=True))
    return out

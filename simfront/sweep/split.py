"""Splitting a trace set into per-kernel jobs, and running repeated launches once.

A slow backend (Accel-Sim: minutes per kernel) takes a whole training step as hundreds of
jobs of one kernel (or a group of kernels) each, which the executors spread over the local
pool or Slurm arrays; :func:`simfront.sweep.results.gather` puts their records back together
as one step.

Two launches are the same work when their trace texts are equal except for the ``-kernel
id`` header line (the tracer's launch counter): same kernel, grid, block, registers, shared
memory, base addresses and every instruction with its addresses. Such a launch runs once,
and its records stand for the other launches too (marked ``same_launch_as``). Launches of
the same kernel on other tensors differ in their addresses and run on their own.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from simfront.core.atomic import write_text
from simfront.traces.reader import open_trace_file

_ID_LINE = b"-kernel id"
_CHUNK_LINES = 1 << 16


def launch_hash(path: str | Path) -> str:
    """SHA-256 of a kernel trace's decompressed text without its ``-kernel id`` line."""
    h = hashlib.sha256()
    with open_trace_file(Path(path)) as f:
        for line in f:
            if line.startswith(_ID_LINE):
                continue
            h.update(line)
    return h.hexdigest()


def launch_hashes(trace_dir: Path, files: list[str], cache_dir: Path | None = None,
                  set_hash: str = "") -> dict[str, str]:
    """``launch_hash`` of each file; kept in ``cache_dir/<set_hash>.json`` so that planning a
    sweep again does not decompress the set again (a Mamba2 step is ~230 MB of text)."""
    cache = cache_dir / f"{set_hash}.json" if cache_dir is not None and set_hash else None
    known: dict[str, str] = {}
    if cache is not None and cache.is_file():
        try:
            known = json.loads(cache.read_text())
        except (OSError, json.JSONDecodeError):
            known = {}  # a damaged cache is only a lost shortcut
    todo = [f for f in files if f not in known]
    if len(todo) > 20:  # a whole step: tens of seconds, once per set
        print(f"hashing {len(todo)} launches of {trace_dir.name} to find repeated ones "
              f"(once{'; kept in ' + str(cache) if cache else ''})", file=sys.stderr, flush=True)
    out = {f: known.get(f) or launch_hash(trace_dir / f) for f in files}
    if cache is not None and any(f not in known for f in files):
        write_text(cache, json.dumps({**known, **out}, sort_keys=True, indent=0))
    return out


@dataclass(frozen=True)
class KernelGroup:
    """The launches one job runs, in launch order, and the later launches that are the same
    work as one of them (run file -> files it stands for)."""

    files: tuple[str, ...]
    duplicates: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def launch_count(self) -> int:
        return len(self.files) + sum(len(v) for v in self.duplicates.values())


def group_launches(files: list[str], hashes: dict[str, str] | None,
                   per_job: int = 1) -> list[KernelGroup]:
    """Launches (in launch order) into groups of ``per_job`` distinct launches; with
    ``hashes``, a launch equal to an earlier one is not run but listed with it."""
    if per_job < 1:
        raise ValueError(f"kernels per job must be at least 1, got {per_job}")
    first: dict[str, str] = {}           # launch hash -> file that runs it
    dups: dict[str, list[str]] = {}
    run: list[str] = []
    for f in files:
        h = hashes.get(f) if hashes is not None else None
        if h is not None and h in first:
            dups.setdefault(first[h], []).append(f)
            continue
        if h is not None:
            first[h] = f
        run.append(f)
    groups = []
    for i in range(0, len(run), per_job):
        chunk = tuple(run[i:i + per_job])
        groups.append(KernelGroup(chunk, {f: tuple(dups[f]) for f in chunk if f in dups}))
    return groups


def kernel_id_of(file: str) -> int | None:
    """The tracer's kernel id from a trace file name (``kernel-35636.traceg.xz`` -> 35636)."""
    stem = file.split(".", 1)[0]
    try:
        return int(stem.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None

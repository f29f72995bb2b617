"""``multiplicity.txt``: how many launches each kernel file of a deduplicated trace set
stands for.

A deduplicated capture traces each distinct launch once (same function, grid, block, shared
memory and parameter bytes, device pointers masked); ``kernelslist.g`` lists the distinct
kernels, so Accel-Sim runs each once, and this file says how often each ran::

    # simfront multiplicity 1: trace file, launches of the window it stands for
    kernel-12.traceg.xz 24
    kernel-13.traceg.xz 1

A set without the file is not deduplicated: every kernel counts once. Kernels the file does
not name count once too.
"""

from __future__ import annotations

from pathlib import Path

from simfront.core.atomic import write_text
from simfront.core.errors import TraceFormatError

MULTIPLICITY = "multiplicity.txt"
HEADER = "# simfront multiplicity 1: trace file, launches of the window it stands for"


def read_multiplicity(trace_dir: str | Path) -> dict[str, int]:
    """File name -> launch count; empty when the set has no multiplicity file."""
    path = Path(trace_dir) / MULTIPLICITY
    if not path.exists():
        return {}
    out: dict[str, int] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            count = int(parts[1])
        except ValueError:
            raise TraceFormatError("expected 'FILE COUNT'", path, lineno) from None
        if count < 1:
            raise TraceFormatError(f"count {count} below 1", path, lineno)
        if parts[0] in out:
            raise TraceFormatError(f"{parts[0]} listed twice", path, lineno)
        out[parts[0]] = count
    return out


def write_multiplicity(trace_dir: str | Path, counts: dict[str, int]) -> Path:
    path = Path(trace_dir) / MULTIPLICITY
    write_text(path, HEADER + "\n" + "".join(f"{f} {n}\n" for f, n in counts.items()))
    return path


def count_of(counts: dict[str, int], file: str | None) -> int:
    """A kernel file's count (1 when the set is not deduplicated or does not name it)."""
    if not counts or file is None:
        return 1
    return counts.get(Path(file).name, 1)


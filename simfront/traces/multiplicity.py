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

from simfront.atomic import write_text
from simfront.errors import TraceFormatError

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


def deduplicate_set(src: str | Path, dst: str | Path, key) -> dict[str, int]:
    """Write into the new folder ``dst`` a deduplicated copy of the full set ``src``: the
    first kernel of each ``key(KernelTrace)`` group (its file copied as it is) stands for the
    group. For comparing a deduplicated set with the full one it came from; a capture with
    ``--dedup`` does this at the source, with the launch's parameter bytes in the key."""
    import shutil

    from simfront.traces.reader import TraceSet

    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True)
    first: dict = {}
    counts: dict[str, int] = {}
    for k in TraceSet(src).kernels():
        kk = key(k)
        if kk in first:
            counts[first[kk]] += 1
        else:
            first[kk] = k.path.name
            counts[k.path.name] = 1
            shutil.copy2(k.path, dst / k.path.name)
    write_text(dst / "kernelslist.g", "".join(f + "\n" for f in counts))
    write_multiplicity(dst, counts)
    return counts

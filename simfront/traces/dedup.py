"""A deduplicated copy of a full trace set, for comparing the two (the offline check of
``bench/bench_dedup.py``; a capture with ``--dedup`` deduplicates at the source)."""

from __future__ import annotations

import shutil
from pathlib import Path

from simfront.core.atomic import write_text
from simfront.traces.multiplicity import write_multiplicity
from simfront.traces.reader import TraceSet


def deduplicate_set(src: str | Path, dst: str | Path, key) -> dict[str, int]:
    """Write into the new folder ``dst`` a deduplicated copy of the full set ``src``: the
    first kernel of each ``key(KernelTrace)`` group (its file copied as it is) stands for the
    group. For comparing a deduplicated set with the full one it came from; a capture with
    ``--dedup`` does this at the source, with the launch's parameter bytes in the key."""
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

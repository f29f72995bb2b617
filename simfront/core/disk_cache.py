"""A disk cache's size held under a limit: its least recently written files go first.

The model keeps each prepared kernel (the trace pass) on disk for later processes
(``simfront.sim.model.api.prepared_cache_dir``). A sweep or what-if study over many GPU
configurations writes one file per kernel, configuration and code version, which on the
paper sets' full panel came to 46 GB: without a limit the cache fills the disk it shares
with the results."""

from __future__ import annotations

import os
from pathlib import Path

#: The limit, in GiB, of ``SIMFRONT_CACHE_MAX_GB`` when it is not set.
DEFAULT_MAX_GB = 20.0
MAX_GB_ENV = "SIMFRONT_CACHE_MAX_GB"


def max_bytes() -> int:
    """The cache limit in bytes: ``$SIMFRONT_CACHE_MAX_GB`` GiB (default 20)."""
    raw = os.environ.get(MAX_GB_ENV, "")
    try:
        gb = float(raw) if raw else DEFAULT_MAX_GB
    except ValueError:
        gb = DEFAULT_MAX_GB
    return int(max(gb, 0.0) * (1 << 30))


def trim(directory: str | Path, limit: int, pattern: str = "*.pkl") -> int:
    """Delete the least recently written ``pattern`` files of ``directory`` until the rest
    take at most ``limit`` bytes; returns the bytes freed. Files another process deletes
    meanwhile are skipped; a missing directory frees nothing."""
    entries = []
    for p in Path(directory).glob(pattern):
        try:
            st = p.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    freed = 0
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total - freed <= limit:
            break
        try:
            p.unlink()
        except OSError:
            continue
        freed += size
    return freed

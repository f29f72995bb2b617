"""Atomic file writes: a reader sees the old file or the new one, never half of one, and a
crash mid-write leaves the old file as it was."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def file_mode() -> int:
    """The mode ``open()`` would give a new file (0666 less the umask): a temporary file from
    mkstemp is 0600, and results on a shared file system must stay readable by the group."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode())

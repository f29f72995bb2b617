"""Provenance: what produced a result. Every stored result carries these fields so a number
can be traced back to the tool versions, GPU config and trace content behind it."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from simfront import __version__

_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def sha256_code(paths: Iterable[Path], seed: bytes = b""):
    """A SHA-256 of code files, each file's name and bytes after ``seed``: what names a
    cache of results that code made (decoded traces, prepared kernels, statistics), so a
    change to the code makes the cache stale. Returned unfinished, for more to be added."""
    h = hashlib.sha256(seed)
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h


def sha256_json(obj: Any) -> str:
    """Hex SHA-256 of a JSON-able object in canonical form (sorted keys, no spaces)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def tool_versions(*extra: str) -> dict[str, str]:
    """Versions of simfront, Python and the libraries whose behaviour shapes results."""
    versions = {"simfront": __version__, "python": sys.version.split()[0],
                "platform": platform.platform()}
    for name in ("numpy", "numba", "pandas", "h5py", *extra):
        v = package_version(name)
        if v is not None:
            versions[name] = v
    return versions

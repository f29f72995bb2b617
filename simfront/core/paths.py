"""Where things are: the repository's own folders and the shared reference data."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = PACKAGE_DIR.parent


def repo_dir(name: str) -> Path:
    """A top-level folder of the repository (``traces``, ``gpu_configs``, ``experiments``)."""
    return REPO_ROOT / name


def shared_dir() -> Path:
    """The shared reference data: ``$SIMFRONT_SHARED``, else ``../shared`` beside the repo."""
    env = os.environ.get("SIMFRONT_SHARED")
    return Path(env) if env else REPO_ROOT.parent / "shared"


def cache_root() -> Path:
    """Where simfront keeps what it can make again (decoded traces, prepared kernels, the
    what-if store): ``$SIMFRONT_CACHE``, else ``~/.cache/simfront``."""
    env = os.environ.get("SIMFRONT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "simfront"

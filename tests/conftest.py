from __future__ import annotations

import os
from pathlib import Path

import pytest

from simfront.paths import REPO_ROOT, shared_dir

SHARED = shared_dir()
DATA = SHARED / "data"
H100_TRACES = DATA / "h100" / "traces"
SCAN_STEP = H100_TRACES / "mamba1_scan_step"
NCU_DIR = DATA / "h100" / "ncu"
ACCELSIM_DATA = DATA / "accelsim"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real H100 data in ../shared/data; tests on it skip, saying why, when it is absent."""
    if not DATA.is_dir():
        pytest.skip(f"shared reference data not found at {DATA} (set SIMFRONT_SHARED)")
    return DATA


@pytest.fixture(scope="session")
def scan_step(shared_data) -> Path:
    return SCAN_STEP


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT

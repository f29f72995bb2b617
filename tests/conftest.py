from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The model's record and trace-pass caches go to a folder of this run, not the user's
# ~/.cache/simfront: tests must not fill or depend on it. The folder goes when the run
# ends (a run leaves a few hundred MB there; runs left behind filled a disk).
if "SIMFRONT_CACHE" not in os.environ:
    _run_cache = tempfile.mkdtemp(prefix="simfront-test-cache-")
    os.environ["SIMFRONT_CACHE"] = _run_cache
    atexit.register(shutil.rmtree, _run_cache, ignore_errors=True)

from simfront.core.paths import REPO_ROOT, shared_dir

# Samples of the H100 reference data shipped with the repository (tests/data/README.md says
# where each comes from), so the suite runs on a clone with nothing beside it.
TEST_DATA = REPO_ROOT / "tests" / "data"
H100_TRACES = TEST_DATA / "h100" / "traces"
SCAN_STEP = H100_TRACES / "mamba1_scan_step"
LM_PARTIAL = H100_TRACES / "mamba2_lm_partial"
NCU_DIR = TEST_DATA / "h100" / "ncu"
MAMBA2_NCU = NCU_DIR / "mamba2_lm_2x768_L2048_B4.ncu.csv.xz"
MAMBA1_NCU = NCU_DIR / "mamba1_lm_2x768_L2048_B4.ncu.csv.xz"
ACCELSIM_LOGS = TEST_DATA / "accelsim"

# Only in the shared data: the public work-in-progress Accel-Sim H100 config files and the
# mamba_ssm wheel, third-party files the repository may not ship.
ACCELSIM_DATA = shared_dir() / "data" / "accelsim"
SHARED_WHEELS = shared_dir() / "wheels"


@pytest.fixture(scope="session")
def public_accelsim_configs() -> Path:
    """The shared folder of public Accel-Sim config files; tests on it skip when it is absent."""
    if not ACCELSIM_DATA.is_dir():
        pytest.skip(f"public Accel-Sim H100 config files not found at {ACCELSIM_DATA} "
                    "(not shipped: they are third-party; set SIMFRONT_SHARED to the shared data)")
    return ACCELSIM_DATA


@pytest.fixture(scope="session")
def scan_step() -> Path:
    return SCAN_STEP


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def h100():
    """The shipped H100 description, as the model tests time kernels on it."""
    from simfront.gpu import load_gpu

    return load_gpu("h100")

"""Builds simfront's NVBit tracer (needs NVBIT_DIR and nvcc) and checks the shared object
the way a loader will: every symbol resolves, and the entry points NVBit and NVTX look for
are exported. (An unexported tool-kernel image once made the tool fail to load on the
H100: `undefined symbol: sf_flush_bin`.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from simfront.capture.tracers import BUILD_DIR

pytestmark = [pytest.mark.nvbit, pytest.mark.slow]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    nvbit = os.environ.get("NVBIT_DIR")
    if not nvbit or not (Path(nvbit) / "core" / "libnvbit.a").exists():
        pytest.skip("NVBIT_DIR does not name an NVBit release (with core/libnvbit.a)")
    if not shutil.which("nvcc") or not shutil.which("g++"):
        pytest.skip("nvcc and g++ are needed to build the tracer")
    out = tmp_path_factory.mktemp("tracer")
    subprocess.run(["make", "-C", str(BUILD_DIR.parent), f"NVBIT_DIR={nvbit}", f"BUILD_DIR={out}"],
                   check=True, capture_output=True)
    return out


def test_tracer_symbols(built):
    so = built / "simfront_tracer.so"
    dyn = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                         text=True, check=True).stdout
    for sym in ("nvbit_at_init", "nvbit_at_cuda_event", "nvbit_at_graph_node_launch",
                "InitializeInjectionNvtx2", "sf_flush_bin"):
        assert f" {sym}" in dyn, sym
    env = dict(os.environ)
    stub = built / "stub"
    if stub.exists():
        (stub / "libcuda.so.1").unlink(missing_ok=True)
        (stub / "libcuda.so.1").symlink_to(stub / "libcuda.so")
        env["LD_LIBRARY_PATH"] = f"{stub}:{env.get('LD_LIBRARY_PATH', '')}"
    res = subprocess.run(["ldd", "-r", str(so)], capture_output=True, text=True, env=env)
    assert "undefined symbol" not in res.stdout + res.stderr

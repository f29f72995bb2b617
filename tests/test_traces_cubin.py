"""Register counts read from the mamba_ssm wheel's cubins: they agree with ncu where ncu
profiled the same function, and they are the values the shipped samples were repaired with."""

from __future__ import annotations

import json

import pytest

from simfront.core.paths import repo_dir
from simfront.traces.cubin import read_kernels
from simfront.traces.reader import TraceSet
from simfront.traces.repair import (
    demangle, demangle_many, load_cubin, load_ncu, normalize_name, repair_set,
)
from simfront.traces.validate import validate_set

from conftest import MAMBA1_NCU, SHARED_WHEELS

SIDECAR = repo_dir("traces") / "provenance" / "mamba1_scan_step.launches.jsonl"


@pytest.fixture(scope="module")
def wheel_kernels():
    wheels = sorted(SHARED_WHEELS.glob("mamba_ssm-*.whl"))
    if not wheels:
        pytest.skip("no mamba_ssm wheel in shared/wheels")
    return {k.name: k for k in read_kernels(wheels[0]) if k.sm == 90}


def test_wheel_registers_match_ncu(wheel_kernels):
    if demangle("_Z3foov") == "_Z3foov":
        pytest.skip("c++filt (binutils) not available to compare names with ncu's")
    records = load_ncu(MAMBA1_NCU)
    names = [n for n in wheel_kernels if "selective_scan" in n]
    by_name = {normalize_name(d): wheel_kernels[n] for n, d in zip(names, demangle_many(names))}
    compared = 0
    for r in records:
        k = by_name.get(normalize_name(r.name))
        if k is not None:
            assert k.regs == r.regs, r.name
            compared += 1
    assert compared >= 4  # fwd and bwd, both steps' launches


def test_sidecar_registers_are_the_wheels(wheel_kernels, scan_step):
    ts = TraceSet(scan_step)
    for line in SIDECAR.read_text().splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec["kernel_id"] in (35636, 35643):
            name = ts.kernel(rec["kernel_id"]).header.name
            assert wheel_kernels[name].regs == rec["regs"]


def test_repair_with_cubin_registers(tmp_path, scan_step):
    wheels = sorted(SHARED_WHEELS.glob("mamba_ssm-*.whl"))
    if not wheels:
        pytest.skip("no mamba_ssm wheel in shared/wheels (third-party: not shipped)")
    wheel = wheels[0]
    out = tmp_path / "fixed"
    repair_set(scan_step, out, load_cubin(wheel, 90), binary_version=90, kernels=[35636],
               xz_preset=0)
    assert validate_set(out).ok
    assert TraceSet(out).kernel(35636).header.nregs == 93
    changes = json.loads((out / "repairs.json").read_text())["kernels"][0]["changes"]
    shmem = [c for c in changes if c["field"] == "shmem"][0]
    assert "kept from the trace header" in shmem["from"]

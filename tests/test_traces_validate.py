"""validate flags the garbage headers of the real traces, naming file, line and field;
repair fills them from launch records (sidecar or ncu) into a copy that passes validate."""

from __future__ import annotations

import json
import shutil

import pytest

from simfront.core.errors import InputError
from simfront.core.paths import repo_dir
from simfront.traces.reader import TraceSet
from simfront.traces.repair import (
    load_ncu, load_sidecar, match_record, normalize_name, demangle, repair_set,
)
from simfront.traces.validate import structure_problems, validate_set

from conftest import LM_PARTIAL, MAMBA2_NCU

SIDECAR = repo_dir("traces") / "provenance" / "mamba1_scan_step.launches.jsonl"


def test_validate_flags_bad_headers_with_line_and_field(scan_step):
    report = validate_set(scan_step, body=False)
    assert not report.ok and report.kernels == 47
    by_file = {}
    for p in report.errors:
        by_file.setdefault(p.path.name, set()).add(p.field)
    # every header carries garbage nregs or binary version (data/README.md)
    assert len(by_file) == 47
    fwd = [p for p in report.errors if p.path.name == "kernel-35636.traceg.xz"]
    fields = {p.field: p for p in fwd}
    assert fields["nregs"].line == 6 and "32715" in fields["nregs"].message
    assert fields["binary version"].line == 7 and "2" in fields["binary version"].message
    assert "kernel-35636.traceg.xz:6" in str(fields["nregs"])


def test_validate_structure_of_a_real_set(scan_step):
    import lzma
    import re

    report = validate_set(scan_step, body=True)
    declared = 0
    for kernel in TraceSet(scan_step).kernels():
        with lzma.open(kernel.path, "rt") as f:
            insts = map(re.compile(r"^insts = (\d+)").match, f)
            declared += sum(int(m.group(1)) for m in insts if m)
    assert report.instructions == declared
    # structure is sound: only header problems
    assert {p.field for p in report.errors} <= {"nregs", "binary version", "shmem"}
    # reduce_kernel's header says shmem 2048, but its shared accesses span 16 static +
    # 2048 dynamic bytes past the 1 KiB reserve (the shipped copy says 2064)
    too_small = [p for p in report.errors if "beyond shmem" in p.message]
    assert [(p.path.name, p.line) for p in too_small] == [("kernel-35637.traceg.xz", 5)]
    assert "up to byte 3088" in too_small[0].message


def test_repair_from_sidecar_passes_validate(tmp_path, scan_step):
    out = tmp_path / "fixed"
    report = repair_set(scan_step, out, load_sidecar(SIDECAR), binary_version=90,
                        kernels=["35636", "kernel-35643"], xz_preset=0)
    assert [k["file"] for k in report.kernels] == ["kernel-35636.traceg.xz",
                                                   "kernel-35643.traceg.xz"]
    v = validate_set(out)
    assert v.ok, [str(p) for p in v.problems]
    assert v.instructions == 394_240 + 1_092_992
    hdr = TraceSet(out).kernel(35636).header
    src = TraceSet(scan_step).kernel(35636).header
    assert (hdr.nregs, hdr.binary_version) == (93, 90)
    assert (hdr.grid, hdr.block, hdr.name) == (src.grid, src.block, src.name)
    log = json.loads((out / "repairs.json").read_text())
    assert {c["field"] for c in log["kernels"][0]["changes"]} == {"nregs", "shmem",
                                                                 "binary_version"}
    # the original is untouched
    assert TraceSet(scan_step).kernel(35636).header.nregs == 32715


def test_repair_from_ncu_exact_launch(tmp_path):
    if demangle("_Z3foov") == "_Z3foov":
        pytest.skip("c++filt (binutils) not available to demangle trace names for ncu matching")
    src = LM_PARTIAL
    records = load_ncu(MAMBA2_NCU)
    header = TraceSet(src).kernel(25248).header
    m = match_record(header, records)
    assert m is not None and m.how == "name+grid+block"
    assert m.record.regs == 18 and m.record.shmem == 0
    out = tmp_path / "fixed"
    repair_set(src, out, records, binary_version=90, kernels=[25248], xz_preset=0)
    assert validate_set(out).ok
    assert TraceSet(out).kernel(25248).header.nregs == 18


def test_ncu_and_cxxfilt_names_normalise_alike():
    if demangle("_Z3foov") == "_Z3foov":
        pytest.skip("c++filt not available to demangle trace names")
    records = load_ncu(MAMBA2_NCU)
    header = TraceSet(LM_PARTIAL).kernel(25248).header
    names = {normalize_name(r.name) for r in records}
    assert normalize_name(demangle(header.name)) in names


def test_name_only_match_gives_registers_not_shmem(scan_step):
    if demangle("_Z3foov") == "_Z3foov":
        pytest.skip("c++filt (binutils) not available to demangle trace names for ncu matching")
    records = load_ncu(MAMBA2_NCU)
    header = TraceSet(scan_step).kernel(35637).header  # reduce_kernel, grid not in ncu
    m = match_record(header, records)
    assert m is not None and m.how.startswith("name only")
    assert m.record.regs == 32 and m.record.shmem is None


def test_repair_refuses_without_records_and_writes_nothing(tmp_path, scan_step):
    out = tmp_path / "fixed"
    with pytest.raises(InputError) as exc:
        repair_set(scan_step, out, [], binary_version=90, kernels=[35636])
    assert "launch records missing" in str(exc.value) and "kernel-35636" in str(exc.value)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_repair_never_in_place_or_over_existing(tmp_path, scan_step):
    shutil.copytree(scan_step, tmp_path / "copy")
    with pytest.raises(InputError):
        repair_set(tmp_path / "copy", tmp_path / "copy", load_sidecar(SIDECAR), 90)
    (tmp_path / "taken").mkdir()
    with pytest.raises(InputError):
        repair_set(tmp_path / "copy", tmp_path / "taken", load_sidecar(SIDECAR), 90)


def test_structure_errors(tmp_path, scan_step):
    import lzma

    text = lzma.open(TraceSet(scan_step).kernel(35621).path, "rt").read()
    # block outside the grid (grid is 1x1x1)
    (tmp_path / "kernel-1.traceg").write_text(text.replace("thread block = 0,0,0",
                                                           "thread block = 3,0,0"))
    (tmp_path / "kernelslist.g").write_text("kernel-1.traceg\n")
    problems = [str(p) for p in validate_set(tmp_path).errors]
    assert any("outside the grid" in p for p in problems), problems
    # a warp whose insts count disagrees with its lines
    (tmp_path / "kernel-1.traceg").write_text(text.replace("insts = 49", "insts = 50"))
    problems = validate_set(tmp_path).errors
    assert any(p.field == "insts" and p.line == 24 for p in problems)


def test_repair_refuses_a_shmem_the_trace_contradicts(tmp_path, scan_step):
    from simfront.traces.repair import LaunchRecord

    header = TraceSet(scan_step).kernel(35637).header
    too_small = LaunchRecord(header.name, header.grid, header.block, regs=32, shmem=2048,
                             kernel_id=35637, source="test")
    with pytest.raises(InputError) as exc:
        repair_set(scan_step, tmp_path / "out", [too_small], 90, kernels=[35637])
    assert "beyond shmem 2048" in str(exc.value)
    assert not (tmp_path / "out").exists()
    right = LaunchRecord(header.name, header.grid, header.block, regs=32, shmem=2064,
                         kernel_id=35637, source="test")
    repair_set(scan_step, tmp_path / "out", [right], 90, kernels=[35637], xz_preset=0)
    assert validate_set(tmp_path / "out").ok


def test_sidecar_of_the_capture_stage(tmp_path):
    # the capture stage's tracer writes shared memory in two parts and graph-capture records
    lines = [
        {"kernel_id": 7, "name": "_Z1kv", "grid": [2, 1, 1], "block": [64, 1, 1], "regs": 40,
         "shmem_static": 16, "shmem_dynamic": 2048, "binary_version": 90},
        {"kernel_id": 8, "name": "_Z1kv", "grid": [2, 1, 1], "block": [64, 1, 1], "regs": 40,
         "shmem_static": 16, "shmem_dynamic": 0, "captured": True},
    ]
    p = tmp_path / "launches.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines) + "not json\n")
    with pytest.raises(InputError) as exc:
        load_sidecar(p)
    assert exc.value.line == 3
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    recs = load_sidecar(p)
    assert [(r.kernel_id, r.regs, r.shmem) for r in recs] == [(7, 40, 2064)]


# --- sampled captures (simfront's tracer, `--sample first:32`) ------------------------

SAMPLED_SET = repo_dir("traces") / "mamba2_lm-tiny"
SAMPLED_KERNEL = "kernel-96381.traceg.xz"  # _layer_norm_bwd_kernel: 32 of 528 blocks traced


def test_a_sampled_capture_validates_against_its_sampling_line():
    from simfront.traces.reader import KernelTrace

    k = KernelTrace(SAMPLED_SET / SAMPLED_KERNEL)
    assert k.header.sampled_blocks == (32, 528)
    problems, n = structure_problems(k)
    assert problems == [] and n > 0


def test_a_sampling_line_that_disagrees_with_the_body_is_an_error(tmp_path):
    import lzma

    text = lzma.open(SAMPLED_SET / SAMPLED_KERNEL, "rt").read()
    assert "traced 32 of 528" in text
    d = tmp_path / "set"
    d.mkdir()
    (d / "kernel-96381.traceg").write_text(text.replace("traced 32 of 528", "traced 40 of 528"))
    (d / "kernelslist.g").write_text("kernel-96381.traceg\n")
    report = validate_set(d)
    assert not report.ok
    (p,) = [p for p in report.problems if p.field == "grid dim"]
    assert p.line == 3 and "40 of 528" in p.message

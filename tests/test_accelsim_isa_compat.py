"""--isa-compat ampere: rewriting real H100 (sm_90) traces for Accel-Sim 1.x's Ampere map."""

from __future__ import annotations

import lzma
import shutil
from collections import Counter

import pytest

from simfront.core.errors import BackendError
from simfront.sim.accelsim import isa_compat as ic

from conftest import SCAN_STEP

SMALL_VIADD = "kernel-35601.traceg.xz"  # 328 instructions, 8 of them VIADD
BWD = "kernel-35643.traceg.xz"  # the selective-scan backward kernel: REDG


def _traceset(tmp_path, files, name="src"):
    d = tmp_path / name
    d.mkdir()
    for f in files:
        shutil.copyfile(SCAN_STEP / f, d / f)
    (d / "kernelslist.g").write_text("".join(f + "\n" for f in files))
    return d


def _instructions(path):
    opener = lzma.open if path.name.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            parsed = ic._split_inst(line)
            if parsed and line[:1] not in "-#tw":
                yield parsed


def test_small_kernel_lowers_viadd_with_iadd3_operands(scan_step, tmp_path):
    src = _traceset(tmp_path, [SMALL_VIADD])
    before = ic.scan_opcodes(src / SMALL_VIADD)
    rep = ic.rewrite_traceset(src, tmp_path / "out", header_overrides={"*": {"nregs": 32}},
                              compress=True)
    out = tmp_path / "out" / "kernel-35601.traceg.xz"
    after = ic.scan_opcodes(out)
    assert rep.changed == Counter({"VIADD": before["VIADD"]}) and before["VIADD"] == 8
    assert "VIADD" not in after
    assert after["IADD3"] == before["IADD3"] + before["VIADD"]
    assert sum(after.values()) == sum(before.values()) == rep.n_instructions
    # each VIADD Rd, Ra, imm became IADD3 Rd, Ra, imm, RZ: one more register source (RZ)
    pairs = list(zip(_instructions(src / SMALL_VIADD), _instructions(out), strict=True))
    for (otoks, oi), (toks, i) in pairs:
        if otoks[oi] == "VIADD":
            assert toks[i] == "IADD3"
            assert int(toks[i + 1]) == int(otoks[oi + 1]) + 1
            assert toks[i + 1 + int(toks[i + 1])] == ic.RZ
            assert toks[-1] == otoks[-1]  # the immediate is kept
        else:
            assert toks == otoks
    header = lzma.open(out, "rt").read().split("\n#", 1)[0]
    assert "-binary version = 80" in header and "-nregs = 32" in header
    assert (tmp_path / "out" / "kernelslist.g").read_text() == "kernel-35601.traceg.xz\n"
    assert rep.kernels[0].header_changes["nregs"][1] == "32"
    assert "VIADD 8" in rep.summary()


def test_redg_becomes_red_streaming_xz(scan_step, tmp_path):
    src = _traceset(tmp_path, [BWD])
    rep = ic.rewrite_traceset(src, tmp_path / "out", binary_version=86)
    out = tmp_path / "out" / "kernel-35643.traceg"
    assert out.exists()
    # The fact: REDG is what crashed Accel-Sim 1.x on this kernel.
    assert rep.changed["REDG"] == 32896
    after = ic.scan_opcodes(out)
    assert "REDG" not in after and after["RED"] == 32896
    with open(out) as f:
        head = [next(f) for _ in range(8)]
        red = next(ln for ln in f if " RED." in ln)
    assert "-binary version = 86\n" in head
    assert red.split()[3].startswith("RED.E.ADD.F32.FTZ.RN.STRONG.GPU")
    assert (src / BWD).read_bytes() == (SCAN_STEP / BWD).read_bytes()  # never in place


def _with_opcode(src, name, opcode, n=3):
    """Make ``n`` IADD3 lines of a real kernel hold ``opcode`` instead."""
    lines = lzma.open(src / name, "rt").read().split("\n")
    idx = [i for i, ln in enumerate(lines) if " IADD3 " in ln][:n]
    assert len(idx) == n
    for i in idx:
        toks = lines[i].split()
        toks[3 + int(toks[2])] = opcode
        lines[i] = " ".join(toks) + " "
    (src / name).write_bytes(lzma.compress("\n".join(lines).encode()))
    return idx


def test_refuses_opcodes_without_lowering_before_writing(scan_step, tmp_path):
    src = _traceset(tmp_path, [SMALL_VIADD])
    idx = _with_opcode(src, SMALL_VIADD, "UBLKPF.L2")  # bulk prefetch: no lowering
    with pytest.raises(ic.IsaCompatError) as err:
        ic.rewrite_traceset(src, tmp_path / "out")
    msg = str(err.value)
    assert "UBLKPF (bulk prefetch): 3 instructions" in msg
    assert f"kernel-35601.traceg.xz line {idx[0] + 1}" in msg
    assert not (tmp_path / "out").exists()


def test_refusal_is_per_kernel(scan_step, tmp_path):
    """One unlowerable kernel is left out (named, with count and first line); the others
    are written and listed."""
    other = "kernel-35602.traceg.xz"
    src = _traceset(tmp_path, [SMALL_VIADD, other])
    idx = _with_opcode(src, SMALL_VIADD, "HGMMA.64x128x32.F32.BF16.SP", n=2)  # sparse
    rep = ic.rewrite_traceset(src, tmp_path / "out")
    assert [k.file for k in rep.kernels] == [other]
    (r,) = rep.refused
    assert r.file == SMALL_VIADD and r.opcodes["HGMMA"] == (2, idx[0] + 1)
    assert "HGMMA x2 (first at line" in rep.summary()
    assert (tmp_path / "out" / "kernelslist.g").read_text() == "kernel-35602.traceg\n"
    assert not (tmp_path / "out" / "kernel-35601.traceg").exists()
    assert rep.as_dict()["refused"][SMALL_VIADD]["opcodes"]["HGMMA"]["count"] == 2


def test_refuses_in_place_and_unknown_targets(scan_step, tmp_path):
    src = _traceset(tmp_path, [SMALL_VIADD])
    with pytest.raises(BackendError, match="copy"):
        ic.rewrite_traceset(src, src)
    with pytest.raises(BackendError, match="only one is 'ampere'"):
        ic.rewrite_traceset(src, tmp_path / "o", target="volta")
    with pytest.raises(BackendError, match="does not select the Ampere map"):
        ic.rewrite_traceset(src, tmp_path / "o", binary_version=90)


def test_sample_traces_need_only_viadd_and_redg(scan_step):
    """Across the sample, every opcode is in the Ampere map or lowered (the data README's
    finding: VIADD and REDG are the only misses)."""
    files = sorted(p.name for p in SCAN_STEP.glob("kernel-*.traceg.xz")
                   if p.name != BWD and p.stat().st_size < 20_000)
    assert len(files) > 20
    assert ic.check_opcodes(SCAN_STEP, files) == {}

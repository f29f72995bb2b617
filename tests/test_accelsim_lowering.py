"""Hopper -> Ampere lowering (simfront.sim.accelsim.lowering) on real shipped H100 traces.

No Accel-Sim needed. What "conserved" means here (docs/accelsim.md):

- instructions: every original warp instruction becomes one or more lines carrying its PC,
  in order, so each lowered warp folds back onto the original stream; lines that need no
  lowering are unchanged; opcode counts move exactly by what the report says it rewrote
  and emitted; each warp's ``insts =`` matches its lines;
- tensor FLOPs: the HMMA lines' multiply-adds equal the HGMMA lines' (per warp, 2*16*N*k);
- dependencies: fragment j of an accumulator at Racc is written to and read from
  R(acc+4j), so successive HGMMAs on one accumulator keep their chain, and each HMMA reads
  the registers its operand loads write.
"""

from __future__ import annotations

import lzma
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from simfront.sim.accelsim import isa_compat as ic
from simfront.sim.accelsim import lowering as lw
from simfront.sim.accelsim.isa_compat import AMPERE_OPCODES, rewrite_traceset, scan_opcodes

ROOT = Path(__file__).resolve().parents[1]
M2 = ROOT / "traces" / "mamba2_lm-tiny"
M1 = ROOT / "traces" / "mamba1_lm-tiny"
SSD_DC = "kernel-96340.traceg.xz"  # _chunk_scan_bwd_dc_kernel: HGMMA.64x32x16 + WARPGROUP
NVJET = "kernel-96278.traceg.xz"  # nvjet_sm90 GEMM: HGMMA, UTMALDG/UTMASTG, SYNCS, clusters
RS_KERNEL = "kernel-96332.traceg.xz"  # _chunk_scan_chunk_state_bwd_dx: HGMMA with A in registers
SAMPLED = "kernel-266.traceg.xz"  # depthwise conv, grid 33, traced 32 of 33


def _open(p: Path):
    return lzma.open(p, "rt") if p.name.endswith(".xz") else open(p)


def _warps(path: Path) -> dict[tuple[str, int], tuple[int | None, list[str]]]:
    """{(block, warp): (declared insts, instruction lines)} of a trace file."""
    out: dict = {}
    tb = None
    key = None
    with _open(path) as f:
        for line in f:
            if line.startswith("thread block"):
                tb = line.split("=")[1].strip()
            elif line.startswith("warp"):
                key = (tb, int(line.split("=")[1]))
                out[key] = [None, []]
            elif line.startswith("insts"):
                out[key][0] = int(line.split("=")[1])
            elif line[:1] and line[:1] in "0123456789abcdef" and key is not None:
                out[key][1].append(line)
    return out


def _lower(tmp_path, trace_dir: Path, name: str) -> tuple[lw.KernelLowering, Path]:
    dst = tmp_path / name.replace(".xz", "")
    rep = ic.lower_kernel(trace_dir / name, dst, 80, {})
    assert isinstance(rep, lw.KernelLowering), rep
    return rep, dst


def _runs(lines: list[str]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for x in lines:
        pc = x.split(None, 1)[0]
        if out and out[-1][0] == pc:
            out[-1][1].append(x)
        else:
            out.append((pc, [x]))
    return out


def _check_folds_back(src: Path, dst: Path) -> None:
    """Each lowered warp, folded by runs of equal PCs, is the original warp's PC sequence;
    runs of instructions that needed no lowering are unchanged."""
    before, after = _warps(src), _warps(dst)
    assert list(before) == list(after)
    for key, (_, orig) in before.items():
        decl, new = after[key]
        assert decl == len(new), key
        ro, rn = _runs(orig), _runs(new)
        assert [pc for pc, _ in ro] == [pc for pc, _ in rn], key
        for (_, a), (_, b) in zip(ro, rn):
            if all(lw.parse_line(x).base in AMPERE_OPCODES for x in a) and \
                    not any(" DEPBAR.LE " in x for x in b):
                assert [x.split() for x in a] == [x.split() for x in b], key


def _opcode_counts_move_as_reported(src: Path, dst: Path, rep: lw.KernelLowering) -> None:
    before, after = scan_opcodes(src), scan_opcodes(dst)
    expect = Counter(before)
    expect.subtract(rep.rewritten)
    expect.update(rep.emitted)
    assert +expect == +Counter(after)
    assert rep.instructions_in == sum(before.values())
    assert rep.instructions_out == sum(after.values())
    assert all(op in AMPERE_OPCODES for op in after), set(after) - AMPERE_OPCODES


def _tensor_flops(path: Path) -> float:
    total = 0.0
    with _open(path) as f:
        for line in f:
            if "MMA" in line and line[:1] in "0123456789abcdef":
                ln = lw.parse_line(line)
                if ln.mask:
                    m = re.match(r"HGMMA\.64x(\d+)x(\d+)", ln.opcode)
                    if m:
                        total += 2 * 16 * int(m[1]) * int(m[2])
                    elif ln.opcode.startswith("HMMA.16816"):
                        total += 2 * 16 * 8 * 16
    return total


def test_ssd_kernel_hgmma_becomes_hmma_chain(tmp_path):
    rep, dst = _lower(tmp_path, M2, SSD_DC)
    src = M2 / SSD_DC
    assert rep.rewritten["HGMMA"] == 128 and rep.rewritten["WARPGROUP"] == 128
    # 64x32x16: N/8 = 4 HMMA.16816 per warp and HGMMA line
    assert rep.emitted["HMMA"] == 4 * 128
    _opcode_counts_move_as_reported(src, dst, rep)
    _check_folds_back(src, dst)
    flops = _tensor_flops(src)
    assert flops == 128 * 2 * 16 * 32 * 16
    assert _tensor_flops(dst) == flops == rep.tensor_flops_in == rep.tensor_flops_out

    # dependencies: per warp, each HGMMA group's fragment j reads what the previous group's
    # fragment j wrote (or RZ when the HGMMA zeroes the accumulator), and reads the scratch
    # registers its LDS lines just wrote
    orig = _warps(src)
    for key, (_, lines) in _warps(dst).items():
        hg = [lw.parse_line(x) for x in orig[key][1] if " HGMMA." in x]
        groups = defaultdict(list)
        for x in lines:
            ln = lw.parse_line(x)
            if ln.base in ("HMMA", "LDS") and ln.pc in {h.pc for h in hg}:
                groups[ln.pc].append(ln)
        written: dict[str, str] = {}
        for h in hg:
            g = groups[h.pc]
            hm = [x for x in g if x.base == "HMMA"]
            lds = [x for x in g if x.base == "LDS"]
            assert len(hm) == 4
            assert {x.dsts[0] for x in lds} == {lw.R_A, lw.R_B}  # SS: A and B from smem
            acc = int(h.dsts[0][1:])
            for j, m in enumerate(hm):
                assert m.dsts == [f"R{acc + 4 * j}"]
                assert m.srcs[:2] == [lw.R_A, lw.R_B]
                c = m.srcs[2]
                if h.srcs[-1] == lw.RZ:
                    assert c == lw.RZ
                else:
                    assert c == f"R{int(h.srcs[-1][1:]) + 4 * j}"
                    assert written.get(c) == "HMMA"
                written[m.dsts[0]] = "HMMA"
        # shared-operand bytes per warp and HGMMA: 512 B of A + a quarter of B (32 x 16 x 2)
        for h in hg:
            lds = [x for x in groups[h.pc] if x.base == "LDS"]
            nbytes = sum(16 * bin(x.mask).count("1") for x in lds) // (len(
                [y for y in hg if y.pc == h.pc]))
            assert nbytes == 512 + 32 * 16 * 2 // 4


def test_register_a_operand_reads_only_b_from_shared(tmp_path):
    rep, dst = _lower(tmp_path, M2, RS_KERNEL)
    _opcode_counts_move_as_reported(M2 / RS_KERNEL, dst, rep)
    assert rep.tensor_flops_in == rep.tensor_flops_out == _tensor_flops(M2 / RS_KERNEL) > 0
    seen_rs = 0
    for _, (_, lines) in _warps(M2 / RS_KERNEL).items():
        for x in lines:
            ln = lw.parse_line(x)
            if ln.base == "HGMMA" and len(ln.srcs) == 2:
                seen_rs += 1
    assert seen_rs == 256  # HGMMA with A in registers (2 sources: A, C)
    # each RS HGMMA: its A register reaches all its HMMAs, and only B is read from shared
    # memory (a quarter of N x k16 per warp)
    orig = _warps(M2 / RS_KERNEL)
    checked = 0
    for key, (_, lines) in _warps(dst).items():
        rs = {h.pc: h for h in (lw.parse_line(x) for x in orig[key][1]) if h.base == "HGMMA"
              and len(h.srcs) == 2}
        for pc, h in rs.items():
            g = [lw.parse_line(x) for x in lines if x.split(None, 1)[0] == pc]
            s = lw.gmma_shape(h.opcode)
            hm = [x for x in g if x.base == "HMMA"]
            lds = [x for x in g if x.base == "LDS"]
            assert {m.srcs[0] for m in hm} == {h.srcs[0]}
            assert {x.dsts[0] for x in lds} == {lw.R_B}
            n_inst = sum(1 for x in orig[key][1] if x.split(None, 1)[0] == pc)
            assert len(hm) == n_inst * s.n // 8
            assert sum(16 * bin(x.mask).count("1") for x in lds) == n_inst * s.n * 16 * 2 // 4
            checked += 1
    assert checked


def test_nvjet_gemm_tma_moves_the_inferred_bytes(tmp_path):
    rep, dst = _lower(tmp_path, M2, NVJET)
    src = M2 / NVJET
    _opcode_counts_move_as_reported(src, dst, rep)
    _check_folds_back(src, dst)
    assert rep.tensor_flops_in == rep.tensor_flops_out == _tensor_flops(src) > 0
    for op in ("HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "UCGABAR_ARV", "UCGABAR_WAIT", "FENCE",
               "STSM"):
        assert rep.rewritten[op] > 0, op

    # bytes: per block, TMA loads bring what its HGMMAs read from shared memory, TMA stores
    # take what its STSMs wrote there (rounded up to 16 B per load)
    per_block_smem = defaultdict(int)
    per_block_stsm = defaultdict(int)
    per_block_loads = defaultdict(int)
    for (tb, _), (_, lines) in _warps(src).items():
        for x in lines:
            ln = lw.parse_line(x)
            if not ln.mask:
                continue
            s = lw.gmma_shape(ln.opcode)
            if s:
                per_block_smem[tb] += (512 if len(ln.srcs) < 2 else 0) + s.n * 16 * 2 // 4
            elif ln.base == "UTMALDG":
                per_block_loads[tb] += 1
            elif ln.base == "STSM":
                n = 4 if ln.opcode.endswith(".4") else 2 if ln.opcode.endswith(".2") else 1
                per_block_stsm[tb] += 16 * bin(ln.mask & ((1 << 8 * n) - 1)).count("1")
    ldgsts = stg = 0
    depbar_warps = ldgsts_warps = 0
    for (tb, _), (_, lines) in _warps(dst).items():
        parsed = [lw.parse_line(x) for x in lines]
        moved = sum(16 * bin(p.mask).count("1") for p in parsed if p.base == "LDGSTS")
        ldgsts += moved
        stg += sum(16 * bin(p.mask).count("1") for p in parsed if p.base == "STG"
                   and p.addrs and p.addrs[0] >= lw.SYNTH_GLOBAL_BASE)
        if moved:
            ldgsts_warps += 1
            # the producer waits for its loads before it exits
            assert parsed[-1].base == "EXIT" and parsed[-2].opcode == "DEPBAR.LE"
            depbar_warps += 1
        for p in parsed:
            # lowered mbarrier atomics (the kernel has no ATOMS of its own) and STSM rows:
            # shared offsets, the cluster rank stripped
            if p.opcode in ("ATOMS.ADD", "STS.128"):
                assert all(a <= lw.SHARED_OFFSET_MASK for a in p.addrs)
    assert ldgsts == rep.tma_load_bytes == sum(per_block_smem.values()) > 0
    assert stg == rep.tma_store_bytes == sum(per_block_stsm.values()) > 0
    assert depbar_warps == ldgsts_warps > 0


def test_every_kernel_of_the_mamba2_tiny_step_lowers(tmp_path):
    """The issue's count: the Hopper-only launches of the Mamba2 tiny step (HGMMA, TMA,
    SYNCS...) all lower, and no opcode outside Accel-Sim 1.x's Ampere map is left."""
    rep = rewrite_traceset(M2, tmp_path / "out")
    assert not rep.refused
    hopper_only = [k for k in rep.kernels if k.rewritten.keys() & {"HGMMA", "UTMALDG", "SYNCS"}]
    assert len(hopper_only) == 17
    left = Counter()
    for k in rep.kernels:
        for op, n in scan_opcodes(tmp_path / "out" / k.out_file).items():
            if op not in AMPERE_OPCODES:
                left[op] += n
    assert not left
    d = rep.as_dict()
    assert d["kernels"][NVJET]["rewritten"]["UTMALDG"] == 128
    assert d["kernels"][NVJET]["tma_load_bytes"] > 0


def test_sampled_launch_is_regridded_to_its_traced_blocks(tmp_path):
    rep, dst = _lower(tmp_path, M1, SAMPLED)
    assert rep.sampled == (32, 33)
    assert rep.header_changes["grid dim"] == ("(33,1,1)", "(32,1,1)")
    blocks = [ln.split("=")[1].strip() for ln in _open(dst) if ln.startswith("thread block")]
    assert blocks == [f"{i},0,0" for i in range(32)]
    assert rep.instructions_in == rep.instructions_out + 0 == sum(scan_opcodes(dst).values())
    # the same without lowering (the runner's path for a sampled launch sent as it is)
    from simfront.sim.accelsim.isa_compat import rewrite_kernel

    kr = rewrite_kernel(M1 / SAMPLED, tmp_path / "plain.traceg", None)
    assert kr.sampled == (32, 33) and kr.header_changes["grid dim"][1] == "(32,1,1)"
    head = (tmp_path / "plain.traceg").read_text().split("#BEGIN_TB", 1)[0]
    assert "-grid dim = (32,1,1)" in head and "-binary version = 90" in head


@pytest.mark.parametrize("op", ["UBLKPF.L2", "HGMMA.64x64x32.F32.BF16.SP"])
def test_unlowerable_kernel_is_refused_naming_opcode_count_and_line(tmp_path, op):
    text = lzma.open(M2 / SSD_DC, "rt").read().split("\n")
    idx = [i for i, ln in enumerate(text) if " LOP3" in ln][:2]
    for i in idx:
        t = text[i].split()
        t[3 + int(t[2])] = op
        text[i] = " ".join(t)
    src = tmp_path / "k.traceg"
    src.write_text("\n".join(text))
    res = ic.lower_kernel(src, tmp_path / "out.traceg")
    assert isinstance(res, lw.Refusal)
    base = op.split(".")[0]
    n, first = res.opcodes[base]
    assert first == idx[0] + 1
    assert n == (2 if base == "UBLKPF" else 2 + 128)  # HGMMA: the kernel's own 128 too
    assert base in res.message() and f"line {first}" in res.message()
    assert not (tmp_path / "out.traceg").exists()

"""The opcode table: every opcode of the real H100 traces and of Accel-Sim's opcode maps is
known; categories, pipes and FLOPs follow the documented rules."""

from __future__ import annotations

import pytest

from simfront.traces.opcodes import CATEGORIES, PIPES, classify, known_bases
from simfront.traces.reader import TraceSet

# Base opcodes of Accel-Sim's Volta..Hopper maps (gpu-simulator/ISA_Def/*_opcode.h), by name.
ACCELSIM_BASES = """FADD FADD32I FCHK FFMA32I FFMA FMNMX FMUL FMUL32I FSEL FSET FSETP FSWZADD MUFU
HADD2 HADD2_32I HFMA2 HFMA2_32I HMUL2 HMUL2_32I HSET2 HSETP2 HMNMX2 HMMA DMMA BMMA IMMA DADD
DFMA DMUL DSETP BMSK BREV FLO IABS IADD IADD3 IADD32I IDP IDP4A IMAD IMNMX IMUL IMUL32I ISCADD
ISCADD32I ISETP LEA LOP LOP3 LOP32I POPC SHF SHL SHR VABSDIFF VABSDIFF4 F2F F2FP F2I I2F I2I
I2IP I2FP F2IP FRND MOV MOV32I MOVM PRMT SEL SGXT SHFL PLOP3 PSETP P2R R2P LD LDC LDG LDL LDS
LDSM ST STG STL STS MATCH QSPC ATOM ATOMS ATOMG RED CCTL CCTLL ERRBAR MEMBAR CCTLT LDGDEPBAR
LDGSTS VIADD VIADDMNMX VIMNMX VIMNMX3 CGAERRBAR R2UR REDUX S2UR UBMSK UBREV UCLEA UF2FP UFLO
UIADD3 UIMAD UISETP ULDC ULEA ULOP ULOP3 ULOP32I UMOV UP2UR UPLOP3 UPOPC UPRMT UPSETP UR2UP
USEL USGXT USHF USHL USHR VOTEU UBLKCP UBLKPF UBLKRED UTMALDG UTMAPF UTMAREDG UTMASTG UTMACCTL
UTMACMDFLUSH FENCE SYNCS ARRIVES UCGABAR_ARV UCGABAR_WAIT WARPGROUP QGMMA HGMMA TEX TLD TLD4
TMML TXD TXQ SUATOM SULD SUQUERY SURED SUST BMOV BPT BRA BREAK BRX BRXU BSSY BSYNC CALL EXIT
JMP JMX JMXU KILL NANOSLEEP RET RPCMOV RTT WARPSYNC YIELD ELECT B2R BAR CS2R CSMTEST DEPBAR
GETLMEMBASE LEPC NOP PMTRIG R2B S2R SETCTAID SETLMEMBASE VOTE VOTE_VTG USETMAXREG""".split()


@pytest.mark.parametrize("base", ACCELSIM_BASES)
def test_accelsim_opcodes_are_known(base):
    c = classify(base)
    assert c.known, base
    assert c.category in CATEGORIES and c.pipe in PIPES


def test_every_opcode_of_the_real_traces_is_known(scan_step):
    seen = set()
    for kernel in TraceSet(scan_step).kernels():
        for chunk in kernel.iter_chunks():
            seen.update(chunk.opcodes)
    assert len(seen) > 100
    unknown = sorted(op for op in seen if not classify(op).known)
    assert unknown == []


def test_unknown_is_reported_not_dropped():
    c = classify("WIZZ.BANG.32")
    assert c.category == "unknown" and c.pipe == "other" and not c.known
    assert c.base == "WIZZ" and c.modifiers == ("BANG", "32")


@pytest.mark.parametrize("opcode,category,pipe,per_lane", [
    ("FFMA.FTZ", "fp32", "fp32", 2), ("FADD", "fp32", "fp32", 1), ("FMUL.RZ", "fp32", "fp32", 1),
    ("FMNMX", "fp32", "int", 0), ("FSETP.GEU.AND", "fp32", "int", 0),
    ("HFMA2", "fp16", "fp16", 4), ("HADD2", "fp16", "fp16", 2), ("HMUL2", "fp16", "fp16", 2),
    ("HFMA2.MMA", "int", "fp32", 0), ("DFMA", "fp64", "fp64", 2),
    ("IMAD.WIDE.U32", "int", "fp32", 0), ("IADD3.X", "int", "int", 0),
    ("I2FP.F32.U32", "conversion", "int", 0), ("F2I.FTZ.U32.TRUNC.NTZ", "conversion", "sfu", 0),
    ("BRA", "control", "cbu", 0), ("BSSY", "control", "cbu", 0),
    ("BAR.SYNC.DEFER_BLOCKING", "sync", "cbu", 0), ("WARPSYNC.ALL", "sync", "cbu", 0),
    ("SYNCS.ARRIVE.TRANS64.A1T0", "sync", "lsu", 0), ("UIADD3", "uniform", "uniform", 0),
    ("ULDC.64", "uniform", "uniform", 0), ("NOP", "misc", "other", 0),
])
def test_categories_pipes_flops(opcode, category, pipe, per_lane):
    c = classify(opcode)
    assert (c.category, c.pipe, c.flops_per_lane) == (category, pipe, per_lane)


@pytest.mark.parametrize("opcode,function", [("MUFU.EX2", "EX2"), ("MUFU.RCP", "RCP"),
                                              ("MUFU.TANH", "TANH"), ("MUFU.RSQ", "RSQ")])
def test_mufu_by_function(opcode, function):
    c = classify(opcode)
    assert (c.category, c.pipe, c.sfu_function) == ("sfu", "sfu", function)


@pytest.mark.parametrize("opcode,mem_key", [
    ("LDG.E.128", "load_global"), ("STG.E.U16", "store_global"), ("LDS.64", "load_shared"),
    ("STS", "store_shared"), ("LDL", "load_local"), ("STL.64", "store_local"),
    ("LDC.64", "load_constant"), ("LD.E", "load_generic"), ("ATOMS.ADD", "atomic_shared"),
    ("ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU", "atomic_global"), ("RED.E.ADD", "reduction_generic"),
    ("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU", "reduction_global"), ("TEX.SCR.LL", "load_texture"),
    ("LDGSTS.E.BYPASS.128", "load_global"), ("UTMALDG.2D", "load_global"),
    ("UTMASTG.2D", "store_global"), ("UBLKCP.G.S", "store_global"), ("UBLKCP.S.G", "load_global"),
])
def test_memory_spaces(opcode, mem_key):
    c = classify(opcode)
    assert c.category == "memory" and c.pipe == "lsu" and c.mem_key == mem_key


@pytest.mark.parametrize("opcode,shape,flops", [
    ("HMMA.16816.F32.BF16", (16, 8, 16), 2 * 16 * 8 * 16),
    ("HMMA.1688.F32.TF32", (16, 8, 8), 2 * 16 * 8 * 8),
    ("IMMA.16832.S32.S8.S8", (16, 8, 32), 2 * 16 * 8 * 32),
    ("DMMA.884", (8, 8, 4), 2 * 8 * 8 * 4),
    # warpgroup MMA: issued by each of the warpgroup's 4 warps
    ("HGMMA.64x128x16.F32.BF16", (64, 128, 16), 2 * 64 * 128 * 16 / 4),
    ("QGMMA.64x256x32.F32.E4M3.E4M3", (64, 256, 32), 2 * 64 * 256 * 32 / 4),
    # Volta: 4 quad-pairs of m8n8k4, split into 4 (F32 accumulate) or 2 STEP instructions
    ("HMMA.884.F32.F32.STEP2", (8, 8, 4), 4 * 2 * 8 * 8 * 4 / 4),
    ("HMMA.884.F16.F16.STEP1", (8, 8, 4), 4 * 2 * 8 * 8 * 4 / 2),
])
def test_tensor_flops_from_shape(opcode, shape, flops):
    c = classify(opcode)
    assert c.category == "tensor" and c.pipe == "tensor"
    assert c.mma_shape == shape and c.flops_per_warp == flops


def test_ldsm_bytes_override_the_tracer_width():
    assert classify("LDSM.16.M88.4").bytes_per_lane == 16
    assert classify("LDSM.16.MT88.2").bytes_per_lane == 8
    assert classify("LDG.E.128").bytes_per_lane is None


def test_table_is_one_place():
    assert "HMMA" in known_bases() and "VIADD" in known_bases() and "REDG" in known_bases()
    assert classify("FFMA") is classify("FFMA")  # cached per opcode string


@pytest.mark.parametrize("opcode,dtype", [("HMMA.16816.F32.BF16", "BF16"),
                                          ("HMMA.1688.F32", "F16"), ("HMMA.16816.F16", "F16"),
                                          ("HMMA.1688.F32.TF32", "TF32"),
                                          ("HMMA.884.F32.F32.STEP0", "F16"),
                                          ("IMMA.16832.S32.S8.S8", "S8"),
                                          ("QGMMA.64x128x32.F32.E4M3.E4M3", "E4M3")])
def test_tensor_input_type(opcode, dtype):
    assert classify(opcode).dtype == dtype

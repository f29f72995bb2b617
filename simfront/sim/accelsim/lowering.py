"""Hopper -> Ampere lowering of one kernel trace, for Accel-Sim 1.x (``--isa-compat ampere``).

Accel-Sim 1.x decodes Ampere SASS only. A Hopper kernel's warpgroup MMA, TMA, mbarrier and
cluster instructions are rewritten here, one thread block at a time, into the Ampere
instructions that do the same work; whatever cannot be rewritten makes the *kernel* a
:class:`Refusal` (opcode, count, first line), so a trace set runs every other kernel.

What each lowering does (docs/accelsim.md says how far the result can be trusted):

- ``HGMMA.64xNx16.F32.BF16`` (one line per warp of the warpgroup) -> per warp N/8
  ``HMMA.16816.F32.BF16``; fragment j writes and reads accumulator register ``acc + 4j``
  (``acc + 2j`` for an F16 accumulator), so successive HGMMAs on one accumulator form the
  same register chain. Shared-memory operands (the trace has no address for them: the
  descriptors live in uniform registers, which the tracer does not record) become
  ``LDS.128`` of the right size at synthetic, bank-conflict-free offsets: per warp 512 B of
  A (16 rows x k16, absent when A comes from registers) and a quarter of B (N x k16), whose
  destination registers the HMMAs read, so the MMAs wait for their operands.
- ``UTMALDG`` -> ``LDGSTS.E.BYPASS.128`` + ``LDGDEPBAR``; ``UTMASTG`` -> ``LDS.128`` +
  ``STG.E.128``; ``UTMAREDG`` -> ``LDS.128`` + ``RED.E.ADD.F32``. The trace records only the
  tensor map's address, not the box or the coordinates, so the bytes are inferred per thread
  block: loads share what the block's HGMMAs read from shared memory, stores what its
  ``STSM`` wrote there. Global addresses are synthetic: distinct for each load of a block,
  the same in every block, so blocks share their operand tiles in L2 (as a GEMM's blocks
  largely do; DRAM traffic is then a lower bound). A warp that issued lowered loads waits
  for them (``DEPBAR.LE 0``) before it exits.
- Synchronisation: ``SYNCS`` waits (``PHASECHK``, ``TRYWAIT``) -> ``LDS`` of the mbarrier,
  arrives/exchanges -> ``ATOMS``, by one lane (the spins the H100 made stay in the trace, as
  it recorded them); ``WARPGROUP.ARRIVE/DEPBAR/WAIT``, cluster barriers (``UCGABAR_*``),
  ``USETMAXREG``, ``USETSHMSZ``, ``ACQBULK``, ``PREEXIT``, ``UTMACMDFLUSH`` -> ``NOP``
  (the HMMA results are waited for through their registers); ``FENCE`` -> ``MEMBAR.CTA``;
  ``CGAERRBAR`` -> ``ERRBAR``; ``ELECT`` -> ``VOTE.ANY``.
- Integer: ``VIADDMNMX`` -> ``IADD3`` + ``IMNMX``; ``VIMNMX3`` -> two ``IMNMX``;
  ``STSM.16.M88.n`` -> ``STS.128`` (8n lanes store one 16-byte row each); ``STAS`` ->
  ``STS`` in the block's own shared memory. (``VIADD``, ``REDG``, ``VIMNMX`` are renamed by
  :mod:`simfront.sim.accelsim.renames`' ``LOWERINGS``, applied here too.)

Every emitted line keeps the PC of the instruction it came from, so a lowered warp's stream
folds back onto the original one (what the tests check). A sampled launch (``-tb sampling =
... traced T of N``) is also re-gridded: the T traced blocks become a grid of T blocks
numbered 0..T-1 (Accel-Sim asserts on a grid whose blocks are not all in the trace); the
result is scaled back by :mod:`simfront.sim.accelsim.sampling`.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from simfront.sim.accelsim.renames import LOWERINGS

from simfront.sim.accelsim.textio import open_text_in, open_text_out

#: Scratch registers for operands the lowering creates (HMMA A/B fragments, TMA staging).
#: High numbers, below RZ (R255): Accel-Sim's scoreboard tracks them like any register.
R_A, R_B, R_STAGE = "R248", "R244", "R240"
RZ = "R255"

#: Where synthetic TMA global addresses start: far from the CUDA heap (0x7f..) in the traces.
SYNTH_GLOBAL_BASE = 0x5E00_0000_0000
#: Shared addresses in the traces carry the cluster rank above bit 24 (shared::cluster).
SHARED_OFFSET_MASK = 0xFF_FFFF

_GMMA_RE = re.compile(r"^([HQIB])GMMA\.(\d+)x(\d+)x(\d+)\.([A-Z0-9]+)\.([A-Z0-9]+)(.*)$")

#: Warpgroup MMA family -> (Ampere opcode, k of one Ampere MMA, Ampere type suffix or None to
#: keep the HGMMA's). QGMMA (FP8) has no Ampere MMA: it becomes FP16 HMMAs doing the same
#: number of multiply-adds (k32 = two k16 MMAs).
_MMA_FAMILY = {
    "H": ("HMMA", {16: "16816", 8: "1688"}),
    "Q": ("HMMA", {16: "16816"}),
    "I": ("IMMA", {32: "16832"}),
}

#: Opcodes lowered to one NOP: their effect is ordering that the rewritten stream keeps by
#: other means (registers, BAR, DEPBAR) or that Accel-Sim 1.x has no notion of (clusters,
#: register reallocation, programmatic launch).
NOP_OPS = frozenset({"WARPGROUP", "UCGABAR_ARV", "UCGABAR_WAIT", "USETMAXREG", "USETSHMSZ",
                     "ACQBULK", "PREEXIT", "UTMACMDFLUSH"})
#: Opcodes renamed, operands kept.
RENAME_OPS = {"FENCE": "MEMBAR.CTA", "CGAERRBAR": "ERRBAR", "ELECT": "VOTE.ANY"}
TMA_LOADS = frozenset({"UTMALDG", "UBLKCP"})
TMA_STORES = frozenset({"UTMASTG", "UTMAREDG", "UBLKRED"})

#: What every lowering family is called in the per-kernel counts.
LOWERED_OPS = (frozenset({"HGMMA", "QGMMA", "IGMMA", "SYNCS", "STSM", "STAS", "VIADDMNMX",
                          "VIMNMX3"}) | NOP_OPS | set(RENAME_OPS) | TMA_LOADS | TMA_STORES)


@dataclass(frozen=True)
class Line:
    """One instruction line, split into the trace format's fields."""

    pc: str
    mask: int
    dsts: list[str]
    opcode: str
    srcs: list[str]
    width: int
    addrs: list[int]  # one per active lane (empty for width 0)
    imm: str

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    def format(self) -> str:
        parts = [self.pc, f"{self.mask:08x}", str(len(self.dsts)), *self.dsts, self.opcode,
                 str(len(self.srcs)), *self.srcs, str(self.width)]
        if self.width:
            parts += _encode_addrs(self.addrs)
        parts.append(self.imm)
        return " ".join(parts) + "\n"


def _encode_addrs(addrs: list[int]) -> list[str]:
    # the tracer's compression: base + stride when constant, else base + deltas
    if not addrs:
        return ["1", "0x0", "0"]
    if len(addrs) == 1:
        return ["1", f"0x{addrs[0]:x}", "0"]
    stride = addrs[1] - addrs[0]
    if all(addrs[i + 1] - addrs[i] == stride for i in range(len(addrs) - 1)):
        return ["1", f"0x{addrs[0]:x}", str(stride)]
    return ["2", f"0x{addrs[0]:x}", *(str(addrs[i + 1] - addrs[i]) for i in range(len(addrs) - 1))]


def parse_line(text: str) -> Line:
    """An instruction line (``PC mask ndst dst.. opcode nsrc src.. width [mode addrs] imm``)."""
    t = text.split()
    pc, mask = t[0], int(t[1], 16)
    nd = int(t[2])
    dsts = t[3:3 + nd]
    i = 3 + nd
    opcode = t[i]
    ns = int(t[i + 1])
    srcs = t[i + 2:i + 2 + ns]
    i += 2 + ns
    width = int(t[i])
    i += 1
    addrs: list[int] = []
    n_active = bin(mask).count("1")
    if width:
        mode = int(t[i])
        i += 1
        if mode == 0:
            addrs = [int(x, 16) for x in t[i:i + n_active]]
            i += n_active
        elif mode == 1:
            base, stride = int(t[i], 16), int(t[i + 1])
            addrs = [base + k * stride for k in range(max(1, n_active))]
            i += 2
        else:
            a = int(t[i], 16)
            addrs = [a]
            for d in t[i + 1:i + n_active]:
                a += int(d)
                addrs.append(a)
            i += max(1, n_active)
        if n_active == 0:
            addrs = addrs[:1]
    imm = t[i] if i < len(t) else "0"
    return Line(pc, mask, dsts, opcode, srcs, width, addrs, imm)


@dataclass(frozen=True)
class GmmaShape:
    family: str  # H, Q, I
    m: int
    n: int
    k: int
    acc_type: str
    in_type: str

    @property
    def flops_per_warp(self) -> int:
        # one warp's line stands for a quarter of the warpgroup's m64 x N x k
        return 2 * (self.m // 4) * self.n * self.k

    def in_bytes(self) -> int:
        return {"BF16": 2, "F16": 2, "TF32": 4, "E4M3": 1, "E5M2": 1, "S8": 1, "U8": 1}.get(
            self.in_type, 2)


def gmma_shape(opcode: str) -> GmmaShape | None:
    m = _GMMA_RE.match(opcode)
    if not m:
        return None
    fam, mm, n, k, acc, inp, rest = m.groups()
    if fam not in _MMA_FAMILY or int(mm) != 64 or int(n) % 8 or ".SP" in rest:
        return None
    return GmmaShape(fam, int(mm), int(n), int(k), acc, inp)


def mma_flops(opcode: str) -> int:
    """Multiply-add FLOPs of one warp's MMA line (HMMA/IMMA m16nNkK, or a GMMA warp's share)."""
    s = gmma_shape(opcode)
    if s is not None:
        return s.flops_per_warp
    m = re.match(r"^[HI]MMA\.(\d\d)(\d)(\d+)\.", opcode)
    if m:
        return 2 * int(m[1]) * int(m[2]) * int(m[3])
    return 0


@dataclass
class KernelLowering:
    """Counts of one kernel's lowering (kept in the job's provenance)."""

    file: str
    out_file: str
    instructions_in: int = 0
    instructions_out: int = 0
    #: original opcode family -> instructions of it rewritten
    rewritten: Counter = field(default_factory=Counter)
    #: emitted opcode (base) -> lines emitted by the rewrites
    emitted: Counter = field(default_factory=Counter)
    tensor_flops_in: float = 0.0
    tensor_flops_out: float = 0.0
    #: bytes the lowered TMA instructions move (inferred; see the module doc)
    tma_load_bytes: int = 0
    tma_store_bytes: int = 0
    header_changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: (traced, total) blocks of a sampled launch that was re-gridded to its traced blocks
    sampled: tuple[int, int] | None = None
    census: int | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"file": self.file, "out_file": self.out_file,
                "instructions_in": self.instructions_in,
                "instructions_out": self.instructions_out,
                "rewritten": dict(self.rewritten), "emitted": dict(self.emitted),
                "tensor_flops_in": self.tensor_flops_in,
                "tensor_flops_out": self.tensor_flops_out,
                "tma_load_bytes": self.tma_load_bytes, "tma_store_bytes": self.tma_store_bytes,
                "header": {k: list(v) for k, v in self.header_changes.items()},
                "sampled": list(self.sampled) if self.sampled else None,
                "census": self.census, "notes": list(self.notes)}


@dataclass
class Refusal:
    """A kernel that cannot be lowered: {opcode: (count, first line)} and why."""

    file: str
    opcodes: dict[str, tuple[int, int]]
    why: str = "no Ampere lowering"

    def message(self) -> str:
        ops = "; ".join(f"{op} x{n} (first at line {ln})"
                        for op, (n, ln) in sorted(self.opcodes.items(), key=lambda kv: -kv[1][0]))
        return f"{self.file}: {self.why}: {ops}"


class _Refuse(Exception):
    def __init__(self, op: str, lineno: int, why: str):
        self.op, self.lineno, self.why = op, lineno, why


# --------------------------------------------------------------------------- one block


@dataclass
class _BlockCtx:
    shmem: int
    smem_cursor: int = 0
    global_cursor: Counter = field(default_factory=Counter)
    desc_ids: dict = field(default_factory=dict)
    load_bytes_each: int = 0
    store_bytes_each: int = 0

    def smem(self, nbytes: int) -> int:
        # synthetic shared offsets inside the block's allocation, 16 B per lane, consecutive
        # lanes consecutive: conflict-free, as the swizzled layouts wgmma and TMA use are
        span = max(512, self.shmem - self.shmem % 512)
        off = self.smem_cursor % span
        self.smem_cursor += nbytes
        return off

    def glob(self, desc: int, nbytes: int) -> int:
        i = self.desc_ids.setdefault(desc, len(self.desc_ids))
        off = self.global_cursor[i]
        self.global_cursor[i] += nbytes
        return SYNTH_GLOBAL_BASE + (i << 36) + off


def _lane_mask(n: int) -> int:
    return (1 << n) - 1 if n < 32 else 0xFFFFFFFF


def _vector_ops(nbytes: int, make: Callable[[int, int], Line]) -> list[Line]:
    """``nbytes`` moved 16 B per lane, 512 B per warp instruction (the last one partial)."""
    out = []
    left = nbytes
    while left > 0:
        lanes = min(32, -(-left // 16))
        out.append(make(lanes, min(left, lanes * 16)))
        left -= lanes * 16
    return out


def _lower_gmma(ln: Line, s: GmmaShape, ctx: _BlockCtx) -> list[Line]:
    fam_op, kmap = _MMA_FAMILY[s.family]
    kk = max(kmap)
    if s.k not in kmap and s.k % kk:
        raise _Refuse(ln.base, 0, f"warpgroup MMA {ln.opcode}: k{s.k} is no multiple of an "
                      f"Ampere {fam_op}'s k")
    shape = kmap.get(s.k) or kmap[kk]
    per_k = max(1, s.k // int(shape[3:]))  # "16816" -> k16, "1688" -> k8, "16832" -> k32
    if s.family == "Q":
        types = f"{s.acc_type}.F16"
    elif s.family == "I":
        types = "S32.S8"
    else:
        types = f"{s.acc_type}.{s.in_type}"
    regs_per_frag = 4 if s.acc_type in ("F32", "S32") else 2
    acc = int(ln.dsts[0][1:]) if ln.dsts else 0
    # sources: [C] for A in shared memory (SS), [A, C] for A in registers (RS)
    c_src = ln.srcs[-1] if ln.srcs else RZ
    a_reg = ln.srcs[0] if len(ln.srcs) >= 2 else None
    out: list[Line] = []
    eb = s.in_bytes()
    if ln.mask:
        if a_reg is None:
            a_bytes = (s.m // 4) * s.k * eb  # this warp's 16 rows of A
            out += _vector_ops(a_bytes, lambda lanes, nb: Line(
                ln.pc, _lane_mask(lanes), [R_A], "LDS.128", [], 16, _lanes(ctx.smem(nb), lanes),
                "0"))
        b_bytes = s.n * s.k * eb // 4  # a quarter of B: the warpgroup reads B once
        out += _vector_ops(b_bytes, lambda lanes, nb: Line(
            ln.pc, _lane_mask(lanes), [R_B], "LDS.128", [], 16, _lanes(ctx.smem(nb), lanes), "0"))
    a = a_reg or R_A
    for j in range(s.n // 8):
        r = f"R{acc + regs_per_frag * j}"
        c = RZ if c_src == RZ else f"R{int(c_src[1:]) + regs_per_frag * j}"
        for _ in range(per_k):
            out.append(Line(ln.pc, ln.mask, [r], f"{fam_op}.{shape}.{types}", [a, R_B, c], 0, [],
                            "0"))
            c = r
    return out


def _lanes(base: int, lanes: int) -> list[int]:
    return [base + 16 * i for i in range(lanes)]


def _strip_rank(addrs: list[int]) -> list[int]:
    return [a & SHARED_OFFSET_MASK for a in addrs]


def _lower_line(ln: Line, ctx: _BlockCtx, state: dict) -> list[Line] | None:
    """The Ampere lines for one Hopper line, or None when it needs no lowering."""
    base = ln.base
    if base in ("HGMMA", "QGMMA", "IGMMA"):
        s = gmma_shape(ln.opcode)
        if s is None:
            raise _Refuse(base, 0, f"warpgroup MMA shape {ln.opcode} has no Ampere lowering")
        return _lower_gmma(ln, s, ctx)
    if base in NOP_OPS:
        return [Line(ln.pc, ln.mask, [], "NOP", [], 0, [], "0")]
    if base in RENAME_OPS:
        return [Line(ln.pc, ln.mask, ln.dsts, RENAME_OPS[base], ln.srcs, 0, [], ln.imm)]
    if base == "SYNCS":
        if not ln.width:
            return [Line(ln.pc, ln.mask, [], "NOP", [], 0, [], "0")]
        # One operation on one 8-byte barrier word, whatever the warp's mask: the lowest active
        # lane does it (32 lanes of ATOMS on one word would serialise 32 times in GPGPU-Sim)
        op = "LDS" if ".PHASECHK" in ln.opcode else "ATOMS.ADD"
        lane = ln.mask & -ln.mask
        return [Line(ln.pc, lane, ln.dsts, op, ln.srcs, ln.width, _strip_rank(ln.addrs[:1]),
                     "0")]
    if base == "STAS":
        return [Line(ln.pc, ln.mask, [], "STS", ln.srcs, ln.width or 4, _strip_rank(ln.addrs),
                     "0")]
    if base == "STSM":
        # .x4: 32 lanes each give a 16-byte row address; .x2: 16 lanes; .x1: 8 lanes
        n = 4 if ln.opcode.endswith(".4") else 2 if ln.opcode.endswith(".2") else 1
        lanes = _lane_mask(8 * n)
        mask = ln.mask & lanes
        active = [i for i in range(32) if (ln.mask >> i) & 1]
        keep = [a for i, a in zip(active, ln.addrs) if (lanes >> i) & 1]
        return [Line(ln.pc, mask, [], "STS.128", ln.srcs, 16, _strip_rank(keep), "0")]
    if base == "VIADDMNMX":
        mods = ln.opcode[len("VIADDMNMX"):].replace(".RELU", "")
        d = ln.dsts or [RZ]
        first = ln.srcs[:1] if len(ln.srcs) <= 2 else ln.srcs[:2]
        rest = ln.srcs[len(first):] or [RZ]
        return [Line(ln.pc, ln.mask, d, "IADD3", first + [RZ] * (3 - len(first) - (
                    1 if len(ln.srcs) <= 2 else 0)), 0, [], ln.imm),
                Line(ln.pc, ln.mask, d, "IMNMX" + mods, [d[0]] + rest[:1], 0, [], "0")]
    if base == "VIMNMX3":
        d = ln.dsts or [RZ]
        return [Line(ln.pc, ln.mask, d, "IMNMX", ln.srcs[:2], 0, [], ln.imm),
                Line(ln.pc, ln.mask, d, "IMNMX", [d[0]] + ln.srcs[2:3], 0, [], "0")]
    if base in TMA_LOADS:
        if ln.mask == 0:
            return [Line(ln.pc, 0, [], "LDGSTS.E.BYPASS.128", [], 16, [0], "0")]
        nb = ctx.load_bytes_each
        desc = ln.addrs[0] if ln.addrs else 0
        g = ctx.glob(desc, nb)
        state["tma_load_bytes"] += nb
        state["pending_ldgsts"] = True
        out = [Line(ln.pc, _lane_mask(lanes), [], "LDGSTS.E.BYPASS.128", [], 16,
                    _lanes(g + off, lanes), "0")
               for off in range(0, nb, 512) for lanes in [min(32, (nb - off) // 16)]]
        return out + [Line(ln.pc, 0xFFFFFFFF, [], "LDGDEPBAR", [], 0, [], "0")]
    if base in TMA_STORES:
        red = base != "UTMASTG"
        if ln.mask == 0:
            return [Line(ln.pc, 0, [], "RED.E.ADD.F32" if red else "STG.E.128", [RZ], 16, [0],
                         "0")]
        nb = ctx.store_bytes_each
        desc = ln.addrs[0] if ln.addrs else 0
        g = ctx.glob(desc, nb)
        state["tma_store_bytes"] += nb
        out: list[Line] = []
        step = 128 if red else 512
        for off in range(0, nb, step):
            lanes = min(32, -(-(nb - off) // (4 if red else 16)))
            out.append(Line(ln.pc, _lane_mask(lanes), [R_STAGE], "LDS.128" if not red else "LDS",
                            [], 16 if not red else 4, _lanes(ctx.smem(step), lanes)
                            if not red else [ctx.smem(0) + 4 * i for i in range(lanes)], "0"))
            w = 4 if red else 16
            out.append(Line(ln.pc, _lane_mask(lanes), [],
                            "RED.E.ADD.F32.FTZ.RN" if red else "STG.E.128",
                            [RZ, R_STAGE], w, [g + off + w * i for i in range(lanes)], "0"))
        return out
    return None


def _block_budget(lines: list[tuple[int, str]]) -> tuple[int, int, int, int, int]:
    """(HGMMA shared-operand bytes, active TMA loads, STSM bytes, active TMA stores,
    first TMA load line) of one thread block: what the TMA byte inference divides."""
    smem_read = loads = stsm = stores = 0
    first_load = 0
    for lineno, text in lines:
        if "GMMA" in text:
            ln = parse_line(text)
            s = gmma_shape(ln.opcode)
            if s is not None and ln.mask:
                a = (s.m // 4) * s.k * s.in_bytes() if len(ln.srcs) < 2 else 0
                smem_read += a + s.n * s.k * s.in_bytes() // 4
        elif " UTMALDG" in text or " UBLKCP" in text:
            ln = parse_line(text)
            if ln.mask:
                loads += 1
                first_load = first_load or lineno
        elif " UTMASTG" in text or " UTMAREDG" in text or " UBLKRED" in text:
            ln = parse_line(text)
            if ln.mask:
                stores += 1
        elif " STSM" in text:
            ln = parse_line(text)
            n = 4 if ln.opcode.endswith(".4") else 2 if ln.opcode.endswith(".2") else 1
            stsm += 16 * bin(ln.mask & _lane_mask(8 * n)).count("1")
    return smem_read, loads, stsm, stores, first_load


# --------------------------------------------------------------------------- one kernel


def _structure(line: str) -> bool:
    c = line[:1]
    return c in ("#", "t", "w", "i", "\n", "-") or not c


def write_lowered(src: Path, dst: Path, counts: Counter, binary_version: int | None = 80,
                  overrides: dict[str, int | str] | None = None,
                  renames: dict | None = None, regrid_sampled: bool = True,
                  open_in: Callable | None = None, open_out: Callable | None = None,
                  ) -> KernelLowering | Refusal:
    """Write the lowered copy of kernel trace ``src`` (whose opcode ``counts`` were checked
    lowerable, :func:`simfront.sim.accelsim.isa_compat.lower_kernel`) to ``dst``, streamed
    one thread block at a time, under a temp name then renamed. A lowering that turns out
    impossible mid-stream gives a :class:`Refusal` and leaves nothing at ``dst``."""
    open_in = open_in or open_text_in
    open_out = open_out or open_text_out
    renames = LOWERINGS if renames is None else renames
    overrides = {k.replace("_", " "): v for k, v in (overrides or {}).items()}
    rep = KernelLowering(file=src.name, out_file=dst.name)
    tmp = dst.with_name(dst.name + ".part")
    try:
        with open_in(src) as fin, open_out(tmp, dst.name.endswith(".xz")) as fout:
            _lower_stream(fin, fout, rep, binary_version, overrides, renames, regrid_sampled)
        os.replace(tmp, dst)
    except _Refuse as r:
        tmp.unlink(missing_ok=True)
        return Refusal(src.name, {r.op: (counts.get(r.op, 1), r.lineno)}, r.why)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return rep


_SAMPLED = re.compile(r"traced (\d+) of (\d+)")
_CENSUS = re.compile(r"^\s*(\d+) warp instructions")


def _lower_stream(fin, fout, rep: KernelLowering, binary_version, overrides, renames,
                  regrid_sampled: bool) -> None:
    header: list[str] = []
    hvals: dict[str, str] = {}
    it: Iterator[tuple[int, str]] = enumerate(fin, 1)
    pending: tuple[int, str] | None = None
    for lineno, line in it:
        if line.startswith("-"):
            header.append(line)
            k, _, v = line[1:].partition("=")
            hvals[k.strip()] = v.strip()
            continue
        pending = (lineno, line)
        break
    m = _SAMPLED.search(hvals.get("tb sampling", ""))
    sampled = (int(m[1]), int(m[2])) if m and int(m[1]) < int(m[2]) else None
    cm = _CENSUS.match(hvals.get("tb census", ""))
    rep.census = int(cm[1]) if cm else None
    shmem = int(hvals.get("shmem", "0") or 0)
    for line in header:
        key, _, value = line[1:].partition("=")
        key, value = key.strip(), value.strip()
        new = value
        if key == "binary version" and binary_version is not None:
            new = str(binary_version)
        elif key in overrides:
            new = str(overrides[key])
        elif key == "grid dim" and sampled and regrid_sampled:
            new = f"({sampled[0]},1,1)"
        if new != value:
            rep.header_changes[key] = (value, new)
        fout.write(f"-{key} = {new}\n" if new != value else line)
    if sampled and regrid_sampled:
        rep.sampled = sampled
        rep.notes.append(f"sampled launch: the {sampled[0]} traced of {sampled[1]} blocks run "
                         f"as a grid of {sampled[0]}; results scaled (sampling.py)")

    def lines() -> Iterator[tuple[int, str]]:
        if pending:
            yield pending
        yield from it

    state = Counter()
    tb_index = 0
    block: list[tuple[int, str]] | None = None
    for lineno, line in lines():
        if block is None:
            if line.startswith("#BEGIN_TB"):
                block = [(lineno, line)]
            else:
                fout.write(line)
            continue
        block.append((lineno, line))
        if line.startswith("#END_TB"):
            _lower_block(block, fout, rep, shmem, renames, state,
                         tb_index if (sampled and regrid_sampled) else None)
            tb_index += 1
            block = None
    if block:
        _lower_block(block, fout, rep, shmem, renames, state,
                     tb_index if (sampled and regrid_sampled) else None)
    rep.tma_load_bytes = state["tma_load_bytes"]
    rep.tma_store_bytes = state["tma_store_bytes"]
    if rep.rewritten.get("HGMMA") or rep.rewritten.get("QGMMA") or rep.rewritten.get("IGMMA"):
        rep.notes.append("warpgroup MMA shared-memory operands read at synthetic conflict-free "
                         "offsets (descriptors are not in the trace)")
    if rep.tma_load_bytes or rep.tma_store_bytes:
        rep.notes.append("TMA bytes inferred per block from HGMMA operand and STSM bytes; "
                         "global addresses synthetic (the same tiles in every block); mbarrier "
                         "hand-off between producer and consumer warps not modelled as a wait")


def _lower_block(block: list[tuple[int, str]], fout, rep: KernelLowering, shmem: int,
                 renames: dict, state: Counter, new_index: int | None) -> None:
    smem_read, loads, stsm, stores, first_load = _block_budget(block)
    ctx = _BlockCtx(shmem=shmem)
    if loads:
        if smem_read == 0:
            raise _Refuse("UTMALDG", first_load, "TMA load bytes cannot be inferred: the "
                          "block has no warpgroup MMA reading shared memory")
        ctx.load_bytes_each = max(16, -(-smem_read // loads // 16) * 16)
    if stores:
        ctx.store_bytes_each = max(16, -(-stsm // stores // 16) * 16) if stsm else 0
    warp_lines: list[str] = []
    warp_head: list[str] = []
    st: dict = {"tma_load_bytes": 0, "tma_store_bytes": 0, "pending_ldgsts": False}

    def flush_warp() -> None:
        if not warp_head and not warp_lines:
            return
        if st["pending_ldgsts"] and warp_lines:
            # the producer waits for its lowered TMA loads before it exits
            idx = [i for i, x in enumerate(warp_lines) if not _structure(x)]
            last = parse_line(warp_lines[idx[-1]]) if idx else None
            pc = last.pc if last else "0000"
            dep = Line(pc, 0xFFFFFFFF, [], "DEPBAR.LE", [], 0, [], "0").format()
            if last is not None and last.base == "EXIT":
                warp_lines.insert(idx[-1], dep)
            else:
                warp_lines.insert(idx[-1] + 1 if idx else len(warp_lines), dep)
            rep.emitted["DEPBAR"] += 1
            st["pending_ldgsts"] = False
        n = sum(1 for x in warp_lines if not _structure(x))
        for h in warp_head:
            fout.write(f"insts = {n}\n" if h.startswith("insts") else h)
        fout.writelines(warp_lines)
        rep.instructions_out += n
        warp_head.clear()
        warp_lines.clear()

    for lineno, line in block:
        if _structure(line):
            if line.startswith("warp"):
                flush_warp()
                warp_head.append(line)
            elif line.startswith("insts"):
                warp_head.append(line)
            elif line.startswith("thread block") and new_index is not None:
                flush_warp()
                fout.write(f"thread block = {new_index},0,0\n")
            elif line.startswith("#END_TB"):
                flush_warp()
                fout.write(line)
            elif warp_head:
                warp_lines.append(line)
            else:
                fout.write(line)
            continue
        rep.instructions_in += 1
        try:
            ln = parse_line(line)
        except (ValueError, IndexError):
            warp_lines.append(line)
            continue
        base = ln.base
        f = mma_flops(ln.opcode) if ln.mask else 0
        rep.tensor_flops_in += f
        if base in renames:
            new_op, new_srcs = renames[base](ln.opcode, ln.srcs)
            out = [Line(ln.pc, ln.mask, ln.dsts, new_op, new_srcs, ln.width, ln.addrs, ln.imm)]
        else:
            try:
                out = _lower_line(ln, ctx, st)
            except _Refuse as r:
                raise _Refuse(r.op, lineno, r.why) from None
        if out is None:
            warp_lines.append(line)
            if f:
                rep.tensor_flops_out += f
            continue
        rep.rewritten[base] += 1
        for o in out:
            rep.emitted[o.base] += 1
            if o.mask:
                rep.tensor_flops_out += mma_flops(o.opcode)
            warp_lines.append(o.format())
    flush_warp()
    state["tma_load_bytes"] += st["tma_load_bytes"]
    state["tma_store_bytes"] += st["tma_store_bytes"]

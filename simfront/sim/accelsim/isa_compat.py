"""``--isa-compat ampere``: replay Hopper (sm_90) traces on Accel-Sim 1.x's Ampere opcode map.

Accel-Sim 1.x has opcode maps up to Ampere and rejects binary version 90; Hopper SASS also
holds opcodes the Ampere map lacks, on which the simulator asserts mid-run (``REDG`` in the
selective-scan backward kernel). This module writes a *rewritten copy* of a trace set (never
in place) that:

- sets ``-binary version`` to 80 (A100) or 86 (GA10x), the two versions that select
  Accel-Sim's Ampere map;
- renames the Hopper opcodes that have a one-to-one Ampere equivalent, keeping registers,
  addresses and modifiers (see :data:`LOWERINGS`);
- lowers warpgroup MMA, TMA, mbarrier, cluster and the other sm_90-only instructions into
  the Ampere instructions that do the same work (:mod:`simfront.sim.accelsim.lowering`);
- refuses, per kernel, one holding an opcode that has neither (naming opcode, count and first
  line): the other kernels are still written; only a set left empty raises
  :class:`IsaCompatError`;
- re-grids a sampled launch to its traced blocks (Accel-Sim asserts on blocks missing from
  the trace; :mod:`simfront.sim.accelsim.sampling` scales the result back);
- optionally overrides header fields (``nregs``, ``shmem``) that the tracer wrote wrong.

It is an approximation and is documented as one (docs/accelsim.md): lowered instructions run
with Ampere's latencies, and the simulated machine decodes an Ampere instruction stream.

Traces are streamed line by line (``.traceg``, ``.traceg.xz`` or ``.traceg.zst`` in, the same
or plain ``.traceg`` out), so a multi-gigabyte kernel never sits in memory.
"""

from __future__ import annotations

import io
import lzma
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import zstandard

from simfront.core.errors import BackendError, TraceFormatError
from simfront.sim.accelsim.lowering import LOWERED_OPS, KernelLowering, Refusal, write_lowered
from simfront.sim.accelsim.renames import LOWERINGS, RZ  # noqa: F401 - part of this API
from simfront.sim.accelsim.textio import open_text_in as _open_text_in
from simfront.sim.accelsim.textio import open_text_out as _open_text_out
from simfront.traces.kernelslist import KernelRef, format_kernelslist, parse_kernelslist

#: Binary versions that select Accel-Sim 1.x's Ampere opcode map.
AMPERE_BINARY_VERSIONS = (80, 86)

#: Base opcodes of Accel-Sim 1.x's Ampere map (gpu-simulator/ISA_Def/ampere_opcode.h, 2024
#: dev branch). An opcode outside this set makes that simulator assert.
AMPERE_OPCODES = frozenset("""
FADD FADD32I FCHK FFMA32I FFMA FMNMX FMUL FMUL32I FSEL FSET FSETP FSWZADD MUFU HADD2
HADD2_32I HFMA2 HFMA2_32I HMUL2 HMUL2_32I HSET2 HSETP2 HMNMX2 HMMA DMMA BMMA IMMA DADD DFMA
DMUL DSETP BMSK BREV FLO IABS IADD IADD3 IADD32I IDP IDP4A IMAD IMNMX IMUL IMUL32I ISCADD
ISCADD32I ISETP LEA LOP LOP3 LOP32I POPC SHF SHL SHR VABSDIFF VABSDIFF4 F2F F2FP F2I I2F I2I
I2IP I2FP F2IP FRND MOV MOV32I MOVM PRMT SEL SGXT SHFL PLOP3 PSETP P2R R2P LD LDC LDG LDL LDS
LDSM ST STG STL STS MATCH QSPC ATOM ATOMS ATOMG RED CCTL CCTLL ERRBAR MEMBAR CCTLT LDGDEPBAR
LDGSTS R2UR REDUX S2UR UBMSK UBREV UCLEA UF2FP UFLO UIADD3 UIMAD UISETP ULDC ULEA ULOP ULOP3
ULOP32I UMOV UP2UR UPLOP3 UPOPC UPRMT UPSETP UR2UP USEL USGXT USHF USHL USHR VOTEU TEX TLD
TLD4 TMML TXD TXQ SUATOM SULD SUQUERY SURED SUST BMOV BPT BRA BREAK BRX BRXU BSSY BSYNC CALL
EXIT JMP JMX JMXU KILL NANOSLEEP RET RPCMOV RTT WARPSYNC YIELD B2R BAR CS2R CSMTEST DEPBAR
GETLMEMBASE LEPC NOP PMTRIG R2B S2R SETCTAID SETLMEMBASE VOTE VOTE_VTG
""".split())

#: Hopper-only opcodes with a word on what they are, for refusal messages. Most are lowered
#: (simfront.sim.accelsim.lowering.LOWERED_OPS); the rest make a kernel a Refusal.
NO_EQUIVALENT: dict[str, str] = {
    "HGMMA": "warpgroup MMA", "QGMMA": "warpgroup MMA (FP8)", "IGMMA": "warpgroup MMA (int)",
    "BGMMA": "warpgroup MMA (binary)", "WARPGROUP": "warpgroup arrive/wait",
    "UTMALDG": "TMA load", "UTMASTG": "TMA store", "UTMAREDG": "TMA reduction",
    "UTMAPF": "TMA prefetch", "UTMACCTL": "TMA descriptor cache control",
    "UTMACMDFLUSH": "TMA command flush", "UBLKCP": "bulk copy", "UBLKPF": "bulk prefetch",
    "UBLKRED": "bulk reduction", "SYNCS": "mbarrier operation", "ARRIVES": "mbarrier arrive",
    "FENCE": "proxy fence", "UCGABAR_ARV": "cluster barrier", "UCGABAR_WAIT": "cluster barrier",
    "CGAERRBAR": "cluster error barrier", "ELECT": "leader election",
    "USETMAXREG": "register reallocation", "VIADDMNMX": "fused add + min/max",
    "VIMNMX3": "three-way min/max", "STAS": "distributed shared-memory store",
    "ACQBULK": "bulk acquire", "LDGMC": "multicast load", "REDAS": "distributed reduction",
}

TRACE_SUFFIXES = (".traceg", ".traceg.xz", ".traceg.zst")
_SAMPLED = re.compile(r"traced (\d+) of (\d+)")


@dataclass
class KernelReport:
    """What :func:`rewrite_kernel` (header fixes and re-gridding, no opcode change) did."""

    file: str
    out_file: str
    instructions: int = 0
    changed: Counter = field(default_factory=Counter)
    header_changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    sampled: tuple[int, int] | None = None


@dataclass
class CompatReport:
    """What a rewrite did: per kernel, the lowering's counts (:class:`KernelLowering`), and
    the kernels refused (:class:`Refusal`)."""

    target: str
    binary_version: int
    out_dir: Path
    kernels: list[KernelLowering] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)

    @property
    def changed(self) -> Counter:
        """Original instructions rewritten, by opcode, over the kernels written."""
        total: Counter = Counter()
        for k in self.kernels:
            total.update(k.rewritten)
        return total

    @property
    def n_changed(self) -> int:
        return sum(self.changed.values())

    @property
    def n_instructions(self) -> int:
        return sum(k.instructions_in for k in self.kernels)

    def summary(self) -> str:
        parts = ", ".join(f"{op} {n}" for op, n in sorted(self.changed.items())) or "none"
        text = (f"isa-compat {self.target}: binary version -> {self.binary_version}; "
                f"{self.n_changed} of {self.n_instructions} instructions lowered ({parts}) "
                f"in {len(self.kernels)} kernels")
        n_lowered = sum(1 for k in self.kernels if k.rewritten)
        text += f" ({n_lowered} needed lowering)"
        if self.refused:
            text += f"; {len(self.refused)} refused: " + "; ".join(
                r.message() for r in self.refused)
        return text

    def as_dict(self) -> dict:
        return {"target": self.target, "binary_version": self.binary_version,
                "n_changed": self.n_changed, "n_instructions": self.n_instructions,
                "changed": dict(self.changed),
                "kernels": {k.file: k.as_dict() for k in self.kernels},
                "refused": {r.file: {"why": r.why,
                                     "opcodes": {op: {"count": n, "first_line": ln}
                                                 for op, (n, ln) in r.opcodes.items()}}
                            for r in self.refused}}


class IsaCompatError(BackendError):
    """No kernel of the trace set can be lowered: each holds an opcode with no lowering."""

    def __init__(self, missing: dict[str, tuple[int, str, int]],
                 refusals: list[Refusal] | None = None):
        self.missing = missing
        self.refusals = refusals or []
        lines = []
        for op, (n, where, line) in sorted(missing.items(), key=lambda kv: -kv[1][0]):
            what = NO_EQUIVALENT.get(op, "not in the Ampere map")
            lines.append(f"  {op} ({what}): {n} instructions, first at {where} line {line}")
        super().__init__(
            "--isa-compat ampere refuses every kernel of this trace set: these Hopper opcodes "
            "have no Ampere lowering, and Accel-Sim 1.x would assert on the first one:\n"
            + "\n".join(lines)
            + "\nUse an Accel-Sim 2.x install (it has a Hopper map), or drop these kernels "
            "from the job.")

    @classmethod
    def from_refusals(cls, refusals: list[Refusal]) -> "IsaCompatError":
        missing: dict[str, tuple[int, str, int]] = {}
        for r in refusals:
            for op, (n, line) in r.opcodes.items():
                if op in missing:
                    missing[op] = (missing[op][0] + n, missing[op][1], missing[op][2])
                else:
                    missing[op] = (n, r.file, line)
        return cls(missing, refusals)


# --------------------------------------------------------------------------- streaming I/O


def lower_kernel(src: Path, dst: Path, binary_version: int | None = 80,
                 overrides: dict[str, int | str] | None = None,
                 renames: dict | None = None, regrid_sampled: bool = True,
                 ) -> KernelLowering | Refusal:
    """Lower one kernel trace ``src`` into ``dst``. Returns the counts, or a
    :class:`Refusal` naming each opcode that has no lowering, with its count and first line
    (nothing is written then)."""
    renames = LOWERINGS if renames is None else renames
    # A first, cheap pass: is every opcode runnable or lowerable? Refuse before writing.
    counts = scan_opcodes(src)
    bad = {op: n for op, n in counts.items()
           if op not in AMPERE_OPCODES and op not in renames and op not in LOWERED_OPS}
    if bad:
        return Refusal(src.name, {op: (n, _first_line(src, op)) for op, n in bad.items()})
    return write_lowered(src, dst, counts, binary_version, overrides, renames, regrid_sampled,
                         _open_text_in, _open_text_out)


def _out_name(name: str, compress: bool) -> str:
    for suf in (".xz", ".zst"):
        if name.endswith(suf):
            name = name[: -len(suf)]
    return name + (".xz" if compress else "")


# --------------------------------------------------------------------------- rewriting


def _split_inst(line: str) -> tuple[list[str], int] | None:
    """Tokens of an instruction line and the index of its opcode, or None if not one.

    Format: ``PC mask ndst [dst...] opcode nsrc [src...] mem_width [addresses] imm``."""
    toks = line.split()
    if len(toks) < 5:
        return None
    try:
        ndst = int(toks[2])
    except ValueError:
        return None
    op_i = 3 + ndst
    if op_i >= len(toks):
        return None
    return toks, op_i


def _base(opcode: str) -> str:
    return opcode.split(".", 1)[0]


# One instruction line: PC, mask, ndst, the destination registers, then the opcode (the first
# token followed by a source count). Matched over whole chunks so scanning runs at C speed.
_OPCODE_RE = re.compile(
    rb"^[0-9a-f]+ [0-9a-f]+ (?:0 |1 \S+ |2 \S+ \S+ |3 \S+ \S+ \S+ |4 \S+ \S+ \S+ \S+ )"
    rb"([A-Z][A-Z0-9_]*)", re.M)
_CHUNK = 8 << 20


def _binary_chunks(path: Path) -> Iterable[bytes]:
    """Whole lines of a (compressed) trace file, about 8 MB at a time."""
    name = path.name
    if name.endswith(".xz"):
        f = lzma.open(path, "rb")
    elif name.endswith(".zst"):
        f = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb"),
                                                                          closefd=True))
    else:
        f = open(path, "rb")
    with f:
        rest = b""
        while True:
            block = f.read(_CHUNK)
            if not block:
                if rest:
                    yield rest
                return
            block = rest + block
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            yield block[:cut]


def scan_opcodes(path: Path) -> Counter:
    """Base-opcode counts of one trace file (a streaming pass)."""
    counts: Counter = Counter()
    for chunk in _binary_chunks(path):
        counts.update(_OPCODE_RE.findall(chunk))
    return Counter({k.decode(): v for k, v in counts.items()})


def _first_line(path: Path, op: str) -> int:
    with _open_text_in(path) as f:
        for lineno, line in enumerate(f, 1):
            parsed = _split_inst(line)
            if parsed and line[:1] not in "-#tw" and _base(parsed[0][parsed[1]]) == op:
                return lineno
    return 0


def check_opcodes(trace_dir: Path, files: Iterable[str]) -> dict[str, tuple[int, str, int]]:
    """Opcodes with no Ampere map entry, rename or lowering: {op: (count, first file, first
    line)} (a first look; a kernel can still be refused for a shape the lowering lacks)."""
    missing: dict[str, list] = {}
    for name in files:
        for op, n in scan_opcodes(trace_dir / name).items():
            if op in AMPERE_OPCODES or op in LOWERINGS or op in LOWERED_OPS:
                continue
            if op not in missing:
                missing[op] = [0, name, _first_line(trace_dir / name, op)]
            missing[op][0] += n
    return {op: (n, f, ln) for op, (n, f, ln) in missing.items()}


_LOWER_KEYS = tuple(f" {op}" for op in LOWERINGS)


def _rewrite_line(line: str, counts: Counter) -> str:
    for key in _LOWER_KEYS:  # most lines hold none of them: a substring test, no split
        if key in line:
            break
    else:
        return line
    parsed = _split_inst(line)
    if not parsed:
        return line
    toks, i = parsed
    op = _base(toks[i])
    lower = LOWERINGS.get(op)
    if lower is None:
        return line
    try:
        nsrc = int(toks[i + 1])
    except (ValueError, IndexError):
        return line
    srcs = toks[i + 2: i + 2 + nsrc]
    new_op, new_srcs = lower(toks[i], srcs)
    counts[op] += 1
    out = toks[:i] + [new_op, str(len(new_srcs))] + new_srcs + toks[i + 2 + nsrc:]
    return " ".join(out) + " \n"


def _rewrite_header(line: str, binary_version: int | None, overrides: dict[str, int | str],
                    changes: dict[str, tuple[str, str]]) -> str:
    key, sep, value = line[1:].partition("=")
    if not sep:
        return line
    key = key.strip()
    value = value.strip()
    if key == "binary version" and binary_version is not None:
        new = str(binary_version)
    elif key in overrides:
        new = str(overrides[key])
    else:
        return line
    if new != value:
        changes[key] = (value, new)
    return f"-{key} = {new}\n"


def rewrite_kernel(src: Path, dst: Path, binary_version: int | None = 80,
                   overrides: dict[str, int | str] | None = None,
                   regrid_sampled: bool = True) -> KernelReport:
    """Rewrite one trace file (streaming) into ``dst`` (written to a temp name, then renamed):
    header fields, VIADD/REDG/VIMNMX renames, and a sampled launch's grid cut to its traced
    blocks (renumbered 0..T-1) unless ``regrid_sampled`` is False.

    ``binary_version`` None keeps the header's (or takes ``overrides['binary_version']``)."""
    rep = KernelReport(file=src.name, out_file=dst.name)
    overrides = {k.replace("_", " "): v for k, v in (overrides or {}).items()}
    tmp = dst.with_name(dst.name + ".part")
    counts = rep.changed
    n = 0
    tb = 0
    try:
        with _open_text_in(src) as fin, _open_text_out(tmp, dst.name.endswith(".xz")) as fout:
            header: list[str] = []
            for line in fin:
                c = line[:1]
                if c == "-":  # header line (instruction lines start with a hex PC)
                    header.append(line)
                    m = _SAMPLED.search(line) if line.startswith("-tb sampling") else None
                    if regrid_sampled and m and int(m[1]) < int(m[2]):
                        rep.sampled = (int(m[1]), int(m[2]))
                    continue
                if header:  # the header is whole: the grid can be cut to the traced blocks
                    ov = dict(overrides)
                    if rep.sampled:
                        ov["grid dim"] = f"({rep.sampled[0]},1,1)"
                    for h in header:
                        fout.write(_rewrite_header(h, binary_version, ov, rep.header_changes))
                    header = []
                if c == "t" and rep.sampled and line.startswith("thread block"):
                    fout.write(f"thread block = {tb},0,0\n")
                    tb += 1
                    continue
                if c == "#" or c == "\n" or c == "t" or c == "w" or c == "i" or not c:
                    fout.write(line)
                    continue
                n += 1
                fout.write(_rewrite_line(line, counts))
            for h in header:
                fout.write(_rewrite_header(h, binary_version, overrides, rep.header_changes))
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    rep.instructions = n
    return rep


def rewrite_traceset(trace_dir: str | Path, out_dir: str | Path, target: str = "ampere",
                     binary_version: int = 80, files: list[str] | None = None,
                     header_overrides: dict[str, dict[str, int | str]] | None = None,
                     compress: bool = False,
                     progress: Callable[[str], None] | None = None) -> CompatReport:
    """Write a rewritten copy of a trace set for Accel-Sim 1.x's Ampere map.

    ``files`` limits the copy to those kernel files (kernelslist order kept, memcpys kept);
    ``header_overrides`` maps a kernel file (or ``"*"`` for every kernel) to header fields to
    set (``{"nregs": 32}``). A kernel that cannot be lowered is left out of the copy and
    listed in ``report.refused``; when every kernel is refused, :class:`IsaCompatError` is
    raised before anything is written. ``out_dir`` must not be ``trace_dir``."""
    if target != "ampere":
        raise BackendError(f"unknown --isa-compat target '{target}'; the only one is 'ampere'")
    if binary_version not in AMPERE_BINARY_VERSIONS:
        raise BackendError(f"binary version {binary_version} does not select the Ampere map; "
                           f"use one of {AMPERE_BINARY_VERSIONS}")
    trace_dir = Path(trace_dir)
    out_dir = Path(out_dir)
    if out_dir.resolve() == trace_dir.resolve():
        raise BackendError("--isa-compat writes a copy: the output directory must differ from "
                           f"the trace directory {trace_dir}")
    entries = parse_kernelslist(trace_dir / "kernelslist.g")
    wanted = set(files) if files is not None else None
    kept = [e for e in entries if not isinstance(e, KernelRef) or wanted is None or e.file in wanted]
    kernel_files = [e.file for e in kept if isinstance(e, KernelRef)]
    for name in kernel_files:
        if not (trace_dir / name).exists():
            raise TraceFormatError(f"kernelslist.g names {name}, which is not there", trace_dir)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    report = CompatReport(target=target, binary_version=binary_version, out_dir=out_dir)
    renamed = []
    overrides_all = (header_overrides or {}).get("*", {})
    for e in kept:
        if not isinstance(e, KernelRef):
            renamed.append(e)
            continue
        if progress:
            progress(e.file)
        out_name = _out_name(e.file, compress)
        ov = {**overrides_all, **(header_overrides or {}).get(e.file, {})}
        res = lower_kernel(trace_dir / e.file, out_dir / out_name, binary_version, ov)
        if isinstance(res, Refusal):
            report.refused.append(res)
            continue
        report.kernels.append(res)
        renamed.append(KernelRef(out_name, e.line))
    if not report.kernels and report.refused:
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()  # nothing written: leave no trace of the attempt
        raise IsaCompatError.from_refusals(report.refused)
    tmp = out_dir / "kernelslist.g.part"
    tmp.write_text(format_kernelslist(renamed))
    os.replace(tmp, out_dir / "kernelslist.g")
    return report


def copy_traceset(trace_dir: Path, out_dir: Path, files: list[str] | None = None) -> list[str]:
    """A plain copy (decompressed to ``.traceg``, which Accel-Sim 1.x reads) of a trace set."""
    entries = parse_kernelslist(trace_dir / "kernelslist.g")
    wanted = set(files) if files is not None else None
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = []
    for e in entries:
        if isinstance(e, KernelRef):
            if wanted is not None and e.file not in wanted:
                continue
            name = _out_name(e.file, False)
            if e.file.endswith((".xz", ".zst")):
                with _open_text_in(trace_dir / e.file) as fin, open(out_dir / name, "w") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
            else:
                shutil.copyfile(trace_dir / e.file, out_dir / name)
            kept.append(KernelRef(name, e.line))
        else:
            kept.append(e)
    (out_dir / "kernelslist.g").write_text(format_kernelslist(kept))
    return [e.file for e in kept if isinstance(e, KernelRef)]

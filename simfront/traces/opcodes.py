"""THE opcode classification of simfront: one table, Volta (sm_70) to Hopper (sm_90) SASS.

Every stage that needs to know what an instruction is (trace statistics, the timing model,
config checks) asks :func:`classify` with the opcode as the trace writes it, modifiers
included (``HMMA.16816.F32.BF16``, ``LDG.E.128``, ``MUFU.EX2``). The answer is an
:class:`OpClass`: the base opcode, a category, the pipe (in the team vocabulary
:data:`PIPES`), FLOPs, and for memory instructions the operation and the memory space.

Decisions worth knowing (they are documented in ``docs/traces.md`` too):

- **Pipes follow Nsight Compute's pipe assignment on sm_80/sm_90** wherever our vocabulary
  has a matching pipe, so that trace statistics can be checked against ncu's
  ``sm__inst_executed_pipe_*``: ``IMAD``/``IMUL``/``IDP`` run on the FMA pipe (``fp32``);
  FP32 compares/min/max/select (``FSETP``, ``FMNMX``, ``FSEL``) on the ALU pipe (``int``);
  ``F2I``/``I2F``/``F2F``/``FRND`` on the XU (``sfu``), the newer packed conversions
  (``F2FP``, ``I2FP``, ``F2IP``) on the ALU (``int``); shuffles, special-register reads and
  mbarrier operations (``SHFL``, ``S2R``, ``SYNCS``) on the LSU (``lsu``). ncu's ADU
  (constant loads, CTA barriers) has no pipe of its own here: ``BAR`` goes to ``cbu``
  (control/branch/barrier), ``LDC`` to ``lsu`` (a memory access with a space and bytes).
- **``HFMA2.MMA`` is a move idiom**: the compiler materialises constants with
  ``HFMA2.MMA Rd, -RZ, RZ, imm`` issued on the FMA-heavy half of the FP32 pipe; every
  instance in our H100 workload traces reads only ``RZ``. It is classified ``int`` (data
  movement), pipe ``fp32``, 0 FLOPs. Plain ``HFMA2`` is FP16x2 math (4 FLOPs per lane).
  Its result takes the ``fp16`` pipe's latency (``latency_pipe``): it is an FP16x2 FMA
  all the same, and in the pipe microbenchmarks' HFMA2 chains, where ptxas alternates
  ``HFMA2`` and ``HFMA2.MMA`` with real operands, every step takes ~8 clocks on the H100.
  ``HADD2.F32`` is the FP16-to-FP32 conversion idiom (``conversion``, 0 FLOPs).
- **Integer multiply-adds run at half the FFMA rate** (``initiation_factor`` 2): ``IMAD``,
  ``IMUL`` and ``IDP`` issue to the FMA-heavy half of the FMA pipe only (ncu's
  ``pipe_fmaheavy``; FFMA uses both halves), one warp instruction per 2 clocks per
  sub-partition on the H100 where FFMA issues every clock (pipe microbenchmarks,
  ``bench/RESULTS.md``). As a factor on the ``fp32`` pipe's interval, it follows any
  change of that pipe's lanes (the tensor:vector variants).
- **Categories**: ``tensor``, ``fp32``, ``fp16`` (packed FP16x2/BF16x2), ``fp64``,
  ``int`` (integer arithmetic, logic, moves, predicates, shuffles), ``sfu`` (MUFU, by
  function), ``conversion``, ``memory`` (with ``mem_op`` load/store/atomic/reduction/
  prefetch and ``space``), ``control`` (branches and warp convergence: ``BRA``, ``BSSY``,
  ``BSYNC``, ``EXIT``...), ``sync`` (CTA/cluster barriers, memory fences, mbarriers,
  ``WARPSYNC``, ``DEPBAR``), ``uniform`` (the uniform datapath ``U*`` arithmetic),
  ``misc`` (``NOP``, ``S2R``, cache control...), and ``unknown``: an opcode missing from
  this table is classified ``unknown`` (pipe ``other``) and counted, never dropped.
- **FLOPs**: vector FLOPs are per active lane (``FFMA`` 2, ``FADD``/``FMUL`` 1, ``HFMA2`` 4,
  ``HADD2``/``HMUL2`` 2, ``DFMA`` 2); compares, min/max and selects count 0, like ncu's
  thread-level FLOP metrics. Tensor FLOPs are per *warp instruction* from the MMA shape in
  the modifiers (``HMMA.16816`` = 2*16*8*16 = 4096), independent of the active mask.
  Hopper's warpgroup MMAs (``HGMMA.64x128x16``) are issued once by each of the 4 warps of
  the warpgroup, so one warp instruction carries a quarter of 2*M*N*K. Volta's
  ``HMMA.884`` is split into ``STEP`` instructions (4 with FP32, 2 with FP16 accumulation).
- **Bytes** of a memory instruction come from the trace's ``mem_width`` times the active
  lanes, except where the tracer's width heuristic (first number among the modifiers) is
  known to be wrong: ``LDSM``/``STSM`` (``bytes_per_lane`` overrides it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

#: Execution pipes, the team vocabulary (GPU descriptions and records use the same names).
PIPES: tuple[str, ...] = ("tensor", "fp32", "fp16", "int", "sfu", "fp64", "lsu", "cbu",
                          "uniform", "other")

#: Instruction categories, in the order tables print them.
CATEGORIES: tuple[str, ...] = ("tensor", "fp32", "fp16", "fp64", "int", "sfu", "conversion",
                               "memory", "control", "sync", "uniform", "misc", "unknown")

#: Memory spaces of memory instructions.
SPACES: tuple[str, ...] = ("global", "shared", "local", "constant", "texture", "surface",
                           "generic")

#: What a memory instruction does.
MEM_OPS: tuple[str, ...] = ("load", "store", "atomic", "reduction", "prefetch")


@dataclass(frozen=True)
class OpClass:
    """What one SASS opcode (with modifiers) is."""

    opcode: str
    base: str
    category: str
    pipe: str
    #: thread-level FLOPs per active lane (vector math)
    flops_per_lane: float = 0.0
    #: FLOPs per warp instruction (tensor cores), independent of the active mask
    flops_per_warp: float = 0.0
    #: memory instructions: load, store, atomic, reduction, prefetch
    mem_op: str | None = None
    #: memory instructions: global, shared, local, constant, texture, surface, generic
    space: str | None = None
    #: bytes per active lane where the trace's mem_width is known to be wrong
    bytes_per_lane: int | None = None
    #: MUFU function (EX2, RCP, ...)
    sfu_function: str | None = None
    #: tensor instructions: MMA shape (M, N, K) and input type as written (BF16, F16, E4M3...)
    mma_shape: tuple[int, int, int] | None = None
    dtype: str | None = None
    #: Tensor Memory Accelerator / bulk copy (Hopper)
    tma: bool = False
    #: clocks a unit of the pipe is busy, in the pipe's initiation intervals (2: the
    #: instruction can use only half of the pipe's lanes)
    initiation_factor: int = 1
    #: the pipe whose dependent latency the result takes, where it is not ``pipe``
    latency_pipe: str | None = None

    @property
    def warpgroup_mma(self) -> bool:
        """A Hopper warpgroup MMA (HGMMA...): runs at the tensor core's peak rate, where a
        warp-level mma.sync (HMMA...) reaches the description's ``mma_sync_share`` of it."""
        return self.base in _WARPGROUP_MMA

    @property
    def modifiers(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def known(self) -> bool:
        return self.category != "unknown"

    @property
    def mem_key(self) -> str | None:
        """``load_global``, ``store_shared``, ``reduction_global``... (None if not memory)."""
        return f"{self.mem_op}_{self.space}" if self.mem_op else None


# --- the table --------------------------------------------------------------------------
# base opcode -> (category, pipe, flops per lane)
_VECTOR: dict[str, tuple[str, str, float]] = {
    # FP32
    "FFMA": ("fp32", "fp32", 2), "FFMA32I": ("fp32", "fp32", 2),
    "FADD": ("fp32", "fp32", 1), "FADD32I": ("fp32", "fp32", 1),
    "FMUL": ("fp32", "fp32", 1), "FMUL32I": ("fp32", "fp32", 1),
    "FSWZADD": ("fp32", "fp32", 1),
    "FMNMX": ("fp32", "int", 0), "FSETP": ("fp32", "int", 0), "FSET": ("fp32", "int", 0),
    "FSEL": ("fp32", "int", 0), "FCHK": ("fp32", "int", 0),
    # packed FP16x2 / BF16x2
    "HFMA2": ("fp16", "fp16", 4), "HFMA2_32I": ("fp16", "fp16", 4),
    "HADD2": ("fp16", "fp16", 2), "HADD2_32I": ("fp16", "fp16", 2),
    "HMUL2": ("fp16", "fp16", 2), "HMUL2_32I": ("fp16", "fp16", 2),
    "HMNMX2": ("fp16", "fp16", 0), "HSET2": ("fp16", "fp16", 0), "HSETP2": ("fp16", "fp16", 0),
    # FP64
    "DFMA": ("fp64", "fp64", 2), "DADD": ("fp64", "fp64", 1), "DMUL": ("fp64", "fp64", 1),
    "DSETP": ("fp64", "fp64", 0), "DMNMX": ("fp64", "fp64", 0),
    # integer arithmetic on the FMA pipe (ncu: IMAD, IMUL, IDP run on 'fma')
    "IMAD": ("int", "fp32", 0), "IMAD32I": ("int", "fp32", 0), "IMUL": ("int", "fp32", 0),
    "IMUL32I": ("int", "fp32", 0), "IDP": ("int", "fp32", 0), "IDP4A": ("int", "fp32", 0),
    "IMADSP": ("int", "fp32", 0),
    # integer / logic / moves / predicates on the ALU
    **{op: ("int", "int", 0) for op in (
        "IADD", "IADD3", "IADD32I", "VIADD", "VIADDMNMX", "VIMNMX", "VIMNMX3", "IABS",
        "IMNMX", "ISCADD", "ISCADD32I", "ISETP", "ICMP", "LEA", "LOP", "LOP3", "LOP32I",
        "SHF", "SHL", "SHR", "BMSK", "BREV", "FLO", "POPC", "SGXT", "VABSDIFF", "VABSDIFF4",
        "MOV", "MOV32I", "PRMT", "SEL", "PLOP3", "PSETP", "P2R", "R2P", "CS2R", "VOTE",
        "VOTE_VTG", "MOVM", "BMOV32")},
    # cross-lane data movement through the LSU
    "SHFL": ("int", "lsu", 0), "MATCH": ("int", "lsu", 0),
    # conversions: XU for the classic ones, ALU for the packed/fast ones (sm_80+)
    "F2F": ("conversion", "sfu", 0), "F2I": ("conversion", "sfu", 0),
    "I2F": ("conversion", "sfu", 0), "FRND": ("conversion", "sfu", 0),
    "I2I": ("conversion", "int", 0), "I2IP": ("conversion", "int", 0),
    "I2FP": ("conversion", "int", 0), "F2IP": ("conversion", "int", 0),
    "F2FP": ("conversion", "int", 0),
    # SFU
    "MUFU": ("sfu", "sfu", 0),
}

# Memory: base -> (mem_op, space). Pipe lsu.
_MEMORY: dict[str, tuple[str, str]] = {
    "LDG": ("load", "global"), "STG": ("store", "global"),
    "LDS": ("load", "shared"), "STS": ("store", "shared"),
    "LDSM": ("load", "shared"), "STSM": ("store", "shared"),
    "STAS": ("store", "shared"),  # Hopper: store to distributed (cluster) shared memory
    "LDL": ("load", "local"), "STL": ("store", "local"),
    "LD": ("load", "generic"), "ST": ("store", "generic"),
    "LDC": ("load", "constant"),
    "LDGSTS": ("load", "global"),  # cp.async global->shared: the traffic is a global read
    "ATOM": ("atomic", "generic"), "ATOMG": ("atomic", "global"), "ATOMS": ("atomic", "shared"),
    "RED": ("reduction", "generic"), "REDG": ("reduction", "global"),
    "REDAS": ("reduction", "shared"),
    "SULD": ("load", "surface"), "SUST": ("store", "surface"), "SUATOM": ("atomic", "surface"),
    "SURED": ("reduction", "surface"),
    "TEX": ("load", "texture"), "TLD": ("load", "texture"), "TLD4": ("load", "texture"),
    "TMML": ("load", "texture"), "TXD": ("load", "texture"), "TXQ": ("load", "texture"),
    "CCTL": ("prefetch", "global"), "CCTLL": ("prefetch", "local"),
}

# Hopper Tensor Memory Accelerator and bulk copies: base -> (mem_op, space)
_TMA: dict[str, tuple[str, str]] = {
    "UTMALDG": ("load", "global"), "UTMASTG": ("store", "global"),
    "UTMAREDG": ("reduction", "global"), "UTMAPF": ("prefetch", "global"),
    "UBLKCP": ("load", "global"), "UBLKRED": ("reduction", "global"),
    "UBLKPF": ("prefetch", "global"),
}

_CONTROL = {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BREAK",
            "BSSY", "BSYNC", "BMOV", "BPT", "KILL", "NANOSLEEP", "YIELD", "RPCMOV", "RTT",
            "ELECT", "PREEXIT", "ENDCOLLECTIVE", "ACQBULK", "WARPGROUPSET"}

# Issued to the FMA-heavy half of the FMA pipe only: half the FFMA rate (see above).
_FMA_HEAVY_ONLY = frozenset({"IMAD", "IMAD32I", "IMUL", "IMUL32I", "IDP", "IDP4A",
                             "IMADSP"})

# base -> pipe
_SYNC: dict[str, str] = {
    "BAR": "cbu", "WARPSYNC": "cbu", "MEMBAR": "lsu", "FENCE": "lsu", "ERRBAR": "other",
    "CGAERRBAR": "other", "DEPBAR": "other", "LDGDEPBAR": "lsu", "ARRIVES": "lsu",
    "SYNCS": "lsu", "UCGABAR_ARV": "cbu", "UCGABAR_WAIT": "cbu", "CGABAR": "cbu",
    "WARPGROUP": "other",
}

_MISC: dict[str, str] = {
    "NOP": "other", "S2R": "lsu", "B2R": "other", "R2B": "other", "CSMTEST": "other",
    "GETLMEMBASE": "other", "SETLMEMBASE": "other", "LEPC": "other", "PMTRIG": "other",
    "SETCTAID": "other", "QSPC": "other", "USETMAXREG": "other", "UTMACCTL": "lsu",
    "UTMACMDFLUSH": "lsu", "CCTLT": "lsu", "SUQUERY": "lsu",
}

# Uniform datapath: U-prefixed scalar arithmetic, and the register moves into it.
_UNIFORM = {"R2UR", "S2UR", "REDUX", "VOTEU", "UBMSK", "UBREV", "UCLEA", "UF2FP", "UFLO",
            "UIADD3", "UIMAD", "UISETP", "ULDC", "ULEA", "ULOP", "ULOP3", "ULOP32I", "UMOV",
            "UP2UR", "UPLOP3", "UPOPC", "UPRMT", "UPSETP", "UR2UP", "USEL", "USGXT", "USHF",
            "USHL", "USHR", "ULEPC", "UIABS", "UIMNMX", "UVIADD", "UVIMNMX", "UMOV32I",
            "USETSHMSZ", "UGETNEXTWORKID", "UCGABAR"}

_TENSOR = {"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA"}
_WARPGROUP_MMA = {"HGMMA", "IGMMA", "QGMMA", "BGMMA"}

# MMA shapes written as run-together digits (warp-level mma.sync): text -> (M, N, K)
_MMA_SHAPES: dict[str, tuple[int, int, int]] = {
    "884": (8, 8, 4), "1684": (16, 8, 4), "1688": (16, 8, 8), "16816": (16, 8, 16),
    "16832": (16, 8, 32), "16864": (16, 8, 64), "8816": (8, 8, 16), "8832": (8, 8, 32),
    "88128": (8, 8, 128), "168128": (16, 8, 128), "168256": (16, 8, 256),
}
_GMMA_SHAPE = re.compile(r"^(\d+)X(\d+)X(\d+)$")
_DTYPES = ("BF16", "F16", "TF32", "E4M3", "E5M2", "F64", "S8", "U8", "S4", "U4", "B1",
           "F8", "F32")
_LDSM_LANES = re.compile(r"^(\d)$")


def _tensor(opcode: str, base: str, mods: list[str]) -> OpClass:
    shape = None
    for m in mods:
        if m in _MMA_SHAPES:
            shape = _MMA_SHAPES[m]
            break
        g = _GMMA_SHAPE.match(m)
        if g:
            shape = (int(g[1]), int(g[2]), int(g[3]))
            break
    # The input type is the last type modifier (HMMA.16816.F32.BF16: accumulate F32, in BF16).
    types = [m for m in mods if m in _DTYPES]
    dtype = types[-1] if types else None
    if base in ("HMMA", "HGMMA") and dtype in (None, "F32"):
        dtype = "F16"  # HMMA.1688.F32 / HMMA.884.F32.F32: FP16 inputs, F32 accumulation
    flops = 0.0
    if shape is not None:
        m_, n_, k_ = shape
        flops = 2.0 * m_ * n_ * k_
        if base in _WARPGROUP_MMA:
            flops /= 4  # issued by each of the 4 warps of the warpgroup
        elif base == "HMMA" and shape == (8, 8, 4):
            # Volta: 4 quad-pairs of m8n8k4 per mma.sync, split into STEP instructions
            flops *= 4
            if any(m.startswith("STEP") for m in mods):
                accumulate_f32 = types[:1] == ["F32"]
                flops /= 4 if accumulate_f32 else 2
    return OpClass(opcode, base, "tensor", "tensor", flops_per_warp=flops, mma_shape=shape,
                   dtype=dtype)


def _memory(opcode: str, base: str, mods: list[str], mem_op: str, space: str,
            tma: bool = False) -> OpClass:
    if base == "UBLKCP" and mods[:2] == ["G", "S"]:
        mem_op = "store"  # shared -> global
    bytes_per_lane = None
    if base in ("LDSM", "STSM"):
        # ldmatrix/stmatrix: .1/.2/.4 matrices of 8 rows x 16 bytes, addresses from
        # 8/16/32 lanes; per lane of the warp that is 4/8/16 bytes.
        count = next((int(m) for m in mods if _LDSM_LANES.match(m)), 1)
        bytes_per_lane = 4 * count
    return OpClass(opcode, base, "memory", "lsu", mem_op=mem_op, space=space,
                   bytes_per_lane=bytes_per_lane, tma=tma)


@lru_cache(maxsize=None)
def classify(opcode: str) -> OpClass:
    """Classify one opcode as the trace writes it (``FFMA.FTZ``, ``LDG.E.128``...).

    Never raises on an unknown opcode: the result has category ``unknown``, pipe ``other``.
    """
    parts = opcode.strip().split(".")
    base, mods = parts[0].upper(), [p.upper() for p in parts[1:]]

    if base in _TENSOR:
        return _tensor(opcode, base, mods)
    if base == "HFMA2" and "MMA" in mods:
        # constant-materialising move idiom, an FP16x2 FMA in latency
        return OpClass(opcode, base, "int", "fp32", latency_pipe="fp16")
    if base == "HADD2" and "F32" in mods:
        return OpClass(opcode, base, "conversion", "fp16")
    if base == "MUFU":
        fn = mods[0] if mods else None
        return OpClass(opcode, base, "sfu", "sfu", sfu_function=fn)
    if base in _VECTOR:
        category, pipe, flops = _VECTOR[base]
        if category == "conversion" and pipe == "sfu" and "F64" in mods:
            pipe = "fp64"
        return OpClass(opcode, base, category, pipe, flops_per_lane=float(flops),
                       initiation_factor=2 if base in _FMA_HEAVY_ONLY else 1)
    if base in _MEMORY:
        return _memory(opcode, base, mods, *_MEMORY[base])
    if base in _TMA:
        return _memory(opcode, base, mods, *_TMA[base], tma=True)
    if base in _CONTROL:
        return OpClass(opcode, base, "control", "cbu")
    if base in _SYNC:
        return OpClass(opcode, base, "sync", _SYNC[base])
    if base in _MISC:
        return OpClass(opcode, base, "misc", _MISC[base])
    if base in _UNIFORM or (base.startswith("U") and base[1:] in _VECTOR
                            and _VECTOR[base[1:]][0] in ("int", "conversion")):
        return OpClass(opcode, base, "uniform", "uniform")
    return OpClass(opcode, base, "unknown", "other")


def known_bases() -> frozenset[str]:
    """Every base opcode the table knows (for reports and tests)."""
    return frozenset(set(_VECTOR) | set(_MEMORY) | set(_TMA) | _CONTROL | set(_SYNC)
                     | set(_MISC) | _UNIFORM | _TENSOR)

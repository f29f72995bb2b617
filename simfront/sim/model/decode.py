"""What the model needs to know about each opcode of a kernel, as numpy arrays.

The trace engineer's :func:`simfront.traces.opcodes.classify` says what an opcode is (pipe,
category, memory space); this module turns that, with the GPU description, into the numbers
the issue model uses: which pipe an instruction occupies, for how many clocks (initiation
interval), after how many clocks its result can be used (latency), and what kind of memory
or synchronisation event it is. Everything timing-related comes from the GPU description.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simfront.traces.opcodes import PIPES, classify

#: Pipe index used by the model arrays (the team vocabulary, in its order).
PIPE_INDEX = {p: i for i, p in enumerate(PIPES)}
N_PIPES = len(PIPES)

# Instruction kinds (the issue model's switch).
K_ALU = 0
K_LOAD_GLOBAL = 1      # global / local / generic / texture loads through L1
K_STORE_GLOBAL = 2     # global / local / generic stores (write-through to L2)
K_LOAD_SHARED = 3
K_STORE_SHARED = 4
K_LOAD_CONST = 5       # constant-cache loads (LDC)
K_ATOMIC = 6           # atomics that return a value (executed at L2)
K_REDUCTION = 7        # reductions without a return value (executed at L2)
K_BARRIER = 8          # CTA barrier (BAR.SYNC / BAR.RED)
K_EXIT = 9
K_ASYNC_COPY = 10      # LDGSTS: global read into shared memory, no register result
K_FENCE = 11           # memory fences: wait for the warp's outstanding memory
K_ATOMIC_SHARED = 12
K_PREFETCH = 13
K_ASYNC_COMMIT = 14    # LDGDEPBAR: closes the warp's open group of LDGSTS copies
K_ASYNC_WAIT = 15      # DEPBAR.LE SB0, N: waits for all but the newest N groups

# What an instruction does with the predicate registers (``OpTable.pred``, bit flags). The
# trace names general registers only (an ISETP has no destination there), so these come
# from the opcode: the compares write a predicate; SEL, FSEL and PLOP3 read one as an
# operand; a branch reads its guard and an LDGSTS its zero-fill predicate, as late as a
# guard is read. A row whose guard turned lanes off (its mask short of its warp's full
# one) reads a guard too (``simulate``: the rows' ``guard``).
PRED_WRITE = 1
PRED_OPERAND = 2
PRED_GUARD = 4

KIND_NAMES = {K_ALU: "alu", K_LOAD_GLOBAL: "load_global", K_STORE_GLOBAL: "store_global",
              K_LOAD_SHARED: "load_shared", K_STORE_SHARED: "store_shared",
              K_LOAD_CONST: "load_const", K_ATOMIC: "atomic", K_REDUCTION: "reduction",
              K_BARRIER: "barrier", K_EXIT: "exit", K_ASYNC_COPY: "async_copy",
              K_FENCE: "fence", K_ATOMIC_SHARED: "atomic_shared", K_PREFETCH: "prefetch",
              K_ASYNC_COMMIT: "async_commit", K_ASYNC_WAIT: "async_wait"}


def _kind(oc) -> int:
    base = oc.base
    if base == "EXIT":
        return K_EXIT
    if base == "BAR" and not any(m in ("ARV",) for m in oc.modifiers):
        return K_BARRIER
    if base == "LDGDEPBAR":
        return K_ASYNC_COMMIT
    if base == "DEPBAR":
        # cp.async.wait_group: a software pipeline keeps its newest N groups of copies in
        # flight (Triton's SSD kernels wait with N = 8 of 12, three stages deep)
        return K_ASYNC_WAIT
    if base in ("MEMBAR", "FENCE", "ERRBAR") or (
            base == "SYNCS" and "PHASECHK" in oc.modifiers) or (
            base == "CCTL" and "IVALL" in oc.modifiers):
        # Fences and mbarrier phase checks (TMA): the warp waits for its outstanding
        # memory operations (conservative: for all of them).
        return K_FENCE
    if oc.mem_op is None:
        return K_ALU
    space, op = oc.space, oc.mem_op
    if base == "LDGSTS":
        return K_ASYNC_COPY
    if op == "prefetch":
        return K_PREFETCH
    if space == "shared":
        if op == "load":
            return K_LOAD_SHARED
        if op == "store":
            return K_STORE_SHARED
        return K_ATOMIC_SHARED
    if space == "constant":
        return K_LOAD_CONST
    if op == "atomic":
        return K_ATOMIC
    if op == "reduction":
        return K_REDUCTION
    if op == "store":
        return K_STORE_GLOBAL
    return K_LOAD_GLOBAL


def _predicate_use(oc) -> int:
    base = oc.base
    if (base.rstrip("2").endswith("SETP") and not base.startswith("U")) or base in ("PLOP3", "FCHK"):
        return PRED_WRITE | (PRED_OPERAND if base == "PLOP3" else 0)
    if base in ("SEL", "FSEL"):
        return PRED_OPERAND
    if base in ("BRA", "LDGSTS"):
        return PRED_GUARD
    return 0


@dataclass(frozen=True)
class OpTable:
    """Per-opcode arrays, indexed like ``InstructionChunk.opcodes``."""

    pipe: np.ndarray        # int8, PIPE_INDEX
    kind: np.ndarray        # int8, K_*
    latency: np.ndarray     # int32, dependent-issue latency of non-memory results
    initiation: np.ndarray  # int32, clocks one unit of the pipe is busy
    dst_span: np.ndarray    # int8, registers written from the listed destination on
    flops_lane: np.ndarray  # float64, thread FLOPs per active lane
    flops_warp: np.ndarray  # float64, FLOPs per warp instruction (tensor)
    pred: np.ndarray        # int8, PRED_* flags
    opcodes: tuple[str, ...] = ()


def pipe_timing(gpu) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pipe: units per sub-partition, initiation interval and latency, from the GPU
    description. ``other`` has no unit of its own: one instruction per clock, latency of the
    control pipe."""
    sm = gpu.sm
    ws = sm.warp_size
    units = np.ones(N_PIPES, np.int32)
    ii = np.ones(N_PIPES, np.int32)
    lat = np.full(N_PIPES, 4, np.int32)
    for name, i in PIPE_INDEX.items():
        if name == "tensor":
            units[i] = max(1, sm.tensor.units)
            ii[i] = max(1, sm.tensor.initiation(sm.hmma_dtype))
            lat[i] = sm.tensor.latency
        elif name == "other":
            units[i] = 1
            ii[i] = 1
            lat[i] = sm.pipes.cbu.latency
        else:
            p = sm.pipes.get(name)
            units[i] = max(1, p.units)
            ii[i] = max(1, p.initiation(ws))
            lat[i] = p.latency
    return units, ii, lat


def build_optable(opcodes: list[str], gpu) -> OpTable:
    n = len(opcodes)
    units, ii, lat = pipe_timing(gpu)
    sm = gpu.sm
    pipe = np.zeros(n, np.int8)
    kind = np.zeros(n, np.int8)
    latency = np.zeros(n, np.int32)
    initiation = np.zeros(n, np.int32)
    span = np.ones(n, np.int8)
    fl = np.zeros(n, np.float64)
    fw = np.zeros(n, np.float64)
    pred = np.zeros(n, np.int8)
    hmma_flops = 2.0 * sm.tensor.HMMA_FMAS
    for i, op in enumerate(opcodes):
        oc = classify(op)
        p = PIPE_INDEX.get(oc.pipe, PIPE_INDEX["other"])
        pipe[i] = p
        kind[i] = _kind(oc)
        latency[i] = lat[PIPE_INDEX.get(oc.latency_pipe, p)]
        initiation[i] = ii[p] * oc.initiation_factor
        fl[i] = oc.flops_per_lane
        fw[i] = oc.flops_per_warp
        pred[i] = _predicate_use(oc)
        if oc.category == "tensor":
            # Clocks from the instruction's FMAs at the description's rate for its input
            # type (bf16 where the description has none): the peak for a warpgroup MMA,
            # the mma.sync share of it for a warp-level one.
            dtype = _tensor_dtype(oc.dtype)
            if not sm.tensor.fma_per_clk.get(dtype):
                dtype = "bf16"
            fmas = (oc.flops_per_warp or hmma_flops) / 2.0
            initiation[i] = max(1, sm.tensor.clocks_for(fmas, dtype,
                                                        warp_level=not oc.warpgroup_mma))
            span[i] = 4
        elif oc.base in ("DADD", "DMUL", "DFMA", "DMNMX") or ".WIDE" in op or op.endswith(".64"):
            span[i] = 2
        # SFU: MUFU's latency is the sfu pipe's; conversions on the XU likewise.
    return OpTable(pipe, kind, latency, initiation, span, fl, fw, pred, tuple(opcodes))


def _tensor_dtype(dtype: str | None) -> str:
    d = (dtype or "").upper()
    if d in ("BF16",):
        return "bf16"
    if d in ("F16",):
        return "fp16"
    if d in ("TF32",):
        return "tf32"
    if d in ("E4M3", "E5M2", "F8"):
        return "fp8"
    if d in ("S8", "U8", "S4", "U4", "B1"):
        return "int8"
    if d in ("F64",):
        return "fp64"
    return "bf16"

"""A cycle-level issue model of one SM, compiled with numba.

The SM runs the thread blocks the block scheduler gives it (``blocks_per_sm`` at a time; a
new one starts when one finishes). Each sub-partition's scheduler issues up to
``issue_width`` instructions per clock, oldest ready warp first after the last issued one
(greedy-then-oldest). An instruction is ready when its source and destination registers are
(register scoreboard over the trace's registers) and a unit of its pipe is free (the unit
stays busy for the pipe's initiation interval). Results come after the pipe's latency, or
for memory after the latency of the deepest level the cache simulation found plus the time
spent queueing for the SM's L1TEX data path (global, shared and cp.async's shared writes
alike), its share of the L2 bandwidth and its share of
the DRAM bandwidth (token buckets). Barriers hold a warp until every live warp of its block
arrives. A scheduler works out only the warps whose kept wait has come due (a kept wait
only grows: a pipe's units only get busier), and the nearest wait of the others only in a
clock where none issues. Cycles in which nothing can issue are skipped in one step, and so
is an SM's steady state: where its blocks repeat (a sampled trace's traced blocks, in turn)
and its last windows of blocks took as long as each other, the windows after them are
added, not run.

Every sub-partition clock that does not issue is charged to one reason, that of the warp
nearest to issuing: see ``REASONS``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from simfront.sim.model.decode import (K_ASYNC_COPY, K_ATOMIC, K_ATOMIC_SHARED,
                                       K_BARRIER, K_FENCE, K_LOAD_CONST,
                                       K_ASYNC_COMMIT, K_ASYNC_WAIT,
                                       K_LOAD_GLOBAL, K_LOAD_SHARED, K_PREFETCH, K_REDUCTION,
                                       K_STORE_GLOBAL, K_STORE_SHARED,
                                       PRED_GUARD, PRED_OPERAND, PRED_WRITE)

# Reasons a sub-partition clock is charged to (index into the stall counters).
R_SELECTED = 0        # issued an instruction
R_IDLE = 1            # no warp resident (tail of the kernel, imbalance, block start)
R_DEPENDENCY = 2      # waiting for a non-memory result (pipe latency)
R_MEM_LATENCY = 3     # waiting for a load's latency (L1, shared, L2, DRAM)
R_DRAM_BW = 4         # waiting for a load delayed mostly by DRAM bandwidth
R_L2_BW = 5           # ... by L2 bandwidth
R_PIPE = 6            # a unit of the needed pipe is busy (pipe throughput)
R_SYNC = 7            # at a barrier or fence
R_LSU = 8             # waiting for a load delayed mostly by the L1/shared data path
R_FETCH = 9           # waiting for instructions (instruction cache miss)
N_REASONS = 10
REASONS = ("selected", "idle", "dependency", "memory_latency", "dram_bandwidth",
           "l2_bandwidth", "pipe_throughput", "sync", "lsu_throughput", "instruction_fetch")

_INF = np.int64(1) << 60

# The scoreboard's columns past the trace's registers (R0..R254; 255 is RZ): when the warp's
# last predicate write can be read as an operand (SEL), and as a guard (``@P``), which
# Hopper reads later (bench/device/dep_latency.cu). The trace names no predicate register,
# so a warp's predicates are one: a reader waits for the warp's last compare.
_PRED_OPERAND_REG = 256
_PRED_GUARD_REG = 257
N_SCOREBOARD = 258

# Warp states
_EMPTY = 0
_RUN = 1
_BAR = 2
_DONE = 3


#: ``_wait``'s answer for a warp at a barrier: no clock to wait for, only the reason.
_AT_BARRIER = np.int64(-1)


class SmRows(NamedTuple):
    """The trace rows of the blocks one SM runs, in block, warp, trace order
    (``simulate.Prepared``): ``warp_start[b * warps_per_block + w]`` ..
    ``warp_end[...]`` are the rows of warp w of the SM's b-th block (blocks of a sampled
    trace share the rows of the traced block they stand for). Per row: code
    address, opcode index, destination and source registers, access width, and what the
    trace pass found (``cache.simulate_memory``): deepest level, sectors (L1 slots), L2 and
    DRAM sectors, shared-memory wavefronts, store slots (``cache.store_slots``)."""

    warp_start: np.ndarray
    warp_end: np.ndarray
    pc: np.ndarray
    op: np.ndarray
    ndst: np.ndarray
    dst: np.ndarray
    nsrc: np.ndarray
    src: np.ndarray
    width: np.ndarray
    level: np.ndarray
    sectors: np.ndarray
    slots: np.ndarray
    l2: np.ndarray
    dram: np.ndarray
    waves: np.ndarray
    #: a cp.async wait's N (the newest groups it leaves in flight); -1 where the trace
    #: does not say (tracers before version 5)
    imm: np.ndarray
    #: the row's guard predicate turned lanes off (its mask in the trace is short of its
    #: warp's full one): it waits for its guard like any guarded instruction
    guard: np.ndarray


#: The types SM 0's rows are handed to the issue model in (``simulate.narrowed``): a row
#: of int64s spans two cache lines and perf put the issue loop's hottest instruction on the
#: first read of a row's sources; narrower rows measured within the noise of this machine.
ROW_TYPES = {"pc": np.int32, "op": np.int32, "ndst": np.int8, "dst": np.int16,
             "nsrc": np.int8, "src": np.int16, "width": np.int16, "level": np.int8,
             "sectors": np.int32, "slots": np.int32, "l2": np.int32, "dram": np.int32,
             "waves": np.int32, "imm": np.int32}


class OpTiming(NamedTuple):
    """Per opcode (``decode.OpTable``): pipe, kind, latency, initiation interval, registers
    a destination spans, predicate use (``decode.PRED_*``), clocks after its issue an
    instruction reads its sources (0: at issue); per pipe: units a sub-partition has."""

    pipe: np.ndarray
    kind: np.ndarray
    latency: np.ndarray
    initiation: np.ndarray
    span: np.ndarray
    pred: np.ndarray
    src_read: np.ndarray
    pipe_units: np.ndarray


class SmConfig(NamedTuple):
    """The SM and its memory path, in core clocks.

    ``lat_store_load``: clocks each global store a block's warp issued after its last
    global load adds to the first load of the next block's warp in its slot (0: none). ``store_sectors_per_clk``: the sector slots of
    stores and reductions an SM sends to the L2 per clock, which hold the SM's memory path
    as long, at least ``store_instr_clk`` an instruction; loads behind them wait. (The L2's
    input port, which the whole GPU's stores share, is a bound on the kernel:
    ``simulate.memory_bounds``.) A global load holds the L1 for its sector slots at
    ``l1_sectors_per_clk``, at least ``load_instr_clk``. ``l2_bytes_per_clk`` and
    ``dram_bytes_per_clk``: the SM's shares of the L2 and DRAM bandwidth.
    ``block_period``: the blocks of a steady-state window, a multiple of those after which
    the rows repeat (0: no steady state is skipped); ``period_tolerance``: the standard
    error, over the kernel's clocks, that the steady state's windows may be added with."""

    n_blocks: int
    warps_per_block: int
    blocks_per_sm: int
    sub_partitions: int
    issue_width: int
    icache_line_shift: int
    icache_miss: int
    icache_prefetch: int
    lat_l1: float
    lat_shared: float
    lat_l2: float
    lat_dram: float
    lat_const: int
    lat_barrier: int
    lat_store_load: int
    lat_pred_guard: int
    block_start: int
    l1_sectors_per_clk: float
    store_sectors_per_clk: float
    store_instr_clk: float
    load_instr_clk: float
    l2_bytes_per_clk: float
    dram_bytes_per_clk: float
    sector_bytes: float
    block_period: int = 0
    period_tolerance: float = 0.0


class SmCounters(NamedTuple):
    """What a run accumulates: ``stall[sp, reason]``, unit-busy clocks and issued
    instructions per pipe, and ``warp_cycles[0]``, the clocks warps were resident (for
    achieved occupancy). ``row_wait[i]``, kept only when it has a row's length: the clocks
    a warp waited with row i next (since its previous issue, or its block's start; what
    ncu's per-instruction warp samples count), ``last_issue`` per warp slot its clock."""

    stall: np.ndarray
    pipe_busy: np.ndarray
    issued_pipe: np.ndarray
    warp_cycles: np.ndarray
    row_wait: np.ndarray
    last_issue: np.ndarray


class SmState(NamedTuple):
    """The SM while it runs, per warp slot (``blocks_per_sm x warps_per_block``): register
    scoreboard (ready clock and the reason of its wait), state, next and end row, clock it
    may start issuing, clock it was born, its outstanding memory (loads and stores; its
    asynchronous copies apart), global stores since its
    last global load (negative: its slot's previous warp's, which its first load pays for); per block slot: the block, live warps, warps at the barrier; per
    sub-partition: last issued warp, whether it ever held a warp, its nearest wait and its
    reason, instructions issued this clock; per pipe unit: the clock it frees; the clock
    each instruction-cache line arrives (0: never requested); the clocks the L1TEX data
    path, the L2 and the DRAM free (``QUEUE_*``); per warp slot, the clock its next
    instruction's registers (and a fence's memory) are ready and the reason, its
    instruction-cache line and its pipe, while ``dep_ok``: they change only when the warp
    issues or its slot gets a block, and a scheduler may look at a waiting warp many
    times before it issues; its cp.async groups: the clock the open group's copies have all
    landed, how many groups it committed, and each committed group's clock and reason in a
    ring of the last ``ASYNC_GROUPS``; per warp slot, its wait as last worked out (clock and
    reason) and the count of instructions its pipe's units on its sub-partition had taken
    then, per sub-partition and pipe that count: the wait holds while it is kept (``lb``
    not 0) and the count is unchanged, so a scheduler reads it back instead of working it out again; per
    sub-partition, whether none of its warps changed since its last look found none ready
    (``sp_clean``), and whether it held a live warp then; the steady-state sample
    (``_steady``): windows started, the clocks at the sample's first and latest window
    and the clocks added (``steady_t``), the sums of the windows' clocks and of their
    squares, the counters at the sample's start and end; per sub-partition and its k-th
    warp slot (slot sub-partition + k x sub-partitions), the clock before which that warp
    cannot issue (``lb``: 0 where its wait is to be worked out, its kept wait, never while
    it is at a barrier, done or its slot empty), which ``_due`` reads."""

    reg_ready: np.ndarray
    reg_cause: np.ndarray
    reg_read: np.ndarray
    state: np.ndarray
    ptr: np.ndarray
    end: np.ndarray
    wstart: np.ndarray
    born: np.ndarray
    mem_out: np.ndarray
    async_out: np.ndarray
    stores: np.ndarray
    slot_block: np.ndarray
    slot_drain: np.ndarray
    live: np.ndarray
    arrived: np.ndarray
    last: np.ndarray
    sp_used: np.ndarray
    best_t: np.ndarray
    best_r: np.ndarray
    n_iss: np.ndarray
    pipe_free: np.ndarray
    line_ready: np.ndarray
    queue: np.ndarray
    dep_t: np.ndarray
    dep_r: np.ndarray
    dep_line: np.ndarray
    dep_pipe: np.ndarray
    dep_ok: np.ndarray
    grp_open: np.ndarray
    grp_open_cause: np.ndarray
    grp_n: np.ndarray
    grp_ready: np.ndarray
    grp_cause: np.ndarray
    wait_t: np.ndarray
    wait_r: np.ndarray
    wait_ver: np.ndarray
    pipe_ver: np.ndarray
    sp_clean: np.ndarray
    sp_live: np.ndarray
    steady_n: np.ndarray
    steady_t: np.ndarray
    steady_s: np.ndarray
    steady_c: np.ndarray
    lb: np.ndarray


#: cp.async groups a warp's ring remembers: a wait looks at most this far back (a
#: three-stage pipeline of four groups a stage keeps twelve)
ASYNC_GROUPS = 32

#: The SM's L1TEX data path (global accesses through the L1, shared-memory wavefronts and
#: the shared-memory writes of cp.async copies: one pipe, as ncu's l1tex__data_pipe_lsu
#: counts them), its share of the L2 and of the DRAM.
QUEUE_L1, QUEUE_L2, QUEUE_DRAM = 0, 1, 2
#: Bytes of shared memory the L1TEX data path writes a clock: a cp.async copy of B bytes a
#: lane for a warp's 32 lanes takes 32 B / SHARED_WAVEFRONT_BYTES of its clocks.
SHARED_WAVEFRONT_BYTES = 128

#: Windows of repeating blocks an SM runs before its steady-state sample starts, and the
#: fewest windows the sample takes (``_steady``)
STEADY_WARMUP = 2
STEADY_MIN = 4


def new_state(rows: SmRows, ops: OpTiming, cfg: SmConfig) -> SmState:
    """An SM with no block started. The instruction cache is cold at the kernel's start:
    a miss brings the line and the ``icache_prefetch`` lines after it (sequential
    prefetch)."""
    P = cfg.sub_partitions
    S = cfg.blocks_per_sm * cfg.warps_per_block
    R = cfg.blocks_per_sm
    n_lines = max(1, int((rows.pc >> cfg.icache_line_shift).max()) + 1 if rows.pc.size else 1)
    max_units = max(1, int(ops.pipe_units.max()))
    return SmState(
        reg_ready=np.zeros((S, N_SCOREBOARD), np.int64),
        reg_cause=np.zeros((S, N_SCOREBOARD), np.int8), reg_read=np.zeros((S, 256), np.int64),
        state=np.zeros(S, np.int8), ptr=np.zeros(S, np.int64), end=np.zeros(S, np.int64),
        wstart=np.zeros(S, np.int64), born=np.zeros(S, np.int64),
        mem_out=np.zeros(S, np.int64), async_out=np.zeros(S, np.int64),
        stores=np.zeros(S, np.int64),
        slot_block=np.full(R, -1, np.int64), slot_drain=np.zeros(R, np.int64),
        live=np.zeros(R, np.int64),
        arrived=np.zeros(R, np.int64), last=np.full(P, -1, np.int64),
        sp_used=np.zeros(P, np.bool_), best_t=np.zeros(P, np.int64),
        best_r=np.zeros(P, np.int64), n_iss=np.zeros(P, np.int64),
        pipe_free=np.zeros((P, ops.pipe_units.shape[0], max_units), np.int64),
        line_ready=np.zeros(n_lines + cfg.icache_prefetch + 1, np.int64),
        queue=np.zeros(3, np.float64), dep_t=np.zeros(S, np.int64),
        dep_r=np.zeros(S, np.int64), dep_line=np.zeros(S, np.int64),
        dep_pipe=np.zeros(S, np.int64), dep_ok=np.zeros(S, np.bool_),
        grp_open=np.zeros(S, np.int64), grp_open_cause=np.zeros(S, np.int8),
        grp_n=np.zeros(S, np.int64), grp_ready=np.zeros((S, ASYNC_GROUPS), np.int64),
        grp_cause=np.zeros((S, ASYNC_GROUPS), np.int8),
        wait_t=np.zeros(S, np.int64), wait_r=np.zeros(S, np.int64),
        wait_ver=np.zeros(S, np.int64),
        pipe_ver=np.zeros((P, ops.pipe_units.shape[0]), np.int64),
        sp_clean=np.zeros(P, np.bool_), sp_live=np.zeros(P, np.bool_),
        steady_n=np.zeros(1, np.int64), steady_t=np.zeros(3, np.int64),
        steady_s=np.zeros(2, np.float64),
        steady_c=np.zeros((2, P * N_REASONS + 2 * ops.pipe_units.shape[0] + 1), np.int64),
        lb=np.full((P, -(-S // P)), _INF, np.int64))


@numba.njit(cache=True, _nrt=False)
def _start_block(r, blk, t, rows, cfg, st):
    """Put block ``blk`` into block slot ``r`` at clock ``t``: its warps' rows, fresh
    registers, and the scheduler's memory of the slot's old warps forgotten."""
    W = cfg.warps_per_block
    P = cfg.sub_partitions
    st.slot_block[r] = blk
    nl = 0
    for w in range(W):
        s = r * W + w
        a = rows.warp_start[blk * W + w]
        b = rows.warp_end[blk * W + w]
        st.ptr[s] = a
        st.end[s] = b
        st.wstart[s] = t + cfg.block_start
        st.born[s] = t
        for q in range(N_SCOREBOARD):
            st.reg_ready[s, q] = 0
        for q in range(256):
            st.reg_read[s, q] = 0
        st.mem_out[s] = 0
        st.stores[s] = -st.stores[s]
        st.dep_ok[s] = False
        st.async_out[s] = 0
        st.grp_open[s] = 0
        st.grp_n[s] = 0
        sp = s % P
        st.sp_clean[sp] = False
        if b > a:
            st.state[s] = _RUN
            st.lb[sp, s // P] = 0
            nl += 1
            st.sp_used[sp] = True
        else:
            st.state[s] = _DONE
            st.lb[sp, s // P] = _INF
        if st.last[sp] == s:
            st.last[sp] = -1
    st.live[r] = nl
    st.arrived[r] = 0
    st.slot_drain[r] = 0


@numba.njit(cache=True, inline="always", _nrt=False)
def _slot_of(sp, kk, S, P, st):
    """The warp slot a sub-partition looks at ``kk``-th (greedy: the last issued warp
    first, then the others in slot, that is age, order), or -1. Sub-partition sp holds
    slots sp, sp + P, ...: ceil((S - sp) / P) of them."""
    if kk == 0:
        return st.last[sp]
    s = sp + (kk - 1) * P
    if s >= S or s == st.last[sp]:
        return -1
    return s


@numba.njit(cache=True, inline="always", _nrt=False)
def _latest_register(s, regs, n, t_dep, cause, st):
    """The later of (``t_dep``, ``cause``) and when the first ``n`` of warp slot ``s``'s
    registers ``regs`` are ready, with the reason of that wait (RZ and none: no wait)."""
    for j in range(n):
        rg = regs[j]
        if rg >= 0 and rg < 255 and st.reg_ready[s, rg] > t_dep:
            t_dep = st.reg_ready[s, rg]
            cause = np.int64(st.reg_cause[s, rg])
    return t_dep, cause


@numba.njit(cache=True, inline="always", _nrt=False)
def _dep_wait(s, i, rows, ops, cfg, st):
    """Notes when warp slot ``s``'s next instruction (row ``i``) has its source and
    destination registers (a fence: its warp's memory; a cp.async wait: its groups) ready
    and the reason of that wait (``st.dep_t``, ``st.dep_r``), its cache line and its pipe
    (``st.dep_line``, ``st.dep_pipe``): they hold until the warp issues."""
    t_dep, cause = _latest_register(s, rows.src[i], rows.nsrc[i], np.int64(0),
                                    np.int64(R_DEPENDENCY), st)
    # destinations too: a write waits for an older write of the same register, and for an
    # older instruction that reads it late (a MUFU's source) to have read it
    t_dep, cause = _latest_register(s, rows.dst[i], rows.ndst[i], t_dep, cause, st)
    for j in range(rows.ndst[i]):
        rg = rows.dst[i, j]
        if rg >= 0 and rg < 255 and st.reg_read[s, rg] > t_dep:
            t_dep = st.reg_read[s, rg]
            cause = np.int64(R_DEPENDENCY)
    pred = ops.pred[rows.op[i]]
    q = -1
    if rows.guard[i] or pred & PRED_GUARD:
        q = _PRED_GUARD_REG
    elif pred & PRED_OPERAND:
        q = _PRED_OPERAND_REG
    if q >= 0 and st.reg_ready[s, q] > t_dep:
        t_dep = st.reg_ready[s, q]
        cause = np.int64(R_DEPENDENCY)
    k = ops.kind[rows.op[i]]
    if k == K_ASYNC_WAIT and rows.imm[i] >= 0 and st.grp_n[s] > 0:
        t_grp, c_grp = _async_wait(s, rows.imm[i], st)
        if t_grp > t_dep:
            t_dep = t_grp
            cause = np.int64(c_grp)
    elif k == K_FENCE or k == K_ASYNC_WAIT:
        # A fence orders the warp's loads and stores, not its asynchronous copies, which
        # only their group waits wait for (a pipelined loop fences its shared memory for
        # the tensor cores with copies of later stages in flight). A wait the trace does
        # not say enough of (no immediate, or no group committed) waits for everything.
        t_mem = st.mem_out[s]
        if k == K_ASYNC_WAIT and st.async_out[s] > t_mem:
            t_mem = st.async_out[s]
        if t_mem > t_dep:
            t_dep = t_mem
            cause = np.int64(R_SYNC)
    st.dep_t[s] = t_dep
    st.dep_r[s] = cause
    st.dep_line[s] = rows.pc[i] >> cfg.icache_line_shift
    st.dep_pipe[s] = ops.pipe[rows.op[i]]
    st.dep_ok[s] = True


@numba.njit(cache=True, inline="always", _nrt=False)
def _wait(s, sp, now, rows, ops, cfg, st):
    """When warp slot ``s`` (running, not at a barrier) can issue its next instruction, why
    it waits, and the pipe unit it would take: (clock, reason, unit); a clock not after
    ``now`` means now."""
    wstart = st.wstart
    if wstart[s] > now:
        return wstart[s], R_IDLE, 0
    if not st.dep_ok[s]:
        _dep_wait(s, st.ptr[s], rows, ops, cfg, st)
    cl = st.dep_line[s]
    lr = st.line_ready
    if lr[cl] == 0:
        for q in range(cfg.icache_prefetch + 1):
            if lr[cl + q] == 0:
                lr[cl + q] = now + cfg.icache_miss + q
    if lr[cl] > now:
        return lr[cl], R_FETCH, 0
    p = st.dep_pipe[s]
    t_dep = st.dep_t[s]
    cause = st.dep_r[s]
    u_best = 0
    pipe_free = st.pipe_free
    t_pipe = pipe_free[sp, p, 0]
    for u in range(1, ops.pipe_units[p]):
        if pipe_free[sp, p, u] < t_pipe:
            t_pipe = pipe_free[sp, p, u]
            u_best = u
    if t_dep > now or t_pipe > now:
        if t_dep >= t_pipe:
            return t_dep, cause, u_best
        return t_pipe, R_PIPE, u_best
    return now, R_SELECTED, u_best


@numba.njit(cache=True, inline="always", _nrt=False)
def _async_wait(s, keep, st):
    """When warp slot ``s``'s committed cp.async groups but the newest ``keep`` have all
    landed, and the reason of the last to land."""
    t = np.int64(0)
    cause = R_MEM_LATENCY
    n = st.grp_n[s]
    for j in range(max(np.int64(0), n - ASYNC_GROUPS), n - keep):
        g = j % ASYNC_GROUPS
        if st.grp_ready[s, g] > t:
            t = st.grp_ready[s, g]
            cause = st.grp_cause[s, g]
    return t, cause


@numba.njit(cache=True, inline="always", _nrt=False)
def _global_access(i, k, s, now, rows, cfg, st):
    """A global memory instruction of warp slot ``s`` issued at ``now`` through the SM's
    L1 path, its share of the L2 and of the DRAM (token buckets): the clock its result is
    ready and the reason its wait is charged to."""
    q = st.queue
    ns = rows.sectors[i]
    t1 = max(float(now), q[QUEUE_L1])
    if (k == K_STORE_GLOBAL or k == K_REDUCTION) and ns > 0:
        q[QUEUE_L1] = t1 + max(cfg.store_instr_clk, rows.slots[i] / cfg.store_sectors_per_clk)
    elif k == K_LOAD_GLOBAL and ns > 0:
        q[QUEUE_L1] = t1 + max(cfg.load_instr_clk, ns / cfg.l1_sectors_per_clk)
    elif k == K_ASYNC_COPY:
        # its write into shared memory (a copy that reads nothing still writes its zeros);
        # what it reads comes from the L2 into those wavefronts, not through the L1's data
        # as well: ncu counts a warp's 16-byte copy 3.98 data-pipe wavefronts on the H200
        q[QUEUE_L1] = t1 + rows.width[i] * 32 // SHARED_WAVEFRONT_BYTES
    else:
        q[QUEUE_L1] = t1 + ns / cfg.l1_sectors_per_clk
    t2 = t1
    t3 = t1
    lv = rows.level[i]
    if k == K_ATOMIC or k == K_REDUCTION:
        if lv < 1:
            lv = 1
    if rows.l2[i] > 0:
        t2 = max(t1, q[QUEUE_L2])
        q[QUEUE_L2] = t2 + rows.l2[i] * cfg.sector_bytes / cfg.l2_bytes_per_clk
        t3 = t2
    if rows.dram[i] > 0:
        t3 = max(t2, q[QUEUE_DRAM])
        q[QUEUE_DRAM] = t3 + rows.dram[i] * cfg.sector_bytes / cfg.dram_bytes_per_clk
    if ns == 0:
        lat = cfg.lat_l1
    elif lv == 0:
        lat = cfg.lat_l1
    elif lv == 1:
        lat = cfg.lat_l2
    else:
        lat = cfg.lat_dram
    if k == K_STORE_GLOBAL:
        if ns > 0:  # a store whose lanes are all predicated off is none
            if st.stores[s] >= 0:
                st.stores[s] += 1
            else:
                st.stores[s] -= 1
    elif k == K_LOAD_GLOBAL and ns > 0:
        if st.stores[s] < 0:
            lat += cfg.lat_store_load * (-st.stores[s])
        st.stores[s] = 0
    ready = np.int64(t3 + lat + 0.999)
    q1 = t1 - now
    q2 = t2 - t1
    q3 = t3 - t2
    qmax = max(q1, max(q2, q3))
    rcause = R_MEM_LATENCY
    if qmax > 0.5 * lat:
        if q3 == qmax:
            rcause = R_DRAM_BW
        elif q2 == qmax:
            rcause = R_L2_BW
        else:
            rcause = R_LSU
    if k == K_ASYNC_COPY:
        if ready > st.async_out[s]:
            st.async_out[s] = ready
    elif ready > st.mem_out[s]:
        st.mem_out[s] = ready
    return ready, rcause


@numba.njit(cache=True, inline="always", _nrt=False)
def _issue(s, sp, u_best, now, rows, ops, cfg, st, out):
    """Issue warp slot ``s``'s next instruction at ``now`` on unit ``u_best`` of its pipe:
    the unit busy, the result's ready clock in the destination registers. Returns that
    clock."""
    reg_ready, reg_cause, dst = st.reg_ready, st.reg_cause, rows.dst
    i = st.ptr[s]
    o = rows.op[i]
    k = ops.kind[o]
    p = ops.pipe[o]
    st.n_iss[sp] += 1
    st.last[sp] = s
    if out.row_wait.shape[0] > 0:
        # a slot's last issue may be its previous block's: this block's warp started later
        prev = max(out.last_issue[s], st.born[s])
        out.row_wait[i] += now - prev
        out.last_issue[s] = now
    st.dep_ok[s] = False
    st.lb[sp, s // cfg.sub_partitions] = 0
    ii = ops.initiation[o]
    st.pipe_free[sp, p, u_best] = now + ii
    st.pipe_ver[sp, p] += 1
    out.pipe_busy[p] += ii
    out.issued_pipe[p] += 1
    st.ptr[s] = i + 1
    ready = now + ops.latency[o]
    rcause = R_DEPENDENCY
    if k == K_LOAD_GLOBAL or k == K_ATOMIC or k == K_STORE_GLOBAL \
            or k == K_REDUCTION or k == K_ASYNC_COPY or k == K_PREFETCH:
        ready, rcause = _global_access(i, k, s, now, rows, cfg, st)
        if k == K_ASYNC_COPY and ready > st.grp_open[s]:
            st.grp_open[s] = ready
            st.grp_open_cause[s] = rcause
    elif k == K_ASYNC_COMMIT:
        g = st.grp_n[s] % ASYNC_GROUPS
        st.grp_ready[s, g] = st.grp_open[s]
        st.grp_cause[s, g] = st.grp_open_cause[s]
        st.grp_n[s] += 1
        st.grp_open[s] = 0
    elif k == K_LOAD_SHARED or k == K_STORE_SHARED or k == K_ATOMIC_SHARED:
        t1 = max(float(now), st.queue[QUEUE_L1])
        st.queue[QUEUE_L1] = t1 + max(1, rows.waves[i])
        ready = np.int64(t1 + cfg.lat_shared + 0.999)
        rcause = R_MEM_LATENCY
        if t1 - now > 0.5 * cfg.lat_shared:
            rcause = R_LSU
    elif k == K_LOAD_CONST:
        ready = now + cfg.lat_const
        rcause = R_MEM_LATENCY
    span = ops.span[o]
    w = rows.width[i]
    if w > 4 and (k == K_LOAD_GLOBAL or k == K_LOAD_SHARED or k == K_ATOMIC):
        span = max(span, w // 4)
    for j in range(rows.ndst[i]):
        rg = dst[i, j]
        if rg >= 0 and rg < 255:
            for q in range(span):
                if rg + q < 255:
                    reg_ready[s, rg + q] = ready
                    reg_cause[s, rg + q] = rcause
    hold = ops.src_read[o]
    if hold > 0:
        for j in range(rows.nsrc[i]):
            rg = rows.src[i, j]
            if rg >= 0 and rg < 255:
                st.reg_read[s, rg] = now + hold
    if ops.pred[o] & PRED_WRITE:
        reg_ready[s, _PRED_OPERAND_REG] = ready
        reg_ready[s, _PRED_GUARD_REG] = now + cfg.lat_pred_guard
        reg_cause[s, _PRED_OPERAND_REG] = R_DEPENDENCY
        reg_cause[s, _PRED_GUARD_REG] = R_DEPENDENCY
    return ready


@numba.njit(cache=True, inline="always", _nrt=False)
def _retire(s, k, now, next_block, finish, rows, cfg, st, out):
    """After warp slot ``s`` issued an instruction of kind ``k``: the warp at its barrier or
    done, the barrier opened when every live warp of its block arrived, the next block
    started in a slot its block left. Returns (next_block, finish, whether a block
    started). (EXIT under a predicate retires some lanes only: a warp is done when its
    trace ends.)"""
    W = cfg.warps_per_block
    r = s // W
    done = st.ptr[s] >= st.end[s]
    P = cfg.sub_partitions
    if k == K_BARRIER and not done:
        st.state[s] = _BAR
        st.lb[s % P, s // P] = _INF
        st.arrived[r] += 1
    if done:
        st.state[s] = _DONE
        st.lb[s % P, s // P] = _INF
        st.live[r] -= 1
        out.warp_cycles[0] += now + 1 - st.born[s]
        finish = max(finish, max(st.mem_out[s], st.async_out[s]))
        # a warp's slot is free when its memory instructions have completed (its stores
        # acknowledged): ncu's drain
        st.slot_drain[r] = max(st.slot_drain[r], st.mem_out[s])
    if st.live[r] > 0 and st.arrived[r] >= st.live[r]:
        st.arrived[r] = 0
        for w in range(W):
            s2 = r * W + w
            if st.state[s2] == _BAR:
                st.state[s2] = _RUN
                st.wstart[s2] = now + cfg.lat_barrier
                st.lb[s2 % P, s2 // P] = 0
                st.sp_clean[s2 % P] = False
    started = False
    if st.live[r] == 0:
        # The block is done: the block scheduler starts the next one here.
        if next_block < cfg.n_blocks:
            _start_block(r, next_block, max(now + 1, st.slot_drain[r]), rows, cfg, st)
            next_block += 1
            started = True
        else:
            st.slot_block[r] = -1
    return next_block, finish, started


@numba.njit(cache=True, inline="always", _nrt=False)
def _keep_wait(s, sp, P, t, reason, st):
    """A warp's wait, kept until it issues, its slot changes, or its pipe's units on its
    sub-partition take an instruction; also the lower bound its scheduler reads."""
    st.wait_t[s] = t
    st.wait_r[s] = reason
    st.wait_ver[s] = st.pipe_ver[sp, st.dep_pipe[s]]
    st.lb[sp, s // P] = t


@numba.njit(cache=True, inline="always", _nrt=False)
def _due(sp, now, st):
    """The warps of sub-partition ``sp`` (bit k: slot sp + k x sub-partitions) that may
    issue at ``now``: running, and with no wait kept or one kept that is due. A kept wait
    only grows (a pipe's units only get busier), so the others cannot issue now."""
    m = np.int64(0)
    for k in range(st.lb.shape[1]):
        if st.lb[sp, k] <= now:
            m |= np.int64(1) << k
    return m


@numba.njit(cache=True, inline="always", _nrt=False)
def _try_issue(s, sp, now, next_block, finish, rows, ops, cfg, st, out):
    """Warp slot ``s``'s wait worked out; it issues if due. Returns (next_block, finish,
    issued)."""
    t, reason, u_best = _wait(s, sp, now, rows, ops, cfg, st)
    if t > now:
        _keep_wait(s, sp, cfg.sub_partitions, t, reason, st)
        return next_block, finish, False
    k = ops.kind[rows.op[st.ptr[s]]]
    ready = _issue(s, sp, u_best, now, rows, ops, cfg, st, out)
    if ready > finish:
        finish = ready
    next_block, finish, _ = _retire(s, k, now, next_block, finish, rows, cfg, st, out)
    return next_block, finish, True


@numba.njit(cache=True, inline="always", _nrt=False)
def _nearest_wait(sp, now, rows, ops, cfg, st):
    """Sub-partition ``sp``'s nearest wait and its reason (``st.best_t``, ``st.best_r``) in
    the scheduler's order, the earlier warp on a tie; returns whether a warp is live."""
    S = cfg.blocks_per_sm * cfg.warps_per_block
    P = cfg.sub_partitions
    any_live = False
    for kk in range(-(-S // P) + 1):
        s = _slot_of(sp, kk, S, P, st)
        if s < 0:
            continue
        state = st.state[s]
        if state == _EMPTY or state == _DONE:
            continue
        any_live = True
        if state == _BAR:
            if st.best_t[sp] == _INF:
                st.best_r[sp] = R_SYNC
            continue
        if st.wait_ver[s] != st.pipe_ver[sp, st.dep_pipe[s]]:
            # its pipe took an instruction since: the kept wait is a lower bound of the
            # new one, which cannot be nearer than a nearest one already found
            if st.wait_t[s] >= st.best_t[sp]:
                continue
            t, reason, _ = _wait(s, sp, now, rows, ops, cfg, st)
            _keep_wait(s, sp, P, t, reason, st)
        if st.wait_t[s] < st.best_t[sp]:
            st.best_t[sp] = st.wait_t[s]
            st.best_r[sp] = st.wait_r[s]
    return any_live


@numba.njit(cache=True, inline="always", _nrt=False)
def _schedule(sp, now, next_block, finish, rows, ops, cfg, st, out):
    """One clock of sub-partition ``sp``'s scheduler: up to ``issue_width`` ready warps
    issue, the last issued warp first, then the others in slot (that is age) order; where
    none does, the nearest wait of the others is noted (``st.best_t``, ``st.best_r``).
    Only the warps ``_due`` names are worked out for issue; a new block's warps and a
    barrier's released ones cannot issue in the clock that made them due. Returns
    (next_block, finish, any warp live, any issued)."""
    P = cfg.sub_partitions
    issued_any = False
    st.n_iss[sp] = 0
    st.best_t[sp] = _INF
    st.best_r[sp] = R_IDLE
    due = _due(sp, now, st)
    last = st.last[sp]
    first = np.int64(-1)
    if last >= 0 and (due >> (last // P)) & 1:
        first = last
        due &= ~(np.int64(1) << (last // P))
    # one call site: numba compiles an inlined function's whole subtree anew at each site
    for j in range(-1, st.lb.shape[1]):
        if j < 0:
            if first < 0:
                continue
            s = first
        else:
            if st.n_iss[sp] >= cfg.issue_width:
                break
            if not (due >> j) & 1:
                continue
            s = sp + j * P
        next_block, finish, issued = _try_issue(s, sp, now, next_block, finish,
                                                rows, ops, cfg, st, out)
        issued_any = issued_any or issued
    if issued_any:
        return next_block, finish, True, True
    return next_block, finish, _nearest_wait(sp, now, rows, ops, cfg, st), False


@numba.njit(cache=True, inline="always", _nrt=False)
def _advance(now, issued_any, cfg, st, out):
    """The clocks to the next event (1 after an issue; else to the nearest wait), each
    sub-partition's clocks charged to its reason. Returns the clocks, or -1 when nothing
    can ever become ready (a barrier deadlock)."""
    P = cfg.sub_partitions
    if issued_any:
        dt = np.int64(1)
    else:
        dt = _INF
        for sp in range(P):
            if st.best_t[sp] < dt:
                dt = st.best_t[sp]
        dt = dt - now
        if dt < 1:
            dt = np.int64(1)
        if dt > (np.int64(1) << 40):
            return np.int64(-1)
    for sp in range(P):
        if st.n_iss[sp] > 0:
            out.stall[sp, R_SELECTED] += 1
            if dt > 1:
                out.stall[sp, st.best_r[sp]] += dt - 1
        else:
            out.stall[sp, st.best_r[sp]] += dt
    return dt


@numba.njit(cache=True, _nrt=False)
def _counters(cfg, out, into):
    """SM 0's counters so far, flat: stall clocks (sub-partition, reason), per pipe its
    busy clocks and issued instructions, warp cycles."""
    c = 0
    for sp in range(cfg.sub_partitions):
        for r in range(N_REASONS):
            into[c] = out.stall[sp, r]
            c += 1
    for p in range(out.pipe_busy.shape[0]):
        into[c] = out.pipe_busy[p]
        into[c + 1] = out.issued_pipe[p]
        c += 2
    into[c] = out.warp_cycles[0]


@numba.njit(cache=True, _nrt=False)
def _steady(now, next_block, cfg, st, out):
    """At the start of a window of ``block_period`` blocks (whose rows repeat: a sampled
    trace's): the windows since the first ``STEADY_WARMUP`` are a sample of the SM's
    steady state. Once the sample's mean window, taken for every window left but the
    last, is as good as the whole run to ``period_tolerance`` of the kernel's clocks (its
    standard error over the windows left, at least ``STEADY_MIN`` windows), those windows
    are added, not run: their clocks and counters at the sample's means. Returns
    (next_block, the clocks added)."""
    st.steady_n[0] += 1
    seen = st.steady_n[0]
    if seen <= STEADY_WARMUP:
        return next_block, np.int64(0)
    if seen == STEADY_WARMUP + 1:
        st.steady_t[0] = now
        st.steady_t[1] = now
        _counters(cfg, out, st.steady_c[0])
        return next_block, np.int64(0)
    d = float(now - st.steady_t[1])
    st.steady_t[1] = now
    st.steady_s[0] += d
    st.steady_s[1] += d * d
    m = seen - STEADY_WARMUP - 1
    left = (cfg.n_blocks - next_block) // cfg.block_period - 1
    if m < STEADY_MIN or left < 1:
        return next_block, np.int64(0)
    mean = st.steady_s[0] / m
    var = max(0.0, (st.steady_s[1] - m * mean * mean) / (m - 1))
    error = left * np.sqrt(var / m)
    if error > cfg.period_tolerance * (now + left * mean):
        return next_block, np.int64(0)
    # added at the sample's means; each sub-partition's clocks still add up to the
    # clocks added (the rounding goes to its commonest reason)
    q = left / m
    added = np.int64(q * (now - st.steady_t[0]) + 0.5)
    _counters(cfg, out, st.steady_c[1])
    c = 0
    for sp in range(cfg.sub_partitions):
        rest = added
        top = 0
        for r in range(N_REASONS):
            delta = st.steady_c[1, c + r] - st.steady_c[0, c + r]
            a = np.int64(q * delta)
            out.stall[sp, r] += a
            rest -= a
            if delta > st.steady_c[1, c + top] - st.steady_c[0, c + top]:
                top = r
        out.stall[sp, top] += rest
        c += N_REASONS
    for p in range(out.pipe_busy.shape[0]):
        out.pipe_busy[p] += np.int64(q * (st.steady_c[1, c] - st.steady_c[0, c]) + 0.5)
        out.issued_pipe[p] += np.int64(q * (st.steady_c[1, c + 1] - st.steady_c[0, c + 1])
                                       + 0.5)
        c += 2
    out.warp_cycles[0] += np.int64(q * (st.steady_c[1, c] - st.steady_c[0, c]) + 0.5)
    st.steady_t[2] = added
    return next_block + left * cfg.block_period, added


@numba.njit(cache=True, _nrt=False)
def run_sm(rows, ops, cfg, st, out):
    """Simulate the blocks of one SM (``rows``: ``SmRows``; ``ops``: ``OpTiming``;
    ``cfg``: ``SmConfig``; ``st``: a fresh ``new_state``); returns the cycle at which the
    last one finishes, ``out`` (``SmCounters``) accumulated in place."""
    P = cfg.sub_partitions
    # typed, not literal, so that the helpers they are passed to compile once, not twice
    next_block = np.int64(0)
    now = np.int64(0)
    finish = np.int64(0)
    skipped = np.int64(0)
    # per-row waits are kept whole: no steady state is skipped then
    K = cfg.block_period if out.row_wait.shape[0] == 0 else 0
    snap_at = K if K > 0 else cfg.n_blocks + 1
    for r in range(cfg.blocks_per_sm):
        if next_block < cfg.n_blocks:
            _start_block(r, next_block, now, rows, cfg, st)
            next_block += 1
    while True:
        any_live = False
        issued_any = np.bool_(False)
        for sp in range(P):
            # A sub-partition whose warps all read their waits back at its last look, none
            # due yet, and none of which changed since, would come to the same again.
            if st.sp_clean[sp] and st.best_t[sp] > now:
                st.n_iss[sp] = 0
                any_live = any_live or st.sp_live[sp]
                continue
            next_block, finish, live, issued = _schedule(sp, now, next_block, finish, rows,
                                                         ops, cfg, st, out)
            st.sp_live[sp] = live
            st.sp_clean[sp] = not issued
            any_live = any_live or live
            issued_any = issued_any or issued
        if not any_live:
            break
        if next_block >= snap_at:
            snap_at += K
            next_block, skipped = _steady(now, next_block, cfg, st, out)
            if skipped > 0:
                snap_at = cfg.n_blocks + 1
        dt = _advance(now, issued_any, cfg, st, out)
        if dt < 0:
            break  # a barrier deadlock
        now += dt
    if finish < now:
        finish = now
    # The drain after the last issue (outstanding loads, stores) counts as memory latency.
    for sp in range(P):
        if st.sp_used[sp]:
            out.stall[sp, R_MEM_LATENCY] += finish - now
        else:
            out.stall[sp, :] = 0
    return finish + skipped

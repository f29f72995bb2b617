"""One kernel through the model: trace + GPU description -> one per-kernel record.

Steps (docs/model.md says why):

1. launch parameters and occupancy (``occupancy``);
2. one streaming pass over the trace: every memory instruction of every thread block goes
   through the L1 of the SM its block runs on and the shared L2 (``cache``); instruction
   counts per pipe are gathered; the rows of the thread blocks that SM 0 runs are kept;
3. SM 0's blocks through the cycle-level issue model (``issue``), with its share of the L2
   and DRAM bandwidth;
4. combination: whole-GPU DRAM and L2 bandwidth bounds, the launch overhead, the stall
   breakdown and the limiter (``combine``).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from simfront.core import jit
from simfront.core.errors import TraceFormatError
from simfront.gpu import load_gpu
from simfront.sim.model import fill, finish, prefetch, reuse, sharing, tiles
from simfront.sim.model.cache import (HASH_LINEAR, N_TOTALS, CacheState, MemConfig, MemOut,
                                      MemRows, global_bytes, global_line_touches, l1_sim,
                                      l2_sim, l2_state, mark_l1_owners, mark_line_owners,
                                      new_line_owners, simulate_memory, store_slots)
from simfront.sim.model.carry import L2Carry, limit_dirty, untraced_writeback
from simfront.sim.model.decode import (K_ASYNC_COPY, K_ATOMIC, K_REDUCTION, K_STORE_GLOBAL,
                                       N_PIPES,
                                       PIPE_INDEX, build_optable, pipe_timing)
from simfront.sim.model.issue import (N_REASONS, OpTiming, SmConfig, SmCounters, SmRows,
                                      ROW_TYPES, new_state, run_sm)
from simfront.sim.model.occupancy import Launch, l1_bytes, launch_from, occupancy
from simfront.sim.model.params import DEFAULT_PARAMS, ModelParams
from simfront.traces import samples
from simfront.traces.instructions import MAX_DST, MAX_SRC
from simfront.traces.reader import KernelTrace


@dataclass
class _Timed:
    """Rows of the blocks SM 0 runs, gathered over the chunks."""

    parts: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, **cols: np.ndarray) -> None:
        for k, v in cols.items():
            self.parts.setdefault(k, []).append(v)

    def get(self, name: str, dtype, shape_tail=(), narrow=None) -> np.ndarray:
        """A column in ``dtype``, or in the integer type ``narrow`` where its values fit
        (what ``narrowed`` would make of it, without the wide copy first)."""
        p = self.parts.get(name)
        if not p:
            return np.zeros((0, *shape_tail), dtype)
        a = np.concatenate(p)
        if narrow is not None and a.size and a.dtype.kind in "iu":
            info = np.iinfo(narrow)
            if info.min <= int(a.min()) and int(a.max()) <= info.max:
                dtype = narrow
        return np.ascontiguousarray(a.astype(dtype, copy=False))


@dataclass
class KernelRun:
    """What the issue model made of one prepared kernel (before combining); the trace pass's
    counts stay in ``prep``."""

    prep: "Prepared"
    occ: object
    t_sm: int                   # SM 0's simulated clocks, before ``prep.work_scale``
    stall: np.ndarray           # [sub_partitions, reasons]
    pipe_busy: np.ndarray       # unit-busy clocks on SM 0
    issued_pipe: np.ndarray
    warp_cycles: float
    timed_blocks: int
    timed_instructions: int
    t_dram: float               # the whole GPU's DRAM bound, clocks (memory_bounds)
    t_l2: float                 # its L2 bound: sectors, store port, read side
    wall_s: float = 0.0

    def busy_share(self, gpu, pipe: str) -> float:
        """``pipe``'s units on SM 0 busy, a share of their clocks over SM 0's time."""
        units = max(1, gpu.sm.units(pipe)) * gpu.sm.sub_partitions
        return float(self.pipe_busy[PIPE_INDEX[pipe]]) / (units * max(float(self.t_sm), 1.0))


def memory_latencies(gpu, params: ModelParams) -> dict[str, float]:
    """Load-to-use latencies in core clocks, from the description (DRAM: the L2 hit latency
    plus the DRAM access latency converted from DRAM clocks, plus the calibrated extra)."""
    core = gpu.clocks.core.hz
    dram_lat = (gpu.l2.hit_latency + gpu.dram.latency * core / gpu.dram.clock.hz
                + params.dram.extra_latency * core / 1e9)
    return {"l1": float(gpu.sm.l1.l1_latency), "shared": float(gpu.sm.l1.shared_latency),
            "l2": float(gpu.l2.hit_latency), "dram": float(dram_lat),
            "const": float(gpu.sm.l1.l1_latency * params.issue.const_latency_l1),
            "fetch": float(dram_lat * params.issue.icache_miss_dram_share)}


def dram_load_latency(base: float, load: float, gpu, params: ModelParams) -> float:
    """DRAM load-to-use, in core clocks, when the kernel keeps the DRAM ``load`` busy (its
    reads and ``dram.queue_write_weight`` times its writes over the sustainable
    bandwidth, per clock of the kernel): the unloaded latency plus a queue's wait,
    ``dram.queue_latency * load / (1 - load)``, the load capped at ``dram.queue_max_load``
    (beyond it the bandwidth bound, not the latency, holds the kernel back). The H100's
    loaded latency, fitted on bench/device/mem_rows.cu's pointer chase (bench/bench_mem.py)."""
    r = min(max(load, 0.0), params.dram.queue_max_load)
    return base + params.dram.queue_latency * gpu.clocks.core.hz / 1e9 * r / (1.0 - r)


def dram_time(read_bytes: float, write_bytes: float, dram_per_clk: float,
              turn_clk_per_byte: float) -> float:
    """Clocks the whole GPU's DRAM takes to read and write these bytes: their transfer at
    the sustainable bandwidth, plus ``turn_clk_per_byte`` for each byte written while there
    are reads to turn the bus back to (at most twice the bytes read: a stream that only
    writes does not turn). The H100's streams of dram_mix.cu lose 0.93 -> 0.84 of the peak
    from reads alone to two writes a read, and the H200's as much time a byte written."""
    turned = min(write_bytes, 2.0 * read_bytes)
    return (read_bytes + write_bytes) / dram_per_clk + turn_clk_per_byte * turned


def dram_turn_clk(gpu, params: ModelParams) -> float:
    """``dram.turn_ps_per_byte`` in core clocks a byte."""
    return params.dram.turn_ps_per_byte * 1e-12 * gpu.clocks.core.hz


def kernel_dram_rate(totals: np.ndarray, sector_bytes: float, dram_per_clk: float,
                     turn_clk_per_byte: float) -> float:
    """The bytes a clock the whole GPU's DRAM moves for a kernel with these totals (its
    reads and writes, ``totals[4]`` and ``totals[5]`` in sectors): the sustainable
    bandwidth less the kernel's turns (``dram_time``)."""
    moved = float(totals[4] + totals[5]) * sector_bytes
    if moved <= 0:
        return dram_per_clk
    return moved / dram_time(float(totals[4]) * sector_bytes, float(totals[5]) * sector_bytes,
                             dram_per_clk, turn_clk_per_byte)


def memory_bounds(totals: np.ndarray, sector_bytes: float, dram_per_clk: float,
                  turn_clk_per_byte: float, l2_per_clk: float, port_slots_per_clk: float,
                  read_sectors_per_clk: float,
                  read_requests_per_clk: float) -> tuple[float, float]:
    """The whole GPU's DRAM and L2 bandwidth bounds, in clocks, of a trace pass's totals
    (``cache.simulate_memory``): DRAM sectors read and written (``dram_time``); L2
    sectors, or where one is longer the stores' slots through the L2's input port
    (``totals[7]``, ``cache.store_slots``), the reads' sectors (``totals[9]``) or their
    requests, a line each (``totals[8]``), through the L2's read side."""
    t_l2 = float(totals[2]) * sector_bytes / l2_per_clk
    for n, rate in ((totals[7], port_slots_per_clk), (totals[9], read_sectors_per_clk),
                    (totals[8], read_requests_per_clk)):
        t_l2 = max(t_l2, float(n) / rate)
    t_dram = dram_time(float(totals[4]) * sector_bytes, float(totals[5]) * sector_bytes,
                       dram_per_clk, turn_clk_per_byte)
    return t_dram, t_l2


def l2_side_rates(gpu, params: ModelParams) -> tuple[float, float, float]:
    """The L2's ports, whole GPU, as shares of its bandwidth in sectors a clock: the input
    port in store slots (``l2.write_share``), the read side in sectors
    (``l2.read_share``) and in requests, a line each (``l2.read_request_share``)."""
    sectors = bandwidths(gpu, params)["l2"] / gpu.l2.sector.bytes
    return (params.l2.write_share * sectors, params.l2.read_share * sectors,
            params.l2.read_request_share * sectors)


def bandwidths(gpu, params: ModelParams) -> dict[str, float]:
    """Bytes per core clock, whole GPU: DRAM (times the sustainable share), L2, and the
    most one SM's L1 can take in per clock from beyond it (its banks, or the miss path's
    ``l1.miss_sectors_per_clk`` where that is less)."""
    core = gpu.clocks.core.hz
    ch = gpu.dram.channels
    l2 = gpu.l2.banks(ch) * gpu.l2.port_width.bytes * gpu.clocks.l2.hz / core
    l1_sm = min(float(gpu.sm.l1.l1_banks * gpu.sm.l1.sector.bytes),
                params.l1.miss_sectors_per_clk * gpu.sm.l1.sector.bytes)
    return {"dram": gpu.dram.bandwidth.bytes_per_s / core * params.dram.efficiency,
            "l2": l2, "l1_sm": l1_sm}


#: The largest unsampled grid whose every block's rows the trace pass keeps when it fits in
#: one wave (``_TracePass.one_wave``); a larger one times SM 0's own blocks.
ONE_WAVE_MAX_BLOCKS = 64
#: Traced blocks whose warp instructions are within this share of the largest are alike
#: (``working_blocks``)
ALIKE_BLOCKS = 0.005
#: A sampled trace whose traced blocks hold less than this share of the census's average
#: block (``Prepared.traced_work_share``) is timed blind: its blocks exit at once, and the
#: model saw none of the grid's memory work. Reports name such launches.
BLIND_WORK_SHARE = 0.05

#: The largest share of a grid taken as blocks that exit at once: a grid rounded up (to the
#: SM count, to whole tiles) leaves a few; a larger shortfall is blocks that do other work
#: than the traced ones (a causal kernel's tiles above the diagonal store zeros)
ROUNDED_UP = 0.05

#: The most ways a simulated L1 set has: a more associative L1 (the H100 description's 4
#: sets) is simulated with more sets of this many ways, which keeps the lookup cheap and
#: changes LRU hit rates little at this associativity.
MAX_L1_WAYS = 32


def _l1_state(n: int, nbytes: int, gpu) -> CacheState:
    l1 = gpu.sm.l1
    lines = max(1, nbytes // l1.line.bytes)
    sets = max(1, min(l1.sets, lines))
    ways = max(1, lines // sets)
    if ways > MAX_L1_WAYS:
        sets, ways = max(1, lines // MAX_L1_WAYS), MAX_L1_WAYS
    return CacheState.make(n, sets, ways, HASH_LINEAR)


@numba.njit(cache=True)
def _popcount32(x):
    """Active lanes of each mask, as int64 (bit arithmetic: a tenth of the time of a byte
    lookup table, which was a tenth of np.unpackbits'; np.bitwise_count needs numpy 2)."""
    out = np.empty(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        v = np.int64(x[i]) & 0xFFFFFFFF
        v = v - ((v >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        out[i] = ((v * 0x01010101) & 0xFFFFFFFF) >> 24
    return out


def narrowed(cols: dict, types: dict | None = None) -> dict:
    """``cols`` with each integer column in ``types[name]`` (without ``types``: the
    narrowest integer type) where its values fit; a column that does not fit keeps its type
    (numba then compiles the issue model for that one too)."""
    out = {}
    for name, a in cols.items():
        if types and name in types and a.dtype == types[name]:
            pass  # already in its type
        elif a.dtype.kind == "i" and a.size:
            lo, hi = int(a.min()), int(a.max())
            fit = ((types[name],) if types and name in types
                   else (np.int8, np.int16, np.int32))
            a = a.astype(next((t for t in fit if np.iinfo(t).min <= lo
                               and hi <= np.iinfo(t).max), a.dtype), copy=False)
        out[name] = np.ascontiguousarray(a)
    return out


@dataclass
class Prepared:
    """The trace pass of one kernel: counts, cache results and SM 0's rows."""

    launch: Launch
    occ: object
    sm_count: int
    active_sms: int
    n_blocks_trace: int
    instructions: float
    thread_instructions: float
    pipe_counts: np.ndarray
    flops: float
    totals: np.ndarray
    table: object
    cols: dict
    warp_off: np.ndarray
    timed_blocks: int
    wall_s: float

    cache_key: tuple = ()
    #: what the trace's counts were multiplied by to stand for the whole grid (1: unsampled)
    sample_scale: float = 1.0
    #: what SM 0's simulated time is multiplied by: the work of an average block over that
    #: of the traced blocks (1 without a census; see prepare_kernel), times the spread of a
    #: persistent grid's work over its resident workers
    work_scale: float = 1.0
    #: a persistent grid: its blocks are workers that take tiles (see is_persistent)
    persistent: bool = False
    #: how a persistent grid hands out its tiles (``tiles.DYNAMIC`` or ``tiles.STATIC``)
    schedule: str = ""
    #: the L2 started as the previous kernel left it (``carry``), not empty
    warm_l2: bool = False
    #: a sampled trace's traced blocks (``cols`` holds their rows), repeated in order up to
    #: ``timed_blocks`` when timed (``sm0_rows``); 0: ``cols`` holds every timed block
    repeat_from: int = 0
    #: a sampled trace's traced blocks' average warp instructions over the census's average
    #: block (1: unsampled, or no census). Far below 1, the sample holds blocks that exit at
    #: once while the grid's others work: the memory side saw none of that work, and SM 0's
    #: time is the census's instructions through an exiting block's rows
    traced_work_share: float = 1.0
    #: steps of a split reduction's finishing walk that no traced block shows (``finish``)
    finish_walk_steps: int = 0
    #: ``reuse.rows_digest`` of the rows, where worked out (kept on disk with them, so a
    #: sweep's other configurations need not hash them again); not an argument, so a
    #: copy with other rows (``dataclasses.replace``) starts without one
    rows_digest: str = field(default="", init=False, repr=False, compare=False)

    def sm0_rows(self) -> tuple[dict, np.ndarray, np.ndarray]:
        """SM 0's rows and, for each warp of its ``timed_blocks`` blocks (block b's warp w
        at b x warps per block + w), where its rows start and end in them. The rows are
        kept as traced, so a prepared kernel stays the size of its trace (memory, the disk
        cache); a sampled trace's block b runs traced block b mod ``repeat_from``'s rows
        where they lie, which costs no copy of them."""
        W = self.occ.warps_per_block
        if not self.repeat_from:
            return self.cols, self.warp_off[:-1], self.warp_off[1:]
        warp = ((np.arange(self.timed_blocks) % self.repeat_from)[:, None] * W
                + np.arange(W)).ravel()
        return self.cols, self.warp_off[warp], self.warp_off[warp + 1]


def cache_key(gpu) -> tuple:
    """What the trace pass depends on besides the trace: SM count and cache geometry."""
    return (gpu.sm_count, gpu.l2, gpu.sm.l1, gpu.sm.max_warps, gpu.sm.max_blocks,
            gpu.sm.registers.registers, gpu.sm.sub_partitions)


def prepare_kernel(kernel, gpu, launch: dict | None = None,
                   params: ModelParams = DEFAULT_PARAMS, l2: L2Carry | None = None) -> Prepared:
    """The streaming trace pass: counts, caches, and the rows of SM 0's blocks.

    The L2 starts empty (as under ncu, which flushes it), or, given ``l2``, as the previous
    kernel of the step left it; ``l2`` is then updated in place to what this kernel leaves
    for the next one (``carry``)."""
    jit.first_use(MODEL)
    t0 = time.perf_counter()
    tp = _TracePass(kernel, gpu, launch, params, l2)
    chunks = kernel.iter_chunks()
    first = next(chunks, None)
    if first is not None and prefetch.uses_async_waits(_kinds(first, gpu)):
        # which copies read nothing needs each warp's later waits: a first pass over the
        # trace's copies, commits and waits only (kernels with cp.async pipelines)
        tp.zero_fill = _zero_fill_flags(kernel, gpu, tp.W)
    for chunk in itertools.chain([first] if first is not None else [], chunks):
        tp.add(chunk)
    if tp.table is None:
        raise TraceFormatError("kernel trace holds no instructions", kernel.path)
    return tp.finish(time.perf_counter() - t0)


def _kinds(chunk, gpu) -> np.ndarray:
    return build_optable(chunk.opcodes, gpu).kind[chunk.op.astype(np.int64)]


def _zero_fill_flags(kernel, gpu, warps_per_block: int) -> np.ndarray:
    """One flag per LDGSTS row of the trace, in order: a prefetch that reads nothing
    (``prefetch``)."""
    rows = prefetch.AsyncRows()
    for chunk in kernel.iter_chunks():
        rows.add(_kinds(chunk, gpu), chunk.tb, chunk.warp, chunk.imm)
    return rows.zero_fill(warps_per_block)


class _TracePass:
    """One kernel's trace pass, chunk by chunk (``add``), then scaled to the grid and cut
    to SM 0's rows (``finish``)."""

    def __init__(self, kernel, gpu, launch: dict | None, params: ModelParams,
                 l2: L2Carry | None):
        header = kernel.header
        self.gpu, self.params, self.launch_facts = gpu, params, launch
        self.header = header
        self.ln = ln = launch_from(header, launch)
        self.occ = occ = occupancy(ln, gpu)
        S = self.S = gpu.sm_count
        B = self.B = max(1, ln.n_blocks)
        self.active = min(S, B)
        # A sampled trace (the tracer kept T of the grid's N blocks) stands for the whole
        # grid: counts are scaled by N/T (by the census, where the header has one), and SM
        # 0's share of the grid is timed on traced blocks.
        self.sampled = header.sampled_blocks
        self.sm0_blocks = -(-B // S)
        l1 = _l1_state(self.active, l1_bytes(ln, occ, gpu, params.l1.carveout_headroom), gpu)
        if l2 is None:
            self.carried, state = None, l2_state(gpu)
            self.clock_before = 0
        else:
            l2.check(gpu)
            self.carried, state = l2, l2.state
            self.clock_before = l2.start_clock()
        self.l2state = state
        self.l1 = l1_sim(l1, params.l1.crowding_by_block)
        self.l2 = l2_sim(state)
        # the kernel's global bytes and lines read (atomics included) and written: the L2's
        # and the L1's traffic per read that a reuse distance counts (cache.simulate_memory)
        self.moved = np.zeros(2)
        self.moved_lines = np.zeros(2)
        self.line_owners = new_line_owners()
        self.l1_owners = new_line_owners()
        self.wave_blocks = max(1, S * occ.blocks_per_sm)
        self.W = W = occ.warps_per_block
        # The warps that share a cache at once, whose traffic the one-warp-at-a-time trace
        # pass leaves out of a warp's reuse distance (cache.simulate_memory).
        self.l1_co_warps = min(occ.blocks_per_sm, -(-B // S)) * W
        self.l2_co_warps = min(B, self.wave_blocks) * W
        self.sector_shift = int(math.log2(gpu.l2.sector.bytes))
        self.line_shift = int(math.log2(gpu.l2.line.bytes))
        # [0-6, 8, 9]: cache.simulate_memory's; [7]: the stores' slots (cache.store_slots)
        self.totals = np.zeros(N_TOTALS, np.int64)
        self.pipe_counts = np.zeros(N_PIPES, np.float64)
        self.n_instr = self.n_thread = self.flops = 0.0
        # warp instructions per traced block (their count: the traced blocks')
        self.block_rows = np.zeros(0, np.int64)
        self.timed = _Timed()
        self.table = None
        self.n_ops = -1
        # the traced blocks' coordinates and the lines they share (sampled traces only)
        self.share = self.sampled is not None
        self.tb_xyz = self.tb_rank = np.zeros((0, 3), np.int64)
        self.readers = sharing.new_line_readers() if self.share else None
        # the bytes of each sector the traced reads touched, and the traced bytes and
        # stride-weighted bytes of strided reads (``fill``)
        self.sector_bytes = fill.new_sector_bytes() if self.share else None
        self.strided = np.zeros(2)
        self.dram_rows: list[tuple[np.ndarray, ...]] = []
        self.persistent = is_persistent(header.name, params)
        # A grid whose blocks are all resident at once lasts as long as its slowest SM, not
        # its average one: SM 0's timed blocks are then the heaviest traced blocks
        # (finish), whose rows are all kept (a whole trace's only for a small grid)
        self.one_wave = (not self.persistent and B <= S * occ.blocks_per_sm
                         and (self.sampled is not None or B <= ONE_WAVE_MAX_BLOCKS))
        self.stores = tiles.StoreCounts() if self.persistent else None
        # per LDGSTS row of the trace: a prefetch past its loop's end, which reads nothing
        # (None: the kernel has no cp.async waits); how many of those rows went by
        self.zero_fill: np.ndarray | None = None
        self.n_copies = 0
        self.finish_seen = finish.FinishSeen(watch=ln.grid[1] > 1)

    def _shared_reads(self, n_blocks_trace: int) -> "_SharedReads":
        """Corrects the pass's DRAM reads (and L2 hits) for lines the grid's blocks share
        along a dimension the trace holds part of (``sharing``) and for the sectors strided
        reads share with untraced blocks (``fill``); returns what SM 0's rows and the
        untraced blocks' write-backs need for the same."""
        l2, totals = self.l2state, self.totals
        n_sets, ways = l2.valid.shape[1], l2.valid.shape[2]
        gs = sharing.GridShare.of(self.ln.grid, self.tb_xyz[:n_blocks_trace], self.readers,
                                  n_sets, ways)
        sf = None
        if self.strided[0] > 0:
            sf = fill.SectorFill(self.sector_bytes,
                                 self.strided[0] * self._scales(n_blocks_trace)[0],
                                 self.strided[1] / self.strided[0], 1 << self.sector_shift,
                                 1 << self.line_shift, n_sets, ways)
        shared = _SharedReads(gs, sf)
        if shared.any and self.dram_rows:
            lines, nd, sectors, strides = (np.concatenate([r[i] for r in self.dram_rows])
                                           for i in range(4))
            before = int(totals[4])
            after = int(round(float((nd.astype(np.float64)
                                     * shared.factors(lines, sectors, strides)).sum())))
            totals[4] = after
            totals[3] = max(0, int(totals[3]) + before - after)
        return shared

    def _coords(self, chunk) -> None:
        """The chunk's traced blocks' grid coordinates, and their ranks along each dimension
        (``sharing``)."""
        top = max(chunk.tb_coords) + 1
        if top > self.tb_xyz.shape[0]:
            self.tb_xyz = np.concatenate([self.tb_xyz, np.zeros((top - self.tb_xyz.shape[0], 3),
                                                                np.int64)])
        for idx, xyz in chunk.tb_coords.items():
            self.tb_xyz[idx] = xyz
        self.tb_rank = sharing.coordinate_ranks(self.tb_xyz)

    def add(self, chunk) -> None:
        """One chunk of the trace: its counts, its memory rows through the caches, and the
        rows of SM 0's blocks kept."""
        if self.share and chunk.tb_coords:
            self._coords(chunk)
        if len(chunk.opcodes) != self.n_ops:
            self.table = build_optable(chunk.opcodes, self.gpu)
            self.n_ops = len(chunk.opcodes)
        n = len(chunk)
        if n == 0:
            return
        table = self.table
        op = chunk.op.astype(np.int64)
        kind = table.kind[op]
        tb = chunk.tb.astype(np.int64)
        per_block = np.bincount(tb)
        if per_block.shape[0] > self.block_rows.shape[0]:
            self.block_rows = np.pad(self.block_rows,
                                     (0, per_block.shape[0] - self.block_rows.shape[0]))
        self.block_rows[: per_block.shape[0]] += per_block
        lanes = _popcount32(chunk.mask)
        self.finish_seen.add(table, kind, op, lanes)
        self.n_instr += n
        self.n_thread += float(lanes.sum())
        self.pipe_counts += np.bincount(table.pipe[op], minlength=N_PIPES)[:N_PIPES]
        self.flops += float((table.flops_lane[op] * lanes).sum() + table.flops_warp[op].sum())
        addr_off, addrs, mem_lanes = chunk.addr_off, chunk.addrs, lanes
        if self.zero_fill is not None:
            addr_off, addrs, mem_lanes = self._drop_zero_fill(kind, addr_off, addrs, lanes)
        rows = MemRows(kind, tb, chunk.warp.astype(np.int64), chunk.mem_width.astype(np.int64),
                       addr_off.astype(np.int64), addrs.astype(np.int64),
                       np.arange(int(tb.max()) + 1, dtype=np.int64) % self.S)
        strides = None
        if self.share:
            strides = np.where(fill.is_read(kind), fill.strided_rows(
                rows.addr_off, rows.addrs, 1 << self.sector_shift), 0)
            fill.mark_sector_bytes(kind, rows.width, rows.addr_off, rows.addrs, strides,
                                   self.sector_shift, self.sector_bytes)
            nbytes = (mem_lanes * rows.width)[strides > 0].astype(np.float64)
            self.strided += (nbytes.sum(), (nbytes * strides[strides > 0]).sum())
        out = self._memory(rows, mem_lanes)
        if self.stores is not None:
            self.stores.add(tb, rows.warp, chunk.pc, kind == K_STORE_GLOBAL,
                            (kind == K_ATOMIC) | (kind == K_REDUCTION))
        slots = np.zeros(n, np.int32)
        store_slots(kind, rows.width, rows.addr_off, rows.addrs, self.sector_shift,
                    self.line_shift, int(self.params.stores.min_sectors), slots)
        self.totals[7] += int(slots.sum())
        rline = rsector = None
        if self.share:
            rline = sharing.first_lines(rows.addr_off, rows.addrs, self.line_shift)
            rsector = sharing.first_lines(rows.addr_off, rows.addrs, self.sector_shift)
            hit = out.dram > 0
            self.dram_rows.append((rline[hit], out.dram[hit], rsector[hit], strides[hit]))
        self._keep_sm0(chunk, op, tb, out, slots, (rline, rsector, strides))

    def _drop_zero_fill(self, kind, addr_off, addrs, lanes):
        """The chunk's addresses and memory lanes without the prefetches that read nothing."""
        copies = np.nonzero(kind == K_ASYNC_COPY)[0]
        flags = self.zero_fill[self.n_copies:self.n_copies + copies.shape[0]]
        self.n_copies += copies.shape[0]
        drop = copies[: flags.shape[0]][flags]
        if drop.shape[0] == 0:
            return addr_off, addrs, lanes
        mem_lanes = lanes.copy()
        mem_lanes[drop] = 0
        return (*prefetch.drop_addresses(addr_off, addrs, drop), mem_lanes)

    def _memory(self, rows: MemRows, lanes: np.ndarray) -> MemOut:
        """A chunk's memory rows through the L1s and the L2 (``cache.simulate_memory``),
        the lines' owners and readers marked first."""
        W, line_shift = self.W, self.line_shift
        mark_line_owners(rows.kind, rows.tb, rows.warp, rows.width, rows.addr_off, rows.addrs,
                         W, line_shift, self.line_owners)
        self.moved += global_bytes(rows.kind, lanes * rows.width)
        self.moved_lines += global_line_touches(rows.kind, rows.addr_off, rows.addrs,
                                                line_shift)
        if self.share:
            sharing.mark_line_readers(rows.kind, rows.tb, rows.width, rows.addr_off,
                                      rows.addrs, self.tb_rank, line_shift, self.readers)
        mark_l1_owners(rows.kind, rows.tb, rows.warp, rows.width, rows.addr_off, rows.addrs, W,
                       line_shift, rows.cache_of_block, self.l1.tags.shape[0], self.l1_owners,
                       self.params.l1.crowding_by_block)
        cfg = MemConfig(
            l2_hash=self.l2state.hash_kind, l2_start=self.clock_before,
            wave_blocks=self.wave_blocks, warps_per_block=W, l1_co_warps=self.l1_co_warps,
            l2_co_warps=self.l2_co_warps,
            l2_capacity_share=float(self.params.l2.private_capacity),
            l2_traffic_scale=_per_read(self.moved),
            l1_traffic_scale=_per_read(self.moved_lines), sector_shift=self.sector_shift,
            line_shift=line_shift, shared_banks=self.gpu.sm.l1.banks)
        n = rows.kind.shape[0]
        out = MemOut(*(np.zeros(n, np.int32) for _ in range(5)), self.totals)
        simulate_memory(rows, self.l1, self.l2, self.line_owners, self.l1_owners, cfg, out)
        return out

    def _keep_sm0(self, chunk, op, tb, out: MemOut, slots, share_cols) -> None:
        """The rows of the blocks SM 0 runs (a sampled trace: the first traced ones; a
        grid of one wave: every traced block, ``finish`` picks)."""
        if self.one_wave:
            sel = np.ones(tb.shape[0], np.bool_)
        else:
            sel = (tb < self.sm0_blocks) if self.sampled else (tb % self.S == 0)
        if not sel.any():
            return
        idx = np.nonzero(sel)[0]
        if self.share:
            rline, rsector, strides = share_cols
            self.timed.add(rline=rline[idx], rsector=rsector[idx], rstride=strides[idx])
        self.timed.add(tb=tb[idx] if self.sampled or self.one_wave else tb[idx] // self.S,
                       warp=chunk.warp[idx].astype(np.int64), op=op[idx], pc=chunk.pc[idx],
                       ndst=chunk.ndst[idx], dst=chunk.dst[idx], nsrc=chunk.nsrc[idx],
                       src=chunk.src[idx], width=chunk.mem_width[idx], level=out.level[idx],
                       sectors=out.sectors[idx], l2=out.l2[idx], dram=out.dram[idx],
                       waves=out.wave[idx], slots=slots[idx],
                       imm=chunk.imm[idx] if self.header.tracer_version >= 5
                       else np.full(idx.shape[0], -1, np.int64),
                       guard=self._guarded(chunk.mask[idx], chunk.warp[idx]))

    def _guarded(self, mask: np.ndarray, warp: np.ndarray) -> np.ndarray:
        """Rows some of whose warp's lanes did not run: their guard turned them off (the
        trace names no guard). Triton's and cuBLAS's code diverges by guards, not branches;
        a divergent branch's rows count too, which costs them only a compare's wait."""
        lanes = np.clip(self.header.threads_per_block - 32 * warp.astype(np.int64), 0, 32)
        full = (np.int64(1) << lanes) - 1
        return (mask.astype(np.int64) & full) != full

    def _scales(self, n_blocks_trace: int) -> tuple[float, float]:
        """A sampled trace's (sample scale, work scale)."""
        census = self.header.census_warp_instructions
        if census:
            # The census counts every block's warp instructions. Traced blocks can do less
            # work than an average one: a persistent kernel's dynamic tile scheduler hands
            # the slow, instrumented blocks fewer tiles (~29% of an average block's work on
            # the LM-head GEMM). Counts then scale by work, and SM 0's time by how far that
            # is from N/T.
            return census / self.n_instr, (census / self.n_instr) / (self.B / n_blocks_trace)
        return self.B / n_blocks_trace, 1.0

    def _to_grid(self, n_blocks_trace: int, shared: "_SharedReads") -> tuple[float, float]:
        """A sampled trace's counts scaled to the grid, in place; returns (sample scale,
        work scale)."""
        scale, work_scale = self._scales(n_blocks_trace)
        self.n_instr *= scale
        self.n_thread *= scale
        self.pipe_counts *= scale
        self.flops *= scale
        written = self.totals[5]
        self.totals = np.round(self.totals * scale).astype(np.int64)
        # The untraced blocks' lines go through the L2 after the traced ones, and what they
        # push out is written back (a 1.6 GB fill writes 1.6 GB to DRAM, ncu says; scaling
        # the traced blocks' own evictions, none, said 0). Those are counted there: the
        # traced blocks' write-backs stand for themselves. Cold or warm alike; warm, the
        # L2 they leave is the next kernel's (carry).
        tags = self.l2state.tags[0]
        self.totals[5] = written + untraced_writeback(
            self.l2state, self.clock_before, scale,
            shared.grid.grid_wide(tags) if shared.grid is not None else None,
            shared.fill.line_weights(tags) if shared.fill is not None else None)
        return scale, work_scale

    def _sm0_rows(self, shared: "_SharedReads | None"):
        """SM 0's rows in block, warp, trace order: (columns, warp offsets, blocks)."""
        W = self.W
        tb_t = self.timed.get("tb", np.int64)
        warp_t = self.timed.get("warp", np.int64)
        key = tb_t * W + warp_t
        # a trace lists a block's warps one after another, blocks in order: sorting and
        # gathering every column again is then only a copy (with the columns' int64
        # copies, 1.9 CPU s of a paper-step pass at 132 SMs, cProfile)
        order = None if key.size < 2 or (key[1:] >= key[:-1]).all() \
            else np.argsort(key, kind="stable")

        def in_order(a: np.ndarray) -> np.ndarray:
            return a if order is None else np.ascontiguousarray(a[order])

        cols = {}
        for name, dt, tail in (("op", np.int32, ()), ("pc", np.int64, ()),
                               ("ndst", np.int64, ()), ("dst", np.int64, (MAX_DST,)),
                               ("nsrc", np.int64, ()), ("src", np.int64, (MAX_SRC,)),
                               ("width", np.int64, ()), ("level", np.int64, ()),
                               ("sectors", np.int64, ()), ("l2", np.int64, ()),
                               ("dram", np.int64, ()), ("waves", np.int64, ()),
                               ("slots", np.int64, ()), ("imm", np.int64, ()),
                               ("guard", np.bool_, ())):
            cols[name] = in_order(self.timed.get(name, dt, tail, ROW_TYPES.get(name)))
        if shared is not None and shared.any:
            # SM 0's rows fetch shared lines from DRAM as often as the grid's blocks do; a
            # row left with none waits like an L2 hit if the line's first reader ran a wave
            # before (within a wave it waits for that reader's fetch, as the trace pass has
            # it; so do the readers of a strided row's sector, a column apart)
            rline = in_order(self.timed.get("rline", np.int64))
            had = cols["dram"] > 0
            cols["dram"] = sharing.diffuse(
                cols["dram"], shared.factors(rline, in_order(self.timed.get("rsector", np.int64)),
                                             in_order(self.timed.get("rstride", np.int64))),
                cols["l2"])
            earlier_wave = (shared.grid.nearest_sharer(rline) >= self.wave_blocks
                            if shared.grid is not None else np.zeros(rline.shape, np.bool_))
            cols["level"] = np.where(had & (cols["dram"] == 0) & (cols["level"] == 2)
                                     & earlier_wave, 1,
                                     np.where(cols["dram"] > 0, 2, cols["level"]))
        key = in_order(key)
        n_timed_blocks = int(tb_t.max()) + 1 if tb_t.size else 0
        warp_off = np.searchsorted(key, np.arange(n_timed_blocks * W + 1)).astype(np.int64)
        return cols, warp_off, n_timed_blocks

    def _schedule(self, traced_instructions: float, traced_pipes: np.ndarray,
                  work_scale: float) -> tuple[str, float]:
        """How a persistent grid hands out its tiles and SM 0's work scale under it. Work
        follows tiles, not blocks: the grid's blocks are workers, so SM 0 runs one round of
        resident workers and its time follows the tiles, by the schedule the trace shows
        (simfront.sim.model.tiles)."""
        occ, S = self.occ, self.S
        static = None
        if self.stores.atomics == 0:
            # the grid's tiles by its tensor instructions where ncu counted them (a launch
            # fact, as registers are), else by the census
            grid_tensor = (self.launch_facts or {}).get("tensor_instructions")
            traced_tensor = float(traced_pipes[PIPE_INDEX["tensor"]])
            census = self.header.census_warp_instructions if self.sampled else None
            work = ((traced_tensor, float(grid_tensor)) if grid_tensor and traced_tensor > 0
                    else (traced_instructions, census))
            static = tiles.static_scale(self.stores.tiles(), tuple(self.ln.grid), *work,
                                        S * occ.blocks_per_sm)
        if static is not None:
            # Static: the kernel lasts as long as its busiest slot; the timed worker's own
            # tiles are in its trace, so the census's average work does not enter.
            return tiles.STATIC, static
        return tiles.DYNAMIC, work_scale * persistent_spread(self.B, S, occ.blocks_per_sm)

    def finish(self, wall_s: float) -> Prepared:
        """The pass's counts scaled to the grid and SM 0's rows, as a ``Prepared``."""
        n_blocks_trace = self.block_rows.shape[0]
        shared = None
        if self.share:
            shared = self._shared_reads(n_blocks_trace)
        scale = work_scale = 1.0
        traced_instructions, traced_pipes = self.n_instr, self.pipe_counts.copy()
        if self.sampled:
            scale, work_scale = self._to_grid(n_blocks_trace, shared)
        # What the kernel leaves dirty beyond the L2's dirty share was written back as it ran.
        sectors = self.gpu.l2.size.bytes // self.gpu.l2.sector.bytes
        self.totals[5] += limit_dirty(self.l2state, int(self.params.l2.dirty_share * sectors))
        cols, warp_off, n_timed_blocks = self._sm0_rows(shared)
        sm0_blocks, W = self.sm0_blocks, self.W
        if self.sampled and not self.one_wave and not self.persistent:
            working = working_blocks(self.block_rows[:n_blocks_trace], self.B,
                                     self.header.census_warp_instructions)
            if working < self.B and -(-working // self.S) < sm0_blocks:
                sm0_blocks = -(-working // self.S)
                work_scale = 1.0
                cols, warp_off, n_timed_blocks = _first_blocks(cols, warp_off,
                                                               n_timed_blocks, W, sm0_blocks)
        if self.one_wave and n_timed_blocks:
            # the grid's average block: the census's, where the header has one
            census = self.header.census_warp_instructions
            average = census / self.B if census else traced_instructions / n_blocks_trace
            cols, warp_off, n_timed_blocks, heaviest = _slowest_sm_blocks(
                cols, warp_off, n_timed_blocks, W, sm0_blocks, average)
            # the slowest SM does at least the heaviest traced block's work, and at least
            # an average block's
            work_scale = max(1.0, average / heaviest)
        schedule = ""
        if self.persistent:
            schedule, work_scale = self._schedule(traced_instructions, traced_pipes,
                                                  work_scale)
            sm0_blocks = min(sm0_blocks, self.occ.blocks_per_sm)
            cols, warp_off, n_timed_blocks = _first_blocks(cols, warp_off, n_timed_blocks, W,
                                                           sm0_blocks)
        repeat_from = 0
        if self.sampled and 0 < n_timed_blocks < sm0_blocks:
            repeat_from, n_timed_blocks = n_timed_blocks, sm0_blocks
        census = self.header.census_warp_instructions
        traced_share = 1.0
        if self.sampled and census and n_blocks_trace:
            traced_share = (traced_instructions / n_blocks_trace) / (census / self.B)
        return Prepared(self.ln, self.occ, self.S, self.active, n_blocks_trace, self.n_instr,
                        self.n_thread, self.pipe_counts, self.flops, self.totals, self.table,
                        # in the issue model's row types already: narrowed once, here,
                        # not again for every run of every configuration
                        narrowed(cols, ROW_TYPES), warp_off, n_timed_blocks, wall_s,
                        cache_key(self.gpu),
                        sample_scale=scale, work_scale=work_scale,
                        persistent=self.persistent, schedule=schedule,
                        warm_l2=self.carried is not None, repeat_from=repeat_from,
                        traced_work_share=traced_share,
                        finish_walk_steps=finish.walk_steps(self.finish_seen, self.ln.grid,
                                                            self.ln.block))


def _per_read(moved: np.ndarray) -> float:
    """What a kernel moves ([read, written], bytes or lines) per unit it reads; 1 where it
    reads nothing."""
    return float(moved.sum() / moved[0]) if moved[0] else 1.0


def working_blocks(block_rows: np.ndarray, n_blocks: int, census: float | None) -> int:
    """How many of a sampled grid's ``n_blocks`` blocks do the traced blocks' work, the
    others next to none: where the traced blocks (``block_rows``: warp instructions each)
    are all alike and the census's average block is lighter, the shortfall is taken as
    whole blocks that exit at once (a grid of ``ceil(M / programs)`` rows a program whose
    last programs find no rows), rounded to the nearest block, where they are at most
    ``ROUNDED_UP`` of the grid. Else every block works (``n_blocks``)."""
    if not census or block_rows.shape[0] < 4:
        return n_blocks
    full = float(block_rows.max())
    if full <= 0 or block_rows.min() < (1 - ALIKE_BLOCKS) * full:
        return n_blocks
    average = census / n_blocks
    if average >= full:
        return n_blocks
    working = max(1, min(n_blocks, int(round(n_blocks * average / full))))
    if n_blocks - working > ROUNDED_UP * n_blocks:
        return n_blocks
    return working


@dataclass
class _SharedReads:
    """What a sampled kernel's untraced blocks read of the traced blocks' lines: lines the
    grid shares along a dimension (``sharing``) and the sectors strided reads leave to
    other blocks (``fill``); either may be None."""

    grid: "sharing.GridShare | None"
    fill: "fill.SectorFill | None"

    @property
    def any(self) -> bool:
        return self.grid is not None or self.fill is not None

    def factors(self, lines: np.ndarray, sectors: np.ndarray,
                strides: np.ndarray) -> np.ndarray:
        """What each row's DRAM reads are multiplied by: the grid's sharing where its line
        is shared along a dimension, else what the strided rows leave of their sector."""
        f = self.grid.factors(lines) if self.grid is not None else np.ones(lines.shape[0])
        if self.fill is not None:
            f = np.where(f == 1.0, self.fill.factors(sectors, strides), f)
        return f




def is_persistent(name: str, params: ModelParams = DEFAULT_PARAMS) -> bool:
    """Whether a kernel is a persistent grid, whose blocks are workers that take tiles: a
    library family known to launch at most one worker per SM (the cuBLAS sm90 ``nvjet_*``
    GEMMs, cuDNN's sm90 flash attention: ``grid.persistent_kernels``). How it hands out
    its tiles, the trace tells (``tiles``). A census that differs
    from N/T times the traced work does not tell it is persistent: the triangular Triton SSD
    kernels' blocks do unequal work with a fixed schedule."""
    return name.startswith(params.grid.persistent_kernels)


def persistent_spread(n_blocks: int, sm_count: int, blocks_per_sm: int) -> float:
    """How many average blocks' work each resident worker of a persistent grid does: the
    grid's work (``n_blocks`` average blocks) over the workers resident at once. 1 when
    every block is resident (the launcher sized the grid to the GPU it ran on); blocks that
    start later find no tiles left."""
    workers = min(n_blocks, sm_count * blocks_per_sm)
    return n_blocks / workers


def _slowest_sm_blocks(cols: dict, warp_off: np.ndarray, n_have: int, W: int, n_want: int,
                       average: float):
    """SM 0's rows cut to the ``n_want`` blocks the slowest SM of a one-wave grid runs at
    once: the traced block with the most rows (of equal ones the first), and beside it
    blocks of the grid's ``average`` work (the block scheduler deals consecutive blocks to
    different SMs, so the heaviest's neighbours in the trace are not its SM's): the other
    traced blocks nearest the average (within 5% of it of the nearest), taken in turn, in
    block order. Returns them and the heaviest's rows."""
    rows = warp_off[W * np.arange(1, n_have + 1)] - warp_off[W * np.arange(n_have)]
    first = int(np.argmax(rows))
    rest = np.delete(np.arange(n_have), first)
    if rest.size == 0:
        rest = np.array([first])
    dist = np.abs(rows[rest] - average)
    near = rest[dist <= dist.min() + 0.05 * average]
    keep = np.sort(np.concatenate([[first], np.resize(near, n_want - 1)])).astype(np.int64)
    warps = (keep[:, None] * W + np.arange(W)).ravel()
    starts, ends = warp_off[warps], warp_off[warps + 1]
    idx = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])
    new_off = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    return ({k: np.ascontiguousarray(v[idx]) for k, v in cols.items()}, new_off, len(keep),
            float(rows[first]))


def _first_blocks(cols: dict, warp_off: np.ndarray, n_have: int, W: int, n_want: int):
    """SM 0's rows cut to its first ``n_want`` blocks."""
    n = min(n_have, n_want)
    rows = int(warp_off[n * W])
    return ({k: np.ascontiguousarray(v[:rows]) for k, v in cols.items()},
            np.ascontiguousarray(warp_off[: n * W + 1]), n)


#: The DRAM latency an issue-model run is asked at, in steps of this many clocks
LATENCY_STEP = 0.25
#: Significant digits of an SM's L2 and DRAM shares
SHARE_DIGITS = 3


def on_grid(lat_dram: float) -> float:
    """A DRAM latency on the grid of ``LATENCY_STEP``, where every issue-model run is made
    (``_Issuer``; the run's configuration carries whatever latency it is asked at): the
    launches of a layer repeated layer after layer have equal rows (``reuse``) but traffic
    totals that differ in their last digits, and their latency searches land a fraction of
    a clock apart; on the grid they ask the same question and reuse one run. A latency
    moved by up to a clock moves nine launches in ten by under 0.3% (bench/bench_jitter.py)."""
    return round(lat_dram / LATENCY_STEP) * LATENCY_STEP


def _significant(x: float, digits: int = SHARE_DIGITS) -> float:
    """``x`` to ``digits`` significant digits (why: :func:`on_grid`)."""
    if x <= 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(x)))


def _sm_config(prep: "Prepared", gpu, params: ModelParams, occ) -> SmConfig:
    """The issue model's ``SmConfig`` of a prepared kernel on ``gpu`` at its unloaded DRAM
    latency."""
    sm = gpu.sm
    lat = memory_latencies(gpu, params)
    bw = bandwidths(gpu, params)
    active = prep.active_sms
    l2_share = min(bw["l2"] / active, bw["l1_sm"])
    # SM 0's share of what the DRAM moves for this kernel, its turns taken out
    dram = kernel_dram_rate(prep.totals, float(gpu.l2.sector.bytes), bw["dram"],
                            dram_turn_clk(gpu, params))
    dram_share = min(dram / active, bw["l1_sm"])
    return SmConfig(
        n_blocks=prep.timed_blocks, warps_per_block=occ.warps_per_block,
        blocks_per_sm=occ.blocks_per_sm,
        sub_partitions=sm.sub_partitions, issue_width=sm.issue_width,
        icache_line_shift=int(params.issue.icache_line_shift),
        icache_miss=int(round(lat["fetch"])),
        icache_prefetch=int(params.issue.icache_prefetch_lines),
        lat_l1=lat["l1"], lat_shared=lat["shared"], lat_l2=lat["l2"], lat_dram=lat["dram"],
        lat_const=int(round(lat["const"])), lat_barrier=int(params.issue.barrier_latency),
        lat_store_load=int(round(params.stores.load_ns * gpu.clocks.core.hz / 1e9)),
        lat_pred_guard=int(params.issue.predicate_guard_latency),
        block_start=int(params.launch.block_start_cycles),
        l1_sectors_per_clk=float(sm.l1.l1_banks),
        store_sectors_per_clk=float(params.stores.sectors_per_clk),
        store_instr_clk=float(params.stores.instr_clk),
        load_instr_clk=float(params.l1.load_instr_clk),
        l2_bytes_per_clk=_significant(l2_share), dram_bytes_per_clk=_significant(dram_share),
        sector_bytes=float(gpu.l2.sector.bytes),
        block_period=_block_period(prep.repeat_from, occ.blocks_per_sm,
                                   int(params.issue.steady_waves)),
        period_tolerance=float(params.issue.steady_tolerance))


def _block_period(repeat_from: int, blocks_per_sm: int, waves: int) -> int:
    """The blocks of a steady-state window of ``issue.run_sm``: at least ``waves`` waves,
    a multiple of the blocks after which SM 0's rows repeat (0: they do not)."""
    if not repeat_from or waves <= 0:
        return 0
    return repeat_from * -(-waves * blocks_per_sm // repeat_from)


class _Issuer:
    """The issue model on one prepared kernel at a given DRAM latency (``__call__``), a
    run already made on equal rows, timing and configuration reused (``reuse``)."""

    def __init__(self, prep: "Prepared", ops: OpTiming, cfg: SmConfig):
        self.prep, self.ops, self.cfg = prep, ops, cfg
        self.rows: SmRows | None = None
        self.rows_seen = reuse.row_set(prep)
        self.ops_key = reuse.ops_key(ops)

    def _rows(self) -> SmRows:
        if self.rows is None:
            cols, start, end = self.prep.sm0_rows()
            cols = narrowed(cols, ROW_TYPES)
            self.rows = SmRows(np.ascontiguousarray(start), np.ascontiguousarray(end),
                               cols["pc"], cols["op"], cols["ndst"], cols["dst"],
                               cols["nsrc"], cols["src"], cols["width"], cols["level"],
                               cols["sectors"], cols["slots"], cols["l2"], cols["dram"],
                               cols["waves"], cols["imm"], cols["guard"])
        return self.rows

    def __call__(self, lat_dram: float) -> reuse.IssueRun:
        at = self.cfg._replace(lat_dram=on_grid(lat_dram))
        key = reuse.question_key(self.ops_key, at)
        run = self.rows_seen.runs.get(key)
        if run is None and at.n_blocks:
            run = reuse.stored_run(self.rows_seen, key)
        if run is None:
            P = at.sub_partitions
            out = new_counters(P)
            t = 0
            if at.n_blocks:
                rows = self._rows()
                t = int(run_sm(rows, self.ops, at, new_state(rows, self.ops, at), out))
            run = self.rows_seen.runs[key] = reuse.IssueRun(t, *out[:4])
            if at.n_blocks:
                reuse.store_run(self.rows_seen, key, run)
        return run.copy()


def new_counters(sub_partitions: int, rows: int = 0, slots: int = 0) -> SmCounters:
    """Empty counters of an issue-model run; ``rows`` and ``slots`` > 0 keep each row's
    wait (``SmCounters.row_wait``)."""
    return SmCounters(np.zeros((sub_partitions, N_REASONS), np.int64),
                      np.zeros(N_PIPES, np.int64), np.zeros(N_PIPES, np.int64),
                      np.zeros(1, np.int64), np.zeros(rows, np.int64),
                      np.zeros(slots, np.int64))


def op_timing(prep: "Prepared", gpu, params: ModelParams = DEFAULT_PARAMS) -> OpTiming:
    """The issue model's per-opcode timing of a prepared kernel's opcodes on ``gpu``."""
    table = build_optable(prep.table.opcodes, gpu)
    units, _, _ = pipe_timing(gpu)
    return OpTiming(table.pipe.astype(np.int64), table.kind.astype(np.int64),
                    table.latency.astype(np.int64), table.initiation.astype(np.int64),
                    table.dst_span.astype(np.int64), table.pred.astype(np.int64),
                    np.where(table.pipe == PIPE_INDEX["sfu"],
                             int(params.issue.sfu_source_read), 0).astype(np.int64),
                    units.astype(np.int64))


def unloaded_run(prep: "Prepared", gpu, params: ModelParams = DEFAULT_PARAMS,
                 keep_rows: bool = False):
    """One issue-model run of a prepared kernel at its unloaded DRAM latency: SM 0's rows
    (``SmRows``), the ``SmConfig``, SM 0's clocks, its ``SmCounters`` (``keep_rows``: with
    each row's wait), its end ``SmState`` and the run's CPU seconds."""
    occ = occupancy(prep.launch, gpu)
    issue = _Issuer(prep, op_timing(prep, gpu, params), _sm_config(prep, gpu, params, occ))
    rows = issue._rows()
    cfg = issue.cfg._replace(lat_dram=on_grid(memory_latencies(gpu, params)["dram"]))
    out = new_counters(cfg.sub_partitions, rows.pc.shape[0] if keep_rows else 0,
                       cfg.blocks_per_sm * cfg.warps_per_block if keep_rows else 0)
    st = new_state(rows, issue.ops, cfg)
    t, c0 = 0, time.process_time()
    if cfg.n_blocks:
        t = int(run_sm(rows, issue.ops, cfg, st, out))
    return rows, cfg, t, out, st, time.process_time() - c0


def row_waits(prep: "Prepared", gpu, params: ModelParams = DEFAULT_PARAMS):
    """One issue-model run of a prepared kernel (at the unloaded DRAM latency) that keeps
    each row's wait: SM 0's rows (``SmRows``) and ``SmCounters.row_wait`` per row."""
    rows, _, _, out, _, _ = unloaded_run(prep, gpu, params, keep_rows=True)
    return rows, out.row_wait


def _timed_rows(prep: "Prepared") -> int:
    """How many rows SM 0's timed blocks hold (``Prepared.sm0_rows``), without building
    them."""
    if not prep.repeat_from:
        return int(prep.cols["op"].shape[0])
    W = prep.occ.warps_per_block
    reps = -(-prep.timed_blocks // prep.repeat_from)
    return int(np.tile(np.diff(prep.warp_off), reps)[: prep.timed_blocks * W].sum())


def sm_store_slots(rows: SmRows, kind: np.ndarray) -> float:
    """The store slots (``cache.store_slots``) SM 0's rows send through its store path:
    global stores and reductions, every block of the SM counted."""
    slots = np.where((kind == K_STORE_GLOBAL) | (kind == K_REDUCTION), rows.slots, 0)
    cum = np.concatenate([[0], np.cumsum(slots, dtype=np.int64)])
    return float((cum[rows.warp_end] - cum[rows.warp_start]).sum())


#: the store path's busy share the wait is judged at, at most
STORE_SHARE_CAP = 0.8


def _store_wait(issue: "_Issuer", lat_dram: float, t_sm: int, gpu, params: ModelParams):
    """An SM's stores slow its DRAM loads, whichever warp issued them
    (bench/device/rw_split.cu): a load waits ``stores.load_wait_ns`` x u / (1 - u) longer,
    u the SM's store path busy share, its store slots over ``stores.sectors_per_clk`` x its
    clocks. The share depends on the time the wait makes; three false-position steps find
    the share that is its own answer. Returns (the DRAM latency, the issue run at it), or
    None where the SM stores too little to wait (under 2% of its path)."""
    rows = issue._rows()
    total = sm_store_slots(rows, issue.ops.kind[rows.op])
    per_clk = params.stores.sectors_per_clk
    wait_clk = params.stores.load_wait_ns * gpu.clocks.core.hz / 1e9

    def latency(u):
        u = min(u, STORE_SHARE_CAP)
        return lat_dram + wait_clk * u / (1.0 - u)

    def gap(u, run):
        return total / (per_clk * float(max(run[0], 1))) - u

    u_hi = min(total / (per_clk * float(t_sm)), STORE_SHARE_CAP)
    if u_hi <= 0.02 or wait_clk <= 0:
        return None
    lo, h_lo = 0.0, u_hi
    run = issue(latency(u_hi))
    hi, h_hi = u_hi, gap(u_hi, run)
    for _ in range(3):
        if h_hi >= 0 or h_lo - h_hi <= 0:
            break
        mid = lo + (hi - lo) * h_lo / (h_lo - h_hi)
        run = issue(latency(mid))
        h_mid = gap(mid, run)
        if h_mid >= 0:
            lo, h_lo = mid, h_mid
        else:
            hi, h_hi = mid, h_mid
    return latency(hi), run


def time_prepared(prep: "Prepared", gpu, params: ModelParams = DEFAULT_PARAMS) -> KernelRun:
    """The issue model on a prepared kernel. ``gpu`` may differ from the one the kernel was
    prepared with in anything but the cache geometry and the SM count (pipes, issue width,
    latencies, clocks, DRAM bandwidth): that is what makes sweeps of those cheap."""
    jit.first_use(MODEL)
    t0 = time.perf_counter()
    occ = occupancy(prep.launch, gpu)
    if cache_key(gpu) != prep.cache_key:
        raise ValueError("time_prepared: the GPU differs from the one the kernel was "
                         "prepared with in SM count, occupancy limits or cache geometry")
    n_timed_blocks = prep.timed_blocks
    lat = memory_latencies(gpu, params)
    bw = bandwidths(gpu, params)
    issue = _Issuer(prep, op_timing(prep, gpu, params), _sm_config(prep, gpu, params, occ))
    t_sm, stall, pipe_busy, issued_pipe, warp_cycles = issue(lat["dram"])
    if n_timed_blocks and t_sm > 0:
        res = _store_wait(issue, lat["dram"], t_sm, gpu, params)
        if res is not None:
            lat["dram"], (t_sm, stall, pipe_busy, issued_pipe, warp_cycles) = res
    sector = gpu.l2.sector.bytes
    t_dram, t_l2 = memory_bounds(prep.totals, sector, bw["dram"], dram_turn_clk(gpu, params),
                                 bw["l2"],
                                 *l2_side_rates(gpu, params))
    # writes weigh more than reads in the wait they make reads take (bench/bench_mem.py)
    t_queue = float(prep.totals[4] + params.dram.queue_write_weight * prep.totals[5]) \
        * sector / bw["dram"]
    if t_dram > 0 and n_timed_blocks:
        # The kernel's own DRAM traffic lengthens its DRAM latency (dram_load_latency); the
        # load is its DRAM time's share of its time, which that latency lengthens in turn.
        # The load that is its own answer lies between 0 and the unloaded answer's; two
        # false-position steps find it closely enough (each an issue-model run).
        def load(t):
            return t_queue / max(t * prep.work_scale, t_dram, t_l2, 1.0)

        lo, h_lo = 0.0, load(t_sm)
        if h_lo >= params.dram.queue_min_load:
            hi = h_lo
            res = issue(dram_load_latency(lat["dram"], hi, gpu, params))
            h_hi = load(res[0]) - hi
            for _ in range(2):
                if h_hi >= 0 or h_lo - h_hi <= 0:
                    break
                rho = lo + (hi - lo) * h_lo / (h_lo - h_hi)
                res = issue(dram_load_latency(lat["dram"], rho, gpu, params))
                h = load(res[0]) - rho
                if h >= 0:
                    lo, h_lo = rho, h
                else:
                    hi, h_hi = rho, h
            t_sm, stall, pipe_busy, issued_pipe, warp_cycles = res
    return KernelRun(
        prep=prep, occ=occ, t_sm=t_sm, stall=stall, pipe_busy=pipe_busy,
        issued_pipe=issued_pipe, warp_cycles=float(warp_cycles[0]),
        timed_blocks=n_timed_blocks, timed_instructions=_timed_rows(prep),
        t_dram=t_dram, t_l2=t_l2,
        wall_s=time.perf_counter() - t0)


def _warm_model() -> None:
    """The sample kernels (``simfront.traces.samples``) through the trace pass, with the L2
    empty and carried, and through the issue model: every compiled function of the model
    called once. Nothing of it is kept on disk."""
    gpu = load_gpu("h100")
    kernels = samples.decoded_kernels()
    if kernels is None:  # copies that no longer read: the text, which needs the scanner
        kernels = []
        for path in samples.texts():
            text = KernelTrace(path)
            kernels.append(samples.DecodedKernel(path, text.header, list(text.scan_text())))
    with reuse.kept_in_memory():
        for kernel in kernels:
            for l2 in (None, L2Carry.empty(gpu)):
                time_prepared(prepare_kernel(kernel, gpu, None, DEFAULT_PARAMS, l2), gpu)


#: The model as a compiled unit (``simfront.core.jit``): compiled by the first process to
#: prepare or time a kernel, loaded by the others.
MODEL = jit.Unit("model", _warm_model)

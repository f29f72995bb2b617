"""A cycle-level issue model of one SM, compiled with numba.

The SM runs the thread blocks the block scheduler gives it (``blocks_per_sm`` at a time; a
new one starts when one finishes). Each sub-partition's scheduler issues up to
``issue_width`` instructions per clock, oldest ready warp first after the last issued one
(greedy-then-oldest). An instruction is ready when its source and destination registers are
(register scoreboard over the trace's registers) and a unit of its pipe is free (the unit
stays busy for the pipe's initiation interval). Results come after the pipe's latency, or
for memory after the latency of the deepest level the cache simulation found plus the time
spent queueing for the SM's L1 data path, its share of the L2 bandwidth and its share of
the DRAM bandwidth (token buckets). Barriers hold a warp until every live warp of its block
arrives. Cycles in which nothing can issue are skipped in one step.

Every sub-partition clock that does not issue is charged to one reason, that of the warp
nearest to issuing: see ``REASONS``.
"""

from __future__ import annotations

import numba
import numpy as np

from simfront.sim.model.decode import (K_ASYNC_COPY, K_ATOMIC, K_ATOMIC_SHARED,
                                       K_BARRIER, K_FENCE, K_LOAD_CONST,
                                       K_LOAD_GLOBAL, K_LOAD_SHARED, K_PREFETCH, K_REDUCTION,
                                       K_STORE_GLOBAL, K_STORE_SHARED)

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

# Warp states
_EMPTY = 0
_RUN = 1
_BAR = 2
_DONE = 3


@numba.njit(cache=True)
def _start_block(r, blk, t, W, P, warp_off, block_start, slot_block, live, arrived, ptr, end,
                 wstart, born, reg_ready, mem_out, state, sp_used, last):
    """Put block ``blk`` into block slot ``r`` at clock ``t``: its warps' rows, fresh
    registers, and the scheduler's memory of the slot's old warps forgotten."""
    slot_block[r] = blk
    nl = 0
    for w in range(W):
        s = r * W + w
        a = warp_off[blk * W + w]
        b = warp_off[blk * W + w + 1]
        ptr[s] = a
        end[s] = b
        wstart[s] = t + block_start
        born[s] = t
        for q in range(256):
            reg_ready[s, q] = 0
        mem_out[s] = 0
        sp = s % P
        if b > a:
            state[s] = _RUN
            nl += 1
            sp_used[sp] = True
        else:
            state[s] = _DONE
        if last[sp] == s:
            last[sp] = -1
    live[r] = nl
    arrived[r] = 0


@numba.njit(cache=True)
def run_sm(warp_off, n_blocks, warps_per_block, blocks_per_sm, sub_partitions, issue_width,
           pc, icache_line_shift, icache_miss, icache_prefetch,
           op, ndst, dst, nsrc, src, width, level, sectors, slots, l2_sectors, dram_sectors,
           waves,
           op_pipe, op_kind, op_lat, op_ii, op_span, pipe_units,
           lat_l1, lat_shared, lat_l2, lat_dram, lat_const, lat_barrier, lat_store_load,
           block_start,
           l1_sectors_per_clk, store_sectors_per_clk, store_instr_clk, load_instr_clk,
           l2_bytes_per_clk, dram_bytes_per_clk,
           sector_bytes,
           stall, pipe_busy, issued_pipe, warp_cycles):
    """Simulate the blocks of one SM; returns the cycle at which the last one finishes.

    ``warp_off[b * warps_per_block + w]`` .. ``warp_off[... + 1]`` are the rows of warp w of
    the SM's b-th block. ``stall[sp, reason]`` and ``pipe_busy[pipe]`` (unit-busy clocks)
    are accumulated in place; ``issued_pipe[pipe]`` counts issued instructions and
    ``warp_cycles[0]`` the clocks warps were resident (for achieved occupancy).
    ``lat_store_load``: clocks each global store a warp issued since its last global load
    adds to that warp's next load (0: none). ``store_sectors_per_clk``: the sector slots
    (``slots``, ``cache.store_slots``) of stores and reductions an SM sends to the L2 per
    clock, which hold the SM's memory path as long, at least ``store_instr_clk`` an
    instruction; loads behind them wait. 0: the L1's rate. (The L2's input port, which the
    whole GPU's stores share, is a bound on the kernel: ``simulate.memory_bounds``.) A
    global load holds the L1 for its sector slots at ``l1_sectors_per_clk``, at least
    ``load_instr_clk``.
    """
    P = sub_partitions
    W = warps_per_block
    # Instruction cache of the SM, cold at the kernel's start: the clock at which each
    # code line arrives (0 = never requested). A miss brings the line and the
    # ``icache_prefetch`` lines after it (sequential prefetch).
    n_lines = 1
    for i in range(pc.shape[0]):
        ln = (pc[i] >> icache_line_shift) + 1
        if ln > n_lines:
            n_lines = ln
    line_ready = np.zeros(n_lines + icache_prefetch + 1, np.int64)
    R = blocks_per_sm
    S = R * W
    n_pipes = pipe_units.shape[0]
    max_units = 1
    for p in range(n_pipes):
        if pipe_units[p] > max_units:
            max_units = pipe_units[p]
    pipe_free = np.zeros((P, n_pipes, max_units), np.int64)
    reg_ready = np.zeros((S, 256), np.int64)
    reg_cause = np.zeros((S, 256), np.int8)
    state = np.zeros(S, np.int8)
    ptr = np.zeros(S, np.int64)
    end = np.zeros(S, np.int64)
    wstart = np.zeros(S, np.int64)
    born = np.zeros(S, np.int64)
    mem_out = np.zeros(S, np.int64)
    stores = np.zeros(S, np.int64)  # global stores since the warp's last global load
    slot_block = np.full(R, -1, np.int64)
    live = np.zeros(R, np.int64)
    arrived = np.zeros(R, np.int64)
    last = np.full(P, -1, np.int64)
    sp_used = np.zeros(P, np.bool_)
    l1_free = 0.0
    l2_free = 0.0
    dram_free = 0.0
    shm_free = 0.0
    next_block = 0
    now = np.int64(0)
    finish = np.int64(0)

    # Start the first blocks.
    for r in range(R):
        if next_block < n_blocks:
            _start_block(r, next_block, now, W, P, warp_off, block_start, slot_block, live,
                         arrived, ptr, end, wstart, born, reg_ready, mem_out, state, sp_used,
                         last)
            next_block += 1

    best_t = np.zeros(P, np.int64)
    best_r = np.zeros(P, np.int64)
    n_iss = np.zeros(P, np.int64)
    while True:
        any_live = False
        issued_any = False
        for sp in range(P):
            n_iss[sp] = 0
            best_t[sp] = _INF
            best_r[sp] = R_IDLE
            # Greedy: the last issued warp first, then the others in slot (age) order.
            # Sub-partition sp holds slots sp, sp + P, ...: ceil((S - sp) / P) of them, so
            # the count is rounded up (rounding down skipped the last slots, and with fewer
            # slots than sub-partitions every slot: a 1-warp-per-SM kernel never issued).
            for kk in range(-(-S // P) + 1):
                if n_iss[sp] >= issue_width:
                    break
                if kk == 0:
                    s = last[sp]
                    if s < 0:
                        continue
                else:
                    s = sp + (kk - 1) * P
                    if s >= S or s == last[sp]:
                        continue
                st = state[s]
                if st == _EMPTY or st == _DONE:
                    continue
                any_live = True
                if st == _BAR:
                    if best_t[sp] == _INF:
                        best_r[sp] = R_SYNC
                    continue
                if wstart[s] > now:
                    if wstart[s] < best_t[sp]:
                        best_t[sp] = wstart[s]
                        best_r[sp] = R_IDLE
                    continue
                i = ptr[s]
                cl = pc[i] >> icache_line_shift
                if line_ready[cl] == 0:
                    for q in range(icache_prefetch + 1):
                        if line_ready[cl + q] == 0:
                            line_ready[cl + q] = now + icache_miss + q
                if line_ready[cl] > now:
                    if line_ready[cl] < best_t[sp]:
                        best_t[sp] = line_ready[cl]
                        best_r[sp] = R_FETCH
                    continue
                o = op[i]
                k = op_kind[o]
                p = op_pipe[o]
                t_dep = np.int64(0)
                cause = R_DEPENDENCY
                for j in range(nsrc[i]):
                    rg = src[i, j]
                    if rg >= 0 and rg < 255:
                        if reg_ready[s, rg] > t_dep:
                            t_dep = reg_ready[s, rg]
                            cause = reg_cause[s, rg]
                for j in range(ndst[i]):
                    rg = dst[i, j]
                    if rg >= 0 and rg < 255:
                        if reg_ready[s, rg] > t_dep:
                            t_dep = reg_ready[s, rg]
                            cause = reg_cause[s, rg]
                if k == K_FENCE:
                    if mem_out[s] > t_dep:
                        t_dep = mem_out[s]
                        cause = R_SYNC
                u_best = 0
                t_pipe = pipe_free[sp, p, 0]
                for u in range(1, pipe_units[p]):
                    if pipe_free[sp, p, u] < t_pipe:
                        t_pipe = pipe_free[sp, p, u]
                        u_best = u
                if t_dep > now or t_pipe > now:
                    if t_dep >= t_pipe:
                        t = t_dep
                        rr = cause
                    else:
                        t = t_pipe
                        rr = R_PIPE
                    if t < best_t[sp]:
                        best_t[sp] = t
                        best_r[sp] = rr
                    continue
                # ---- issue
                n_iss[sp] += 1
                issued_any = True
                last[sp] = s
                ii = op_ii[o]
                pipe_free[sp, p, u_best] = now + ii
                pipe_busy[p] += ii
                issued_pipe[p] += 1
                ptr[s] = i + 1
                ready = now + op_lat[o]
                rcause = R_DEPENDENCY
                if k == K_LOAD_GLOBAL or k == K_ATOMIC or k == K_STORE_GLOBAL \
                        or k == K_REDUCTION or k == K_ASYNC_COPY or k == K_PREFETCH:
                    ns = sectors[i]
                    t1 = max(float(now), l1_free)
                    if store_sectors_per_clk > 0 and (k == K_STORE_GLOBAL or k == K_REDUCTION) \
                            and ns > 0:
                        l1_free = t1 + max(store_instr_clk, slots[i] / store_sectors_per_clk)
                    elif k == K_LOAD_GLOBAL and ns > 0:
                        l1_free = t1 + max(load_instr_clk, ns / l1_sectors_per_clk)
                    else:
                        l1_free = t1 + ns / l1_sectors_per_clk
                    t2 = t1
                    t3 = t1
                    lv = level[i]
                    if k == K_ATOMIC or k == K_REDUCTION:
                        if lv < 1:
                            lv = 1
                    if l2_sectors[i] > 0:
                        t2 = max(t1, l2_free)
                        l2_free = t2 + l2_sectors[i] * sector_bytes / l2_bytes_per_clk
                        t3 = t2
                    if dram_sectors[i] > 0:
                        t3 = max(t2, dram_free)
                        dram_free = t3 + dram_sectors[i] * sector_bytes / dram_bytes_per_clk
                    if ns == 0:
                        lat = lat_l1
                    elif lv == 0:
                        lat = lat_l1
                    elif lv == 1:
                        lat = lat_l2
                    else:
                        lat = lat_dram
                    if k == K_STORE_GLOBAL:
                        if ns > 0:  # a store whose lanes are all predicated off is none
                            stores[s] += 1
                    elif k == K_LOAD_GLOBAL and ns > 0:
                        lat += lat_store_load * stores[s]
                        stores[s] = 0
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
                    if ready > mem_out[s]:
                        mem_out[s] = ready
                elif k == K_LOAD_SHARED or k == K_STORE_SHARED or k == K_ATOMIC_SHARED:
                    t1 = max(float(now), shm_free)
                    shm_free = t1 + max(1, waves[i])
                    ready = np.int64(t1 + lat_shared + 0.999)
                    rcause = R_MEM_LATENCY
                    if t1 - now > 0.5 * lat_shared:
                        rcause = R_LSU
                elif k == K_LOAD_CONST:
                    ready = now + lat_const
                    rcause = R_MEM_LATENCY
                if ready > finish:
                    finish = ready
                span = op_span[o]
                if width[i] > 4 and (k == K_LOAD_GLOBAL or k == K_LOAD_SHARED
                                     or k == K_ATOMIC):
                    span = max(span, width[i] // 4)
                for j in range(ndst[i]):
                    rg = dst[i, j]
                    if rg >= 0 and rg < 255:
                        for q in range(span):
                            if rg + q < 255:
                                reg_ready[s, rg + q] = ready
                                reg_cause[s, rg + q] = rcause
                r = s // W
                # EXIT under a predicate retires some lanes only: a warp is done when its
                # trace ends.
                done = ptr[s] >= end[s]
                if k == K_BARRIER and not done:
                    state[s] = _BAR
                    arrived[r] += 1
                if done:
                    state[s] = _DONE
                    live[r] -= 1
                    warp_cycles[0] += now + 1 - born[s]
                    if mem_out[s] > finish:
                        finish = mem_out[s]
                # A barrier opens when every live warp of the block has arrived.
                if live[r] > 0 and arrived[r] >= live[r]:
                    arrived[r] = 0
                    for w in range(W):
                        s2 = r * W + w
                        if state[s2] == _BAR:
                            state[s2] = _RUN
                            wstart[s2] = now + lat_barrier
                if live[r] == 0:
                    # The block is done: the block scheduler starts the next one here.
                    if next_block < n_blocks:
                        _start_block(r, next_block, now + 1, W, P, warp_off, block_start,
                                     slot_block, live, arrived, ptr, end, wstart, born,
                                     reg_ready, mem_out, state, sp_used, last)
                        next_block += 1
                        any_live = True
                    else:
                        slot_block[r] = -1
        if not any_live:
            break
        if issued_any:
            dt = np.int64(1)
        else:
            dt = _INF
            for sp in range(P):
                if best_t[sp] < dt:
                    dt = best_t[sp]
            dt = dt - now
            if dt < 1:
                dt = np.int64(1)
            if dt > (np.int64(1) << 40):
                dt = np.int64(1)  # nothing can ever become ready: a barrier deadlock
                break
        for sp in range(P):
            if n_iss[sp] > 0:
                stall[sp, R_SELECTED] += 1
                if dt > 1:
                    stall[sp, best_r[sp]] += dt - 1
            else:
                stall[sp, best_r[sp]] += dt
        now += dt
    if finish < now:
        finish = now
    # The drain after the last issue (outstanding loads, stores) counts as memory latency.
    for sp in range(P):
        if sp_used[sp]:
            stall[sp, R_MEM_LATENCY] += finish - now
        else:
            stall[sp, :] = 0
    return finish

"""Sectored set-associative caches (L1 per SM, one L2), driven by the trace's addresses.

A warp's memory instruction touches the 32-byte sectors its active lanes' bytes fall in
(coalescing); each sector is looked up in the L1 of the SM its thread block runs on and, on
a miss, in the L2; an L2 miss reads the sector from DRAM. LRU replacement per set, line =
``sector_per_line`` sectors with per-sector valid and dirty bits. Policies (Volta..Hopper):
L1 is write-through without write-allocate (a store updates a present line), the L2 is
write-back with write-allocate without fetch (a stored sector becomes valid and dirty), and
atomics and reductions execute at the L2. DRAM writes are the dirty sectors evicted during
the kernel. Caches start cold: Nsight Compute flushes them before every profiled kernel,
which is what the model is checked against; for step-level what-ifs the L2 may instead
start as the previous kernel left it (``carry``). A line an earlier kernel left carries no
filling block (``l2_fill`` -1), which is how its hits are told apart.

The per-instruction result is the deepest level any of its sectors had to reach (0 L1,
1 L2, 2 DRAM) and the sector counts at each level, which the issue model turns into
latency and bandwidth demand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from simfront.sim.model import linemap
from simfront.sim.model.linemap import LineMap
from simfront.sim.model.decode import (K_ASYNC_COPY, K_ATOMIC, K_ATOMIC_SHARED, K_LOAD_GLOBAL,
                                       K_LOAD_SHARED, K_PREFETCH, K_REDUCTION, K_STORE_GLOBAL,
                                       K_STORE_SHARED)

HASH_LINEAR = 0
HASH_MIX = 1


@dataclass
class CacheState:
    """Tag arrays of one cache level (several caches of one geometry for the L1s)."""

    tags: np.ndarray      # int64 [n_caches, sets, ways], -1 = empty
    valid: np.ndarray     # uint8 [n_caches, sets, ways] sector bits
    dirty: np.ndarray     # uint8 [n_caches, sets, ways]
    stamp: np.ndarray     # int64 [n_caches, sets, ways] LRU time
    clock: np.ndarray     # int64 [1]
    hash_kind: int

    @classmethod
    def make(cls, n_caches: int, sets: int, ways: int, hash_kind: int) -> "CacheState":
        shape = (n_caches, max(1, sets), max(1, ways))
        return cls(np.full(shape, -1, np.int64), np.zeros(shape, np.uint8),
                   np.zeros(shape, np.uint8), np.zeros(shape, np.int64),
                   np.zeros(1, np.int64), hash_kind)


def l2_state(gpu) -> CacheState:
    """An empty L2 of the description's geometry."""
    l2 = gpu.l2
    ways = l2.assoc
    sets = max(1, l2.size.bytes // (l2.line.bytes * ways))
    kind = HASH_LINEAR if l2.set_hash == "linear" else HASH_MIX
    return CacheState.make(1, sets, ways, kind)


@numba.njit(cache=True, inline="always")
def _sort_prefix(a, m):
    """Sort ``a[:m]`` in place: insertion sort, near linear on the mostly ascending addresses
    of a warp's lanes, and no allocation."""
    for i in range(1, m):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@numba.njit(cache=True, inline="always")
def _set_index(line, n_sets, hash_kind):
    if hash_kind == HASH_LINEAR:
        return line % n_sets
    # An address hash in the spirit of the L2's IPOLY indexing: fold the high bits in so
    # that power-of-two strides spread over the sets.
    x = line ^ (line >> 7) ^ (line >> 13) ^ (line >> 19)
    x = (x * 0x9E3779B1) & 0xFFFFFFFF
    return x % n_sets


@numba.njit(cache=True, _nrt=False)  # as simulate_memory's loop, which calls it
def _access(tags, valid, dirty, stamp, clock, c, line, sector_bit, write, allocate,
            hash_kind):
    """Look up one sector. Returns (hit, evicted dirty sectors, set, way, age); way -1 when
    the line is neither present nor allocated; age: the accesses to this cache since the line
    was last touched (-1 when it was not present)."""
    n_sets = tags.shape[1]
    ways = tags.shape[2]
    s = _set_index(line, n_sets, hash_kind)
    clock[0] += 1
    now = clock[0]
    victim = 0
    oldest = np.int64(1) << 62
    for w in range(ways):
        t = tags[c, s, w]
        if t == line:
            hit = (valid[c, s, w] & sector_bit) != 0
            if write:
                valid[c, s, w] |= sector_bit
                dirty[c, s, w] |= sector_bit
            elif allocate:
                valid[c, s, w] |= sector_bit
            age = now - stamp[c, s, w]
            stamp[c, s, w] = now
            return hit, 0, s, w, age
        if t == -1:
            if oldest > -1:
                oldest = -1
                victim = w
        elif stamp[c, s, w] < oldest:
            oldest = stamp[c, s, w]
            victim = w
    if not allocate:
        return False, 0, s, -1, -1
    ev = 0
    d = dirty[c, s, victim]
    while d:
        ev += d & 1
        d >>= 1
    tags[c, s, victim] = line
    valid[c, s, victim] = sector_bit
    dirty[c, s, victim] = sector_bit if write else 0
    stamp[c, s, victim] = now
    return False, ev, s, victim, -1


#: The owner of a line more than one warp of the kernel touches.
SHARED_LINE = -2


#: Bits of an L1 owner key that hold the cache (the SM): ``(line << L1_KEY_BITS) | cache``.
L1_KEY_BITS = 12


def new_line_owners() -> LineMap:
    """An empty map from a 128-byte line to the one warp that touches it (block x warps per
    block + warp), or ``SHARED_LINE``; filled by :func:`mark_line_owners`."""
    return LineMap()


@numba.njit(cache=True, inline="always")
def _unique_sectors(addrs, a0, a1, w, sector_shift, secs):
    """The sectors the lanes ``addrs[a0:a1]`` (``w`` bytes each) touch, sorted and once
    each, into ``secs`` (no allocation: a warp touches a few); returns how many."""
    m = 0
    for j in range(a0, a1):
        for s in range(addrs[j] >> sector_shift, ((addrs[j] + w - 1) >> sector_shift) + 1):
            if m < secs.shape[0]:
                secs[m] = s
                m += 1
    _sort_prefix(secs, m)
    nu = 0
    for a in range(m):
        if nu == 0 or secs[a] != secs[nu - 1]:
            secs[nu] = secs[a]
            nu += 1
    return nu


@numba.njit(cache=True, inline="always")
def _line_slots(u, sectors_per_line_shift, min_sectors):
    """Sector slots of the sorted unique sectors ``u``: per line, its sectors, at least
    ``min_sectors``."""
    total = 0
    in_line = 0
    for a in range(u.shape[0]):
        if a > 0 and (u[a] >> sectors_per_line_shift) != (u[a - 1] >> sectors_per_line_shift):
            total += max(in_line, min_sectors)
            in_line = 0
        in_line += 1
    if in_line:
        total += max(in_line, min_sectors)
    return total


@numba.njit(cache=True)
def store_slots(kind, width, addr_off, addrs, sector_shift, line_shift, min_sectors, out):
    """What each store or reduction row sends from its SM toward the L2, in sector slots:
    per line it writes, its sectors, but at least ``min_sectors``. On the H100 a line of
    one or two sectors goes in the time of two, through the SM's store path and through
    the L2's input port alike (bench/device/store_shapes.cu). Other rows get 0."""
    secs = np.empty(256, np.int64)
    for i in range(kind.shape[0]):
        out[i] = 0
        k = kind[i]
        if (k == K_STORE_GLOBAL or k == K_REDUCTION) and width[i] > 0:
            nu = _unique_sectors(addrs, addr_off[i], addr_off[i + 1], width[i], sector_shift,
                                 secs)
            out[i] = _line_slots(secs[:nu], line_shift - sector_shift, min_sectors)


@numba.njit(cache=True, inline="always")
def row_lines(addr_off, addrs, i, w, line_shift, out):
    """The lines row ``i``'s lanes touch (``w`` bytes each), a line repeated by neighbouring
    lanes once, into ``out``; returns how many."""
    n = 0
    last_seen = np.int64(-1)
    for j in range(addr_off[i], addr_off[i + 1]):
        for line in range(addrs[j] >> line_shift, ((addrs[j] + w - 1) >> line_shift) + 1):
            if line != last_seen and n < out.shape[0]:
                out[n] = line
                n += 1
            last_seen = line
    return n


@numba.njit(cache=True)
def _mark_owners(rows, warps_per_block, line_shift, n_caches, key_bits, reads_only, by_block,
                 keys, vals, n):
    """The owner of each line (keyed ``(line << key_bits) | cache``) ``rows`` (``MemRows``)
    touch: the one warp (the one block, ``by_block``) that touches it, or ``SHARED_LINE``."""
    buf = np.empty(512, np.int64)
    kind, tb, warp, width = rows.kind, rows.tb, rows.warp, rows.width
    cache_of_block = rows.cache_of_block
    for i in range(kind.shape[0]):
        k = kind[i]
        if not (k == K_LOAD_GLOBAL or k == K_ASYNC_COPY or k == K_PREFETCH
                or (not reads_only and (k == K_STORE_GLOBAL or k == K_ATOMIC
                                        or k == K_REDUCTION))):
            continue
        w = width[i]
        if w <= 0:
            continue
        gw = tb[i] if by_block else tb[i] * warps_per_block + warp[i]
        c = cache_of_block[tb[i] % cache_of_block.shape[0]] % n_caches
        for q in range(row_lines(rows.addr_off, rows.addrs, i, w, line_shift, buf)):
            key = (buf[q] << key_bits) | c
            keys, vals, s = linemap.entry(keys, vals, n, key, gw)
            if vals[s] != gw:
                vals[s] = SHARED_LINE
    return keys, vals


def mark_line_owners(kind, tb, warp, width, addr_off, addrs, warps_per_block, line_shift,
                     owners):
    """Record which block touches each line of global memory (``owners``, kept from chunk to
    chunk of a kernel): the lines only one block touches are its private data, whose reuse
    the other resident blocks crowd out of the L2 (:func:`_private_reuse`). A block, not a
    warp: a softmax's row is its block's, but its warps' 512-byte slices of an unaligned
    row share their edge lines, which a warp's privacy would leave unjudged (1.86 reads of
    the LM-head logits where ncu counts 2.74)."""
    rows = MemRows(kind, tb, warp, width, addr_off, addrs, np.zeros(1, np.int64))
    owners.grown(*_mark_owners(rows, warps_per_block, line_shift, 1, 0, False, True,
                               owners.keys, owners.vals, owners.n))


def mark_l1_owners(kind, tb, warp, width, addr_off, addrs, warps_per_block, line_shift,
                   cache_of_block, n_caches, owners, by_block=False):
    """Which warp reads each line of global memory in each L1 (``owners``, keyed
    ``(line << L1_KEY_BITS) | cache``): a line only one warp of an SM reads is that warp's
    own in that SM's L1, even when warps of other SMs read it too (a transposing copy's
    lines are shared by the blocks of 16 SMs, each reading its own two bytes of a sector)."""
    rows = MemRows(kind, tb, warp, width, addr_off, addrs, cache_of_block)
    owners.grown(*_mark_owners(rows, warps_per_block, line_shift, n_caches, L1_KEY_BITS, True,
                               by_block, owners.keys, owners.vals, owners.n))


#: The global memory rows that read, as the L2 serves them: loads, asynchronous copies,
#: prefetches, and atomics and reductions (:func:`global_bytes`, :func:`global_line_touches`)
GLOBAL_READS = (K_LOAD_GLOBAL, K_ASYNC_COPY, K_PREFETCH, K_ATOMIC, K_REDUCTION)


@numba.njit(cache=True)
def global_line_touches(kind, addr_off, addrs, line_shift):
    """[lines read, lines written] by a trace's global memory rows, each row's lines counted
    once (a lane whose line differs from the lane before it touches another), with the
    reads and writes of :func:`global_bytes`. What a warp's instructions take of the L1 is
    lines, not bytes: a transposing copy's 2-byte loads touch 32 lines each, its coalesced
    stores one."""
    out = np.zeros(2, np.float64)
    for i in range(kind.shape[0]):
        k = kind[i]
        if k == K_STORE_GLOBAL:
            slot = 1
        elif k in GLOBAL_READS:
            slot = 0
        else:
            continue
        last = np.int64(-1)
        for j in range(addr_off[i], addr_off[i + 1]):
            line = addrs[j] >> line_shift
            if line != last:
                out[slot] += 1.0
                last = line
    return out


def global_bytes(kind: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """[bytes read, bytes written] by a trace's global memory rows (``nbytes``: each row's
    active lanes times its access width). Loads, asynchronous copies and prefetches read;
    atomics and reductions count as reads, as the L2 serves them; stores write."""
    reads = np.isin(kind, GLOBAL_READS)
    writes = kind == K_STORE_GLOBAL
    return np.array([float(nbytes[reads].sum()), float(nbytes[writes].sum())])


@numba.njit(cache=True)
def survival_probability(lines_between, n_sets, ways):
    """The chance a line is still in an LRU cache after ``lines_between`` other lines went
    through it: fewer than ``ways`` of them fell in its set. Set indices look random
    (hashed), so that count is Poisson with mean ``lines_between / n_sets`` (normal
    approximation); smooth around a full cache, where a fully associative cache would flip
    from all hits to all misses."""
    lam = lines_between / n_sets
    if lam <= 0.0:
        return 1.0
    return 0.5 * (1.0 + math.erf((ways - 0.5 - lam) / math.sqrt(2.0 * lam)))


@numba.njit(cache=True, inline="always")
def survives(line, lines_between, n_sets, ways):
    """Whether ``line`` survives (:func:`survival_probability`): it does when a hash of its
    address, uniform in [0, 1), is below that probability. Deterministic."""
    if lines_between <= 0:
        return True
    p = survival_probability(lines_between, n_sets, ways)
    z = ((line ^ (line >> 16)) * 0x45D9F3B) & 0xFFFFFFFF
    z = ((z ^ (z >> 16)) * 0x45D9F3B) & 0xFFFFFFFF
    z ^= z >> 16
    return z / 4294967296.0 < p


class MemRows(NamedTuple):
    """The rows of a trace chunk the caches see: decoded kind, block, warp in its block,
    access width, each row's lanes (``addrs[addr_off[i]:addr_off[i + 1]]``), and the cache
    (SM) of each block (``cache_of_block[tb % len]``)."""

    kind: np.ndarray
    tb: np.ndarray
    warp: np.ndarray
    width: np.ndarray
    addr_off: np.ndarray
    addrs: np.ndarray
    cache_of_block: np.ndarray


class L1Sim(NamedTuple):
    """The SMs' L1s (``CacheState`` arrays) and, per line slot, the SM's touch clock when
    its warp last touched it (``astamp`` against ``aclock``, one per SM) and, judged by
    block, the warp that touched it last (``last``; empty: judged by warp)."""

    tags: np.ndarray
    valid: np.ndarray
    dirty: np.ndarray
    stamp: np.ndarray
    clock: np.ndarray
    astamp: np.ndarray
    aclock: np.ndarray
    last: np.ndarray


class L2Sim(NamedTuple):
    """The L2 (``CacheState`` arrays) and per line slot: the block that filled it (-1: an
    earlier kernel), the last warp to touch it, and the read-request clock (``rclock``)
    when it was last touched."""

    tags: np.ndarray
    valid: np.ndarray
    dirty: np.ndarray
    stamp: np.ndarray
    clock: np.ndarray
    fill: np.ndarray
    last: np.ndarray
    rstamp: np.ndarray
    rclock: np.ndarray


class MemConfig(NamedTuple):
    """What the trace pass's caches need besides their arrays (``simulate_memory``)."""

    l2_hash: int
    l2_start: int
    wave_blocks: int
    warps_per_block: int
    l1_co_warps: int
    l2_co_warps: int
    l2_capacity_share: float
    l2_traffic_scale: float
    l1_traffic_scale: float
    sector_shift: int
    line_shift: int
    shared_banks: int


class MemOut(NamedTuple):
    """Per row: deepest level (0 L1/shared, 1 L2, 2 DRAM), sectors requested (L1 slots),
    sectors sent to L2, sectors read from DRAM, shared-memory wavefronts; and the chunk's
    ``totals`` (``simulate_memory``)."""

    level: np.ndarray
    sectors: np.ndarray
    l2: np.ndarray
    dram: np.ndarray
    wave: np.ndarray
    totals: np.ndarray


def l1_sim(state: CacheState, by_block: bool = False) -> L1Sim:
    """An L1Sim over ``state``, nothing touched yet."""
    shape = state.tags.shape
    last = np.full(shape, -1, np.int64) if by_block else np.zeros((0, 1, 1), np.int64)
    return L1Sim(state.tags, state.valid, state.dirty, state.stamp, state.clock,
                 np.zeros(shape, np.int64), np.zeros(shape[0], np.int64), last)


def l2_sim(state: CacheState) -> L2Sim:
    """An L2Sim over ``state``, no line filled by this kernel yet."""
    shape = state.tags.shape
    return L2Sim(state.tags, state.valid, state.dirty, state.stamp, state.clock,
                 np.full(shape, -1, np.int64), np.full(shape, -1, np.int64),
                 np.zeros(shape, np.int64), np.zeros(1, np.int64))


def mem_out(n: int) -> MemOut:
    """Zeroed outputs for ``n`` rows."""
    return MemOut(*(np.zeros(n, np.int32) for _ in range(5)), np.zeros(N_TOTALS, np.int64))


@numba.njit(cache=True, inline="always")
def _private_reuse(l2, s, w, private, age, hit, line, bit, co_warps, sectors_per_line,
                   keep_dirty, capacity_share):
    """Whether a read hits, given that the simulated L2 says ``hit``, and the dirty sectors
    written back if it does not.

    The trace runs warps one after another, so for a line that only this warp touches
    (``private``), ``age`` (this cache's sector reads since the line was last touched)
    counts this warp's reads alone. On the GPU the warps sharing the cache touch about as
    many lines each meanwhile, so the line's reuse distance is ``age * co_warps`` sectors
    (``co_warps``: those warps times their traffic per read, writes included), and it may
    have been pushed out (:func:`survives`) of the ``capacity_share`` of the cache that such
    reuse finds (the H100's L2 keeps half of a working set of private rows at 0.76 of its
    size: ``ModelParams.l2.private_capacity``). It is then refetched whole: the line keeps
    only this sector, and its dirty sectors were written back (``keep_dirty``: this access
    dirties its own sector again, an atomic)."""
    if not hit or not private or age < 0:
        return hit, 0
    between = age * co_warps / sectors_per_line / capacity_share
    if survives(line, between, l2.valid.shape[1], l2.valid.shape[2]):
        return hit, 0
    d = l2.dirty[0, s, w] & ~bit if keep_dirty else l2.dirty[0, s, w]
    written = 0
    while d:
        written += d & 1
        d >>= 1
    l2.valid[0, s, w] = bit
    l2.dirty[0, s, w] = bit if keep_dirty else 0
    return False, written


#: Entries of simulate_memory's ``totals`` (its docstring says what each holds).
N_TOTALS = 10


@numba.njit(cache=True, inline="always")
def _wavefronts(addrs, a0, a1, w, shared_banks, words, counts):
    """A shared-memory row's wavefronts: the most distinct 4-byte words any bank must
    serve, at least one per 128 bytes moved."""
    m = 0
    for j in range(a0, a1):
        base = addrs[j] >> 2
        for q in range(max(1, w // 4)):
            if m < words.shape[0]:
                words[m] = base + q
                m += 1
    for q in range(shared_banks):
        counts[q] = 0
    worst = 0
    # Distinct words per bank (a word counts once however many lanes read it): sort (lanes
    # mostly ascend, so insertion sort is near linear), then count.
    _sort_prefix(words, m)
    for q in range(m):
        if q > 0 and words[q] == words[q - 1]:
            continue
        bk = words[q] % shared_banks
        counts[bk] += 1
        if counts[bk] > worst:
            worst = counts[bk]
    nbytes = (a1 - a0) * w
    return max(worst, (nbytes + 127) // 128)


@numba.njit(cache=True, inline="always")
def _l1_read(i, c, gw, line, bit, last_line, rows, l1, l1_keys, l1_vals, judged, co_warps):
    """A read of one sector in SM ``c``'s L1: (hit, the line last touched by this
    instruction). A re-read of a line only this warp reads on its SM (``l1_owners``) hits
    only if the line survived the lines the SM's resident warps moved meanwhile
    (``co_warps``: those warps times their traffic per read, writes included)."""
    hit1, _e, s1, w1, age1 = _access(l1.tags, l1.valid, l1.dirty, l1.stamp, l1.clock, c,
                                     line, bit, False, True, 0)
    if w1 >= 0 and judged:
        if line != last_line:
            l1.aclock[c] += 1  # one touch per line and instruction
            last_line = line
        # owners by warp, or by block (l1.last holds each slot's last warp: a line another
        # warp of the block touched last is not judged)
        owner = gw if l1.last.shape[0] == 0 else rows.tb[i]
        mine = l1.last.shape[0] == 0 or l1.last[c, s1, w1] == gw
        if hit1 and age1 >= 0 and mine and linemap.get(
                l1_keys, l1_vals, (line << L1_KEY_BITS) | c, SHARED_LINE) == owner:
            between = (l1.aclock[c] - 1 - l1.astamp[c, s1, w1]) * co_warps
            if not survives(line, between, l1.valid.shape[1], l1.valid.shape[2]):
                hit1 = False
                l1.valid[c, s1, w1] = bit
        l1.astamp[c, s1, w1] = l1.aclock[c]
        if l1.last.shape[0] > 0:
            l1.last[c, s1, w1] = gw
    return hit1, last_line


@numba.njit(cache=True, inline="always")
def _l2_access(i, k, gw, line, bit, own_keys, own_vals, rows, l2, cfg, totals):
    """One sector of row ``i`` (kind ``k``) in the L2: the level it reports (1 L2, 2 DRAM,
    a hit on a line another block of the same wave is still fetching included) and whether
    it read the DRAM. Whether the line is the block's own (``line_owners``) is looked up
    only for a hit whose reuse is judged (``_private_reuse``), the only one it decides."""
    write = k == K_STORE_GLOBAL
    rmw = k == K_ATOMIC or k == K_REDUCTION
    lines_per = 1 << (cfg.line_shift - cfg.sector_shift)
    hit2, ev, s2, w2, age2 = _access(l2.tags, l2.valid, l2.dirty, l2.stamp, l2.clock, 0,
                                     line, bit, write or rmw, True, cfg.l2_hash)
    totals[5] += ev
    if not write:
        if age2 >= 0 and l2.clock[0] - age2 <= cfg.l2_start:
            age2 = -1  # last touched by an earlier kernel (a warm L2)
        if w2 >= 0 and l2.last[0, s2, w2] != gw:
            age2 = -1  # another warp of the block, beside this one in the row
        if age2 >= 0:
            age2 = l2.rclock[0] - l2.rstamp[0, s2, w2]
        private = hit2 and age2 >= 0 and linemap.get(own_keys, own_vals, line,
                                                      SHARED_LINE) == rows.tb[i]
        hit2, ev = _private_reuse(l2, s2, w2, private, age2, hit2, line, bit,
                                  cfg.l2_co_warps * cfg.l2_traffic_scale, lines_per, rmw,
                                  cfg.l2_capacity_share)
        totals[5] += ev
    lv = 2
    dram = False
    if hit2 or write:
        totals[3] += 1
        lv = 1
        if hit2 and not write:
            f = l2.fill[0, s2, w2]
            if f == -1:
                totals[6] += 1
            elif f != rows.tb[i] and f // cfg.wave_blocks == rows.tb[i] // cfg.wave_blocks:
                lv = 2
    else:
        totals[4] += 1
        dram = True
    if w2 >= 0 and not hit2:
        l2.fill[0, s2, w2] = rows.tb[i]
    if w2 >= 0:
        l2.last[0, s2, w2] = gw
        l2.rstamp[0, s2, w2] = l2.rclock[0]
    return lv, dram


@numba.njit(cache=True, inline="always")
def _global_row(i, rows, l1, l2, owners, l1_judged, cfg, out, secs):
    """Row ``i``, a global memory instruction, through the L1 of its block's SM and the L2:
    its outputs in ``out``."""
    k = rows.kind[i]
    totals = out.totals
    lines_per = 1 << (cfg.line_shift - cfg.sector_shift)
    nu = _unique_sectors(rows.addrs, rows.addr_off[i], rows.addr_off[i + 1], rows.width[i],
                         cfg.sector_shift, secs)
    u = secs[:nu]
    # The L1 serves one 128-byte line per cycle whatever its sectors, hit or miss: a load
    # whose lanes fall in 32 lines takes 32 cycles, not the 8 its 32 sectors would at 4 per
    # cycle (H100, bench/device/load_shapes.cu: loads of 8, 16 or 32 lines of a sector each
    # take 1.0-1.1 clocks a line on 32 SMs, and as long with half of them hitting the L1).
    # Counted in sector slots (lines x sectors per line) for the issue model.
    out.sectors[i] = _line_slots(u, cfg.line_shift - cfg.sector_shift, lines_per)
    c = rows.cache_of_block[rows.tb[i]] % l1.tags.shape[0]
    gw = rows.tb[i] * cfg.warps_per_block + rows.warp[i]
    write = k == K_STORE_GLOBAL
    rmw = k == K_ATOMIC or k == K_REDUCTION
    level = 0
    nl2 = 0
    nd = 0
    last_line = np.int64(-1)
    last_read = np.int64(-1)
    for q in range(u.shape[0]):
        sec = u[q]
        line = sec >> (cfg.line_shift - cfg.sector_shift)
        bit = np.uint8(1) << np.uint8(sec & (lines_per - 1))
        if not write:
            l2.rclock[0] += 1  # requests, the L1's hits too: a warp's time, not its misses
        if not rmw:
            totals[0] += 1
            if write:
                _access(l1.tags, l1.valid, l1.dirty, l1.stamp, l1.clock, c, line, bit, False,
                        False, 0)
            else:
                hit1, last_line = _l1_read(i, c, gw, line, bit, last_line, rows, l1,
                                           owners.l1_keys, owners.l1_vals, l1_judged,
                                           cfg.l1_co_warps * cfg.l1_traffic_scale)
                if hit1:
                    totals[1] += 1
                    continue
        # to the L2
        nl2 += 1
        totals[2] += 1
        if k == K_LOAD_GLOBAL:  # what load_shapes.cu measured: LDG, not LDGSTS/TMA
            totals[9] += 1
            if line != last_read:  # a request per line (the sectors u holds are sorted)
                totals[8] += 1
                last_read = line
        lv, dram = _l2_access(i, k, gw, line, bit, owners.l2_keys, owners.l2_vals, rows, l2,
                              cfg, totals)
        if dram:
            nd += 1
            level = 2
        elif level < lv:
            level = lv
    out.level[i] = level
    out.l2[i] = nl2
    out.dram[i] = nd


class OwnerArrays(NamedTuple):
    """The owner maps' arrays as the compiled loop reads them (``linemap.get``)."""

    l2_keys: np.ndarray
    l2_vals: np.ndarray
    l1_keys: np.ndarray
    l1_vals: np.ndarray


def simulate_memory(rows, l1, l2, line_owners: LineMap, l1_owners: LineMap, cfg, out) -> None:
    """Run the memory instructions of one chunk through the caches.

    ``rows`` (``MemRows``): rows that are not global/shared memory are skipped. ``l1``,
    ``l2``: ``L1Sim``, ``L2Sim``; ``cfg``: ``MemConfig``; ``out``: ``MemOut``, per row and
    ``out.totals``: [l1 accesses, l1 hits, l2 accesses, l2 hits, dram read sectors,
    dram write sectors, l2 read hits on lines an earlier kernel left, (7: the caller's),
    l2 read requests of global loads (per instruction, the lines it reads from the L2), their
    l2 read sectors].

    Blocks are simulated one after another, but the blocks of one wave (``wave_blocks``
    blocks: every SM full) run at the same time: an L2 hit on a line that another block of
    the same wave brought in is, in time, a miss merged with one in flight. It counts as a
    hit (no DRAM traffic) but reports the DRAM level for latency. ``l2.fill`` holds the
    block that filled each L2 line.

    Warps run one after another, too, which hides how the warps resident at once crowd each
    other's lines out: a warp's L2 re-read of a line only its block touches hits only if the
    line would have survived the ``l2_co_warps`` warps sharing the L2 in the
    ``l2_capacity_share`` of it such reuse finds (:func:`_private_reuse`; ``line_owners``
    from :func:`mark_line_owners`). That is what makes a softmax over 200 KB rows re-read
    them from DRAM: 264 resident rows do not fit the L2. A line another warp of the same
    block touched last (``l2.last``: the last warp to touch each L2 line) is not judged:
    the two warps walk the row side by side. ``l2_start`` is the L2's clock before the
    kernel: a line an earlier kernel left (a warm L2) was not this warp's to reuse.

    The distance is counted in the sectors the warp asked for by reads and atomics since the
    line was last touched in the L2 (``l2.rclock``, stamped per line in ``l2.rstamp``),
    times ``l2_traffic_scale``: the kernel's bytes moved per byte read, writes included. A
    warp's own trace tells how long a line waited, not what the warps resident meanwhile
    did: in a softmax the warps re-reading in a pass without writes share the L2 with warps
    in their writing pass, whose output passes through it too (the H100's knee for private
    rows moves from 40 to 29 MB when the last pass writes: bench/device/mem_rows.cu's
    ``rowsw``). Requests, not L2 accesses, measure the wait: the edge lines a warp's slice
    shares with its neighbours hit the L1 on re-reads, which would shorten the wait of the
    lines between them by a quarter.

    The L1 likewise (``l1_owners`` from :func:`mark_l1_owners`, empty to leave it out): a
    warp's re-read of a line only it reads on its SM hits only if the line survives the
    lines the SM's resident warps move meanwhile, ``l1_co_warps`` times the lines this
    warp touched since it last touched it (``l1.astamp`` against ``l1.aclock``, counted once
    per line and instruction, not per sector: a strided load touches a line per lane), times
    ``l1_traffic_scale``: the lines the kernel's instructions touch per line its reads
    touch (:func:`global_line_touches`), as the lines the resident warps store to take
    room in the L1 too. A transposing copy's 64 resident warps each touch 32 lines per load
    and one per store, so the four loads a warp makes of the same sectors find them
    evicted four times in five in the 224 KB the driver leaves it (13% of its sectors hit;
    ncu 15%); a softmax whose two resident blocks read 127 KB rows three
    times and write them once finds its 248 KB L1 full between passes (ncu: 1.3% of sectors
    hit), a 64 KB row does not (ncu: 32%).
    """
    if out.totals.shape[0] < N_TOTALS:  # numba does not check bounds: a short array corrupts
        raise ValueError("simulate_memory: totals needs N_TOTALS entries")
    owners = OwnerArrays(line_owners.keys, line_owners.vals, l1_owners.keys, l1_owners.vals)
    _memory_rows(rows, l1, l2, owners, len(l1_owners) > 0, cfg, out,
                 np.empty(256, np.int64), np.empty(128, np.int64),
                 np.zeros(max(1, cfg.shared_banks), np.int64))


@numba.njit(cache=True, _nrt=False)
def _memory_rows(rows, l1, l2, owners, l1_judged, cfg, out, secs, words, counts):
    """simulate_memory's loop, compiled without numba's reference counts (nothing in it
    allocates; the counts took more time than the caches): ``owners`` an ``OwnerArrays``."""
    totals = out.totals
    for i in range(rows.kind.shape[0]):
        k = rows.kind[i]
        a0 = rows.addr_off[i]
        a1 = rows.addr_off[i + 1]
        w = rows.width[i]
        if a1 <= a0 or w <= 0:
            continue
        if k == K_LOAD_SHARED or k == K_STORE_SHARED or k == K_ATOMIC_SHARED:
            waves = _wavefronts(rows.addrs, a0, a1, w, cfg.shared_banks, words, counts)
            out.wave[i] = waves
            out.sectors[i] = waves
        elif (k == K_LOAD_GLOBAL or k == K_STORE_GLOBAL or k == K_ATOMIC
              or k == K_REDUCTION or k == K_ASYNC_COPY or k == K_PREFETCH):
            _global_row(i, rows, l1, l2, owners, l1_judged, cfg, out, secs)

"""The model's cache simulation on address streams (issue 5: a smaller L2 lowers the hit
rate of reuse that no longer fits), and occupancy from launch facts."""

from __future__ import annotations

import numpy as np
import pytest


def _stream_twice(n_lines: int, l2_ways: int, l2_sets: int, totals_len: int | None = None):
    """Every lane of a warp loads 4 bytes; the warps sweep n_lines 128-byte lines twice."""
    from simfront.sim.model.cache import (HASH_MIX, N_TOTALS, CacheState, MemConfig, MemOut,
                                          MemRows, l1_sim, l2_sim, new_line_owners,
                                          simulate_memory)
    from simfront.sim.model.decode import K_LOAD_GLOBAL

    n = 2 * n_lines
    kind = np.full(n, K_LOAD_GLOBAL, np.int8)
    tb = np.arange(n, dtype=np.int64)  # one block per instruction: no L1 reuse
    width = np.full(n, 4, np.int64)
    base = 0x7F0000000000
    lines = np.concatenate([np.arange(n_lines), np.arange(n_lines)])
    addrs = (base + lines[:, None] * 128 + np.arange(32)[None, :] * 4).reshape(-1).astype(np.int64)
    off = np.arange(n + 1, dtype=np.int64) * 32
    l1 = CacheState.make(4, 4, 8, 0)
    l2 = CacheState.make(1, l2_sets, l2_ways, HASH_MIX)
    outs = [np.zeros(n, np.int32) for _ in range(5)]
    tot = np.zeros(N_TOTALS if totals_len is None else totals_len, np.int64)
    # one warp per block, one warp resident per cache: reuse distances are as traced
    rows = MemRows(kind, tb, np.zeros(n, np.int64), width, off, addrs,
                   np.arange(n, dtype=np.int64) % 4)
    cfg = MemConfig(l2_hash=l2.hash_kind, l2_start=0, wave_blocks=1, warps_per_block=1,
                    l1_co_warps=1, l2_co_warps=1, l2_capacity_share=1.0, l2_traffic_scale=1.0,
                    l1_traffic_scale=1.0,
                    sector_shift=5, line_shift=7, shared_banks=32)
    simulate_memory(rows, l1_sim(l1), l2_sim(l2), new_line_owners(), new_line_owners(), cfg,
                    MemOut(*outs, tot))
    return tot, outs[0]


def test_l2_reuse_hits_when_it_fits_and_misses_when_it_does_not():
    big, level_big = _stream_twice(2048, 16, 256)      # 4096 lines of L2: fits
    small, level_small = _stream_twice(2048, 16, 32)   # 512 lines: LRU sweep thrashes
    # 4 sectors per line, two passes: the second pass hits only in the big L2.
    assert big[2] == small[2] == 2 * 2048 * 4
    assert big[3] / big[2] == pytest.approx(0.5)
    assert small[3] / small[2] < 0.1
    assert big[4] < small[4]  # DRAM sectors read
    assert (level_big[2048:] == 1).all() and (level_small[2048:] == 2).mean() > 0.9


def test_occupancy_limits_from_launch_facts():
    from simfront.gpu import load_gpu
    from simfront.sim.model.occupancy import Launch, occupancy

    gpu = load_gpu("h100")
    # ncu: selective_scan_fwd, 93 registers (3,072 per warp allocated), 4,192 B shared,
    # one warp per block: 16,384 registers per sub-partition hold 5 warps -> 20 blocks
    o = occupancy(Launch((1, 128, 1), (32, 1, 1), 93, 4192), gpu)
    assert (o.blocks_per_sm, o.limiter) == (20, "registers")
    # 1024 threads: 32 warps, two blocks fill the 64 warps
    o = occupancy(Launch((195, 1, 1), (1024, 1, 1), 32, 0), gpu)
    assert o.blocks_per_sm == 2 and o.limiter == "warps"
    # 255 registers, 128 threads: 255*32 -> 8192 per warp, 16384 per sub-partition -> 2 warps
    o = occupancy(Launch((4, 1, 8), (128, 1, 1), 255, 57344), gpu)
    assert (o.blocks_per_sm, o.limiter) == (2, "registers")


def test_store_slots_count_a_line_of_one_or_two_sectors_as_two():
    # The shapes of bench/device/store_shapes.cu, as addresses of one warp's store.
    from simfront.sim.model.cache import store_slots
    from simfront.sim.model.decode import K_LOAD_GLOBAL, K_STORE_GLOBAL

    lane = np.arange(32)
    base = 0x7F0000000000
    shapes = {  # name: (lane byte offsets, bytes a lane, slots)
        "w4": (lane * 4, 4, 4), "w8": (lane * 8, 8, 8), "w16": (lane * 16, 16, 16),
        "h2": (lane * 2, 2, 2), "b1": (lane, 1, 2), "s1": (lane[:8] * 4, 4, 2),
        "s3": (lane[:24] * 4, 4, 3), "h2x2": ((lane >> 4) * 128 + (lane & 15) * 2, 2, 4),
        "scat": (lane * 128, 4, 64), "scat8": ((lane >> 2) * 128 + (lane & 3) * 4, 4, 16)}
    rows = list(shapes.values())
    kind = np.array([K_STORE_GLOBAL] * len(rows) + [K_LOAD_GLOBAL], np.int8)
    width = np.array([w for _, w, _ in rows] + [4], np.int64)
    addrs = [base + o for o, _, _ in rows] + [base + lane * 4]
    off = np.concatenate([[0], np.cumsum([len(a) for a in addrs])]).astype(np.int64)
    out = np.zeros(len(kind), np.int32)
    store_slots(kind, width, off, np.concatenate(addrs).astype(np.int64), 5, 7, 2, out)
    assert list(out[:-1]) == [s for _, _, s in rows]
    assert out[-1] == 0  # a load takes no store slots
    store_slots(kind, width, off, np.concatenate(addrs).astype(np.int64), 5, 7, 1, out)
    assert out[list(shapes).index("scat")] == 32


def test_a_short_totals_array_is_refused_not_overrun():
    # numba does not check bounds: simulate_memory must refuse a totals array it would
    # write past (the read requests and sectors in entries 8 and 9)
    from simfront.sim.model.cache import N_TOTALS
    with pytest.raises(ValueError, match="N_TOTALS"):
        _stream_twice(64, 16, 32, totals_len=N_TOTALS - 3)
    # every load reads one whole line from the L2: a request and four sectors each
    tot, _ = _stream_twice(64, 16, 32)
    assert tot[8] == 2 * 64 and tot[9] == 2 * 64 * 4 == tot[2]

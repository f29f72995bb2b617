"""What the one-warp-at-a-time trace pass hides, on shipped paper-size traces against their
ncu profiles (issue 12's worst misses): a sampled grid's untraced blocks write back what does
not fit the L2, cold as well as warm (``carry.untraced_writeback``), the L2 keeps only its
dirty share (``carry.limit_dirty``), the warps resident on an SM crowd each other's lines
out of its L1 (``cache.mark_l1_owners``), the warps resident at once crowd each block's
private lines out of the L2 (``cache._private_reuse``), and a kernel's own DRAM traffic
lengthens the DRAM latency it waits on (``simulate.dram_load_latency``)."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.paths import repo_dir
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.validation import pair_launches, read_ncu
from simfront.traces.reader import TraceSet

PAPER = repo_dir("traces") / "mamba2_lm-paper"


@pytest.fixture(scope="module")
def ncu_rows():
    pairs, _ = pair_launches(PAPER, read_ncu(PAPER / "ncu.csv"))
    return {p.kernel.path.name.split(".")[0]: p.row for p in pairs}


def test_a_sampled_grid_that_writes_more_than_the_l2_writes_it_back(h100, ncu_rows):
    # A 1.6 GB fill, 8 of its 402,240 blocks traced: the traced blocks' lines never leave
    # the L2, but the grid's do, as the H100 shows.
    fill = TraceSet(PAPER).kernel("kernel-53425")
    assert fill.header.sampled_blocks[0] < 10
    rec = simulate_kernel(fill, h100, cache=False)
    hw = float(ncu_rows["kernel-53425"]["dram_write_bytes"])
    assert hw > 1.5e9
    assert rec["dram_write_bytes"] == pytest.approx(hw, rel=0.05)
    # DRAM-bound now, as on the H100 (it read as latency-bound at a third of the time)
    assert rec["bound"] == "dram"
    assert rec["cycles"] == pytest.approx(float(ncu_rows["kernel-53425"]["cycles"]), rel=0.15)


def test_a_sampled_grid_whose_output_fits_the_l2_writes_nothing_back(h100, ncu_rows):
    # A copy of 32 blocks (8 traced) writing 16 KB: ncu counts no DRAM writes, nor does the
    # model, because the untraced blocks' lines fit beside the traced ones.
    k = TraceSet(PAPER).kernel("kernel-53374")
    assert k.header.sampled_blocks == (8, 32)
    rec = simulate_kernel(k, h100, cache=False)
    assert float(ncu_rows["kernel-53374"]["dram_write_bytes"]) < 1e5
    assert rec["dram_write_bytes"] < 1e5


def test_resident_rows_that_do_not_fit_the_l2_are_read_again_from_dram(h100, ncu_rows):
    from simfront.gpu import with_variants

    # The LM-head log-softmax: one 201 KB row of logits per block, read three times (max,
    # sum, write). 264 resident blocks hold 53 MB of rows, more than the 40 MB of the L2
    # such reuse finds on the H100 (bench/bench_mem.py), so the re-reads go to DRAM: ncu
    # reads 2.7 rows' worth. Run warp after warp, the traced blocks alone would re-read
    # their row from the L2 (and the L1).
    sm = TraceSet(PAPER).kernel("kernel-53422")
    row_bytes = 50280 * 4 * 8192
    hw = float(ncu_rows["kernel-53422"]["dram_read_bytes"])
    assert hw / row_bytes > 2.5
    rec = simulate_kernel(sm, h100, cache=False)
    assert rec["dram_read_bytes"] / row_bytes > 2.2
    assert rec["dram_read_bytes"] == pytest.approx(hw, rel=0.2)
    # and the kernel's time follows its bytes: DRAM-bound at about ncu's cycles
    cycles = float(ncu_rows["kernel-53422"]["cycles"])
    assert rec["cycles"] == pytest.approx(cycles, rel=0.15)
    # In an L2 four times as large the resident rows fit, and are read once.
    big = simulate_kernel(sm, with_variants(h100, l2_size="200 MiB"), cache=False)
    assert big["dram_read_bytes"] / row_bytes < 1.2
    # Seen at its whole size (l2_private_capacity 1), the H100's L2 would keep more rows.
    whole = simulate_kernel(sm, h100, params=DEFAULT_PARAMS.with_(**{"l2.private_capacity": 1.0}),
                            cache=False)
    assert whole["dram_read_bytes"] < rec["dram_read_bytes"]
    # The L1 keeps the lines two warps' slices share (judged per warp): the rest of the gap.
    # Judged per block (an option, off: it slows the tiny sets' cutlass GEMMs further),
    # the re-reads miss in the L1 too and the logits are read as often as ncu counts.
    by_block = simulate_kernel(sm, h100, params=DEFAULT_PARAMS.with_(**{"l1.crowding_by_block": True}),
                               cache=False)
    assert by_block["dram_read_bytes"] > rec["dram_read_bytes"]
    assert by_block["dram_read_bytes"] == pytest.approx(hw, rel=0.1)
    assert by_block["l1_hit_rate"] < rec["l1_hit_rate"]


def test_a_latency_bound_kernel_waits_longer_under_its_own_dram_load(h100):
    # A bf16-to-fp32 cast of the LM-head logits (804,480 blocks): each thread loads its
    # elements one after another through a dtype switch, so it waits on DRAM latency while
    # its own 2.5 GB keep the DRAM two-thirds busy. The H100 takes 2.48 M cycles; at the
    # unloaded latency, with no block's stores holding back the next block's loads and no
    # SM's stores lengthening its loads, the model takes 0.73 of that, its DRAM bound with
    # the bus's turns; with the waits, 0.8-1.05.
    box = repo_dir("traces") / "mamba2_lm-paper-box"
    pairs, _ = pair_launches(box, read_ncu(box / "ncu.csv"))
    rows = {p.kernel.path.name.split(".")[0]: p for p in pairs}
    cast, stream = rows["kernel-222893"], rows["kernel-222901"]
    unloaded = DEFAULT_PARAMS.with_(**{"dram.queue_latency": 0.0, "stores.load_ns": 0.0,
                                        "stores.load_wait_ns": 0.0})
    for p in (cast, stream):
        assert p.row["short_name"].endswith("elementwise_kernel")
    hw = float(cast.row["cycles"])
    before = simulate_kernel(cast.kernel, h100, launch=cast.launch, params=unloaded,
                             cache=False)
    after = simulate_kernel(cast.kernel, h100, launch=cast.launch, cache=False)
    assert before["cycles"] < 0.75 * hw
    assert before["cycles"] == pytest.approx(before["sim_dram_bound_cycles"], rel=0.01)
    assert 0.8 * hw < after["cycles"] < 1.05 * hw
    # A streaming kernel with its loads all in flight is held back by the bandwidth, not
    # the latency: the wait changes nothing (within 1%), and it stays near ncu's cycles
    # (1.07 of them with the bus's turns on its reads and writes).
    s0 = simulate_kernel(stream.kernel, h100, launch=stream.launch, params=unloaded,
                         cache=False)
    s1 = simulate_kernel(stream.kernel, h100, launch=stream.launch, cache=False)
    assert s1["cycles"] == pytest.approx(s0["cycles"], rel=0.01)
    assert s1["cycles"] == pytest.approx(float(stream.row["cycles"]), rel=0.08)


def test_the_dram_wait_grows_with_load_up_to_its_cap(h100):
    from simfront.sim.model.simulate import dram_load_latency, memory_latencies

    base = memory_latencies(h100, DEFAULT_PARAMS)["dram"]
    ns = h100.clocks.core.hz / 1e9
    q = DEFAULT_PARAMS.dram.queue_latency
    assert dram_load_latency(base, 0.0, h100, DEFAULT_PARAMS) == base
    assert dram_load_latency(base, 0.5, h100, DEFAULT_PARAMS) == pytest.approx(base + q * ns)
    cap = DEFAULT_PARAMS.dram.queue_max_load
    top = base + q * ns * cap / (1 - cap)
    assert dram_load_latency(base, 0.99, h100, DEFAULT_PARAMS) == pytest.approx(top)
    assert dram_load_latency(base, 5.0, h100, DEFAULT_PARAMS) == pytest.approx(top)


def _stream(n_warps: int, lines_per_warp: int, co_warps: int, shared: bool,
            traffic: float = 1.0):
    """Each warp loads its lines (or, ``shared``, the same lines) twice, warp after warp;
    one block per warp, all on SM 0; ``traffic``: the kernel's bytes moved per byte read.
    Returns the L2 totals and per-row levels."""
    from simfront.sim.model.cache import (HASH_MIX, N_TOTALS, CacheState, MemConfig, MemOut,
                                          MemRows, l1_sim, l2_sim, mark_line_owners,
                                          new_line_owners, simulate_memory)
    from simfront.sim.model.decode import K_LOAD_GLOBAL

    rows_per_warp = 2 * lines_per_warp
    n = n_warps * rows_per_warp
    kind = np.full(n, K_LOAD_GLOBAL, np.int8)
    tb = np.repeat(np.arange(n_warps, dtype=np.int64), rows_per_warp)
    warp = np.zeros(n, np.int64)
    width = np.full(n, 4, np.int64)
    base = 0x7F0000000000
    own = np.tile(np.arange(lines_per_warp), 2)
    lines = np.concatenate([own + (0 if shared else w * lines_per_warp) for w in range(n_warps)])
    addrs = (base + lines[:, None] * 128 + np.arange(32)[None, :] * 4).reshape(-1)
    off = np.arange(n + 1, dtype=np.int64) * 32
    addrs = addrs.astype(np.int64)
    l1 = CacheState.make(1, 1, 1, 0)             # an L1 of one line: everything reaches the L2
    l2 = CacheState.make(1, 64, 16, HASH_MIX)    # 1024 lines
    owners = new_line_owners()
    mark_line_owners(kind, tb, warp, width, off, addrs, 1, 7, owners)
    outs = [np.zeros(n, np.int32) for _ in range(5)]
    tot = np.zeros(N_TOTALS, np.int64)
    rows = MemRows(kind, tb, warp, width, off, addrs, np.zeros(n_warps, np.int64))
    cfg = MemConfig(l2_hash=l2.hash_kind, l2_start=0, wave_blocks=1 << 30, warps_per_block=1,
                    l1_co_warps=1, l2_co_warps=co_warps, l2_capacity_share=1.0,
                    l2_traffic_scale=traffic, l1_traffic_scale=1.0, sector_shift=5,
                    line_shift=7, shared_banks=32)
    simulate_memory(rows, l1_sim(l1), l2_sim(l2), owners, new_line_owners(), cfg,
                    MemOut(*outs, tot))
    return tot, outs[0]


def test_private_reuse_misses_when_the_resident_warps_do_not_fit():
    # 4 warps, 64 lines each (4 sectors a line): alone, a warp's second pass hits; with 64
    # warps resident, 64 x 64 lines between a line's two uses do not fit 1024 lines.
    alone, _ = _stream(4, 64, co_warps=1, shared=False)
    crowded, level = _stream(4, 64, co_warps=64, shared=False)
    fits, _ = _stream(4, 64, co_warps=8, shared=False)   # 512 lines between: fits
    first_pass = 4 * 64 * 4
    assert alone[4] == fits[4] == first_pass          # DRAM sectors: the first pass only
    assert crowded[4] > 1.9 * first_pass
    assert (level == 2).mean() > 0.95
    # Lines every warp reads are shared, and not judged by one warp's reuse distance:
    # read once from DRAM, then hits.
    shared, _ = _stream(4, 64, co_warps=64, shared=True)
    assert shared[4] == 64 * 4


def test_the_kernels_writes_lengthen_a_private_reuse_distance():
    # 8 resident warps re-reading 64 lines each fit 1,024 lines; if the kernel wrote 1.5
    # bytes per byte read, the others' output between two reads makes 1,280: they do not.
    fits, _ = _stream(4, 64, co_warps=8, shared=False)
    written, _ = _stream(4, 64, co_warps=8, shared=False, traffic=2.5)
    first_pass = 4 * 64 * 4
    assert fits[4] == first_pass
    assert written[4] > 1.5 * first_pass


def test_global_bytes_counts_atomics_as_reads_and_stores_as_writes():
    from simfront.sim.model.cache import global_bytes
    from simfront.sim.model.decode import (K_ALU, K_ATOMIC, K_LOAD_GLOBAL, K_LOAD_SHARED,
                                           K_STORE_GLOBAL)

    kind = np.array([K_LOAD_GLOBAL, K_STORE_GLOBAL, K_ATOMIC, K_LOAD_SHARED, K_ALU], np.int8)
    nbytes = np.array([512, 128, 64, 1000, 7])
    assert global_bytes(kind, nbytes).tolist() == [576.0, 128.0]


def test_line_touches_count_a_rows_lines_once_stores_included():
    from simfront.sim.model.cache import global_line_touches
    from simfront.sim.model.decode import K_ALU, K_LOAD_GLOBAL, K_STORE_GLOBAL

    base = 0x7F0000000000
    strided = base + np.arange(32, dtype=np.int64) * 4352        # a lane a line
    coalesced = base + (1 << 20) + np.arange(32, dtype=np.int64) * 2   # 64 bytes, one line
    straddling = base + (2 << 20) + 64 + np.arange(32, dtype=np.int64) * 4  # two lines
    addrs = np.concatenate([strided, coalesced, straddling])
    kind = np.array([K_LOAD_GLOBAL, K_STORE_GLOBAL, K_LOAD_GLOBAL, K_ALU], np.int8)
    off = np.array([0, 32, 64, 96, 96], np.int64)
    assert list(global_line_touches(kind, off, addrs, 7)) == [34.0, 1.0]


def _softmax_l1(set_name: str, h100) -> tuple[float, float]:
    d = repo_dir("traces") / set_name
    pairs, _ = pair_launches(d, read_ncu(d / "ncu.csv"))
    p = next(p for p in pairs if str(p.row["short_name"]) == "cunn_SoftMaxForward")
    rec = simulate_kernel(p.kernel, h100, cache=False)
    return rec["l1_hit_rate"], float(p.row["l1_hit_rate"])


def test_the_lines_a_softmax_writes_crowd_its_rows_out_of_the_l1(h100):
    # Two resident blocks an SM, each reading its row three times and writing it once. Rows
    # of 127 KB (a held-out step's LM head): 254 KB read fit the 248 KB the driver leaves
    # only if the 127 KB written took no room, and the H100 hits on 1.3% of the sectors.
    # Rows of 64 KB fit with their output, and it hits on a third of them.
    wide, wide_hw = _softmax_l1("ho-m2-d512", h100)
    narrow, narrow_hw = _softmax_l1("ho-m2-d1024", h100)
    assert wide_hw < 0.05 and narrow_hw > 0.25
    assert wide < 0.08
    assert narrow > 0.3


def test_the_softmaxs_what_if_counts_the_others_output(h100):
    from simfront.analysis import whatif as W
    from simfront.gpu import load_gpu, with_variants

    # The LM-head log-softmax forward on 96 SMs: 192 resident 201 KB rows (39 MB) would
    # nearly fit the 41 MB of L2 such reuse finds, but a third of the rows are in their
    # writing pass, and their output passes through the L2 too. The H100 takes as long as
    # on 132 SMs (it re-reads the rows from DRAM); on the H200 (DRAM 1.4x, L2 1.2x) 0.72.
    box = repo_dir("traces") / "mamba2_lm-paper-box"
    trace = W.trace_launches(box)
    fwd = trace.index[trace.short_name == "cunn_SoftMaxForward"][0]
    hw = {}
    base, _ = W.read_timeline(box, "h100-all")
    for label in ("h100-sms96", "h200-all"):
        tl, _ = W.read_timeline(box, label)
        hw[label] = (tl.time_us.iat[W.pair_timeline(trace, tl).tl[fwd]]
                     / base.time_us.iat[W.pair_timeline(trace, base).tl[fwd]])
    assert hw["h100-sms96"] == pytest.approx(1.0, abs=0.03)
    kernel = TraceSet(box).kernel(trace.file[fwd].split(".")[0])
    gpus = {"h100-sms96": with_variants(h100, sm_count=96), "h200-all": load_gpu("h100-as-h200")}

    base = {}

    def ratio(label, params=DEFAULT_PARAMS):
        if params not in base:
            base[params] = simulate_kernel(kernel, h100, params=params, cache=False)["cycles"]
        at = simulate_kernel(kernel, gpus[label], params=params, cache=False)["cycles"]
        return at / base[params]

    for label in gpus:
        assert ratio(label) == pytest.approx(hw[label], abs=0.06)


def test_the_l2_keeps_only_its_dirty_share_at_a_kernels_end():
    from simfront.sim.model.cache import CacheState
    from simfront.sim.model.carry import limit_dirty

    # Three dirty lines (2, 1 and 3 sectors), oldest first by stamp: keeping 3 sectors
    # cleans the two oldest, which are written, and leaves their tags valid.
    st = CacheState.make(1, 2, 2, 0)
    st.tags[0] = [[1, 2], [3, 4]]
    st.stamp[0] = [[5, 1], [9, 2]]
    st.dirty[0] = [[0b11, 0b1], [0b111, 0]]
    assert limit_dirty(st, 3) == 3
    assert st.dirty[0].tolist() == [[0, 0], [0b111, 0]]
    assert (st.tags[0] >= 0).all()
    assert limit_dirty(st, 3) == 0


def test_adamw_writes_back_nearly_all_it_dirties(h100, ncu_rows):
    # AdamW over 84 MB of parameters and state (8 of 320 blocks traced): LRU alone would keep
    # a whole L2 of it dirty at the end; the H100 writes back all but ~15 MB while it runs.
    k = TraceSet(PAPER).kernel("kernel-53603")
    rec = simulate_kernel(k, h100, cache=False)
    hw = float(ncu_rows["kernel-53603"]["dram_write_bytes"])
    assert rec["dram_write_bytes"] == pytest.approx(hw, rel=0.15)
    assert rec["cycles"] == pytest.approx(float(ncu_rows["kernel-53603"]["cycles"]), rel=0.15)


def test_a_transposing_copy_misses_in_the_l1_as_on_the_h100(h100, ncu_rows):
    # A bf16 copy of a transposed tensor (2,048 blocks, 8 traced): each warp makes four
    # 2-byte loads of the same 32 lines, 4 KB apart. Warp after warp the trace pass finds
    # loads 2-4 in the L1 (hit rate 0.70); with 64 warps resident, each touching 32 lines a
    # load, they are gone (ncu: 0.15), and the L2 serves them (ncu's L2 hit rate 0.90).
    k = TraceSet(PAPER).kernel("kernel-53387")
    hw = ncu_rows["kernel-53387"]
    assert float(hw["l1_hit_rate"]) < 0.2
    # all 256 KB of the L1 (no carve-out): the resident warps' crowding alone
    lines = simulate_kernel(k, h100, params=DEFAULT_PARAMS.with_(**{"l1.carveout_headroom": 0.0}),
                            cache=False)
    assert lines["l1_hit_rate"] < 0.45
    assert lines["l2_hit_rate"] == pytest.approx(float(hw["l2_hit_rate"]), abs=0.05)
    assert lines["cycles"] < float(hw["cycles"])
    # the driver carves 32 KB out for this kernel (ncu), and in the 224 KB left
    # the L1 keeps what the H100 keeps; every line it misses costs the L2's read side a
    # request, which is what bounds it
    now = simulate_kernel(k, h100, cache=False)
    assert lines["l1_hit_rate"] > 0.3 and now["l1_hit_rate"] < 0.25
    assert lines["cycles"] < now["cycles"]
    assert 0.75 * float(hw["cycles"]) < now["cycles"] < float(hw["cycles"])


def _l1_rereads(co_warps: int, second_warp_same_lines: bool):
    """Two warps of one block on SM 0, each loading 32 lines (one 4-byte lane a line, 4 KB
    apart) four times, the second warp its own lines or, ``second_warp_same_lines``, the
    first warp's. Returns the L1 totals and the per-row sector slots."""
    from simfront.sim.model.cache import (N_TOTALS, CacheState, MemConfig, MemOut, MemRows,
                                          l1_sim, l2_sim, mark_l1_owners, new_line_owners,
                                          simulate_memory)
    from simfront.sim.model.decode import K_LOAD_GLOBAL

    n = 8
    kind = np.full(n, K_LOAD_GLOBAL, np.int8)
    tb = np.zeros(n, np.int64)
    warp = np.repeat(np.arange(2, dtype=np.int64), 4)
    width = np.full(n, 4, np.int64)
    base = 0x7F0000000000
    second = 0 if second_warp_same_lines else 1 << 20
    addrs = np.concatenate([base + w * second + np.arange(32) * 4096 for w in warp])
    addrs = addrs.astype(np.int64)
    off = np.arange(n + 1, dtype=np.int64) * 32
    l1 = CacheState.make(1, 4, 64, 0)             # 256 lines
    l2 = CacheState.make(1, 64, 16, 1)
    l1_owners = new_line_owners()
    sm_of = np.zeros(1, np.int64)
    mark_l1_owners(kind, tb, warp, width, off, addrs, 2, 7, sm_of, 1, l1_owners)
    outs = [np.zeros(n, np.int32) for _ in range(5)]
    tot = np.zeros(N_TOTALS, np.int64)
    rows = MemRows(kind, tb, warp, width, off, addrs, sm_of)
    cfg = MemConfig(l2_hash=l2.hash_kind, l2_start=0, wave_blocks=1 << 30, warps_per_block=2,
                    l1_co_warps=co_warps, l2_co_warps=1, l2_capacity_share=1.0,
                    l2_traffic_scale=1.0, l1_traffic_scale=1.0, sector_shift=5, line_shift=7,
                    shared_banks=32)
    simulate_memory(rows, l1_sim(l1), l2_sim(l2), new_line_owners(), l1_owners, cfg,
                    MemOut(*outs, tot))
    return tot, outs[1]


def test_resident_warps_crowd_a_warps_lines_out_of_the_l1():
    # Alone, a warp's loads 2-4 hit (3 of 4); with 16 warps resident, 32 x 16 lines pass
    # between a line's two uses, twice the L1's 256: they miss.
    alone, _ = _l1_rereads(co_warps=1, second_warp_same_lines=False)
    crowded, _ = _l1_rereads(co_warps=16, second_warp_same_lines=False)
    assert alone[1] == 2 * 3 * 32
    assert crowded[1] < 0.1 * alone[1]
    assert crowded[2] > 0.9 * 8 * 32                 # nearly every load reaches the L2
    # Lines both warps read are not one warp's to judge: the second warp's loads hit.
    shared, _ = _l1_rereads(co_warps=16, second_warp_same_lines=True)
    assert shared[1] >= 4 * 32


def test_the_l1_line_rate_counts_a_scattered_load_a_cycle_a_line():
    # 32 sectors of 32 lines: 32 cycles, not the 8 of 32 sectors at 4 a cycle
    _, line_slots = _l1_rereads(co_warps=1, second_warp_same_lines=False)
    assert (line_slots == 32 * 4).all()

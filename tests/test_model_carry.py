"""The L2 carried between a step's kernels (``simfront.sim.model.carry``), on shipped traces:
what a kernel leaves in the L2 is found by the next one in a warm L2 and not in a cold one,
and a footprint larger than the L2 pushes it out."""

from __future__ import annotations

import numpy as np
import pytest

from simfront.core.paths import repo_dir
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.cache import CacheState
from simfront.sim.model.carry import UNTRACED, L2Carry, add_untraced
from simfront.traces.reader import TraceSet

TRACES = repo_dir("traces")


def _tiny(stem: str):
    return TraceSet(TRACES / "mamba1_lm-tiny").kernel(stem)


def _lines(kernel, kinds) -> set[int]:
    """The 128-byte lines a kernel's global memory instructions of ``kinds`` touch."""
    from simfront.gpu import load_gpu
    from simfront.sim.model.decode import build_optable

    gpu = load_gpu("h100")
    out: set[int] = set()
    for chunk in kernel.iter_chunks():
        kind = build_optable(chunk.opcodes, gpu).kind[chunk.op.astype(np.int64)]
        for i in np.nonzero(np.isin(kind, kinds))[0]:
            out.update(int(a) >> 7 for a in chunk.addrs[chunk.addr_off[i]:chunk.addr_off[i + 1]])
    return out


def test_a_kernel_finds_what_the_previous_one_wrote_in_a_warm_l2_only(h100):
    from simfront.sim.model.decode import K_LOAD_GLOBAL, K_STORE_GLOBAL

    # Two consecutive elementwise kernels of the tiny Mamba-1 step: the second reads the
    # tensor the first wrote (the same device addresses: one captured iteration).
    a, b = _tiny("kernel-266"), _tiny("kernel-267")
    written, read = _lines(a, [K_STORE_GLOBAL]), _lines(b, [K_LOAD_GLOBAL])
    assert len(written & read) > 0.9 * len(read)

    cold = simulate_kernel(b, h100, cache=False)
    carry = L2Carry.empty(h100)
    first = simulate_kernel(a, h100, cache=False, l2=carry)
    warm = simulate_kernel(b, h100, cache=False, l2=carry)
    assert first["sim_l2_start"] == "warm" and cold["sim_l2_start"] == "cold"
    assert cold["sim_l2_carried_sectors"] == 0 and cold["dram_read_bytes"] > 0
    # every sector it reads was left by the first kernel
    assert warm["sim_l2_carried_sectors"] * 32 >= cold["dram_read_bytes"]
    assert warm["dram_read_bytes"] == 0
    assert warm["time_us"] < cold["time_us"]  # L2 hits, not DRAM latency


def test_a_footprint_larger_than_the_l2_evicts_what_came_before(h100):
    # Between the two, a 1.6 GB write-only elementwise kernel of the paper-size Mamba-2 step
    # (8 of its 4.8 M blocks traced): its untraced blocks' lines fill the L2 many times over
    # and push out the first kernel's output, which is then written back.
    a, b = _tiny("kernel-266"), _tiny("kernel-267")
    big = TraceSet(TRACES / "mamba2_lm-paper").kernel("kernel-53425")
    carry = L2Carry.empty(h100)
    simulate_kernel(a, h100, cache=False, l2=carry)
    mid = simulate_kernel(big, h100, cache=False, l2=carry)
    after = simulate_kernel(b, h100, cache=False, l2=carry)
    cold = simulate_kernel(b, h100, cache=False)
    assert mid["sim_sample_scale"] > 1000
    assert mid["dram_write_bytes"] > 1e9  # its writes go to DRAM, as they do cold
    assert after["sim_l2_carried_sectors"] == 0
    assert after["dram_read_bytes"] == cold["dram_read_bytes"]
    assert (carry.state.tags == UNTRACED).mean() > 0.99


def test_a_sampled_kernels_untraced_blocks_count_against_the_l2(h100):
    from simfront.gpu import with_variants

    # The embedding gather (8 of 8192 blocks traced) and the layer norm that reads its
    # output: the grid reads and writes about 50 MB, which the H100's 50 MiB L2 about holds,
    # so the first blocks' output is still there for the layer norm's first blocks; half of
    # it set aside, the rest of the grid pushes it out.
    ts = TraceSet(TRACES / "mamba2_lm-paper")
    a, b = ts.kernel("kernel-53375"), ts.kernel("kernel-53376")
    assert a.header.sampled_blocks == (8, 8192)
    carried = {}
    for size in ("50 MiB", "25 MiB"):
        gpu = with_variants(h100, l2_size=size)
        carry = L2Carry.empty(gpu)
        simulate_kernel(a, gpu, cache=False, l2=carry)
        carried[size] = simulate_kernel(b, gpu, cache=False, l2=carry)
    cold = simulate_kernel(b, h100, cache=False)
    assert carried["50 MiB"]["dram_read_bytes"] < 0.5 * cold["dram_read_bytes"]
    assert carried["25 MiB"]["sim_l2_carried_sectors"] == 0
    assert carried["25 MiB"]["dram_read_bytes"] == cold["dram_read_bytes"]


def test_untraced_lines_push_out_the_oldest_and_write_back_their_dirt():
    # One set of four ways: lines 10 (oldest, 2 dirty sectors), 11 (clean), one empty way.
    st = CacheState.make(1, 1, 4, 0)
    st.tags[0, 0, :3] = [10, 11, 12]
    st.stamp[0, 0, :3] = [1, 2, 3]
    st.dirty[0, 0, :3] = [0b11, 0, 0b1]
    st.clock[0] = 3
    # two untraced lines, each dirty in one sector: the empty way, then line 10
    assert add_untraced(st, 2, np.array([0b1], np.uint8)) == 2
    assert sorted(st.tags[0, 0].tolist()) == [UNTRACED, UNTRACED, 11, 12]
    # six more: they push out all four (the two untraced lines before them and line 12
    # have a dirty sector each), and the set holds only four of the six
    assert add_untraced(st, 6, np.array([0b1], np.uint8)) == 2 + 1 + 2
    assert (st.tags[0, 0] == UNTRACED).all()


def test_the_backend_runs_a_step_warm_on_request(h100, tmp_path):
    from simfront.sim.backend import SimJob, get_backend

    d = TRACES / "mamba1_lm-tiny"
    sel = ("kernel-265*", "kernel-266*", "kernel-267*")
    recs = {}
    for mode in ("cold", "warm"):
        res = get_backend("model").run(SimJob(mode, d, h100, tmp_path / mode, kernels=sel,
                                              options={"l2": mode}))
        assert res.ok, res.reason
        assert res.provenance["l2"] == mode
        recs[mode] = res.records
    assert [r["sim_l2_start"] for r in recs["warm"]] == ["warm"] * 3
    # the first kernel starts empty either way; the later ones find their inputs
    assert recs["warm"][0]["time_us"] == recs["cold"][0]["time_us"]
    assert recs["warm"][2]["dram_read_bytes"] < recs["cold"][2]["dram_read_bytes"]
    bad = get_backend("model").run(SimJob("bad", d, h100, tmp_path / "bad", kernels=sel,
                                          options={"l2": "lukewarm"}))
    assert not bad.ok and "options.l2" in bad.reason

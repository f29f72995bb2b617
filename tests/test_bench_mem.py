"""The memory microbenchmarks' shipped H100/H200 data (bench/data/device/mem_rows/) and the
model constants fitted on them (bench/bench_mem.py): the fit must give the constants the
model uses, and the H200, held out, must land where the model says."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.params import DEFAULT_PARAMS

sys.path.insert(0, str(REPO_ROOT / "bench"))
bench_mem = pytest.importorskip("bench_mem")

#: Stores at the L1's 4 sectors a clock, with no floor an instruction: what an SM's stores
#: would cost without a store path of their own.
AT_L1_RATE = {"stores.sectors_per_clk": 4.0, "stores.instr_clk": 0.0}


@pytest.fixture(scope="module")
def runs():
    return bench_mem.runs()


def test_every_run_pairs_with_its_ncu_records(runs):
    assert {"mem_rows_h100", "mem_rows_h100_sms64", "mem_rows_h100_sms32",
            "mem_rows_h200", "mem_rows_h100_writes"} <= set(runs)
    for name, (rows, chase) in runs.items():
        assert len(rows) == (0 if name.endswith("_writes") else 38)
        if "miss" in rows and len(rows):
            # one read of each row when W is small, three when it is large (the rows that
            # also write their last pass miss from 16 MB on)
            small, large = rows[rows.w_mb < 13], rows[rows.w_mb > 70]
            assert np.allclose(small.reads, 1.0, atol=0.01), name
            assert np.allclose(large.reads, 3.0, atol=0.01), name
    assert len(runs["mem_rows_h100"][1]) == 15
    assert len(runs["mem_rows_h100_writes"][1]) == 30


def test_a_last_pass_that_writes_shrinks_what_the_re_reads_find(runs):
    # The rows whose third pass writes them out (a softmax's): the others' output passes
    # through the L2 between two reads of a line, and half the re-reads miss at about 3/4
    # of the working set that only reads, on the whole GPU and on 64 SMs alike.
    for plain, written in (("mem_rows_h100", "mem_rows_h100_rowsw0"),
                           ("mem_rows_h100_sms64", "mem_rows_h100_rowsw64")):
        a, b = runs[plain][0], runs[written][0]
        assert 0.65 < bench_mem.knee(b) / bench_mem.knee(a) < 0.82
        a, b = a[a.per_sm == 2], b[b.per_sm == 2]
        assert float(b[b.w_mb.round() == 32].miss.iloc[0]) > 0.5 > float(
            a[a.w_mb.round() == 32].miss.iloc[0])


def test_the_l2_share_private_rows_find_is_the_fit_and_holds_on_the_h200(runs):
    h100 = load_gpu("h100")
    h200 = load_gpu("h100-as-h200")
    rows = [r for k, (r, _) in runs.items()
            if k.startswith("mem_rows_h100") and bench_mem.reads_only(k) and "miss" in r
            and len(r)]
    import pandas as pd

    fitted = bench_mem.fit_capacity(pd.concat(rows), h100.l2.size.bytes, h100)
    assert fitted == pytest.approx(DEFAULT_PARAMS.l2.private_capacity, abs=0.006)
    # The knee does not move with the SMs a green context leaves out.
    for k in ("mem_rows_h100_sms64", "mem_rows_h100_sms32"):
        a = runs["mem_rows_h100"][0]
        b = runs[k][0]
        assert np.abs(a.miss.to_numpy() - b.miss.to_numpy()).max() < 0.15
    # Held out: the H200's 60 MiB L2, where half the re-reads miss.
    hw_knee = bench_mem.knee(runs["mem_rows_h200"][0])
    model = bench_mem.model_knee(h200.l2.size.bytes, DEFAULT_PARAMS.l2.private_capacity, h200)
    assert model == pytest.approx(hw_knee, abs=2.0)


def test_the_models_knee_for_rows_whose_last_pass_writes_is_the_h100s(runs):
    # Held out of every fit: rows whose last pass writes them out keep half their re-reads
    # at 29-30 MB on the H100 (all SMs, 64 SMs), not 40; the model, counting the kernel's
    # 4/3 bytes moved per byte read in the reuse distance, puts its knee there too.
    h100 = load_gpu("h100")
    share = DEFAULT_PARAMS.l2.private_capacity
    reads = bench_mem.knee(runs["mem_rows_h100"][0])
    model = bench_mem.model_knee(h100.l2.size.bytes, share / bench_mem.ROWSW_TRAFFIC, h100)
    for k in ("mem_rows_h100_rowsw0", "mem_rows_h100_rowsw64"):
        hw = bench_mem.knee(runs[k][0])
        assert hw < 0.8 * reads
        assert model == pytest.approx(hw, abs=1.5)
    table = "\n".join(bench_mem.rows_with_writes_table(runs, h100, share))
    assert f"{model:.1f} MB" in table


def test_the_dram_queue_constants_are_the_fit_of_the_chase(runs):
    import pandas as pd

    h100 = load_gpu("h100")
    chase = bench_mem.chase_load(pd.concat([runs["mem_rows_h100"][1],
                                            runs["mem_rows_h100_writes"][1]]), h100)
    cap = DEFAULT_PARAMS.dram.queue_max_load
    q = bench_mem.fit_queue(chase, cap)
    assert q == pytest.approx(DEFAULT_PARAMS.dram.queue_latency, abs=1.0)
    # the chase's own write weight; the model's (1.0) is fitted on the logits cast with a
    # block's stores holding back the next block's loads, which the chase's wait over its
    # lightest launch leaves out (bench_fewer_sms.py --fit)
    w = bench_mem.fit_write_weight(chase, DEFAULT_PARAMS.dram.queue_latency, cap)
    assert w == pytest.approx(3.3, abs=0.051)
    assert DEFAULT_PARAMS.dram.queue_write_weight < w
    # latency rises with load: the most loaded launch waits 3x the least loaded one
    reads = chase[chase.writes == 0].sort_values("load")
    assert reads.ns.iloc[-1] > 3 * reads.ns.iloc[0]
    # and writes make reads wait: at about the same DRAM traffic (1.8-1.9 TB/s), a step
    # whose warps also write waits twice as long
    r = chase[(chase.writes == 0) & (chase.warps_per_sm == 64) & (chase.ilp == 1)]
    w1 = chase[(chase.writes == 1) & (chase.warps_per_sm == 64) & (chase.ilp == 1)]
    assert float(w1.queue_ns.iloc[0]) > 3 * float(r.queue_ns.iloc[0])


def test_the_models_sm_side_holds_on_the_rows_traces_at_every_sm_count(runs):
    # The rows kernel traced in the shapes of 132, 64 and 32 SMs (8 blocks a launch), timed
    # by the model against ncu's records of the same launches: while the re-reads hit the
    # L2, the model's time is the H100's within 12%, on every SM count alike.
    h100 = load_gpu("h100")
    t = bench_mem.model_on_traces(runs, h100, keep=lambda w: round(w) in (8, 20, 28))
    rows = t[t.kind == "rows"]
    assert sorted(rows.sms.unique()) == [32, 64, 132]
    assert len(rows) == 9
    assert (rows.hw_reads < 1.02).all() and (rows.model_reads < 1.05).all()
    assert rows.ratio.between(0.85, 1.02).all()
    for _, g in rows.groupby(rows.w_mb.round()):
        assert g.ratio.max() - g.ratio.min() < 0.08
    # Rows whose last pass writes are the model's miss (a store delays the warp's next load
    # on the H100, not in the model): slower on the H100 than the model makes them.
    writes = t[(t.kind == "rowsw") & (t.hw_reads < 1.05)]
    assert len(writes) and (writes.ratio < 0.9).all()


def test_what_a_store_costs_the_next_load_is_the_fit_of_the_chase(runs):
    import pandas as pd

    # One line written per step makes the lightest chase wait 185 ns longer, two 302: 157 ns
    # a line (least squares), what ``store_load_ns`` would add per store.
    h100 = load_gpu("h100")
    chase = bench_mem.chase_load(pd.concat([runs["mem_rows_h100"][1],
                                            runs["mem_rows_h100_writes"][1]]), h100)
    assert bench_mem.fit_store_load(chase) == pytest.approx(157, abs=1.5)
    # With it, the next block's first loads wait for the stores a block left: the rows whose
    # last pass writes, on 64 SMs at 8 MB, take longer in the model; rows that only read do
    # not move (their one store per block is not after a load of theirs that the next block
    # would pay for). With stores at the L1's 4 sectors a clock: the store path's queue
    # already holds those loads back.
    off = DEFAULT_PARAMS.with_(**AT_L1_RATE, **{"stores.load_ns": 0.0})
    on = off.with_(**{"stores.load_ns": 157.0})
    keep = lambda w: round(w) == 8  # noqa: E731
    base = bench_mem.model_on_traces(runs, h100, off, keep=keep).set_index(["kind", "sms"])
    opt = bench_mem.model_on_traces(runs, h100, on, keep=keep).set_index(["kind", "sms"])
    assert opt.model_us[("rowsw", 64)] > 1.015 * base.model_us[("rowsw", 64)]
    assert opt.model_us[("rows", 64)] == pytest.approx(base.model_us[("rows", 64)], rel=0.02)


def test_an_sms_store_path_limits_stores_on_fewer_sms():
    # Stores into L2-resident lines: on the whole GPU the L2's input port is nearly full and
    # each SM gets 0.66 sectors a clock; on 64 and 32 SMs of a green context the port has
    # room, and each SM still sends only ~1.07: its own store path.
    rates = {sms: bench_mem.port_rates(stem).set_index("kind")
             for sms, stem in ((132, "l2_ports_h100"), (64, "l2_ports_h100_sms64"),
                               (32, "l2_ports_h100_sms32"))}
    store = {sms: float(r.per_sm["store"]) for sms, r in rates.items()}
    assert float(rates[132].port["store"]) > 75
    assert float(rates[32].port["store"]) < 40
    assert store[64] == pytest.approx(store[32], rel=0.05)
    assert store[32] > 1.4 * store[132]
    assert store[32] == pytest.approx(1.07, abs=0.02)
    # stores of 1 or 2 sectors a line take longer per instruction than whole lines
    for kind in ("store1", "store2"):
        assert float(rates[32].requests[kind]) < 0.8 * float(rates[32].requests["store"])
    # loads do not grow per SM: their rate here is the warps', not a port's
    assert float(rates[32].per_sm["load"]) == pytest.approx(float(rates[132].per_sm["load"]),
                                                            rel=0.1)


def test_the_store_path_slows_the_rows_that_write_on_64_sms(runs):
    # The store path against stores at the L1's rate: the rows whose last pass writes take
    # longer on 64 SMs, toward the H100's time; the rows that only read do not.
    h100 = load_gpu("h100")
    keep = lambda w: round(w) == 8  # noqa: E731
    off = DEFAULT_PARAMS.with_(**AT_L1_RATE)
    base = bench_mem.model_on_traces(runs, h100, off, keep=keep).set_index(["kind", "sms"])
    on = bench_mem.model_on_traces(runs, h100, keep=keep).set_index(["kind", "sms"])
    assert on.model_us[("rowsw", 64)] > 1.1 * base.model_us[("rowsw", 64)]
    assert on.ratio[("rowsw", 64)] < 1.0  # still not slower than the H100
    assert on.model_us[("rows", 64)] == pytest.approx(base.model_us[("rows", 64)], rel=0.02)


def _assert_the_params(fit: dict, tolerance: dict[str, tuple[str, float]]) -> None:
    """Each fitted constant (the fit's name: the model's setting, tolerance) within its
    tolerance of the one the model uses."""
    now = DEFAULT_PARAMS.as_dict()
    for name, (setting, tol) in tolerance.items():
        assert fit[name] == pytest.approx(now[setting], abs=tol), name


@pytest.fixture(scope="module")
def shapes():
    return {sms: bench_mem.store_shape_rates(stem, DEFAULT_PARAMS.stores.min_sectors)
            for stem, sms in bench_mem.STORE_RUNS}


def test_the_store_path_constants_are_the_fit_of_the_store_shapes(shapes):
    h100 = load_gpu("h100")
    fit = bench_mem.fit_store_path(shapes[32], shapes[132], h100)
    _assert_the_params(fit, {"store_sectors_per_clk": ("stores.sectors_per_clk", 0.01),
                             "store_instr_clk": ("stores.instr_clk", 0.1),
                             "l2_write_share": ("l2.write_share", 0.01)})
    # the port in slots is one rate over every shape that fills it; in sectors it is not
    w = shapes[132]
    full = w[w.port >= 85]
    assert set(full["shape"]) >= {"w4", "w16", "scat"}
    per_slot = full.slots * full.sms / full.clk / (full.port / 100)
    per_sector = full.lines * full.sectors_per_line * full.sms / full.clk / (full.port / 100)
    assert per_slot.max() / per_slot.min() < 1.02
    assert per_sector.max() / per_sector.min() > 1.8


def test_a_store_of_one_or_two_sectors_costs_an_sm_a_whole_lines_time(shapes):
    few = shapes[32].set_index("shape")
    for small in ("h2", "b1", "s1", "s2", "s3", "h2x2"):
        assert few.clk[small] > 0.75 * few.clk["w4"], small
    # scattered lanes: two slots a line, not one sector
    assert few.clk["scat"] == pytest.approx(16 * few.clk["w4"], rel=0.1)
    assert few.clk["scat8"] == pytest.approx(few.clk["w16"], rel=0.05)


def test_the_models_store_path_follows_the_h100_on_every_shape_and_sm_count(shapes):
    h100 = load_gpu("h100")
    errs, model = [], {}
    for sms, t in shapes.items():
        model[sms] = bench_mem.store_path_clk(t.slots.to_numpy(float),
                                              np.full(len(t), float(sms)), DEFAULT_PARAMS, h100)
        errs += list(np.abs(model[sms] / t.clk.to_numpy() - 1))
    assert len(errs) == 36
    # on the whole GPU the port sets the time of the shapes that fill it, as on the H100
    full = (shapes[132].port >= 85).to_numpy()
    assert (model[132][full] > 1.7 * model[32][full]).all()
    assert (shapes[132].clk[full] > 1.7 * shapes[32].clk[full]).all()
    assert np.mean(errs) < 0.12 and np.max(errs) < 0.3


def test_the_model_times_the_store_shapes_own_traces_as_the_h100(shapes):
    # The 12 shapes traced (8 blocks of each launch) in the grids of 132, 64 and 32 SMs:
    # the model's SM side, store path on, against ncu's clocks per store instruction.
    h100 = load_gpu("h100")
    on = bench_mem.model_on_store_traces(h100)
    assert len(on) == 36 and sorted(on.sms.unique()) == [32, 64, 132]
    assert (on.hw_clk.to_numpy() == pd.concat([shapes[s] for s in (132, 64, 32)]).clk.to_numpy()).all()
    assert float(np.abs(on.store_ratio - 1).mean()) < 0.12
    assert on.store_ratio.between(0.75, 1.35).all()
    # stores at the L1's rate: scattered lanes four times too fast, vector lanes twice
    off = bench_mem.model_on_store_traces(h100, DEFAULT_PARAMS.with_(**AT_L1_RATE))
    few = off[off.sms == 32].set_index("shape")
    assert few.store_ratio["scat"] < 0.3 and few.store_ratio["w16"] < 0.55


def test_the_store_shapes_repeat_in_another_device_call():
    # the same program and ncu metrics in a later H100 call: every shape within 2%
    assert bench_mem.repeat_spread() < 0.02


@pytest.fixture(scope="module")
def loads():
    return {sms: bench_mem.load_shape_rates(stem, sms) for stem, sms in bench_mem.LOAD_RUNS}


def test_the_load_path_constants_are_the_fit_of_the_load_shapes(loads):
    h100 = load_gpu("h100")
    fit = bench_mem.fit_load_path(loads[32], loads[132], h100)
    _assert_the_params(fit, {"l2_sm_sectors_per_clk": ("l1.miss_sectors_per_clk", 0.02),
                             "load_instr_clk": ("l1.load_instr_clk", 0.05),
                             "l2_read_share": ("l2.read_share", 0.01),
                             "l2_read_request_share": ("l2.read_request_share", 0.01)})
    # the L1 holds none of the target's lines, the L2 most of them
    for t in loads.values():
        assert t.l1_hit.max() < 0.02
        assert t[t["shape"].str.startswith("scat")].l2_hit.min() > 0.9


def test_an_sms_l1_takes_a_line_a_clock_hit_or_miss(loads):
    few = loads[32].set_index("shape")
    for shape in ("scat", "scat16", "scat8", "scat16x2"):
        assert few.clk[shape] == pytest.approx(few.lines[shape], rel=0.1), shape
    # half of scat's sectors hitting the L1 (the first run's sequential walk) changes nothing
    walk = bench_mem.load_shape_rates("load_shapes_h100_walk_sms64", 64).set_index("shape")
    now = loads[64].set_index("shape")
    assert walk.l1_hit["scat"] > 0.4 and now.l1_hit["scat"] < 0.02
    assert walk.clk["scat"] == pytest.approx(now.clk["scat"], rel=0.03)


def test_the_models_load_path_follows_the_h100_on_every_shape_and_sm_count(loads):
    h100 = load_gpu("h100")
    errs, errs_old = [], []
    for sms, t in loads.items():
        full = t[t.lanes == 32]
        hw = full.clk.to_numpy()
        errs += list(np.abs(bench_mem.load_path_clk(full, DEFAULT_PARAMS, h100) / hw - 1))
        errs_old += list(np.abs(full.sectors.to_numpy(float) / h100.sm.l1.l1_banks / hw - 1))
    assert len(errs) == 33
    assert np.mean(errs) < 0.08 and np.max(errs) < 0.2
    assert np.mean(errs_old) > 0.4  # sectors at the L1's rate: scattered loads 4x too fast


def test_the_model_times_the_scattered_loads_own_traces_as_the_h100():
    # 8 blocks of each launch traced in the grid of 32 SMs: SM 0's clocks per load
    on = bench_mem.model_on_load_traces(load_gpu("h100")).set_index("shape")
    assert len(on) == 13
    scat = on[on.index.str.startswith("scat")]
    assert scat.ratio.between(0.9, 1.1).all()


def test_the_load_shapes_repeat_in_another_device_call():
    # the same kernels and ncu metrics in a later H100 call: every shape within 3%
    assert bench_mem.load_repeat_spread() < 0.03

"""Issue-model runs reused across a layer's repeated launches (``reuse``, ``simulate.on_grid``),
on two layers' launches of one elementwise kernel of the shipped 130M Mamba2 step."""

from __future__ import annotations

import numpy as np
import pytest

import simfront.sim.model.simulate as S
from simfront.core import jit
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import reuse
from simfront.traces.reader import KernelTrace

SET = REPO_ROOT / "traces" / "mamba2_lm-130m"
# the same elementwise kernel in two layers (kernel ids 20 apart, one layer's launches)
LAYERS = ("kernel-221282.traceg.xz", "kernel-221302.traceg.xz")


@pytest.fixture(scope="module")
def preps():
    gpu = load_gpu("h100")
    return gpu, [S.prepare_kernel(KernelTrace(SET / f), gpu) for f in LAYERS]


@pytest.fixture
def count_runs(monkeypatch, tmp_path):
    """Issue-model runs made, from empty memory and an empty model cache on disk."""
    jit.first_use(S.MODEL)  # the process's warm-up runs are not the test's
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    runs = [0]
    inner = S.run_sm

    def counted(*args):
        runs[0] += 1
        return inner(*args)

    monkeypatch.setattr(S, "run_sm", counted)
    monkeypatch.setattr(reuse, "_row_sets", type(reuse._row_sets)())
    return runs


def test_two_layers_share_rows_but_not_their_traffic_totals(preps):
    _, (a, b) = preps
    assert reuse.row_set(a) is reuse.row_set(b)
    assert not np.array_equal(a.totals, b.totals)
    # they differ in the last digits only, which no physics tells apart
    np.testing.assert_allclose(a.totals, b.totals, rtol=1e-3)


def test_the_second_layer_reuses_every_run_of_the_first(preps, count_runs):
    gpu, (a, b) = preps
    first = S.time_prepared(a, gpu)
    made = count_runs[0]
    # its stores' wait and its DRAM queue were searched: several runs
    assert made >= 3
    second = S.time_prepared(b, gpu)
    assert count_runs[0] == made
    assert second.t_sm == first.t_sm
    np.testing.assert_array_equal(second.stall, first.stall)


def test_off_the_grid_the_second_layer_runs_again(preps, count_runs, monkeypatch):
    gpu, (a, b) = preps
    monkeypatch.setattr(S, "on_grid", lambda lat: lat)
    monkeypatch.setattr(S, "_significant", lambda x, digits=S.SHARE_DIGITS: x)
    S.time_prepared(a, gpu)
    made = count_runs[0]
    S.time_prepared(b, gpu)
    assert count_runs[0] > made


def test_latencies_land_on_the_grid():
    for lat in (770.601, 785.925, 1083.87, 0.0):
        g = S.on_grid(lat)
        assert abs(g - lat) <= S.LATENCY_STEP / 2
        assert g / S.LATENCY_STEP == pytest.approx(round(g / S.LATENCY_STEP))
    assert S._significant(0.012345) == pytest.approx(0.0123)
    assert S._significant(81.87) == pytest.approx(81.9)


@pytest.fixture
def disk(tmp_path, monkeypatch):
    """A model cache of the test's own, and the process's memory of row sets emptied: what
    a second process would find."""
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    monkeypatch.delenv(reuse.DISK_CACHE_ENV, raising=False)
    return tmp_path / "runs"


def _same(a, b):
    assert a.t_sm == b.t_sm
    for name in ("stall", "pipe_busy", "issued_pipe"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.warp_cycles == b.warp_cycles


def test_another_process_reads_the_runs_from_disk(preps, count_runs, disk):
    gpu, (a, _) = preps
    first = S.time_prepared(a, gpu)
    made = count_runs[0]
    assert made >= 3 and len(list(disk.glob("*.runs"))) == 1
    reuse._row_sets.clear()  # a new process: nothing in memory
    second = S.time_prepared(a, gpu)
    assert count_runs[0] == made
    _same(second, first)
    # another question on the same rows (the H100 with half its vector pipes) is run
    S.time_prepared(a, load_gpu("h100-vechalf"))
    assert count_runs[0] > made


def test_a_torn_record_costs_a_run_not_a_wrong_answer(preps, count_runs, disk):
    gpu, (a, _) = preps
    first = S.time_prepared(a, gpu)
    made = count_runs[0]
    (path,) = disk.glob("*.runs")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 7])  # the last record cut short, as by a crash
    reuse._row_sets.clear()
    again = S.time_prepared(a, gpu)
    assert count_runs[0] == made + 1  # only the torn record's run is made again
    _same(again, first)
    # a record whose bytes changed is not read, nor anything after it
    path.write_bytes(whole[:40] + bytes([whole[40] ^ 0xFF]) + whole[41:])
    reuse._row_sets.clear()
    again = S.time_prepared(a, gpu)
    assert count_runs[0] == 2 * made + 1
    _same(again, first)


def test_runs_of_other_model_code_are_not_read(preps, count_runs, disk, monkeypatch):
    gpu, (a, _) = preps
    S.time_prepared(a, gpu)
    made = count_runs[0]
    monkeypatch.setattr(reuse, "_source_hash", "another version of the model")
    reuse._row_sets.clear()
    S.time_prepared(a, gpu)
    assert count_runs[0] == 2 * made
    assert len(list(disk.glob("*.runs"))) == 2


def test_no_disk_cache_keeps_runs_in_memory(preps, count_runs, disk, monkeypatch):
    gpu, (a, _) = preps
    monkeypatch.setenv(reuse.DISK_CACHE_ENV, "off")
    S.time_prepared(a, gpu)
    assert not disk.exists()


def test_runs_kept_in_memory_neither_read_nor_write_the_disk(preps, count_runs, disk):
    """The model's warm-up: also for rows whose file this process looked up before it."""
    gpu, (a, _) = preps
    S.time_prepared(a, gpu)
    made = count_runs[0]
    (path,) = disk.glob("*.runs")
    size = path.stat().st_size
    reuse._row_sets.clear()
    S.time_prepared(a, gpu)  # read back: the row set knows its file now
    assert count_runs[0] == made and reuse.row_set(a).path == path
    with reuse.kept_in_memory():
        S.time_prepared(a, load_gpu("h100-vechalf"))  # new questions, run
        assert count_runs[0] > made
        assert path.stat().st_size == size  # and not written
        before = count_runs[0]
        reuse._row_sets.clear()
        S.time_prepared(a, gpu)
        assert count_runs[0] == before + made  # nor read

"""Prepared kernels on disk (``sim.model.api``): stored with narrowed columns, read back as
the issue model was compiled for, and timed to the same record as a fresh trace pass."""

from __future__ import annotations

import numpy as np

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import api, reuse
from simfront.sim.model.issue import ROW_TYPES
from simfront.sim.model.simulate import narrowed
from simfront.traces.reader import KernelTrace

#: a sampled launch of the tiny Mamba2 step (layer norm backward, 32 of 528 blocks traced)
KERNEL = REPO_ROOT / "traces" / "mamba2_lm-tiny" / "kernel-96381.traceg.xz"


def _fresh_process_memory(monkeypatch):
    monkeypatch.setattr(api, "_prepared", type(api._prepared)())
    monkeypatch.setattr(api, "_unsaved", set())


def test_a_kernel_read_back_from_disk_times_to_the_same_record(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    monkeypatch.delenv(reuse.DISK_CACHE_ENV, raising=False)
    _fresh_process_memory(monkeypatch)
    gpu = load_gpu("h100")
    first = api.simulate_kernel(KernelTrace(KERNEL), gpu)
    files = list((tmp_path / "prepared").glob("*.pkl"))
    assert len(files) == 1

    _fresh_process_memory(monkeypatch)
    calls = []
    real = api.prepare_kernel
    monkeypatch.setattr(api, "prepare_kernel", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = api.simulate_kernel(KernelTrace(KERNEL), gpu)
    assert calls == []  # from disk, no trace pass
    first.pop("sim_wall_s"), again.pop("sim_wall_s")
    assert again == first


def test_columns_are_stored_narrow_and_read_back_exactly(tmp_path, monkeypatch):
    monkeypatch.delenv(reuse.DISK_CACHE_ENV, raising=False)
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    _fresh_process_memory(monkeypatch)
    prep = api._prepared_kernel(KernelTrace(KERNEL), load_gpu("h100"), None,
                                api.DEFAULT_PARAMS)
    (path,) = (tmp_path / "prepared").glob("*.pkl")
    for name, t in ROW_TYPES.items():  # kept in memory in the issue model's types
        assert prep.cols[name].dtype == t, name
    narrow = narrowed(prep.cols)
    stored = sum(a.nbytes for a in narrow.values())
    assert stored * 1.5 < sum(a.nbytes for a in prep.cols.values())  # narrower on disk
    assert narrow["dst"].dtype.itemsize <= 2 and narrow["level"].dtype == np.int8
    back = api._from_disk(path)
    for name, a in prep.cols.items():
        assert back.cols[name].dtype == a.dtype, name
        np.testing.assert_array_equal(back.cols[name], a, err_msg=name)


def test_a_torn_or_foreign_file_is_prepared_again(tmp_path):
    torn = tmp_path / "torn.pkl"
    torn.write_bytes(b"\x80\x05garbage")
    assert api._from_disk(torn) is None
    assert api._from_disk(tmp_path / "absent.pkl") is None

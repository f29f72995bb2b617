"""The model's disk caches (prepared kernels, issue-model runs, decoded traces) stay under
their limit: the least recently written files go first, and a sweep's worker trims them
before every model job."""

from __future__ import annotations

import os

from simfront.core.disk_cache import max_bytes, trim
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import write_sweep


def _fill(directory, sizes, suffix=".pkl"):
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, size in enumerate(sizes):
        p = directory / f"k{i}{suffix}"
        p.write_bytes(b"x" * size)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # k0 oldest
        paths.append(p)
    return paths


def test_trim_deletes_the_oldest_files_until_the_rest_fit(tmp_path):
    paths = _fill(tmp_path / "prepared", [400, 300, 200, 100])
    (tmp_path / "prepared" / "notes.txt").write_bytes(b"y" * 5000)  # not the cache's
    freed = trim(tmp_path / "prepared", limit=350)
    assert freed == 700
    assert [p.exists() for p in paths] == [False, False, True, True]
    assert (tmp_path / "prepared" / "notes.txt").exists()
    assert trim(tmp_path / "prepared", limit=350) == 0
    assert trim(tmp_path / "absent", limit=0) == 0


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SIMFRONT_CACHE_MAX_GB", "0.5")
    assert max_bytes() == 1 << 29
    monkeypatch.setenv("SIMFRONT_CACHE_MAX_GB", "lots")
    assert max_bytes() == 20 << 30
    monkeypatch.delenv("SIMFRONT_CACHE_MAX_GB")
    assert max_bytes() == 20 << 30


def test_a_sweep_job_leaves_the_prepared_cache_under_its_limit(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SIMFRONT_CACHE", str(cache))
    monkeypatch.setenv("SIMFRONT_CACHE_MAX_GB", str(3000 / (1 << 30)))
    old = _fill(cache / "prepared", [2000, 2000, 2000])
    chunks = _fill(cache / "decoded", [2000, 2000, 2000], ".chunks")
    runs = _fill(cache / "runs", [2000, 2000, 2000], ".runs")
    s = Sweep.open(write_sweep(tmp_path, "trim", backends="model"))
    s.run(progress=False)
    # trimmed before the job: the two oldest went, the job's own kernels were written after
    assert not any(p.exists() for p in old[:2]) and old[2].exists()
    assert list((cache / "prepared").glob("*.pkl")) != [old[2]]
    # the decoded traces' folder too, under the same limit of its own
    assert [p.exists() for p in chunks] == [False, False, True]
    assert len(list((cache / "decoded").glob("*.chunks"))) > 1
    # and the issue-model runs'
    assert [p.exists() for p in runs] == [False, False, True]
    assert len(list((cache / "runs").glob("*.runs"))) > 1

"""The results HDF5 store: layout, round trip of real parsed records, atomicity, export, CLI."""

from __future__ import annotations

import math

import h5py
import pandas as pd
import pytest
from click.testing import CliRunner

from simfront.cli import cli
from simfront.core.errors import InputError
from simfront.sim.accelsim import parse as acs
from simfront.stats import h5store, schema

from conftest import ACCELSIM_LOGS

BASELINE = ACCELSIM_LOGS / "selective_scan_fwd_baseline.out.xz"
TWO_CRASH = ACCELSIM_LOGS / "two_kernels_fwd_then_bwd_crash.out.xz"


def _job(job_id: str, path) -> tuple[list[dict], dict]:
    parsed = acs.parse_file(path)
    recs = acs.kernel_records(parsed)
    for r in recs:
        r.update(job_id=job_id, backend="accelsim", config="h100-wip")
    job = {"job_id": job_id, "backend": "accelsim", "ok": parsed.ok, "reason": parsed.failure,
           "config": "h100-wip", "wall_s": 81.0, "n_kernels": len(recs),
           "provenance": {"log": str(path.name), "unknown": parsed.n_unknown,
                          "big": {f"kernel-{i}": list(range(20)) for i in range(1000)}}}
    return recs, job


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    r1, j1 = _job("job-a", BASELINE)
    r2, j2 = _job("job-b", TWO_CRASH)
    path = tmp_path_factory.mktemp("h5") / "sweep.h5"
    h5store.write_results(path, r1 + r2, [j1, j2], {"sweep": "l2-size", "configs": ["a", "b"]})
    return path, r1 + r2


def test_layout_and_attributes(results):
    path, recs = results
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "simfront-results"
        assert f.attrs["format_version"] == h5store.FORMAT_VERSION
        assert f["records"].attrs["n_rows"] == 3
        assert f["records/cycles"].attrs["unit"] == "cycles"
        assert f["records/dram_read_bytes"].attrs["unit"] == "bytes"
        assert f["records/stall_w0_idle"].attrs["doc"] == schema.OPEN_PREFIXES["stall_"]
        assert f["jobs/ok"].dtype == bool
    attrs = h5store.read_attrs(path)
    assert attrs["sweep"] == "l2-size" and attrs["configs"] == ["a", "b"]
    prov = h5store.read_provenance(path, "job-b")
    assert prov["config"] == "h100-wip" and prov["log"] == TWO_CRASH.name
    assert prov["unknown"] == 0 and len(prov["big"]) == 1000


def test_records_round_trip(results):
    path, recs = results
    df = h5store.read_records(path)
    assert len(df) == 3
    assert list(df["job_id"]) == ["job-a", "job-b", "job-b"]
    assert list(df["complete"]) == [True, True, False]
    base = df.iloc[0]
    assert base["cycles"] == 56068 and base["thread_instructions"] == 11368448
    assert base["accelsim_gpu_ipc"] == pytest.approx(202.7618)
    for col in ("stall_w0_idle", "l2_global_acc_r_hit", "l1d_global_acc_r_sector_miss"):
        assert base[col] == recs[0][col]
    # the failed kernel has identity columns only: numbers are missing, not zero
    assert math.isnan(df.iloc[2]["cycles"])
    assert df.iloc[2]["kernel_id"] == 35643
    assert df["kernel_uid"].dtype.kind == "i"


def test_jobs_table(results):
    path, _ = results
    jobs = h5store.read_jobs(path)
    assert list(jobs["ok"]) == [True, False]
    assert "REDG" in jobs.iloc[1]["reason"]
    assert '"unknown": 0' in jobs.iloc[0]["provenance"]


def test_append_replaces_a_rerun_job(results, tmp_path):
    path, _ = results
    copy = tmp_path / "s.h5"
    copy.write_bytes(path.read_bytes())
    r, j = _job("job-b", BASELINE)
    h5store.append_results(copy, r, [j], {"note": "rerun"})
    df = h5store.read_records(copy)
    assert list(df["job_id"]) == ["job-a", "job-b"]
    assert list(h5store.read_jobs(copy)["ok"]) == [True, True]
    assert h5store.read_attrs(copy)["sweep"] == "l2-size"


def test_failed_write_leaves_old_file_intact(results, tmp_path, monkeypatch):
    path, _ = results
    copy = tmp_path / "s.h5"
    copy.write_bytes(path.read_bytes())
    before = copy.read_bytes()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(h5store, "_write_table", boom)
    with pytest.raises(RuntimeError):
        h5store.write_results(copy, [{"job_id": "x"}], [], {})
    assert copy.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.h5"]  # no temp file left


def test_bad_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        h5store.read_records(tmp_path / "none.h5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["x"] = 1
    with pytest.raises(InputError, match="not a simfront results file"):
        h5store.read_records(other)


def test_export_csv_and_parquet(results, tmp_path):
    path, _ = results
    csv = h5store.export_table(path, tmp_path / "r.csv")
    back = pd.read_csv(csv)
    assert list(back["cycles"].fillna(-1)) == [56068, 56068, -1]
    pq = h5store.export_table(path, tmp_path / "j.parquet", "jobs")
    assert list(pd.read_parquet(pq)["ok"]) == [True, False]
    with pytest.raises(InputError):
        h5store.export_table(path, tmp_path / "r.xlsx")


def test_cli_parse_show_export(results, tmp_path):
    path, _ = results
    runner = CliRunner()
    res = runner.invoke(cli, ["stats", "parse", str(TWO_CRASH)])
    assert res.exit_code == 1, res.output  # a crashed run: non-zero, what was parsed printed
    assert "56,068" in res.output and "FAILED" in res.output and "REDG" in res.output
    res = runner.invoke(cli, ["stats", "parse", "--json", str(TWO_CRASH)])
    assert res.exit_code == 1 and "56068" in res.output and "undefined instruction" in res.output
    res = runner.invoke(cli, ["stats", "parse", str(BASELINE)])
    assert res.exit_code == 0 and "run: ok" in res.output
    res = runner.invoke(cli, ["stats", "show", str(path)])
    assert res.exit_code == 0 and "3 rows" in res.output and "sweep: l2-size" in res.output
    out = tmp_path / "x.csv"
    res = runner.invoke(cli, ["stats", "export", str(path), "-o", str(out)])
    assert res.exit_code == 0 and len(pd.read_csv(out)) == 3

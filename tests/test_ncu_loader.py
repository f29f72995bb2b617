"""The ncu CSV loader on the real H100 step records (tests/data/h100/ncu)."""

from __future__ import annotations

import csv
import lzma

import numpy as np
import pytest

from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv, read_ncu_dir

from conftest import MAMBA1_NCU, MAMBA2_NCU, NCU_DIR

MAMBA2 = MAMBA2_NCU
MAMBA1 = MAMBA1_NCU


@pytest.fixture(scope="module")
def m2():
    return read_ncu_csv(MAMBA2)


@pytest.fixture(scope="module")
def m1():
    return read_ncu_csv(MAMBA1)


def _raw_rows(path):
    with lzma.open(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1], rows[2:]


def test_one_row_per_launch(m2, m1):
    # The data README: 232 launches for Mamba2, 190 for Mamba1.
    assert len(m2) == 232
    assert len(m1) == 190
    assert list(m2["launch"]) == list(range(232))


def test_units_converted_to_base_units(m2):
    names, units, data = _raw_rows(MAMBA2)
    col = {n: i for i, n in enumerate(names)}
    first = data[0]
    raw_ns = float(first[col["gpu__time_duration.sum"]].replace(",", ""))
    raw_pct = float(first[col["dram__throughput.avg.pct_of_peak_sustained_elapsed"]].replace(",", ""))
    raw_bytes = float(first[col["dram__bytes_read.sum"]].replace(",", ""))
    assert units[col["gpu__time_duration.sum"]] == "ns"
    assert m2.loc[0, "gpu__time_duration.sum"] == pytest.approx(raw_ns * 1e-9)
    assert m2.loc[0, "dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(raw_pct / 100)
    assert m2.loc[0, "dram__bytes_read.sum"] == pytest.approx(raw_bytes)
    u = m2.attrs["units"]
    assert u["gpu__time_duration.sum"] == "s"
    assert u["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == "fraction"
    assert u["dram_util"] == "fraction" and u["time_us"] == "us"
    assert m2.attrs["ncu_units"]["gpu__time_duration.sum"] == "ns"
    # thousands separators: the device clock is printed "1,980,000"
    assert m2.loc[0, "device__attribute_clock_rate"] == 1_980_000
    # text columns stay text
    assert m2.loc[0, "Kernel Name"].startswith("void ")


def test_derived_columns_are_consistent(m2):
    assert np.allclose(m2["time_us"], m2["duration_s"] * 1e6)
    assert (m2["dram_util"].between(0, 1)).all()
    # ncu itself prints L2 hit rates a little over 100% for some write-only fills (up to
    # 101.2% here); the loader keeps what was measured.
    assert (m2["l2_hit_rate"].between(0, 1.02)).all()
    assert np.allclose(m2["dram_bytes"], m2["dram_read_bytes"] + m2["dram_write_bytes"])
    # clocks between 1.0 and 2.0 GHz (ncu ran with --clock-control none; max 1.98 GHz)
    long = m2[m2["duration_s"] > 20e-6]
    assert long["clock_hz"].between(1.0e9, 2.0e9).all()
    assert m2["grid"].str.match(r"^\d+,\d+,\d+$").all()
    # the tensor "ops" counter counts FLOPs: the LM-head GEMM (8192 x 50280 x 768, N padded to
    # the tile) shows about 2*M*N*K
    lm_head = m2.loc[m2["tensor_flops"].idxmax()]
    assert lm_head["tensor_flops"] == pytest.approx(2 * 8192 * 50280 * 768, rel=0.02)
    assert lm_head["category"] == "gemm"


def test_time_weighted_dram_use(m2, m1):
    # Stated in the data README: ~54% of peak in both steps.
    for df in (m2, m1):
        tw = np.average(df["dram_util"], weights=df["duration_s"])
        assert tw == pytest.approx(0.54, abs=0.015)


def test_read_dir_adds_workload():
    df = read_ncu_dir(NCU_DIR)
    assert set(df["workload"]) == {"mamba2_lm_2x768_L2048_B4", "mamba1_lm_2x768_L2048_B4"}
    assert len(df) == 232 + 190


def test_bad_files_name_file_and_line(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("hello,world\n1,2\n")
    with pytest.raises(InputError, match="x.csv.*line 1"):
        read_ncu_csv(p)
    names, units, data = _raw_rows(MAMBA2)
    q = tmp_path / "short.csv"
    with open(q, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        w.writerow(units)
        w.writerow(data[0])
        w.writerow(data[1][:10])
    with pytest.raises(InputError, match="line 4"):
        read_ncu_csv(q)
    with pytest.raises(InputError, match="cannot read"):
        read_ncu_csv(tmp_path / "missing.csv")


def test_a_file_read_again_is_parsed_once_and_a_changed_one_again(tmp_path):
    import os

    from simfront.core import ncu

    path = tmp_path / "step.ncu.csv"
    raw = open(MAMBA2, "rb").read()
    path.write_bytes(lzma.decompress(raw) if str(MAMBA2).endswith(".xz") else raw)
    first = read_ncu_csv(path)
    first.attrs["units"]["mine"] = "x"                # a caller's changes stay its own
    first.iloc[0, first.columns.get_loc("cycles")] = -1.0
    hits = ncu._parsed.cache_info().hits
    again = read_ncu_csv(path)
    assert ncu._parsed.cache_info().hits == hits + 1
    assert "mine" not in again.attrs["units"] and again["cycles"].iloc[0] > 0
    rows = path.read_text().splitlines(keepends=True)
    path.write_text("".join(rows[:-1]))              # one launch fewer
    os.utime(path, ns=(1, 1))
    assert len(read_ncu_csv(path)) == len(again) - 1

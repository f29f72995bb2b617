"""Trace statistics on the real H100 traces: totals equal the tracer's own counts, the mix
adds up, and FLOPs/bytes/footprint agree with a plain per-record recomputation."""

from __future__ import annotations

import lzma
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simfront.cli import cli
from simfront.traces.opcodes import classify
from simfront.traces.reader import TraceSet
from simfront.traces.stats import (
    iter_set_stats, kernel_stats, read_stats_h5, stats_frame,
)

FWD, BWD = "kernel-35636", "kernel-35643"


@pytest.fixture(scope="module")
def scan_stats(scan_step):
    return {s.file.split(".")[0]: s for s in iter_set_stats(scan_step)}


def _declared_insts(path) -> int:
    """Sum of the tracer's own 'insts = N' lines, read as plain text."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt") as f:
        return sum(int(m.group(1)) for m in map(re.compile(r"^insts = (\d+)").match, f) if m)


def test_selective_scan_totals_are_the_tracers_counts(scan_stats):
    # The measured facts: the tracer counted 394,240 and 1,092,992 warp instructions.
    assert scan_stats[FWD].warp_instructions == 394_240
    assert scan_stats[BWD].warp_instructions == 1_092_992
    assert "selective_scan_fwd_kernel" in scan_stats[FWD].name
    assert "selective_scan_bwd_kernel" in scan_stats[BWD].name


def test_every_kernel_total_matches_its_insts_lines(scan_step, scan_stats):
    ts = TraceSet(scan_step)
    assert len(scan_stats) == len(ts) == 47
    for kernel in ts.kernels():
        s = scan_stats[kernel.path.name.split(".")[0]]
        assert s.warp_instructions == _declared_insts(kernel.path), kernel.path.name


def test_mixes_add_up(scan_stats):
    for s in scan_stats.values():
        assert sum(s.by_category().values()) == s.warp_instructions
        assert sum(s.by_pipe().values()) == s.warp_instructions
        mem = sum(s.memory_instructions().values())
        assert mem == s.by_category()["memory"]
        assert sum(s.sfu_by_function().values()) == s.by_category()["sfu"]
    bwd = scan_stats[BWD]
    # the backward kernel's REDG (the opcode Accel-Sim's Ampere map lacks) is a global reduction
    assert bwd.memory_instructions()["reduction_global"] > 0
    assert bwd.by_category()["unknown"] == 0


def test_thread_instructions_match_accelsim(scan_stats):
    # data/README.md: Accel-Sim simulated kernel-35636 as 11,368,448 (thread) instructions.
    assert scan_stats[FWD].thread_instructions == 11_368_448


def test_against_plain_records(scan_step):
    """Recompute a small kernel's numbers record by record (the readable API) and compare."""
    kernel = TraceSet(scan_step).kernel(35637)
    s = kernel_stats(kernel)
    warps, fp32_flops, nbytes, lines, sectors = 0, 0.0, {}, set(), set()
    for tb in kernel.iter_blocks():
        for warp in tb.warps:
            for ins in warp.instructions:
                c = classify(ins.opcode)
                warps += 1
                if c.category == "fp32":
                    fp32_flops += c.flops_per_lane * ins.active_lanes
                if c.mem_key and ins.mem_width:
                    nbytes[c.mem_key] = nbytes.get(c.mem_key, 0) + ins.mem_width * ins.active_lanes
                    if c.space in ("global", "local", "generic"):
                        for a in ins.addresses:
                            for b in (a, a + ins.mem_width - 1):
                                lines.add(b >> 7)
                                sectors.add(b >> 5)
    assert s.warp_instructions == warps
    assert s.flops()["fp32"] == fp32_flops > 0
    assert s.memory_bytes() == nbytes
    assert (s.lines_128b, s.sectors_32b) == (len(lines), len(sectors))
    assert 0 < s.active_lane_fraction <= 1


def test_flops_and_ratio(scan_stats):
    fwd = scan_stats[FWD]
    f = fwd.flops()
    assert f["tensor"] == 0 and f["vector"] == f["fp32"] > 0
    assert fwd.tensor_vector_ratio == 0.0
    assert fwd.sfu_by_function()["EX2"] > 0


def test_signature_identifies_repeated_launches(scan_stats):
    # 35602/35603 and 35606/35637 are the same kernels launched again with the same shapes
    assert scan_stats["kernel-35602"].signature == scan_stats["kernel-35603"].signature
    assert scan_stats["kernel-35606"].signature == scan_stats["kernel-35637"].signature
    assert scan_stats[FWD].signature != scan_stats[BWD].signature
    assert len({s.signature for s in scan_stats.values()}) < len(scan_stats)


def test_unknown_opcodes_are_counted(tmp_path, scan_step):
    src = TraceSet(scan_step).kernel(35621).path
    text = lzma.open(src, "rt").read().replace(" MOV ", " FROBNICATE ")
    n = text.count(" FROBNICATE ")
    assert n > 0
    (tmp_path / "kernel-1.traceg").write_text(text)
    (tmp_path / "kernelslist.g").write_text("kernel-1.traceg\n")
    s = kernel_stats(TraceSet(tmp_path).kernel(1))
    assert s.unknown_opcodes() == {"FROBNICATE": n}
    assert s.by_category()["unknown"] == n
    assert sum(s.by_category().values()) == s.warp_instructions
    assert stats_frame([s]).loc[0, "unknown_opcodes"] == "FROBNICATE"


def test_cli_stats_table_csv_hdf5(tmp_path, scan_step):
    small = tmp_path / "set"
    small.mkdir()
    ts = TraceSet(scan_step)
    for k in (35621, 35622, 35637):
        shutil.copy(ts.kernel(k).path, small)
    (small / "kernelslist.g").write_text(
        "".join(f"kernel-{k}.traceg.xz\n" for k in (35621, 35622, 35637)))
    runner = CliRunner()
    csv = tmp_path / "out" / "stats.csv"
    res = runner.invoke(cli, ["traces", "stats", str(small), "--out", str(csv)])
    assert res.exit_code == 0, res.output
    assert "reduce_kernel" in res.output and "3 kernels" in res.output
    df = pd.read_csv(csv)
    assert list(df["kernel_id"]) == [35621, 35622, 35637]
    cats = [c for c in df.columns if c.startswith("inst_") and not c.startswith("inst_pipe_")
            and c.count("_") == 1]
    assert (df[cats].sum(axis=1) == df["instructions"]).all()
    assert list(df["grid"]) == ["1,1,1", "2,1,1", "1,1,1"]
    h5 = tmp_path / "stats.h5"
    res = runner.invoke(cli, ["traces", "stats", str(small), "--out", str(h5)])
    assert res.exit_code == 0, res.output
    back = read_stats_h5(h5)
    assert list(back.columns) == list(df.columns)
    assert np.array_equal(back["instructions"].to_numpy(), df["instructions"].to_numpy())


def test_a_kernels_statistics_are_read_back_from_disk(scan_step, tmp_path, monkeypatch):
    """Kept by the trace's content: a later call, in any process, reads them; a copy of the
    file under another name gets them with its own name; off with the decoded copies."""
    from simfront.traces import stats as st
    from simfront.traces.reader import KernelTrace

    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path / "cache"))
    k = next(iter(TraceSet(scan_step).kernels()))
    first = kernel_stats(k)
    kept = list((tmp_path / "cache" / "stats").glob("*.json"))
    assert len(kept) == 1

    def no_count(*a, **kw):
        raise AssertionError("counted again")

    monkeypatch.setattr(st, "_counted", no_count)
    assert kernel_stats(k) == first
    other = tmp_path / f"other-{k.path.name}"
    shutil.copy(k.path, other)
    again = kernel_stats(KernelTrace(other))
    assert again.file == other.name and again.warps_by_opcode == first.warps_by_opcode

    kept[0].write_text("{torn")  # counted again, not believed
    monkeypatch.undo()
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path / "cache"))
    assert kernel_stats(k) == first
    monkeypatch.setenv("SIMFRONT_TRACE_CACHE", "off")
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path / "off"))
    assert kernel_stats(k) == first and not (tmp_path / "off" / "stats").exists()

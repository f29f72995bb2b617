"""Kernel timelines (CUPTI through torch.profiler): parsing, the busy time, and the shipped
H100/H200 timelines of the LM steps read back as profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simfront.core.errors import ConfigError, InputError
from simfront.core.ncu import read_ncu_csv
from simfront.core.timeline import (KernelSpan, busy_ns, read_timeline_json,
                                       spans_from_chrome_trace, summarize, write_timeline)
from simfront.workloads.green import parse_sms
from simfront.workloads.timelines import condition_label

ROOT = Path(__file__).resolve().parents[1]
WHATIF = ROOT / "traces" / "mamba2_lm-paper" / "whatif"


def test_chrome_trace_kernels_only_in_start_order():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 10.5, "dur": 2.25,
         "args": {"grid": [4, 2, 1], "block": [128, 1, 1], "stream": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1.0, "dur": 3.0},
        {"ph": "X", "cat": "kernel", "name": "a", "ts": 1.0, "dur": 1.0,
         "args": {"grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 18}},
        {"ph": "i", "cat": "kernel", "name": "instant", "ts": 0.0},
    ]}
    spans = spans_from_chrome_trace(trace)
    assert [s.name for s in spans] == ["a", "b"]
    assert spans[1].grid == (4, 2, 1) and spans[1].stream == 7
    assert spans[1].start_ns == pytest.approx(10500.0) and spans[1].dur_ns == pytest.approx(2250)
    assert spans[0].regs == 18


def test_busy_time_is_the_union_of_overlapping_kernels():
    us = 1000.0
    spans = [KernelSpan("a", (1, 1, 1), (1, 1, 1), 0, 100 * us),
             KernelSpan("b", (1, 1, 1), (1, 1, 1), 50 * us, 100 * us),   # overlaps a
             KernelSpan("c", (1, 1, 1), (1, 1, 1), 60 * us, 10 * us),    # inside b
             KernelSpan("d", (1, 1, 1), (1, 1, 1), 400 * us, 20 * us)]   # after a gap
    assert busy_ns(spans) == 170 * us
    s = summarize(spans, "x", "gpu", None, step_ms=1.0)
    assert s.kernel_ms == pytest.approx(0.23) and s.busy_ms == pytest.approx(0.17)
    assert s.span_ms == pytest.approx(0.42)
    assert s.busy_share == pytest.approx(0.17)


def test_written_timeline_reads_back_as_a_profile(tmp_path):
    spans = [KernelSpan("void at::native::(anonymous namespace)::k<float>(float*)", (8, 1, 1),
                        (256, 1, 1), 1000.0, 2500.0, stream=7),
             KernelSpan("_chunk_scan_fwd_kernel", (4, 8, 24), (128, 1, 1), 4000.0, 1500.0)]
    write_timeline(tmp_path / "t.csv", spans)
    df = read_ncu_csv(tmp_path / "t.csv")
    assert list(df["grid"]) == ["8,1,1", "4,8,24"]
    assert df["duration_s"].tolist() == pytest.approx([2.5e-6, 1.5e-6])
    assert df["start"].tolist() == pytest.approx([0.0, 3e-6])   # ns -> s, from the first


def test_sms_option_parsing():
    assert parse_sms("all, 96,64") == [None, 96, 64]
    assert [condition_label(n) for n in parse_sms("all,32")] == ["all", "sms32"]
    assert condition_label(None, 25) == "l2set25"
    with pytest.raises(ConfigError, match="--sms"):
        parse_sms("96,lots")
    with pytest.raises(ConfigError, match="positive"):
        parse_sms("0")


def test_shipped_timelines_are_one_step_under_each_condition():
    """The H100 timelines of the Mamba2 paper step: the same launches at every SM count,
    kernel time growing as SMs are taken away, the JSON summary agreeing with the CSV."""
    conds = ["all", "sms96", "sms64", "sms32"]
    frames = {c: read_ncu_csv(WHATIF / f"h100-{c}.csv.xz") for c in conds}
    keys = {c: list(zip(df["kernel_name"], df["grid"], df["block"])) for c, df in frames.items()}
    assert all(keys[c] == keys["all"] for c in conds)
    totals = [frames[c]["duration_s"].sum() for c in conds]
    assert totals == sorted(totals)
    for c in conds:
        summ = read_timeline_json(WHATIF / f"h100-{c}.json")
        assert summ.launches == len(frames[c])
        assert summ.kernel_ms == pytest.approx(totals[conds.index(c)] * 1e3, rel=1e-3)
        assert 0 < summ.busy_share <= 1
    h200 = read_timeline_json(WHATIF / "h200-all.json")
    assert "H200" in h200.device_name and h200.sms is None


def test_bad_timeline_summary_names_the_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"label": "x"}))
    with pytest.raises(InputError, match="t.json"):
        read_timeline_json(p)

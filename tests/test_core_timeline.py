"""Kernel timelines (CUPTI through torch.profiler): parsing, the busy time, and the shipped
H100/H200 timelines of the LM steps read back as profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simfront.core.timeline import (GpuInfo, KernelSpan, WindowMeasure, busy_ns, record,
                                       read_timeline_json, spans_from_chrome_trace, summarize,
                                       write_timeline, write_timeline_json)
from simfront.core.errors import ConfigError, InputError
from simfront.core.ncu import read_ncu_csv
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


def _props(**kw):
    """The fields of ``torch.cuda.get_device_properties`` that GpuInfo reads, as the H200
    reported them (issue 29: 132 SMs, a 60 MiB L2)."""
    from types import SimpleNamespace

    base = dict(name="NVIDIA H200", multi_processor_count=132, L2_cache_size=60 << 20,
                total_memory=150_110_011_392, major=9, minor=0)
    base.update(kw)
    return SimpleNamespace(**base)


def test_record_from_cupti_events_holds_memory_wall_and_gpu(tmp_path):
    """A timed iteration's record: kernels from CUPTI's events, the busy share over the
    host's wall time, peak memory and the GPU; written and read back whole."""
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k1", "ts": 100.0, "dur": 400.0,
         "args": {"grid": [132, 1, 1], "block": [256, 1, 1], "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "k2", "ts": 300.0, "dur": 400.0,
         "args": {"grid": [64, 1, 1], "block": [128, 1, 1], "stream": 9}},   # overlaps k1
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 90.0, "dur": 5.0},
        {"ph": "X", "cat": "kernel", "name": "k3", "ts": 1500.0, "dur": 100.0, "args": {}},
    ]}
    spans = spans_from_chrome_trace(trace)
    gpu = GpuInfo.from_props(_props())
    m = WindowMeasure(spans, step_ms=2.0, peak_mem_bytes=3 << 30, mem_start_bytes=1 << 30)
    rec = record(m, "sms64", gpu, 64, untimed_step_ms=1.8)
    assert rec.launches == 3 and rec.kernel_ms == pytest.approx(0.9)
    assert rec.busy_ms == pytest.approx(0.7)             # 100..700 us, then 1500..1600 us
    assert rec.busy_share == pytest.approx(0.35)         # of the 2 ms between synchronizes
    assert rec.device_name == "NVIDIA H200" and rec.sms == 64
    assert rec.wall_step_ms == 1.8                       # the untimed iteration's wall time
    write_timeline_json(tmp_path / "t.json", rec)
    back = read_timeline_json(tmp_path / "t.json")
    assert back == rec
    assert back.gpu.l2_bytes == 60 << 20 and back.gpu.sm_count == 132
    assert back.gpu.compute_capability == "9.0"
    assert back.peak_mem_bytes == 3 << 30 and back.mem_start_bytes == 1 << 30


def test_gpu_without_an_l2_size_from_an_older_torch():
    props = _props()
    del props.L2_cache_size
    assert GpuInfo.from_props(props).l2_bytes is None


def test_format_1_timelines_read_without_memory_or_gpu():
    """The shipped timelines of format 1 (the H100 sets) predate the memory and GPU fields:
    they read as None; every timeline's wall step is the untimed iteration's, as
    simfront.analysis.wallclock takes it."""
    paths = sorted((ROOT / "traces").glob("*/whatif/*.json"))
    old = 0
    for path in paths:
        s = read_timeline_json(path)
        assert s.format in (1, 2)
        if s.format == 1:
            assert s.gpu is None and s.peak_mem_bytes is None and s.mem_start_bytes is None
            old += 1
        else:
            assert s.gpu.name == s.device_name and s.peak_mem_bytes > s.mem_start_bytes > 0
        assert s.wall_step_ms == s.extra.get("untimed_step_ms", s.step_ms) > 0
    assert old >= 40


def test_a_timeline_run_writes_the_new_record(tmp_path):
    """The timeline path of ``python -m simfront.workloads.run`` run for real on the CPU
    (the reference implementation): no GPU, so no kernels or memory, but the record of
    format 2 with the wall times of both iterations."""
    from simfront.workloads.run import main

    assert main(["mamba2_lm", "--preset", "tiny", "--device", "cpu", "-n", "2",
                 "--timeline", str(tmp_path)]) == 0
    s = read_timeline_json(tmp_path / "timeline-all.json")
    assert s.format == 2 and s.label == "all" and s.device_name == "cpu"
    assert s.gpu is None and s.peak_mem_bytes is None
    assert s.step_ms > 0 and s.extra["untimed_step_ms"] > 0
    assert s.extra["workload"] == "mamba2_lm"
    assert s.extra["config"]["seqlen"] > 0       # what the length study reads
    assert (tmp_path / "timeline-all.csv").read_text().count("\n") == 2   # header, units

"""Model what-ifs against hardware what-ifs, on the shipped traces and their what-if
timelines (traces/SET/whatif/, measured on an H100 and an H200: see traces/README and
docs/capture.md)."""

from __future__ import annotations

import json
import lzma

import numpy as np
import pytest

from simfront.analysis import whatif as W
from simfront.core.errors import InputError
from simfront.core.paths import repo_dir

TRACES = repo_dir("traces")
TINY = TRACES / "mamba2_lm-tiny"


def _paired(set_name: str, label: str):
    d = TRACES / set_name
    trace = W.trace_launches(d)
    tl, _ = W.read_timeline(d, label)
    return trace, tl, W.pair_timeline(trace, tl)


def test_timeline_pairs_with_trace_and_autotune_shapes_apart():
    # The timeline ran on a fresh machine where Triton autotuned _chunk_cumsum_fwd to grid
    # (4,8,24) against the trace's (4,8,12): those pair by name and place, as 'shape'.
    trace, tl, p = _paired("mamba2_lm-paper", "h100-all")
    assert (p.tl >= 0).all()
    assert set(p.match) == {W.EXACT, W.SHAPE}
    shape = trace[p.match == W.SHAPE]
    assert (p.match == W.EXACT).sum() >= 216
    cumsum = shape[shape.short_name == "_chunk_cumsum_fwd_kernel"]
    assert len(cumsum) >= 3
    for i in cumsum.index:
        j = p.tl[i]
        assert trace.grid[i] == (4, 8, 12) and tl.grid.iat[j] == "4,8,24"
        assert tl.short_name.iat[j] == "_chunk_cumsum_fwd_kernel"
    # exact pairs really agree, and pairs keep launch order
    ex = p.match == W.EXACT
    for i in trace.index[ex]:
        assert tl.short_name.iat[p.tl[i]] == trace.short_name[i]
        assert tl.grid.iat[p.tl[i]] == ",".join(map(str, trace.grid[i]))
    assert np.all(np.diff(p.tl.to_numpy()) > 0)


def test_h200_library_choice_pairs_as_another_kernel():
    # On the H200 cuBLAS picked another nvjet GEMM for two launches of the Mamba1 step.
    trace, tl, p = _paired("mamba1_lm-paper", "h200-all")
    other = trace[p.match == W.KERNEL]
    assert len(other) >= 1
    for i in other.index:
        j = p.tl[i]
        assert tl.short_name.iat[j] != trace.short_name[i]
        assert trace.category[i] == tl.category.iat[j] == "gemm"


def test_a_missing_launch_stays_unpaired_and_the_rest_exact():
    trace, tl, _ = _paired("mamba1_lm-tiny", "h100-sms64")
    dropped = tl.drop(index=40).reset_index(drop=True)
    p = W.pair_timeline(trace, dropped)
    full = W.pair_timeline(trace, tl)
    lost = (p.tl < 0).sum() + (p.match != full.match).sum()
    assert 1 <= lost <= 2
    assert (p.match == W.EXACT).sum() >= (full.match == W.EXACT).sum() - 2


def test_conditions_name_the_model_gpu():
    assert W.condition("h100-sms64").model_gpu().sm_count == 64
    h200 = W.condition("h200-all").model_gpu()
    base = W.condition(W.BASE).model_gpu()
    assert h200.l2.size.bytes == 60 * 2**20
    assert h200.dram.bandwidth.bytes_per_s > 1.4 * base.dram.bandwidth.bytes_per_s
    assert W.condition("h100-l2set25").model_gpu().l2.size.bytes == 25 * 2**20
    with pytest.raises(InputError, match="unknown what-if condition 'h100-tv8'"):
        W.condition("h100-tv8")
    assert W.available_conditions(TINY) == ["h100-sms96", "h100-sms64", "h100-sms32", "h200-all"]
    assert W.available_conditions(TRACES / "mamba2_lm-paper") == [
        "h100-sms96", "h100-sms64", "h100-sms32", "h100-l2set25", "h200-all"]


def test_missing_timeline_names_the_folder(tmp_path):
    with pytest.raises(InputError, match="no timeline 'h100-sms64'"):
        W.read_timeline(tmp_path, "h100-sms64")


@pytest.fixture(scope="module")
def tiny_sms32(tmp_path_factory):
    cache = tmp_path_factory.mktemp("whatif-cache")
    msgs: list[str] = []
    # cold here; the warm comparison (the default) has its own test below
    (r,) = W.compare(TINY, ["h100-sms32"], cache, progress=msgs.append, l2="cold")
    return r, cache, msgs


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_analysis_on_real_data(tiny_sms32):
    r, cache, msgs = tiny_sms32
    assert any("launches in" in m for m in msgs)  # progress was shown
    assert r.n_trace == 197 and r.n_exact + r.n_library == 197
    # The hardware ratio is the timelines' own: recompute it from the CSVs.
    base, _ = W.read_timeline(TINY, W.BASE)
    cond, _ = W.read_timeline(TINY, "h100-sms32")
    ex = r.exact
    assert ex.hw_base_us.sum() < base.time_us.sum()
    assert r.hw_ratio == pytest.approx(ex.hw_cond_us.sum() / ex.hw_base_us.sum())
    assert r.hw_ratio_step == pytest.approx(cond.time_us.sum() / base.time_us.sum())
    assert r.hw_ratio > 1.02  # 32 SMs of 132 are slower on hardware ...
    assert r.model_ratio > 1.0  # ... and in the model
    assert abs(r.step_error) < 0.15
    assert 0 < r.per_kernel_mape < 0.5
    # library choices are left out of the error figures
    assert r.n_library == 25 and ex.match.eq(W.EXACT).all()
    worst = r.worst(3)
    assert len(worst) == 3 and (worst.share >= 0.01).all()
    assert worst.error.abs().is_monotonic_decreasing
    s = W.summary([r])[0]
    assert s["workload"] == "mamba2_lm-tiny" and s["condition"] == "h100-sms32"
    assert s["worst"][0]["kernel"] == worst.index[0]
    md = W.render_markdown([r])
    assert "| mamba2_lm-tiny | 32 SMs |" in md and "_chunk_cumsum_fwd_kernel" in md


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_model_records_come_from_the_cache(tiny_sms32):
    _, cache, _ = tiny_sms32
    results = sorted(cache.rglob("result.json"))
    assert len(results) == 2  # the baseline and the 32-SM variant
    stamps = [p.stat().st_mtime_ns for p in results]
    msgs: list[str] = []
    W.compare(TINY, ["h100-sms32"], cache, progress=msgs.append, l2="cold")
    assert msgs == []  # nothing re-simulated
    assert [p.stat().st_mtime_ns for p in results] == stamps


@pytest.mark.slow  # the model on two GPUs, warm: about a CPU minute
def test_warm_l2_runs_apart_and_carries_the_l2(tiny_sms32):
    cold, cache, _ = tiny_sms32
    (warm,) = W.compare(TINY, ["h100-sms32"], cache, l2="warm")
    assert (cold.l2, warm.l2) == ("cold", "warm")
    assert W.summary([warm])[0]["l2"] == "warm"
    # cached apart from the cold runs
    assert len([p for p in cache.rglob("result.json") if p.parent.name.endswith("-warm")]) == 2
    base = W.model_records(TINY, W.condition(W.BASE).model_gpu(), cache, l2="warm")
    assert (base.sim_l2_start == "warm").all()
    # kernels find what earlier ones left: fewer DRAM reads over the step than when cold
    cold_base = W.model_records(TINY, W.condition(W.BASE).model_gpu(), cache, l2="cold")
    assert (cold_base.sim_l2_carried_sectors == 0).all()
    assert (base.sim_l2_carried_sectors > 0).mean() > 0.3
    assert base.dram_read_bytes.sum() < 0.5 * cold_base.dram_read_bytes.sum()
    # the hardware side does not depend on the model's L2
    assert warm.hw_ratio == cold.hw_ratio and warm.n_exact == cold.n_exact


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_cli(tiny_sms32, tmp_path):
    from click.testing import CliRunner

    from simfront.cli import cli

    _, cache, _ = tiny_sms32
    out = tmp_path / "launches.csv"
    res = CliRunner().invoke(cli, ["analyze", "whatif", str(TINY), "--conditions",
                                    "h100-sms32", "--cache", str(cache), "--csv", str(out),
                                    "--l2", "cold", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output[res.output.index("["):])
    assert summary[0]["condition"] == "h100-sms32" and summary[0]["paired"] == 172
    assert out.read_text().count("\n") == 198


def test_store_beside_a_trace_set(tmp_path):
    from simfront.core.timeline import gpu_prefix, store_beside

    assert gpu_prefix("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_prefix("NVIDIA H200") == "h200"
    # A timeline as `simfront timeline --out` leaves it, from the shipped one.
    src = tmp_path / "out"
    src.mkdir()
    (src / "timeline-sms64.csv").write_bytes(
        lzma.decompress((TINY / "whatif" / "h100-sms64.csv.xz").read_bytes()))
    (src / "timeline-sms64.json").write_bytes((TINY / "whatif" / "h100-sms64.json").read_bytes())
    dest = tmp_path / "set"
    dest.mkdir()
    csv_out, js_out = store_beside(src, "sms64", dest)
    assert csv_out.name == "h100-sms64.csv.xz" and js_out.name == "h100-sms64.json"
    tl, summ = W.read_timeline(dest, "h100-sms64")
    ref, _ = W.read_timeline(TINY, "h100-sms64")
    assert len(tl) == len(ref) == summ["launches"]
    with pytest.raises(InputError, match="already there"):
        store_beside(src, "sms64", dest)
    assert csv_out.read_bytes() == lzma.compress((src / "timeline-sms64.csv").read_bytes())


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_report_panel(tiny_sms32, tmp_path):
    from simfront.analysis.report import Report

    _, cache, _ = tiny_sms32
    assert W.panel_section([TRACES / "mamba1_torch_elementwise"], cache) is None  # no timelines
    sec = W.panel_section([TINY], cache, conditions=["h100-sms32"])
    rep = Report("what-if panel", tmp_path / "rep")
    rep.sections.append(sec)
    html, md = rep.write()
    text = md.read_text()
    assert "What-ifs on hardware" in text and "32 SMs" in text
    assert "_chunk_cumsum_fwd_kernel" in text  # the autotune choices, apart

"""Model what-ifs against hardware what-ifs, on the shipped traces and their what-if
timelines (traces/SET/whatif/, measured on an H100 and an H200: see traces/README and
docs/capture.md)."""

from __future__ import annotations

import json
import lzma
import shutil

import numpy as np
import pytest

from simfront.analysis import whatif as W
from simfront.core.errors import InputError
from simfront.core.paths import repo_dir
from simfront.sweep.store import JobStore
from simfront.sweep.worker import read_runs

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
    with pytest.raises(InputError, match="no GPU description for 'a100'"):
        W.condition("a100-sms64")
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
    assert "| mamba2_lm-tiny | H100 | 32 SMs |" in md and "_chunk_cumsum_fwd_kernel" in md
    assert s["base"] == "h100-all" and r.base == "h100-all"


def _store_results(cache) -> list:
    return sorted(cache.glob("jobs/*/result.json"))


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_model_records_come_from_the_job_store(tiny_sms32):
    _, cache, _ = tiny_sms32
    results = _store_results(cache)
    assert len(results) == 2  # the baseline and the 32-SM variant
    store = JobStore(cache)
    assert store.counts()["done"] == 2
    assert {s.backend for s in store.specs()} == {"model"}
    assert len(read_runs(cache)) == 2  # each ran once
    stamps = [p.stat().st_mtime_ns for p in results]
    msgs: list[str] = []
    W.compare(TINY, ["h100-sms32"], cache, progress=msgs.append, l2="cold")
    assert msgs == []  # nothing re-simulated
    assert [p.stat().st_mtime_ns for p in results] == stamps
    assert len(read_runs(cache)) == 2


@pytest.mark.slow  # the model on two GPUs: about a CPU minute
def test_a_run_left_running_is_taken_up_again(tiny_sms32, tmp_path):
    """A what-if stopped mid-run leaves its job 'running' in the store: the next run gives it
    back to the queue and the worker reuses the result it finds, or runs it."""
    _, cache, _ = tiny_sms32
    job = W.model_job(TINY, W.condition("h100-sms32").model_gpu(), "cold")
    store = JobStore(cache)
    with store.conn:
        store.conn.execute("UPDATE jobs SET state = 'running' WHERE job_id = ?", (job.job_id,))
    recs = W.model_records(TINY, W.condition("h100-sms32").model_gpu(), cache, l2="cold")
    assert len(recs) > 0 and JobStore(cache).counts()["done"] == 2
    assert len(read_runs(cache)) == 2  # the result was reused, not run again


@pytest.mark.slow  # the model on two GPUs, warm: about a CPU minute
def test_warm_l2_runs_apart_and_carries_the_l2(tiny_sms32):
    cold, cache, _ = tiny_sms32
    (warm,) = W.compare(TINY, ["h100-sms32"], cache, l2="warm")
    assert (cold.l2, warm.l2) == ("cold", "warm")
    assert W.summary([warm])[0]["l2"] == "warm"
    # jobs of their own beside the cold runs
    assert sorted(s.options["l2"] for s in JobStore(cache).specs()) == ["cold"] * 2 + ["warm"] * 2
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


# --- any GPU as the base ---------------------------------------------------------------------


def test_every_shipped_set_has_the_gpu_it_was_captured_on_as_its_base():
    """Each set's base is the whole GPU its manifest names. The H100 sets: h100-all the
    base, and their h200-all the cross-GPU condition, answered with h100-as-h200 as before."""
    sets = sorted(d.parent for d in TRACES.glob("*/whatif"))
    h100_sets = 0
    for d in sets:
        captured = json.loads((d / "manifest.json").read_text())["gpu"]
        gpu = W.label_gpu(W.base_label(d))
        assert gpu in captured.lower() and W.has_base(d)
        if gpu != "h100":
            continue
        h100_sets += 1
        for lb in W.available_conditions(d):
            c = W.condition(lb, "h100")
            assert c.gpu == ("h100-as-h200" if lb == "h200-all" else "h100")
    assert h100_sets >= 12
    h200 = W.condition("h200-all", "h100")
    assert h200.title == "H200 (4.8 TB/s, 60 MiB L2)"
    assert [W.condition(lb).title for lb in ("h100-sms64", "h100-l2set25")] == [
        "64 SMs", "L2 less 25 MiB set aside"]


@pytest.mark.parametrize("name", ["h200-ho-m2-d1024", "h200-ho-hybrid"])
def test_the_sets_captured_on_an_h200_are_answered_with_the_h200_description(name):
    """Real H200 captures (bench/device/heldout.sh on the lent H200): their base is the H200's
    whole GPU, their conditions its green contexts, each answered with the `h200` preset."""
    from simfront.gpu import load_gpu

    d = TRACES / name
    assert json.loads((d / "manifest.json").read_text())["gpu"] == "NVIDIA H200"
    assert W.base_label(d) == "h200-all"
    labels = W.available_conditions(d)
    assert sorted(labels) == ["h200-sms32", "h200-sms64", "h200-sms96"]
    for lb in labels:
        c = W.condition(lb, "h200")
        gpu = c.model_gpu()
        assert c.gpu == "h200" and gpu.sm_count == int(lb[len("h200-sms"):])
        assert gpu.clock_limits == load_gpu("h200").clock_limits
        # the timeline itself says it ran on the H200
        assert W.read_timeline(d, lb) is not None


def test_conditions_of_an_h200_base_use_the_h200_description():
    from simfront.gpu import config_hash, load_gpu

    assert W.condition("h200-all", "h200").gpu == "h200"
    sms = W.condition("h200-sms64", "h200")
    assert (sms.title, sms.model_gpu().sm_count) == ("64 SMs", 64)
    assert sms.model_gpu().l2.size.bytes == 60 << 20
    # its own L2 less the set-aside, in whole ways: the H200's 192 banks x 64 sets make a
    # way 1.5 MiB, so 60 - 25 is 23 ways (34.5 MiB); the H100's 1.25 MiB ways take 25 whole
    l2 = W.condition("h200-l2set25", "h200").model_gpu().l2
    assert (l2.size.bytes, l2.assoc) == (23 * 3 << 19, 23)
    assert W.condition("h100-l2set25", "h100").model_gpu().l2.size.bytes == 25 << 20
    # the H100 seen from an H200: its own preset, named in the title
    h100 = W.condition("h100-all", "h200")
    assert h100.gpu == "h100" and h100.title == "H100 (3.35 TB/s, 50 MiB L2)"
    # the H100 sets' H200 and the h200 preset are the same hardware to the model
    assert config_hash(load_gpu("h100-as-h200")) != config_hash(load_gpu("h200"))
    a, b = load_gpu("h100-as-h200").to_dict(), load_gpu("h200").to_dict()
    for d in (a, b):
        d.pop("name")
        d["dram"].pop("capacity"), d["dram"].pop("kind")
    assert a == b


def _h200_fixture(tmp_path, labels=("all", "sms64"), manifest=True):
    """TEST FIXTURE, not a measurement: a copy of the tiny Mamba2 set whose H100 timelines
    are renamed h200-* and relabelled as run on an H200, to test how an H200-based set
    resolves. Its numbers are the H100's."""
    d = tmp_path / "mamba2_lm-tiny-h200-fixture"
    shutil.copytree(TINY, d, ignore=shutil.ignore_patterns("whatif"))
    if not manifest:
        (d / "manifest.json").unlink()
    (d / "whatif").mkdir()
    for lb in labels:
        shutil.copy(TINY / "whatif" / f"h100-{lb}.csv.xz", d / "whatif" / f"h200-{lb}.csv.xz")
        js = json.loads((TINY / "whatif" / f"h100-{lb}.json").read_text())
        js["device_name"] = "NVIDIA H200"
        js["extra"]["fixture"] = "the H100 timeline renamed for a test; not an H200 run"
        (d / "whatif" / f"h200-{lb}.json").write_text(json.dumps(js))
    return d


def test_an_h200_timeline_is_its_own_base(tmp_path):
    from simfront.analysis.wallclock import step_share

    d = _h200_fixture(tmp_path)
    # the manifest still says H100 (the trace is the H100's), but the only whole-GPU
    # timeline is the H200's
    assert W.base_label(d) == "h200-all"
    assert W.available_conditions(d) == ["h200-sms64"]
    share = step_share(d)
    assert share.source.endswith("h200-all.json")
    assert share.step_ms == json.loads((d / "whatif" / "h200-all.json").read_text())[
        "extra"]["untimed_step_ms"]
    # with the H100's own timeline beside it, the manifest's GPU is the base ...
    shutil.copy(TINY / "whatif" / "h100-all.csv.xz", d / "whatif")
    shutil.copy(TINY / "whatif" / "h100-all.json", d / "whatif")
    assert W.base_label(d) == "h100-all"
    assert W.available_conditions(d) == ["h200-all", "h200-sms64"]
    # ... unless named
    assert W.base_label(d, "h200") == "h200-all"
    assert W.available_conditions(d, "h200") == ["h200-sms64", "h100-all"]
    with pytest.raises(InputError, match="no timeline 'a100-all'"):
        W.base_label(d, "a100")


def test_a_set_without_a_manifest_must_name_its_base(tmp_path):
    d = _h200_fixture(tmp_path, manifest=False)
    shutil.copy(TINY / "whatif" / "h100-all.csv.xz", d / "whatif")
    with pytest.raises(InputError, match="--base"):
        W.base_label(d)
    assert W.base_label(d, "h100") == "h100-all"


def test_a_timeline_named_for_another_gpu_is_refused(tmp_path):
    d = _h200_fixture(tmp_path, labels=("all",))
    shutil.copy(TINY / "whatif" / "h100-sms64.csv.xz", d / "whatif" / "h200-sms64.csv.xz")
    shutil.copy(TINY / "whatif" / "h100-sms64.json", d / "whatif" / "h200-sms64.json")
    with pytest.raises(InputError, match="device_name.*ran on NVIDIA H100 80GB HBM3"):
        W.read_timeline(d, "h200-sms64")


@pytest.mark.slow  # the model on the h200 preset twice: about a CPU minute
def test_compare_on_an_h200_base(tmp_path):
    d = _h200_fixture(tmp_path)
    (r,) = W.compare(d, None, tmp_path / "cache", l2="cold")
    assert (r.base, r.condition, r.title) == ("h200-all", "h200-sms64", "64 SMs")
    # the hardware ratio is the renamed H100 timelines': the same as the H100 set's
    assert r.n_trace == 197 and r.hw_ratio > 1.02
    assert r.model_ratio > 1.0
    from simfront.gpu import config_hash, load_gpu, with_variants

    h200 = load_gpu("h200")
    want = {config_hash(h200), config_hash(with_variants(h200, sm_count=64))}
    assert {s.config_hash for s in JobStore(tmp_path / "cache").specs()} == want


def test_a_failed_model_run_is_an_error_naming_why_and_runs_again(tmp_path):
    # a set whose one trace cannot be read: the job fails, model_records says so (not a
    # KeyError on empty records), and asking again runs the job again
    broken = tmp_path / "broken"
    broken.mkdir()
    name = "kernel-96256.traceg.xz"
    (broken / "kernelslist.g").write_text(name + "\n")
    (broken / name).write_bytes((TINY / name).read_bytes()[:200])
    cache = tmp_path / "cache"
    gpu = W.condition("h100-all").model_gpu()
    for runs in (1, 2):
        with pytest.raises(InputError) as e:
            W.model_records(broken, gpu, cache, l2="cold")
        assert "the model failed" in str(e.value) and name in str(e.value)
        assert len(read_runs(cache)) == runs

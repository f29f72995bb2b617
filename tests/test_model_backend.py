"""The built-in model as a backend: records, schema, failures, CLI (issue 5)."""

from __future__ import annotations

import lzma
import math

import pytest
from click.testing import CliRunner

from simfront.stats.schema import is_known_column


@pytest.fixture(scope="module")
def gpu():
    from simfront.gpu import load_gpu

    return load_gpu("h100")


def test_model_is_the_default_registered_backend():
    from simfront.sim.backend import DEFAULT_BACKEND, backend_names, get_backend

    assert DEFAULT_BACKEND == "model"
    assert "model" in backend_names()
    b = get_backend("model")
    assert b.name == "model" and b.version()


def test_backend_runs_selected_kernels_with_schema_columns(scan_step, gpu, tmp_path):
    from simfront.sim.backend import SimJob, get_backend

    job = SimJob("j1", scan_step, gpu, tmp_path / "out",
                 kernels=("kernel-35607.traceg.xz", "kernel-35611*"))
    res = get_backend("model").run(job)
    assert res.ok, res.reason
    assert [r["kernel_id"] for r in res.records] == [35607, 35611]
    assert (tmp_path / "out" / "result.json").is_file()
    for r in res.records:
        unknown = [c for c in r if not is_known_column(c)]
        assert not unknown, unknown
        assert r["complete"] and r["cycles"] > 0 and r["instructions"] > 0
        assert math.isclose(r["time_us"], r["cycles"] / gpu.clocks.core.hz * 1e6)
        stalls = sum(v for c, v in r.items() if c.startswith("stall_"))
        assert stalls == pytest.approx(1.0, abs=1e-6)
        # one block: SM 0 runs all of the trace's instructions
        assert r["instructions"] == r["sim_timed_instructions"]


def test_truncated_trace_fails_the_job_naming_the_kernel(scan_step, gpu, tmp_path):
    from simfront.sim.backend import SimJob, get_backend

    src = scan_step / "kernel-35607.traceg.xz"
    text = lzma.open(src).read()
    cut = text[: len(text) - 200]
    cut = cut[: cut.rfind(b"\n") + 1] + b"01f0 ffffffff 1 R5"  # a line cut short
    d = tmp_path / "traces"
    d.mkdir()
    (d / "kernel-1.traceg").write_bytes(cut)
    (d / "kernel-2.traceg").write_bytes(text)
    (d / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    res = get_backend("model").run(SimJob("j2", d, gpu, tmp_path / "out"))
    assert not res.ok
    assert "kernel-1.traceg" in res.reason
    done = {r["kernel_uid"]: r["complete"] for r in res.records}
    assert done == {1: False, 2: True}


def test_cli_sim_run_writes_records(scan_step, tmp_path):
    import pandas as pd

    from simfront.cli import cli

    out = tmp_path / "rec.csv"
    r = CliRunner().invoke(cli, ["sim", "run", str(scan_step), "--kernel", "kernel-35607",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert len(df) == 1 and df.loc[0, "backend"] == "model" and df.loc[0, "cycles"] > 0


def test_cli_sim_run_names_the_launches_it_timed_blind():
    """A launch whose sampled blocks all exit at once (the five-input batched cat of a
    held-out step) is named on stderr; its sibling, whose sample works, is not."""
    from simfront.cli import cli
    from simfront.core.paths import repo_dir

    r = CliRunner().invoke(cli, ["sim", "run", str(repo_dir("traces") / "ho-m2-d512"),
                                 "--kernel", "kernel-197887", "--kernel", "kernel-197876"])
    assert r.exit_code == 0, r.output
    note = next(line for line in r.output.splitlines() if line.startswith("note:"))
    assert "1 launch(es) timed blind" in note and "kernel-197887" in note
    assert "kernel-197876" not in note


def test_a_sampled_trace_stands_for_its_whole_grid():
    """simfront's tracer kept 32 of the 528 blocks of this layer-norm launch: the model's
    counts are the whole grid's, and SM 0 is timed on its share (4 blocks), not on 1."""
    from simfront.gpu import load_gpu
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    k = KernelTrace(repo_dir("traces") / "mamba2_lm-tiny" / "kernel-96381.traceg.xz")
    traced, total = k.header.sampled_blocks
    rec = simulate_kernel(k, load_gpu("h100"), cache=False)
    assert rec["instructions"] == pytest.approx(k.instruction_count() * total / traced)
    # the same blocks unsampled-looking: a grid of just the traced blocks runs 1 per SM
    from dataclasses import replace
    small = KernelTrace(k.path)
    small._header = replace(k.header, grid=(traced, 1, 1), extra=())
    rec_small = simulate_kernel(small, load_gpu("h100"), cache=False)
    assert rec["cycles"] > rec_small["cycles"]


# A persistent cuBLAS sm90 GEMM (grid = 132 = SM count, 8 blocks traced), shipped with the
# census of tracer 1.1.
PERSISTENT_GEMM = ("mamba2_lm-paper", "kernel-53435.traceg.xz")


def _header_lines(path):
    with lzma.open(path, "rt") as f:
        lines = []
        for i, text in enumerate(f, start=1):
            if not text.startswith("-"):
                break
            lines.append((i, text.rstrip("\n")))
    return lines


def test_header_census_line_parses_to_its_count():
    from simfront.core.paths import repo_dir
    from simfront.traces.header import parse_header

    path = repo_dir("traces").joinpath(*PERSISTENT_GEMM)
    lines = [(i, t) for i, t in _header_lines(path) if not t.startswith("-tb census")]
    assert parse_header(lines, path).census_warp_instructions is None
    at = next(j for j, (_, t) in enumerate(lines) if t.startswith("-tb sampling")) + 1
    with_census = lines[:at] + [(99, "-tb census = 12345 warp instructions")] + lines[at:]
    h = parse_header(with_census, path)
    assert h.census_warp_instructions == 12345
    assert ("tb census", "12345 warp instructions") in h.extra
    assert h.sampled_blocks == (8, 132)  # the sampling line still reads
    unreadable = lines[:at] + [(99, "-tb census = lots")] + lines[at:]
    assert parse_header(unreadable, path).census_warp_instructions is None


def _with_census(src, dst, census):
    """A plain-text copy of ``src`` whose census line says ``census`` (None: no line)."""
    out = []
    with lzma.open(src, "rt") as f:
        for text in f:
            if text.startswith("-tb census"):
                continue
            out.append(text)
            if text.startswith("-tb sampling") and census is not None:
                out.append(f"-tb census = {census} warp instructions\n")
    dst.write_text("".join(out))
    return dst


def test_a_census_scales_counts_by_work_and_stretches_sm0_time(tmp_path):
    """Where the census says the grid did twice what N/T times the traced blocks suggests
    (the traced blocks got fewer tiles), the whole-grid counts double and SM 0's time grows
    with them; a census equal to N/T times the traced work changes nothing."""
    from simfront.gpu import load_gpu
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    gpu = load_gpu("h100")
    src = repo_dir("traces").joinpath(*PERSISTENT_GEMM)
    traced_insts = KernelTrace(src).instruction_count()
    traced, total = KernelTrace(src).header.sampled_blocks
    by_blocks = traced_insts * total / traced

    def run(name, census):
        k = KernelTrace(_with_census(src, tmp_path / f"{name}.traceg", census))
        assert k.header.census_warp_instructions == census
        return simulate_kernel(k, gpu, cache=False)

    plain = run("plain", None)
    same = run("same", round(by_blocks))
    double = run("double", round(2 * by_blocks))
    assert plain["instructions"] == pytest.approx(by_blocks)
    assert plain["sim_sample_scale"] == pytest.approx(total / traced)
    assert plain["sim_work_scale"] == 1.0

    assert same["instructions"] == pytest.approx(plain["instructions"], rel=1e-6)
    assert same["cycles"] == pytest.approx(plain["cycles"], rel=1e-6)
    assert same["sim_work_scale"] == pytest.approx(1.0, rel=1e-6)

    assert double["instructions"] == pytest.approx(2 * plain["instructions"], rel=1e-6)
    assert double["thread_instructions"] == pytest.approx(2 * plain["thread_instructions"],
                                                          rel=1e-6)
    assert double["sim_flops"] == pytest.approx(2 * plain["sim_flops"], rel=1e-6)
    assert double["sim_work_scale"] == pytest.approx(2.0, rel=1e-6)
    # the same blocks were simulated; SM 0's time is stretched, the launch overhead is not
    assert double["sim_timed_instructions"] == plain["sim_timed_instructions"]
    assert double["sim_sm_cycles"] == pytest.approx(2 * plain["sim_sm_cycles"], rel=1e-6)
    assert double["cycles"] > 1.5 * plain["cycles"]
    assert double["cycles"] - double["sim_launch_cycles"] == pytest.approx(
        2 * (plain["cycles"] - plain["sim_launch_cycles"]), rel=1e-6)


def test_the_shipped_census_is_what_the_model_counts():
    """The shipped GEMM trace with its own census: the record's instructions are the
    census, and the work scale is the census over N/T times the traced work."""
    from simfront.gpu import load_gpu
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    k = KernelTrace(repo_dir("traces").joinpath(*PERSISTENT_GEMM))
    census = k.header.census_warp_instructions
    assert census is not None
    traced, total = k.header.sampled_blocks
    rec = simulate_kernel(k, load_gpu("h100"), cache=False)
    assert rec["instructions"] == pytest.approx(census)
    assert rec["sim_work_scale"] == pytest.approx(
        census / (k.instruction_count() * total / traced))
    for c in rec:
        assert is_known_column(c), c


def test_a_persistent_gemm_on_fewer_sms_follows_its_work_not_its_blocks():
    """The shipped persistent cuBLAS sm90 GEMM (grid 132, one block per SM, dynamic tile
    scheduler): on 64 SMs its 132 workers cannot all be resident, and those that start late
    find no tiles left, so its time grows with the work per SM (132/64 = 2.06x; H100 green
    contexts measured 1.85-2.07x on this step's GEMMs), not with the ceil(132/64) = 3 blocks
    SM 0 would run one after another (3x, the model before)."""
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    k = KernelTrace(repo_dir("traces").joinpath(*PERSISTENT_GEMM))
    assert k.header.name.startswith("nvjet_sm90_")
    assert k.header.grid[0] * k.header.grid[1] * k.header.grid[2] == 132
    h100 = load_gpu("h100")
    full = simulate_kernel(k, h100, cache=False)
    assert full["sim_persistent"] and full["sim_blocks_per_sm"] == 1
    ratios = {}
    for sms in (96, 64, 32):
        rec = simulate_kernel(k, with_variants(h100, sm_count=sms), cache=False)
        assert rec["sim_persistent"]
        # one round of resident workers is simulated, stretched by the work per worker
        assert rec["sim_timed_blocks"] == 1
        assert rec["sim_work_scale"] == pytest.approx(full["sim_work_scale"] * 132 / sms)
        ratios[sms] = (rec["cycles"] - rec["sim_launch_cycles"]) / (
            full["cycles"] - full["sim_launch_cycles"])
    # SM 0's share of the bandwidth grows as SMs go, so a tile can run a little faster
    for sms, r in ratios.items():
        assert 0.85 * 132 / sms <= r <= 1.02 * 132 / sms, (sms, r)
    assert ratios[64] < 0.8 * 3


def test_cudnn_flash_attention_on_fewer_sms_follows_its_workers_as_the_gpu_did():
    """cuDNN's sm90 flash attention launches 132 workers that take tiles with an atomic
    (the fit step hybrid_lm-paper). On 64 SMs the H100 took 1.78x its whole-GPU time (its
    green-context timeline), not the 3 waves of 132 blocks: the model shares the tiles out
    over the workers left, within 20% of the hardware (a tail it does not see remains)."""
    from simfront.analysis.whatif import pair_timeline, read_timeline, trace_launches
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    d = repo_dir("traces") / "hybrid_lm-paper"
    k = KernelTrace(d / "kernel-236770.traceg.xz")
    assert k.header.name.startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
    assert tuple(k.header.grid) == (132, 1, 1)
    tr = trace_launches(d)
    row = int(tr.index[tr.file == k.path.name][0])
    hw = {}
    for label in ("h100-all", "h100-sms64"):
        tl, _ = read_timeline(d, label)
        hw[label] = float(tl.time_us.iat[pair_timeline(tr, tl).tl.iat[row]])
    h100 = load_gpu("h100")
    full = simulate_kernel(k, h100, cache=False)
    half = simulate_kernel(k, with_variants(h100, sm_count=64), cache=False)
    assert full["sim_persistent"] and full["sim_schedule"] == "dynamic"
    model, measured = half["time_us"] / full["time_us"], hw["h100-sms64"] / hw["h100-all"]
    assert measured < 2.0
    assert measured * 0.95 < model < measured * 1.2, (model, measured)


def test_triton_ssd_kernels_are_not_persistent():
    """Triton SSD kernels of the same set keep one block per slot and their waves: the
    fixed-work _chunk_state_fwd (768 blocks, 3 per SM: 2 waves on 132 SMs, 4 on 64) and the
    triangular _chunk_scan_bwd_dcb, whose traced blocks do less than the average block (a
    census off N/T, as for the GEMMs) though its schedule is fixed."""
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants
    from simfront.core.paths import repo_dir
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    d = repo_dir("traces") / "mamba2_lm-paper"
    k = KernelTrace(d / "kernel-53390.traceg.xz")
    assert k.header.census_warp_instructions is not None
    for sms, blocks in ((132, 6), (64, 12)):
        rec = simulate_kernel(k, with_variants(load_gpu("h100"), sm_count=sms), cache=False)
        assert not rec["sim_persistent"]
        assert rec["sim_work_scale"] == pytest.approx(1.0, abs=0.01)
        assert rec["sim_timed_blocks"] == blocks
    tri = KernelTrace(d / "kernel-53460.traceg.xz")
    rec = simulate_kernel(tri, load_gpu("h100"), cache=False)
    assert not rec["sim_persistent"]
    assert abs(rec["sim_work_scale"] - 1.0) > 0.05
    assert rec["sim_timed_blocks"] == -(-4096 // 132)

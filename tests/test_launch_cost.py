"""A kernel's fixed cost per GPU (``empty_kernel_ns``): the shipped measurement, the
descriptions that take it, and what the model does with it (model-1.11)."""

from __future__ import annotations

import pandas as pd
import pytest

from simfront.core.paths import REPO_ROOT

DATA = REPO_ROOT / "bench" / "data" / "device" / "launch_cost"
TRACES = REPO_ROOT / "traces"


def stream_medians(tag: str) -> dict[str, float]:
    d = pd.read_csv(DATA / f"launch_cost_{tag}.csv")
    return dict(zip(d["case"], d["median_ns"]))


def test_the_descriptions_take_the_measured_empty_kernel():
    from simfront.gpu import load_gpu

    assert load_gpu("h100").empty_kernel_ns == stream_medians("h100")["sleep0"]
    assert load_gpu("h100-as-h200").empty_kernel_ns == stream_medians("h200")["sleep0"]
    assert load_gpu("h200").empty_kernel_ns == stream_medians("h200")["sleep0"]
    # the variants that only change the memory keep the H100's front end
    assert load_gpu("h100-hbm-4.8tbs").empty_kernel_ns == load_gpu("h100").empty_kernel_ns


def test_the_h200_front_end_is_quicker_whatever_the_kernel_touches():
    """Every case, from the kernel that touches no memory to the add whose read goes to
    DRAM, ends sooner on the H200, in a stream and under ncu: the front end, not memory."""
    from simfront.core.ncu import read_ncu_csv

    h100, h200 = stream_medians("h100"), stream_medians("h200")
    for case in h100:
        assert 150 < h100[case] - h200[case] < 350, case
    cases = ["sleep0", "fill_4B", "add_4KB", "add_1MB"]
    ncu = {}
    for tag in ("h100", "h200"):
        d = read_ncu_csv(DATA / f"launch_cost_{tag}_ncu.csv").iloc[3:23]  # past the set-up
        d = d.assign(case=[c for c in cases for _ in range(5)])
        ncu[tag] = d.groupby("case")["duration_s"].median()
    for case in cases:
        assert 0.4e-6 < ncu["h100"][case] - ncu["h200"][case] < 0.9e-6, case


def test_the_model_gives_a_gpu_its_own_front_end(scan_step):
    """One kernel on the H200's memory with and without the H200's front end: in a step
    (warm) the model's cycles differ by the empty kernels' difference in core clocks, and
    nothing else; profiled alone (cold, as ncu runs it) the H200's fixed cost is its
    description's ``ncu_fixed_cycles``."""
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.sim.model.carry import L2Carry
    from simfront.sim.model.params import DEFAULT_PARAMS
    from simfront.traces.reader import TraceSet

    kernel = next(iter(TraceSet(scan_step).kernels()))
    h200, h100 = load_gpu("h100-as-h200"), load_gpu("h100")
    # the H200's memory (its six stacks' L2 banks among it) with the H100's front end
    memory_only = with_variants(h200.replace(ncu_fixed_cycles=h100.ncu_fixed_cycles),
                                empty_kernel_ns=h100.empty_kernel_ns)
    assert memory_only.l2 == h200.l2 and memory_only.dram == h200.dram
    a = simulate_kernel(kernel, memory_only, l2=L2Carry.empty(memory_only))
    b = simulate_kernel(kernel, h200, l2=L2Carry.empty(h200))
    clk = h200.clocks.core.hz
    shift = (h200.empty_kernel_ns - DEFAULT_PARAMS.launch.empty_kernel_ref_ns) * 1e-9 * clk
    assert shift == pytest.approx(-633.6)
    assert a["sim_launch_cycles"] == DEFAULT_PARAMS.launch.cycles
    assert b["sim_launch_cycles"] == pytest.approx(DEFAULT_PARAMS.launch.cycles + shift)
    assert b["cycles"] - a["cycles"] == pytest.approx(shift)
    assert b["sim_active_cycles"] == a["sim_active_cycles"]
    cold_a, cold_b = simulate_kernel(kernel, memory_only), simulate_kernel(kernel, h200)
    assert cold_a["sim_launch_cycles"] == DEFAULT_PARAMS.launch.cycles
    assert cold_b["sim_launch_cycles"] == h200.ncu_fixed_cycles == 2848
    assert cold_b["cycles"] - cold_a["cycles"] == pytest.approx(
        cold_b["sim_active_cycles"] - cold_a["sim_active_cycles"] + 2848 - 3800)


def test_the_h200_timelines_show_the_same_front_end():
    """The paper steps' own timelines: kernels under 2 us end about as much sooner on the
    H200 as the empty kernel does, and not at all on 64 SMs of the H100 (a green context
    changes the SMs, not the front end)."""
    def tiny_deltas(set_name: str, label: str) -> pd.Series:
        from simfront.core.ncu import read_ncu_csv

        w = TRACES / set_name / "whatif"
        base = read_ncu_csv(w / "h100-all.csv.xz")
        cond = read_ncu_csv(w / f"{label}.csv.xz")
        assert len(base) == len(cond)
        small = base["duration_s"] < 2e-6
        same = base["short_name"].values == cond["short_name"].values
        keep = small.values & same
        return pd.Series(cond["duration_s"].values[keep] - base["duration_s"].values[keep])

    empty = stream_medians("h200")["sleep0"] - stream_medians("h100")["sleep0"]
    for s in ("mamba2_lm-paper-box", "mamba1_lm-paper-box"):
        h200 = tiny_deltas(s, "h200-all")
        assert len(h200) > 30
        assert empty * 1e-9 <= h200.median() < 0.5 * empty * 1e-9  # -0.32 us vs -0.22
        assert abs(tiny_deltas(s, "h100-sms64").median()) < 0.05e-6


def test_a_bad_empty_kernel_is_refused_by_name(tmp_path):
    from simfront.core.errors import ConfigError
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants

    with pytest.raises(ConfigError, match="empty_kernel_ns"):
        with_variants(load_gpu("h100"), empty_kernel_ns=-3)
    with pytest.raises(ConfigError, match="empty_kernel_ns"):
        with_variants(load_gpu("h100"), empty_kernel_ns="fast")
    text = (REPO_ROOT / "gpu_configs" / "h100.yaml").read_text()
    bad = tmp_path / "h100-bad.yaml"
    bad.write_text(text.replace("empty_kernel_ns: 896.0", "empty_kernel_ns: soon"))
    with pytest.raises(ConfigError) as err:
        load_gpu(str(bad))
    assert "empty_kernel_ns" in str(err.value) and "h100-bad.yaml" in str(err.value)

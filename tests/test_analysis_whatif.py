"""Model what-ifs against the same steps measured under changed hardware (the timelines
shipped in traces/*/whatif/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simfront.analysis import whatif
from simfront.errors import InputError
from simfront.stats.matching import launch_key
from simfront.traces.reader import TraceSet

ROOT = Path(__file__).resolve().parents[1]
M2P = ROOT / "traces" / "mamba2_lm-paper"
M1T = ROOT / "traces" / "mamba1_lm-tiny"


def test_each_measured_condition_has_a_gpu_description():
    assert whatif.conditions(M2P)[0] == whatif.BASELINE
    assert {"h100-sms64", "h200-all", "h100-l2set25"} <= set(whatif.conditions(M2P))
    assert whatif.condition_gpu("h100-sms64").sm_count == 64
    assert whatif.condition_gpu("h100-l2set25").l2.size.bytes == 25 << 20
    h200 = whatif.condition_gpu("h200-all")
    assert h200.l2.size.bytes == 60 << 20 and h200.sm_count == 132
    base = whatif.condition_gpu("h100-all")
    assert h200.dram.clock.hz / base.dram.clock.hz == pytest.approx(4.8 / 3.35, rel=0.02)
    with pytest.raises(InputError, match="a100-all"):
        whatif.condition_gpu("a100-all")


def test_autotuned_launches_pair_by_name_and_are_reported_apart():
    """The paper step was timed on another machine than the one that traced it; Triton
    autotuned some SSD kernels to other grids there. Those pair by name and position and are
    flagged; every other pair agrees on name, grid and block."""
    kernels = list(TraceSet(M2P).kernels())
    keys = [launch_key(k.header.name, k.header.grid, k.header.block) for k in kernels]
    tl = whatif.read_condition(M2P, "h100-all")
    p = whatif.pair_timeline(keys, tl)
    tl_keys = [launch_key(n, g, b) for n, g, b in zip(tl.kernel_name, tl.grid, tl.block)]
    assert all(keys[i] == tl_keys[j] for i, j in p.exact)
    assert len(p.exact) >= 200 and len(p.pairs) + len(p.unpaired_trace) == len(keys)
    mism = {keys[i][0] for i in p.config_mismatch}
    assert "_chunk_cumsum_fwd_kernel" in mism
    for i, j in p.pairs:
        if i in p.config_mismatch:
            assert keys[i][0] == tl_keys[j][0] and keys[i] != tl_keys[j]


@pytest.mark.slow
def test_sm_what_if_on_a_shipped_step(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMFRONT_CACHE", str(tmp_path))
    r = whatif.compare_condition(M1T, "h100-sms32")
    base = whatif.read_condition(M1T, "h100-all")
    cond = whatif.read_condition(M1T, "h100-sms32")
    assert r.hw_step_ratio == pytest.approx(cond.duration_s.sum() / base.duration_s.sum())
    assert r.n_paired + r.n_config_mismatch <= r.n_launches == 151
    assert r.n_paired > 120
    # fewer SMs make no kernel noticeably faster, and the step slower
    assert (r.kernels.model_ratio >= 0.99).all() and r.model_paired_ratio > 1.0
    assert 0 <= r.per_kernel_mape < 1
    assert "h100-sms32" in whatif.summary_text([r])
    # the model runs are cached: a second comparison reads them back
    assert len(list(tmp_path.rglob("*.csv"))) == 2
    out = whatif.write_results([r], tmp_path / "out")
    assert (out / "mamba1_lm-tiny-h100-sms32.csv").exists()

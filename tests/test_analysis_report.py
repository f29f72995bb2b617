"""Correlation, the analytic bound, and the CLI/report path end to end on small inputs."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simfront.analysis.bound import analytic_bound, mix_from_ncu
from simfront.analysis.correlate import correlate
from simfront.analysis.studies import load_sweep_records
from simfront.cli import cli
from simfront.core.ncu import read_ncu_csv
from simfront.stats.h5store import write_results

from conftest import MAMBA1_NCU, MAMBA2_NCU, NCU_DIR

MAMBA2 = MAMBA2_NCU


@pytest.fixture(scope="module")
def m2():
    return read_ncu_csv(MAMBA2)


def test_correlation_of_known_errors(m2):
    hw = m2[["kernel_name", "cycles", "grid"]].copy()
    sim = hw.copy()
    rng = np.random.default_rng(0)
    err = rng.choice([-0.2, 0.1], size=len(sim))
    sim["cycles"] = sim["cycles"] * (1 + err)
    sim["backend"] = "test"
    c = correlate(sim, hw)
    assert len(c.matched) == len(hw)
    assert c.mape == pytest.approx(np.mean(np.abs(err)))
    assert c.pearson == pytest.approx(np.corrcoef(hw["cycles"], sim["cycles"])[0, 1])
    # the last launch of a kernel missing on one side shifts nothing else: pairing is by
    # kernel name and occurrence
    from simfront.core.categories import short_name
    names = hw["kernel_name"].map(short_name)
    last = int(np.nonzero(~names.duplicated(keep="last").to_numpy())[0][3])
    c2 = correlate(sim.drop(index=sim.index[last]), hw)
    assert len(c2.matched) == len(hw) - 1 and c2.unmatched_hw == 1
    assert c2.mape == pytest.approx(np.mean(np.abs(np.delete(err, last))))


def test_correlation_matches_mangled_to_demangled_names():
    hw = pd.DataFrame({"kernel_name": ["void selective_scan_fwd_kernel<Traits<32, 4>>(SSMParamsBase)",
                                       "void at::native::vectorized_elementwise_kernel<4, F>(int, F)"],
                       "cycles": [1000.0, 200.0]})
    sim = pd.DataFrame({"kernel_name": ["_Z25selective_scan_fwd_kernelI6TraitsEv13SSMParamsBase",
                                        "_ZN2at6native29vectorized_elementwise_kernelILi4E1FEEviT0_"],
                        "cycles": [1100.0, 150.0]})
    c = correlate(sim, hw)
    assert len(c.matched) == 2
    assert c.mape == pytest.approx((0.1 + 0.25) / 2)


def test_analytic_bound_closed_form():
    # A: tensor only, 1 s at P_T; B: vector only, 1 s at ratio 16
    mix = pd.DataFrame({"kernel_name": ["A", "B"], "tensor_flops": [16.0, 0.0],
                        "vector_flops": [0.0, 1.0]})
    b = analytic_bound(mix, [32, 16, 8, 4], tensor_flops_per_s=16.0)
    assert b.balance_ratio == pytest.approx(16.0)
    assert b.crossing == pytest.approx(16.0)
    assert b.step.loc[8.0, "speedup"] == pytest.approx(2.0 / 1.5)
    assert b.step.loc[32.0, "speedup"] == pytest.approx(2.0 / 3.0)


def test_analytic_bound_on_real_mix(m2):
    mix = mix_from_ncu(m2)
    b = analytic_bound(mix, [32, 16, 8, 4, 2], tensor_flops_per_s=4096 * 132 * 1.755e9,
                       dram_bw=3.35e12)
    # the step moves far more tensor FLOPs than vector FLOPs
    assert b.balance_ratio > 16
    assert (np.diff(b.step["time_s"].to_numpy()) <= 1e-15).all()   # more vector units never slow


def _synthetic_sweep(path, m2, ratios=(32, 16, 8, 4)):
    # a toy response written through the stats layer: vector-busy time scales with the ratio
    recs, jobs = [], []
    k = m2.sort_values("duration_s", ascending=False).head(30).reset_index(drop=True)
    for r in ratios:
        jid = f"j{r}"
        jobs.append({"job_id": jid, "backend": "toy", "ok": True, "config": f"h100-{r}",
                     "workload": "m2", "params": json.dumps({"tensor_vector_ratio": r})})
        for i, row in k.iterrows():
            t = row.duration_s * 1e6
            vec = t * row.pipe_busy_fp32 * r / 16
            recs.append({"job_id": jid, "backend": "toy", "workload": "m2", "kernel_uid": i + 1,
                         "kernel_name": row.kernel_name, "time_us": t * (1 - row.pipe_busy_fp32) + vec,
                         "cycles": (t * (1 - row.pipe_busy_fp32) + vec) * 1.755e3,
                         "bound": "fp32" if vec > 0.3 * t else "dram", "complete": True,
                         "grid": row.grid})
    jobs.append({"job_id": "bad", "backend": "toy", "ok": False, "reason": "crashed",
                 "config": "h100-1", "workload": "m2", "params": json.dumps({"tensor_vector_ratio": 1})})
    write_results(path, recs, jobs, {"sweep": "toy"})
    return path


def test_cli_balance_and_report(tmp_path, m2):
    h5 = _synthetic_sweep(tmp_path / "toy.h5", m2)
    r = CliRunner().invoke(cli, ["analyze", "balance", str(h5), "--json", "--boot", "50"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)["m2/toy"]
    assert s["ratios"] == [32.0, 16.0, 8.0, 4.0]     # the failed job's ratio is not there
    assert s["kernels"] == 30
    assert s["step_speedup_max"] > 1.0
    out = tmp_path / "rep"
    r = CliRunner().invoke(cli, ["report", "--out", str(out), "--ncu", str(MAMBA2),
                                 "--sweep", str(h5), "--correlate", str(MAMBA2)])
    assert r.exit_code == 0, r.output
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    pngs = sorted((out / "figures").glob("*.png"))
    assert len(pngs) >= 8
    # self-contained: every image inline, nothing fetched from elsewhere
    assert html.count("data:image/png;base64,") == len(pngs)
    assert not re.search(r"src=['\"](?!data:)", html)
    for m in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / m).exists()
    assert "Time-weighted DRAM" in md or "DRAM use, time-weighted" in md
    assert "MAPE" in md


def test_cli_characterize_json():
    r = CliRunner().invoke(cli, ["analyze", "characterize", str(NCU_DIR), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert set(d) == {"mamba2_lm_2x768_L2048_B4", "mamba1_lm_2x768_L2048_B4"}
    for v in d.values():
        assert v["dram_util_time_weighted"] == pytest.approx(0.54, abs=0.015)


def test_cli_balance_refuses_unknown_ratio(tmp_path, m2):
    write_results(tmp_path / "x.h5", [{"job_id": "a", "kernel_name": "k", "kernel_uid": 1,
                                       "time_us": 1.0, "config": "mystery"}],
                  [{"job_id": "a", "ok": True, "config": "mystery", "params": "{}"}])
    r = CliRunner().invoke(cli, ["analyze", "balance", str(tmp_path / "x.h5")])
    assert r.exit_code != 0
    assert "ratio" in str(r.exception) or "ratio" in r.output


def test_pipe_time_envelope_closed_form():
    from simfront.analysis.bound import pipe_time_envelope
    # one kernel of 10 s with its vector pipe busy half the time
    e = pipe_time_envelope([10.0], [0.5], [32, 16, 8, 4])
    assert e.loc[8.0, "speedup"] == pytest.approx(10 / (5 + 2.5))      # 2x units
    assert e.loc[4.0, "speedup"] == pytest.approx(10 / (5 + 1.25))     # 4x units
    assert e.loc[32.0, "speedup"] == pytest.approx(1.0)               # half the units: 10 s still fits
    e2 = pipe_time_envelope([10.0], [0.8], [32])
    assert e2.loc[32.0, "speedup"] == pytest.approx(10 / 16)           # pipe alone needs 16 s


def test_correlation_picks_the_workload_of_the_ncu_step(m2):
    """One sweep file holds several workloads; an ncu file is one step: the records of the
    workload whose launches pair with it are used, each launch once, in launch order."""
    m1 = read_ncu_csv(MAMBA1_NCU)
    cols = ["kernel_name", "cycles", "grid", "block"]
    a = m2[cols].assign(workload="mamba2", kernel_uid=range(1, len(m2) + 1))
    a["cycles"] *= 1.1
    b = m1[cols].assign(workload="mamba1", kernel_uid=range(1, len(m1) + 1))
    sim = pd.concat([b, a], ignore_index=True).sample(frac=1.0, random_state=0)  # any order
    c = correlate(sim, m2[cols])
    assert len(c.matched) == len(m2) and c.unmatched_hw == 0
    assert c.mape == pytest.approx(0.1)
    assert "mamba2" in " ".join(c.notes)
    c1 = correlate(sim, m1[cols], workload="mamba1")
    assert len(c1.matched) == len(m1) and c1.mape == pytest.approx(0.0)


def test_report_opens_with_the_summary_mamba2_first(tmp_path, m2):
    """The answer first: the summary across workloads is the first section, Mamba2 before
    the rest, with the knee, the speedup at 8:1 and at the best ratio, the limiters' shares,
    and a named place for the hardware what-ifs (rendered when given)."""
    from simfront.analysis.report import Report
    from simfront.analysis.studies import add_balance, balance_per_workload, balance_summary

    rec = load_sweep_records(_synthetic_sweep(tmp_path / "toy.h5", m2))
    other = rec.copy()
    other["workload"] = "graphmamba"
    rec = pd.concat([other, rec.assign(workload="mamba2_lm")], ignore_index=True)
    results = balance_per_workload(rec, n_boot=20)
    table = balance_summary(results)
    assert list(table["workload"]) == ["mamba2_lm/toy", "graphmamba/toy"]
    res = results["mamba2_lm/toy"]
    assert table.loc[0, "speedup at 8:1"] == pytest.approx(res.step.loc[8.0, "speedup"])
    assert table.loc[0, "speedup at best"] == pytest.approx(res.step["speedup"].max())
    shares = table.loc[0, ["tensor-limited share", "vector-limited share", "other-limited share"]]
    assert shares.sum() == pytest.approx(1.0)
    whatif = [{"workload": "mamba2_lm", "condition": "66 SMs", "hw_ratio": 1.31,
               "model_ratio": 1.42, "per_kernel_mape": 0.18}]
    rep = Report("t", tmp_path / "rep")
    add_balance(rep, results, whatif=whatif)
    _, md = rep.write()
    text = md.read_text()
    heads = re.findall(r"^## (.+)$", text, flags=re.M)
    assert heads[0] == "Summary across workloads"
    assert heads.index("Tensor:vector balance: mamba2_lm/toy") < heads.index(
        "Tensor:vector balance: graphmamba/toy")
    assert "How far the model's what-ifs held on hardware" in text and "66 SMs" in text

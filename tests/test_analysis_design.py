"""The design-space study: a real sweep of the built-in model over three GPU axes, read one
axis at a time, and the balance study that no longer averages over the axes it does not
study."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from simfront.analysis.balance import balance_study
from simfront.analysis.design import along_axis, axis_points, design_study, where_it_pays
from simfront.analysis.studies import balance_per_workload, load_sweep_records
from simfront.cli import cli
from simfront.core.errors import InputError
from simfront.core.paths import REPO_ROOT
from simfront.stats.h5store import read_jobs, read_steps, write_results
from simfront.sweep.runner import Sweep

AXES = {"tensor_vector_ratio": [16, 4], "l2_size": ["25 MiB", "50 MiB"], "sm_count": [66, 132]}


@pytest.fixture(scope="module")
def sweep_h5(tmp_path_factory):
    """The selective-scan kernels (a real H100 capture) on 8 H100 variants, through the
    sweep stage's local pool and the built-in model."""
    d = tmp_path_factory.mktemp("design")
    path = d / "design.yaml"
    path.write_text(yaml.safe_dump({
        "name": "design", "dir": str(d / "sweep"),
        "workloads": [{"name": "scan", "traces": str(REPO_ROOT / "traces/mamba1_selective_scan")}],
        "gpu": {"base": "h100", "set": {"ratio_mode": "scale_vector"}, "axes": AXES},
        "backends": ["model"], "executor": {"kind": "local", "workers": 2}}))
    summary = Sweep.open(path).run(progress=False)
    assert summary.counts["done"] == 8
    return summary.results


def test_axes_are_read_as_quantities_of_the_gpu_and_the_base_is_the_h100(sweep_h5):
    points, base = axis_points(read_jobs(sweep_h5))
    assert sorted(points.columns) == sorted(AXES)          # ratio_mode is fixed: no axis
    assert sorted(points["l2_size"].unique()) == [25.0, 50.0]
    assert sorted(points["tensor_vector_ratio"].unique()) == [4.0, 16.0]
    assert base == {"l2_size": 50.0, "sm_count": 132.0, "tensor_vector_ratio": 16.0}


def test_step_times_are_the_sweeps_own_and_each_axis_is_read_at_the_base(sweep_h5):
    points, base = axis_points(read_jobs(sweep_h5))
    (name, res), = design_study(load_sweep_records(sweep_h5), points, base).items()
    assert name == "scan/model"
    # the sweep's gather sums each configuration's step on its own: the same times
    steps = read_steps(sweep_h5).set_index("config")["time_us"]
    np.testing.assert_allclose(res.points["time"], steps.reindex(res.points.index), rtol=1e-12)
    at_base = res.points.loc[(res.points[list(base)] == pd.Series(base)).all(axis=1)]
    assert len(at_base) == 1 and at_base["speedup"].iloc[0] == 1.0
    # along an axis, the others stay at the base, in order of more resource
    assert list(res.along["sm_count"]["value"]) == [66.0, 132.0]
    assert list(res.along["tensor_vector_ratio"]["value"]) == [16.0, 4.0]
    for a, line in res.along.items():
        others = res.points.loc[line.index, [o for o in res.axes if o != a]]
        assert (others == pd.Series({o: base[o] for o in others})).all().all()
    # where it stops paying: once per combination of the other two axes, one at the base
    for a in res.axes:
        assert len(res.pays[a]) == 4 and res.pays[a]["at_base"].sum() == 1
    s = res.summary()
    assert s["configs"] == 8 and s["fastest"]["speedup"] == pytest.approx(
        float(res.points["speedup"].max()))


def test_where_it_pays_on_curves_whose_answer_is_known():
    # L2 25 -> 50 gains 25%, 50 -> 100 1.3% (< 2% a doubling), 100 -> 200 nothing: more L2
    # stops paying from 50. The ratio is read the other way (fewer = more vector units):
    # 32 -> 16 gains 11%, 16 -> 8 0.6%: stops from 16. SMs keep paying: None.
    rows = []
    for l2, t_l2 in zip([25.0, 50.0, 100.0, 200.0], [10.0, 8.0, 7.9, 7.9]):
        for r, t_r in zip([32.0, 16.0, 8.0], [1.0, 0.9, 0.895]):
            for sms, t_s in zip([66.0, 132.0], [2.0, 1.0]):
                rows.append({"l2_size": l2, "tensor_vector_ratio": r, "sm_count": sms,
                             "time": t_l2 * t_r * t_s})
    pts = pd.DataFrame(rows)
    base = {"l2_size": 50.0, "tensor_vector_ratio": 16.0, "sm_count": 132.0}
    pts["speedup"] = float(pts.loc[(pts[list(base)] == pd.Series(base)).all(axis=1),
                                   "time"].iloc[0]) / pts["time"]
    axes = list(base)
    l2 = where_it_pays(pts, axes, base, "l2_size", 0.02)
    assert set(l2["stops_paying"]) == {50.0}
    ratio = where_it_pays(pts, axes, base, "tensor_vector_ratio", 0.02)
    assert set(ratio["stops_paying"]) == {16.0}
    sms = where_it_pays(pts, axes, base, "sm_count", 0.02)
    assert sms["stops_paying"].isna().all()


def test_a_parameter_given_two_ways_is_one_axis_value_and_a_missing_base_is_the_nearest():
    jobs = pd.DataFrame({
        "config": ["a", "b", "c", "d"], "ok": [True] * 4,
        "params": [json.dumps(p) for p in (
            {"l2_size": "25 MiB", "sm_count": 96, "tensor_vector_ratio": "8:1"},
            {"l2_size": "25 MiB", "sm_count": 96, "tensor_vector_ratio": 16},
            {"l2_size": 26214400, "sm_count": 66, "tensor_vector_ratio": 8},
            {"l2_size": 26214400, "sm_count": 66, "tensor_vector_ratio": "16:1"})]})
    points, base = axis_points(jobs)
    assert list(points.columns) == ["sm_count", "tensor_vector_ratio"]   # one L2 size
    assert sorted(points["tensor_vector_ratio"].unique()) == [8.0, 16.0]
    assert base == {"sm_count": 96.0, "tensor_vector_ratio": 16.0}      # 132 not swept


def test_balance_is_studied_at_each_point_of_the_other_axes_never_averaged(sweep_h5):
    rec = load_sweep_records(sweep_h5)
    studies = balance_per_workload(rec, n_boot=0)
    assert sorted(studies) == [f"scan/model [l2_size={l2}, sm_count={n}]"
                               for l2 in ("25 MiB", "50 MiB") for n in (132, 66)]
    for name, res in studies.items():
        assert not any("duplicate" in n for n in res.notes)
        point = name.split("[", 1)[1].rstrip("]")
        alone = balance_study(rec[rec["gpu_point"] == point], n_boot=0)
        pd.testing.assert_frame_equal(res.step, alone.step)


def test_cli_design_prints_json_and_writes_a_report(sweep_h5, tmp_path):
    out = tmp_path / "rep"
    r = CliRunner().invoke(cli, ["analyze", "design", str(sweep_h5), "--json", "--out",
                                 str(out)])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output[:r.output.rindex("}") + 1])["scan/model"]
    assert s["base"] == {"l2_size": 50.0, "sm_count": 132.0, "tensor_vector_ratio": 16.0}
    assert s["sm_count"]["values"] == [66.0, 132.0]
    md = (out / "report.md").read_text()
    assert "what each GPU parameter buys" in md and "stops paying from" in md
    assert (out / "figures" / "design_scan_model.png").stat().st_size > 0


def test_report_on_a_design_sweep_has_both_studies(sweep_h5, tmp_path):
    out = tmp_path / "rep"
    r = CliRunner().invoke(cli, ["report", "--out", str(out), "--sweep", str(sweep_h5)])
    assert r.exit_code == 0, r.output
    md = (out / "report.md").read_text()
    assert "scan/model: what each GPU parameter buys" in md
    assert "[l2_size=50 MiB, sm_count=132]" in md       # a balance study at each point


def test_a_shorter_fixed_cost_is_more_and_sorts_after_a_longer():
    jobs = pd.DataFrame({"config": ["a", "b"], "ok": [True, True],
                         "params": [json.dumps({"empty_kernel_ns": v}) for v in (576, 896)]})
    points, base = axis_points(jobs)
    assert base == {"empty_kernel_ns": 896.0}            # the H100's own
    pts = points.assign(time=[0.9, 1.0], speedup=[1.0 / 0.9, 1.0])
    line = along_axis(pts, "empty_kernel_ns", base)
    assert list(line["value"]) == [896.0, 576.0]
    assert line["gain"].iloc[1] == pytest.approx((1 / 0.9 - 1) / np.log2(896 / 576))


def test_a_sweep_that_varies_no_gpu_parameter_is_refused(tmp_path):
    h5 = tmp_path / "one.h5"
    write_results(h5, [{"job_id": "a", "kernel_name": "k", "kernel_uid": 1, "time_us": 1.0,
                        "config": "h100", "workload": "w"}],
                  [{"job_id": "a", "ok": True, "config": "h100", "params": "{}"}])
    with pytest.raises(InputError, match="vary no GPU parameter"):
        axis_points(read_jobs(h5))
    r = CliRunner().invoke(cli, ["analyze", "design", str(h5)])
    assert r.exit_code != 0


def test_a_choice_axis_takes_its_base_from_the_configurations_at_the_others_base():
    # ratio 16 is the H100 in either mode, so the sweep runs it once, under one mode: that
    # configuration is the base, whichever mode sorts first
    params = [{"ratio_mode": "scale_vector", "tensor_vector_ratio": 16},
              {"ratio_mode": "scale_tensor", "tensor_vector_ratio": 8},
              {"ratio_mode": "scale_vector", "tensor_vector_ratio": 8}]
    jobs = pd.DataFrame({"config": [f"h100[{i}]" for i in range(3)], "ok": [True] * 3,
                         "params": [json.dumps(p) for p in params]})
    points, base = axis_points(jobs)
    assert base == {"ratio_mode": "scale_vector", "tensor_vector_ratio": 16.0}

"""Per-kernel jobs (issue 13 item 3): a trace set split into one job per launch (or group),
identical launches run once, and the records gathered back into one step. On the shipped
`smoke_app-launch_apis` capture: 7 launches, of which two pairs are the same work (the
launch-API smoke test launches `axpy` and `shared_sum` twice each on the same buffers)."""

from __future__ import annotations

import json

import pytest
import yaml

from simfront.core.errors import SweepError
from simfront.core.paths import REPO_ROOT
from simfront.stats.h5store import read_records, read_steps
from simfront.sweep.plan import plan_sweep
from simfront.sweep.runner import Sweep
from simfront.sweep.spec import load_sweep
from simfront.sweep.split import group_launches, kernel_id_of, launch_hash, launch_hashes
from simfront.traces.store import read_manifest

SMOKE = REPO_ROOT / "traces" / "smoke_app-launch_apis"


@pytest.fixture(scope="module")
def smoke():
    m = read_manifest(SMOKE)
    files = [k["file"] for k in m["kernels"]]
    return m, files, {f: launch_hash(SMOKE / f) for f in files}


def _sweep(tmp_path, name="split", extra=None, backends="model"):
    doc = {"name": name, "workloads": [{"traces": "smoke_app-launch_apis"}],
           "gpu": "h100", "backends": backends,
           "resources": {"cpus": 1, "mem": "1G", "time": "120s"},
           "executor": {"kind": "local", "workers": 2}, **(extra or {})}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_launch_hash_ignores_only_the_kernel_id(smoke):
    m, files, hashes = smoke
    same: dict[str, list[str]] = {}
    for f in files:
        same.setdefault(hashes[f], []).append(f)
    pairs = sorted(v for v in same.values() if len(v) > 1)
    # axpy and shared_sum relaunched with the same grid on the same buffers
    assert pairs == [["kernel-5.traceg.xz", "kernel-7.traceg.xz"],
                     ["kernel-6.traceg.xz", "kernel-8.traceg.xz"]]
    entry = {k["file"]: k for k in m["kernels"]}
    for a, b in pairs:
        assert entry[a]["name"] == entry[b]["name"] and entry[a]["grid"] == entry[b]["grid"]
        assert entry[a]["sha256"] != entry[b]["sha256"]   # the texts differ (kernel id)
    # launches of the same kernel with another grid are other work
    axpy = [f for f in files if entry[f]["name"] == "_Z4axpyfPKfPfi"]
    assert len(axpy) == 4 and len({hashes[f] for f in axpy}) == 3


def test_groups_run_each_distinct_launch_once(smoke):
    _, files, hashes = smoke
    one = group_launches(files, hashes, 1)
    assert len(one) == 5 and sum(g.launch_count for g in one) == 7
    ran = [f for g in one for f in g.files]
    stood_for = [d for g in one for v in g.duplicates.values() for d in v]
    assert sorted(ran + stood_for) == sorted(files) and not set(ran) & set(stood_for)
    for g in one:  # a duplicate is always a later launch than the one that runs
        for f, dups in g.duplicates.items():
            assert all(kernel_id_of(d) > kernel_id_of(f) for d in dups)
    assert [len(g.files) for g in group_launches(files, hashes, 2)] == [2, 2, 1]
    assert len(group_launches(files, None, 1)) == 7      # dedup off: every launch runs
    with pytest.raises(ValueError):
        group_launches(files, hashes, 0)


def test_hashes_are_cached_per_set(tmp_path, smoke):
    _, files, hashes = smoke
    got = launch_hashes(SMOKE, files, tmp_path, "sethash")
    assert got == hashes
    cached = json.loads((tmp_path / "sethash.json").read_text())
    assert cached == hashes
    # the cache is what is read the second time (a planted value comes back)
    (tmp_path / "sethash.json").write_text(json.dumps({**cached, files[0]: "planted"}))
    assert launch_hashes(SMOKE, files, tmp_path, "sethash")[files[0]] == "planted"


def test_plan_makes_one_job_per_distinct_launch(tmp_path):
    spec = load_sweep(_sweep(tmp_path, extra={"split": "kernel"}))
    plan = plan_sweep(spec)
    assert len(plan.jobs) == 5
    assert all(len(j.kernels) == 1 for j in plan.jobs)
    assert sum(len(v) for j in plan.jobs for v in j.duplicates.values()) == 2
    assert [j.job_id for j in plan_sweep(spec).jobs] == [j.job_id for j in plan.jobs]
    grouped = plan_sweep(load_sweep(_sweep(tmp_path, "g", {"split": {"kernels_per_job": 3}})))
    assert [len(j.kernels) for j in grouped.jobs] == [3, 2]
    whole = plan_sweep(load_sweep(_sweep(tmp_path, "w")))
    assert len(whole.jobs) == 1 and whole.jobs[0].kernels is None


@pytest.mark.parametrize("split,msg", [
    ("kernels", "must be 'kernel' or a mapping"),
    ({"kernels_per_job": 0}, "whole number >= 1"),
    ({"per": 2}, "unknown key 'per'"),
    ({"dedup": "yes"}, "true or false")])
def test_bad_split_names_key_and_line(tmp_path, split, msg):
    with pytest.raises(SweepError) as exc:
        load_sweep(_sweep(tmp_path, extra={"split": split}))
    assert msg in str(exc.value) and "split" in str(exc.value)
    assert exc.value.line is not None


def test_split_run_gathers_to_the_same_step_as_one_job(tmp_path):
    """Per-kernel jobs on the local pool, gathered: a record for every launch, the copies
    marked, and the same per-kernel cycles and step total as the set run as one job."""
    split = Sweep.open(_sweep(tmp_path, "split", {"split": "kernel"}))
    s1 = split.run(progress=False)
    assert s1.counts["done"] == 5 and s1.counts["failed"] == 0
    whole = Sweep.open(_sweep(tmp_path, "whole"))
    s2 = whole.run(progress=False)
    a = read_records(s1.results).set_index("kernel_id").sort_index()
    b = read_records(s2.results).set_index("kernel_id").sort_index()
    assert list(a.index) == list(b.index) and len(a) == 7
    assert a.complete.all()
    assert (a.cycles == b.cycles).all()
    copies = a[a.same_launch_as.notna()]
    assert len(copies) == 2
    for kid, row in copies.iterrows():
        assert a.loc[int(row.same_launch_as), "cycles"] == row.cycles and kid > row.same_launch_as
    st = read_steps(s1.results)
    assert len(st) == 1
    row = st.iloc[0]
    assert row.launches == 7 and row.records == 7 and bool(row.complete) and row.jobs == 5
    assert row.cycles == pytest.approx(b.cycles.sum())
    assert json.loads(row.by_backend) == {"model": 7}
    assert row.same_launch_records == 2


def test_step_weights_a_deduplicated_captures_launches(tmp_path):
    """A deduplicated capture's kernel stands for several launches (multiplicity.txt):
    the gathered step counts them and weights its cycles by them."""
    import shutil

    from simfront.traces.multiplicity import write_multiplicity

    d = tmp_path / "smoke_dedup"
    shutil.copytree(SMOKE, d)
    write_multiplicity(d, {"kernel-2.traceg.xz": 24, "kernel-3.traceg.xz": 3})
    path = _sweep(tmp_path, "dedup", {"split": "kernel"})
    doc = yaml.safe_load(path.read_text())
    doc["workloads"] = [{"name": "smoke_dedup", "traces": str(d)}]
    path.write_text(yaml.safe_dump(doc))
    summary = Sweep.open(path).run(progress=False)
    recs = read_records(summary.results).set_index("kernel_id")
    assert recs.loc[2, "launch_count"] == 24 and recs.loc[3, "launch_count"] == 3
    assert (recs.drop(index=[2, 3]).launch_count == 1).all()
    row = read_steps(summary.results).iloc[0]
    assert row.kernels == 7 and row.launches == 7 - 2 + 24 + 3 and bool(row.complete)
    assert row.cycles == pytest.approx((recs.cycles * recs.launch_count).sum())
    assert row.cycles > recs.cycles.sum()

"""Mixed backends (issue 13 item 4): a backend stands in for the kernels the sweep's backend
did not finish, and every record says which backend made it.

The real Accel-Sim backend gives the whole-job failure case without an install (ACCELSIM_ROOT
unset). Per-kernel refusal needs Accel-Sim with the lowering of branch ``lower``; without it
a small plugin backend produces the same refused-kernel records (its shape is the runner's
``refused_records``), the only fake here. The ``accelsim``-marked test runs the real one.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
import yaml

from simfront.core.errors import SweepError
from simfront.stats.h5store import read_records, read_steps
from simfront.sweep import fallback
from simfront.sweep.plan import plan_sweep
from simfront.sweep.runner import Sweep
from simfront.sweep.spec import load_sweep
from simfront.sweep.worker import run_job, write_job_file

FILES = ["kernel-2.traceg.xz", "kernel-3.traceg.xz", "kernel-4.traceg.xz"]

# Refuses every shared_sum launch the way the Accel-Sim runner reports a kernel its
# --isa-compat lowering refuses; runs the others on the model.
PLUGIN = '''
from simfront.sim.backend import Backend, SimResult, register
from simfront.sim.model.backend import ModelBackend
from simfront.traces.reader import TraceSet


class Refuser(Backend):
    name = "refuser"

    def version(self):
        return "1"

    def run(self, job):
        ks = [k for k in TraceSet(job.trace_dir).kernels()
              if job.kernels is None or k.path.name in job.kernels]
        refused = [k.path.name for k in ks if "shared_sum" in k.header.name]
        rest = tuple(k.path.name for k in ks if k.path.name not in refused)
        recs = []
        if rest:
            res = ModelBackend().run(type(job)(**{**job.__dict__, "kernels": rest}))
            recs = [dict(r, backend=self.name) for r in res.records]
        recs += [{"kernel_uid": None, "complete": False, "accelsim_trace_file": f,
                  "reason": "refused by --isa-compat: no Ampere equivalent: SYNCS x4 "
                            "(first at line 20)"} for f in refused]
        return SimResult(job.job_id, self.name, ok=not refused, records=recs,
                         reason="1 kernel refused" if refused else None)


register("refuser", Refuser)
'''


def _sweep(tmp_path: Path, name: str, backends, extra=None, imports=()) -> Path:
    doc = {"name": name, "workloads": [{"traces": "smoke_app-launch_apis"}],
           "gpu": "h100", "backends": backends,
           "resources": {"cpus": 1, "mem": "1G", "time": "10m"},
           "executor": {"kind": "local", "workers": 2, "imports": list(imports)},
           **(extra or {})}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# ----------------------------------------------------------------------------- pure


def test_unfinished_names_each_kernel_and_why():
    recs = [{"kernel_id": 2, "complete": True},
            {"accelsim_trace_file": "kernel-3.traceg", "complete": False,
             "reason": "refused by --isa-compat: HGMMA x8"}]
    got = fallback.unfinished(FILES, recs, "1 kernel refused", "accelsim")
    assert got == {"kernel-3.traceg.xz": "refused by --isa-compat: HGMMA x8",
                   "kernel-4.traceg.xz": "accelsim: 1 kernel refused"}
    assert fallback.unfinished(FILES, [], None, "accelsim")["kernel-2.traceg.xz"] == \
        "accelsim returned no complete record"


def test_merge_replaces_only_what_the_stand_in_finished():
    primary = [{"kernel_id": 2, "complete": True, "backend": "accelsim"},
               {"accelsim_trace_file": "kernel-3.traceg.xz", "complete": False},
               {"accelsim_trace_file": "kernel-4.traceg.xz", "complete": False}]
    stand = [{"kernel_id": 3, "complete": True, "backend": "model"},
             {"kernel_id": 4, "complete": False, "backend": "model"},
             {"kernel_id": 2, "complete": True, "backend": "model"}]   # not asked for
    missing = {"kernel-3.traceg.xz": "refused", "kernel-4.traceg.xz": "timed out"}
    out = fallback.merge(primary, stand, FILES, missing, "accelsim")
    by = {(r.get("kernel_id"), r["backend"] if "backend" in r else None) for r in out}
    assert (2, "accelsim") in by and (3, "model") in by and (2, "model") not in by
    k3 = next(r for r in out if r.get("kernel_id") == 3)
    assert k3["requested_backend"] == "accelsim" and k3["fallback_reason"] == "refused"
    # kernel 4 finished nowhere: the primary's failure record stays visible
    assert any(r.get("accelsim_trace_file") == "kernel-4.traceg.xz" for r in out)


@pytest.mark.parametrize("value,msg", [
    ("model", "cannot stand in for itself"),
    ({"backend": "accelsim", "after": "10m"}, "shorter than resources.time"),
    ({"backend": "accelsim", "when": "1m"}, "unknown key 'when'")])
def test_bad_fallback_names_key_and_line(tmp_path, value, msg):
    with pytest.raises(SweepError) as exc:
        load_sweep(_sweep(tmp_path, "bad", "model", {"fallback": value}))
    assert msg in str(exc.value) and "fallback" in str(exc.value) and exc.value.line


def test_fallback_is_part_of_the_job_id(tmp_path):
    a = plan_sweep(load_sweep(_sweep(tmp_path, "a", "accelsim")))
    b = plan_sweep(load_sweep(_sweep(tmp_path, "b", "accelsim", {"fallback": "model"})))
    assert a.jobs[0].job_id != b.jobs[0].job_id and b.jobs[0].fallback == "model"


# ----------------------------------------------------------------------------- real runs


def test_model_stands_in_when_accelsim_cannot_run(tmp_path, monkeypatch):
    """The real Accel-Sim backend with no install fails the job; the model makes every
    record, each saying that Accel-Sim was asked for and why it has none."""
    monkeypatch.delenv("ACCELSIM_ROOT", raising=False)
    spec = load_sweep(_sweep(tmp_path, "noinstall", "accelsim",
                             {"fallback": "model", "split": {"kernels_per_job": 7}}))
    job = plan_sweep(spec).jobs[0]
    write_job_file(tmp_path / "run", job)
    out = run_job(tmp_path / "run", job.job_id, 1, job)
    result = json.loads((tmp_path / "run" / "jobs" / job.job_id / "result.json").read_text())
    assert out["ok"] and result["ok"]
    recs = result["records"]
    assert len(recs) == 5 and all(r["complete"] for r in recs)  # 5 distinct launches
    assert {r["backend"] for r in recs} == {"model"}
    assert {r["requested_backend"] for r in recs} == {"accelsim"}
    assert all("ACCELSIM_ROOT" in r["fallback_reason"] for r in recs)
    assert "ACCELSIM_ROOT" in result["primary_reason"]
    assert set(result["provenance"]["fallback"]["kernels"]) == set(job.kernels)


def test_a_sweep_refuses_an_absent_backend_rather_than_falling_back(tmp_path, monkeypatch):
    # a missing install is the user's to fix, not a reason to answer with the model
    monkeypatch.delenv("ACCELSIM_ROOT", raising=False)
    s = Sweep.open(_sweep(tmp_path, "absent", "accelsim", {"fallback": "model"}))
    with pytest.raises(SweepError) as exc:
        s.run(progress=False)
    assert "ACCELSIM_ROOT" in str(exc.value)


def test_mixed_step_records_say_which_backend_made_them(tmp_path):
    plugin = tmp_path / "refuser.py"
    plugin.write_text(textwrap.dedent(PLUGIN))
    s = Sweep.open(_sweep(tmp_path, "mixed", "refuser",
                          {"fallback": "model", "split": {"kernels_per_job": 2}},
                          imports=[str(plugin)]))
    summary = s.run(progress=False)
    assert summary.counts["failed"] == 0
    recs = read_records(summary.results)
    assert len(recs) == 7 and recs.complete.all()
    shared = recs.kernel_name.str.contains("shared_sum")
    assert set(recs[shared].backend) == {"model"} and set(recs[~shared].backend) == {"refuser"}
    assert set(recs[shared].requested_backend) == {"refuser"}
    assert recs[shared].fallback_reason.str.contains("SYNCS x4").all()
    assert (recs[~shared].fallback_reason == "").all()
    st = read_steps(summary.results).iloc[0]
    assert st.backend == "refuser" and bool(st.complete) and st.launches == 7
    assert json.loads(st.by_backend) == {"model": 3, "refuser": 4}


@pytest.mark.accelsim
@pytest.mark.skipif(not os.environ.get("ACCELSIM_ROOT"),
                    reason="ACCELSIM_ROOT is not set: no Accel-Sim install to run")
def test_real_accelsim_per_kernel_jobs_with_model_fallback(tmp_path):
    """The launch-API smoke capture through Accel-Sim 1.x, one job per distinct launch
    (5 of 7), the model standing in for any launch Accel-Sim does not finish."""
    s = Sweep.open(_sweep(tmp_path, "real", "accelsim",
                          {"fallback": "model", "split": "kernel",
                           "options": {"isa_compat": "ampere"}}))
    summary = s.run(progress=False)
    assert summary.counts["done"] == 5, summary.counts
    recs = read_records(summary.results)
    assert len(recs) == 7 and recs.complete.all()
    made = read_steps(summary.results).iloc[0]
    # these launches lower and finish on Accel-Sim 1.x: the model never had to stand in
    assert bool(made.complete) and json.loads(made.by_backend) == {"accelsim": 7}
    assert (recs.cycles > 0).all() and "fallback_reason" not in recs

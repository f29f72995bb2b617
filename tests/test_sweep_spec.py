"""Sweep files: parsing, expansion to content-addressed jobs, and errors that name key and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simfront.cli import main
from simfront.core.errors import SweepError
from simfront.sweep.plan import plan_sweep, variant_points
from simfront.sweep.spec import load_sweep

from conftest import SCAN_STEP

TRACE = str(SCAN_STEP)


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


GOOD = f"""
name: l2-and-sms
workloads:
  - name: scan
    traces: "{TRACE}"
    kernels: [kernel-35636.traceg.xz]
  - traces: "{TRACE}"
gpu:
  base: h100
  axes:
    sm_count: {{start: 66, stop: 132, step: 33}}
    l2_size: ["25 MiB", "50 MiB"]
backends: sweep-noop
resources: {{cpus: 2, mem: 3G, time: "00:10:00"}}
executor:
  kind: local
  max_attempts: 2
  backoff: 500ms
  imports: [simfront.sweep.testing]
  slurm: {{chunk: 100, parallel: 4, extra_args: ["--qos=low"]}}
"""


def test_good_file_parses_and_expands(tmp_path):
    spec = load_sweep(_write(tmp_path, GOOD))
    assert spec.name == "l2-and-sms"
    assert [a.name for a in spec.axes] == ["sm_count", "l2_size"]
    assert spec.axes[0].values == (66, 99, 132)
    assert spec.resources.cpus == 2 and spec.resources.mem_mb == 3072
    assert spec.resources.time_s == 600
    assert spec.executor.max_attempts == 2 and spec.executor.backoff_s == 0.5
    assert spec.executor.chunk == 100 and spec.executor.extra_args == ("--qos=low",)
    assert spec.directory == (tmp_path / ".sweeps" / "l2-and-sms").resolve()
    points = variant_points(spec)
    assert len(points) == 6 and {"sm_count": 99, "l2_size": "50 MiB"} in points

    plan = plan_sweep(spec)
    assert len(plan.jobs) == 2 * 6
    ids = [j.job_id for j in plan.jobs]
    assert len(set(ids)) == len(ids)
    # Content addressed: the same file planned again gives the same ids; the workload with a
    # kernel filter and the one without are different jobs over the same trace content.
    assert [j.job_id for j in plan_sweep(load_sweep(spec.path)).jobs] == ids
    by_wl = {j.workload for j in plan.jobs}
    assert by_wl == {"scan", "mamba1_scan_step"}
    assert len({j.trace_hash for j in plan.jobs}) == 1
    assert len({j.config_hash for j in plan.jobs}) == 6


def test_jobs_are_ordered_for_a_pool_of_as_many_workers_as_sets(tmp_path):
    """Configurations outermost, each set's turned back by its place: adjacent jobs are
    different sets (their trace passes side by side), and a configuration's jobs of two sets
    lie sets + 1 apart (the later reads the earlier's issue-model runs from disk)."""
    jobs = plan_sweep(load_sweep(_write(tmp_path, GOOD))).jobs
    sets = sorted({j.workload for j in jobs})
    assert len(sets) == 2
    assert len({(j.workload, j.config_hash) for j in jobs}) == len(jobs) == 2 * 6
    for i in range(len(jobs) - 1):
        assert jobs[i].workload != jobs[i + 1].workload
    where: dict[str, list[int]] = {}
    for i, j in enumerate(jobs):
        where.setdefault(j.config_hash, []).append(i)
    assert sorted(len(p) for p in where.values()) == [2] * 6
    assert all(abs(a - b) >= len(sets) + 1 for a, b in where.values())


def test_job_ids_follow_content_not_names(tmp_path):
    a = plan_sweep(load_sweep(_write(tmp_path, GOOD, "a.yaml")))
    renamed = GOOD.replace("name: scan", "name: renamed").replace("l2-and-sms", "other")
    b = plan_sweep(load_sweep(_write(tmp_path, renamed, "b.yaml")))
    assert [j.job_id for j in a.jobs] == [j.job_id for j in b.jobs]
    other_backend = GOOD.replace("backends: sweep-noop", "backends: sweep-probe")
    c = plan_sweep(load_sweep(_write(tmp_path, other_backend, "c.yaml")))
    assert not {j.job_id for j in a.jobs} & {j.job_id for j in c.jobs}


def test_geometric_range_and_zip(tmp_path):
    text = GOOD.replace('sm_count: {start: 66, stop: 132, step: 33}',
                        'sm_count: {start: 33, stop: 132, factor: 2}')
    text = text.replace('l2_size: ["25 MiB", "50 MiB"]',
                        'l2_size: ["25 MiB", "50 MiB", "100 MiB"]\n  combine: zip')
    spec = load_sweep(_write(tmp_path, text))
    assert spec.axes[0].values == (33, 66, 132)
    assert variant_points(spec) == [{"sm_count": 33, "l2_size": "25 MiB"},
                                    {"sm_count": 66, "l2_size": "50 MiB"},
                                    {"sm_count": 132, "l2_size": "100 MiB"}]


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


@pytest.mark.parametrize("old,new,key,needle", [
    ("resources: {cpus: 2", "resources: {gpus: 2", "resources.gpus", "resources:"),
    ("  max_attempts: 2", "  max_attempt: 2", "executor.max_attempt", "max_attempt:"),
    ("    kernels: [kernel-35636.traceg.xz]", "    kernel: [x]", "workloads[0].kernel",
     "kernel: [x]"),
    ("backends: sweep-noop", "backend: sweep-noop", "backend", "backend:"),
    ("mem: 3G", "mem: lots", "resources.mem", "resources:"),
    ('time: "00:10:00"', "time: 600", "resources.time", "resources:"),
    ("  max_attempts: 2", "  max_attempts: 0", "executor.max_attempts", "max_attempts:"),
    ("  kind: local", "  kind: pbs", "executor.kind", "kind: pbs"),
    ("  backoff: 500ms", "  backoff: soon", "executor.backoff", "backoff:"),
    ("    sm_count: {start: 66, stop: 132, step: 33}", "    sm_count: {start: 66, stop: 1}",
     "gpu.axes.sm_count", "sm_count:"),
    ("    sm_count: {start: 66, stop: 132, step: 33}", "    sm_count: []",
     "gpu.axes.sm_count", "sm_count:"),
    ("    sm_count: {start: 66, stop: 132, step: 33}",
     "    sm_count: {start: 66, stop: 132, step: 33}\n    sm_count: [1]",
     "sm_count", "sm_count: [1]"),
])
def test_malformed_file_names_key_and_line(tmp_path, old, new, key, needle):
    text = GOOD.replace(old, new)
    assert text != GOOD
    path = _write(tmp_path, text)
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    err = info.value
    assert err.field == key
    assert err.line == _line_of(text, needle)
    assert f"line {err.line}" in str(err) and key in str(err)


def test_yaml_syntax_error_names_line(tmp_path):
    text = GOOD.replace("  base: h100", "  base: [h100")
    with pytest.raises(SweepError) as info:
        load_sweep(_write(tmp_path, text))
    assert info.value.line is not None and info.value.line >= _line_of(text, "base:")


@pytest.mark.parametrize("old,new,key,needle", [
    ("    l2_size:", "    l2_sise:", "gpu.axes.l2_sise", "l2_sise:"),
    ('l2_size: ["25 MiB", "50 MiB"]', 'l2_size: ["25 MiB", "lots"]', "gpu.axes.l2_size",
     "l2_size:"),
    ("sm_count: {start: 66, stop: 132, step: 33}", "sm_count: [66, -4]", "gpu.axes.sm_count",
     "sm_count:"),
    ("  base: h100", "  base: no-such-gpu", "gpu.base", "base:"),
    ("backends: sweep-noop", "backends: [sweep-noop, nonesuch]", "backends", "backends:"),
    (f'traces: "{TRACE}"\ngpu', 'traces: "/nonexistent/traces"\ngpu', "traces",
     "- traces: \"/nonexistent"),
    ("kernels: [kernel-35636.traceg.xz]", "kernels: [selective_scan_fwd*]", "kernels",
     "kernels: [selective"),
])
def test_bad_values_found_when_planning_name_key_and_line(tmp_path, old, new, key,
                                                          needle):
    text = GOOD.replace(old, new)
    assert text != GOOD
    path = _write(tmp_path, text)
    spec = load_sweep(path)
    with pytest.raises(SweepError) as info:
        plan_sweep(spec)
    assert info.value.field == key
    assert info.value.line == _line_of(text, needle)


def test_cli_plan_prints_count_and_cost_or_key_and_line(tmp_path, capsys):
    path = _write(tmp_path, GOOD)
    main(["sweep", "plan", str(path)])
    out = capsys.readouterr().out
    assert "12 jobs" in out and "estimated cost" in out

    bad = _write(tmp_path, GOOD.replace("resources: {cpus: 2", "resources: {gpus: 2"), "bad.yaml")
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "plan", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"line {_line_of(GOOD, 'resources:')}" in err and "resources.gpus" in err


def test_example_sweep_files_plan(repo_root):
    files = sorted((repo_root / "experiments").glob("*.yaml"))
    assert any(f.name.startswith("example") for f in files)
    for f in files:
        plan = plan_sweep(load_sweep(f))
        assert plan.jobs, f
        assert all(j.trace_bytes > 0 for j in plan.jobs)


def test_executor_names_are_one_list(tmp_path):
    # the sweep file reader and make_executor take their names from the registry's one list,
    # and each built-in name loads its class only when asked
    from simfront.sweep.registry import BUILTIN_EXECUTORS, _factory, executor_names

    assert set(executor_names()) >= {"local", "slurm"} == set(BUILTIN_EXECUTORS)
    for name, target in BUILTIN_EXECUTORS.items():
        assert _factory(name).__name__ == target.split(":")[1]
    with pytest.raises(SweepError) as info:
        load_sweep(_write(tmp_path, GOOD.replace("  kind: local", "  kind: pbs")))
    assert "choose one of: " + ", ".join(executor_names()) in str(info.value)


def test_jobs_carry_the_gpu_built_at_plan_time(tmp_path):
    # one typed description per variant point, from the plan through the job store's JSON
    # to the worker, hashed as the job id was
    from simfront.gpu import GPU, config_hash, load_gpu, with_variants
    from simfront.sweep.plan import JobSpec

    plan = plan_sweep(load_sweep(_write(tmp_path, GOOD)))
    for job in plan.jobs:
        assert isinstance(job.gpu, GPU)
        assert config_hash(job.gpu) == job.config_hash
        assert job.gpu == with_variants(load_gpu("h100"), **job.params)
        back = JobSpec.from_dict(json.loads(json.dumps(job.to_dict())))
        assert back == job and config_hash(back.gpu) == job.config_hash
    # every point of the sweep its own description, every job of one point the same one
    assert len({j.config_hash for j in plan.jobs}) == 6
    assert len({id(j.gpu) for j in plan.jobs}) == 6


def test_a_job_whose_gpu_does_not_match_its_hash_fails_saying_so(tmp_path):
    from simfront.sweep.plan import JobSpec
    from simfront.sweep.worker import run_job

    job = plan_sweep(load_sweep(_write(tmp_path, GOOD))).jobs[0]
    edited = job.to_dict()
    edited["gpu"]["l2"]["size"] = "60 MiB"
    out = run_job(tmp_path / "run", job.job_id, 1, JobSpec.from_dict(edited))
    assert not out["ok"]
    assert f"not to the config hash {job.config_hash}" in out["reason"]
    ok = run_job(tmp_path / "run2", job.job_id, 1, job)
    assert ok["ok"], ok["reason"]


def test_a_job_spec_without_a_gpu_names_the_job(tmp_path):
    from simfront.sweep.plan import JobSpec

    d = plan_sweep(load_sweep(_write(tmp_path, GOOD))).jobs[0].to_dict()
    del d["gpu"]
    with pytest.raises(SweepError, match=f"job {d['job_id']} carries no GPU description"):
        JobSpec.from_dict(d)


def test_a_simjob_takes_only_a_gpu_description(tmp_path):
    from simfront.gpu import load_gpu
    from simfront.sim.backend import SimJob

    assert SimJob("j", tmp_path, load_gpu("h100"), tmp_path).gpu.name == "h100"
    with pytest.raises(TypeError, match="SimJob.gpu must be a simfront.gpu.GPU"):
        SimJob("j", tmp_path, "h100", tmp_path)

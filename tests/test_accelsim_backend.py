"""The Accel-Sim backend: install detection, job directory, limits, failures.

Most tests drive the runner against a stand-in ``accel-sim.out`` (a shell script that
replays a real Accel-Sim log from tests/data/accelsim), so the runner's own behaviour is tested
everywhere; the test marked ``accelsim`` runs the real simulator where ACCELSIM_ROOT is set.
"""

from __future__ import annotations

import json
import lzma
import os
import shutil
import stat
from pathlib import Path

import pytest

from simfront.core.errors import BackendError
from simfront.sim.accelsim import AccelSimBackend, find_install, load_result
from simfront.sim.accelsim.runner import STDOUT_NAME
from simfront.sim.backend import SimJob, get_backend
from simfront.stats import h5store

from conftest import ACCELSIM_LOGS, SCAN_STEP

TWO_CRASH = ACCELSIM_LOGS / "two_kernels_fwd_then_bwd_crash.out.xz"
BASELINE_LOG = ACCELSIM_LOGS / "selective_scan_fwd_baseline.out.xz"
FWD, BWD = "kernel-35636.traceg.xz", "kernel-35643.traceg.xz"
SMALL = "kernel-35601.traceg.xz"

FAKE = """#!/bin/sh
# stand-in for accel-sim.out: record how it was called, then replay a real log
echo "$@" > called.txt
echo "$LD_LIBRARY_PATH" > ldpath.txt
ls traces > sent.txt
head -q -n 7 traces/*.traceg 2>/dev/null | grep -E 'binary version|nregs' >> sent.txt
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
cat "$FAKE_LOG"
echo "fake stderr line" >&2
exit "${FAKE_RC:-0}"
"""


@pytest.fixture()
def fake_install(tmp_path, monkeypatch):
    root = tmp_path / "accel-sim-framework" / "gpu-simulator"
    binary = root / "bin" / "release" / "accel-sim.out"
    binary.parent.mkdir(parents=True)
    binary.write_text(FAKE)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    lib = root / "gpgpu-sim" / "lib" / "gcc-12.2.0" / "cuda-11080" / "release"
    lib.mkdir(parents=True)
    (lib / "libcudart.so").write_bytes(b"")
    monkeypatch.setenv("ACCELSIM_ROOT", str(root))
    monkeypatch.delenv("GPGPUSIM_ROOT", raising=False)
    return root, lib


def _traces(tmp_path, files):
    d = tmp_path / "mamba1_scan_pair"
    d.mkdir()
    for f in files:
        os.symlink(SCAN_STEP / f, d / f)
    (d / "kernelslist.g").write_text("".join(f + "\n" for f in files))
    return d


def _config_dir(tmp_path) -> Path:
    """The project's own H100 config in a folder named like the logged run's (the public
    config those logs ran with is third-party and not shipped; the stand-in ignores it)."""
    d = tmp_path / "baseline"
    if not d.exists():
        from simfront.gpu import load_gpu
        from simfront.sim.accelsim.config import write_accelsim_config
        write_accelsim_config(load_gpu("h100"), d)
    return d


def _log(tmp_path, src: Path) -> str:
    """A shipped (compressed) log, plain for the stand-in to replay."""
    dst = tmp_path / src.name.removesuffix(".xz")
    if not dst.exists():
        dst.write_text(lzma.open(src, "rt").read())
    return str(dst)


def _job(tmp_path, traces, **options):
    options.setdefault("config_dir", str(_config_dir(tmp_path)))
    timeout = options.pop("timeout_s", 60)
    return SimJob(job_id="job-1", trace_dir=traces, gpu=None, out_dir=tmp_path / "job",
                  options=options, timeout_s=timeout)


def test_registered_and_install_detection(fake_install, monkeypatch, tmp_path):
    root, lib = fake_install
    assert isinstance(get_backend("accelsim"), AccelSimBackend)
    inst = find_install()
    assert inst.root == root and inst.major == 1 and inst.lib_dirs == (lib,)
    assert inst.env({"LD_LIBRARY_PATH": "/x"})["LD_LIBRARY_PATH"] == f"{lib}:/x"
    # the framework's top folder and the binary itself name the same install
    assert find_install(root.parent).binary == inst.binary
    assert find_install(inst.binary).root == root
    # Accel-Sim 2.x: Hopper opcode map and traceDsm
    (root / "ISA_Def").mkdir()
    (root / "ISA_Def" / "hopper_opcode.h").write_text("// map\n")
    dsm = root.parent / "util" / "tracer_nvbit" / "tracer_tool" / "traceDsm"
    dsm.parent.mkdir(parents=True)
    dsm.write_text("#!/bin/sh\n")
    dsm.chmod(0o755)
    two = find_install(root)
    assert two.major == 2 and two.trace_dsm == dsm and 90 in two.binary_versions
    assert two.reads_tracez


def test_no_install_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("ACCELSIM_ROOT", raising=False)
    with pytest.raises(BackendError, match="set ACCELSIM_ROOT"):
        find_install()
    with pytest.raises(BackendError, match="no accel-sim.out"):
        find_install(tmp_path)
    res = AccelSimBackend().run(_job(tmp_path, tmp_path))
    assert not res.ok and "ACCELSIM_ROOT" in res.reason


def test_garbage_headers_are_not_sent(fake_install, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    traces = _traces(tmp_path, [SMALL])
    res = AccelSimBackend().run(_job(tmp_path, traces))
    assert not res.ok and "not sent to the simulator" in res.reason
    assert "binary version" in res.reason and "--isa-compat ampere" in res.reason
    assert not (tmp_path / "job" / "called.txt").exists()  # the simulator never started
    assert load_result(tmp_path / "job").reason == res.reason


def test_isa_compat_run_with_crash_log(fake_install, tmp_path, monkeypatch):
    """The two-kernel run that crashed on REDG, replayed: kernel 1 kept, job failed."""
    root, lib = fake_install
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, TWO_CRASH))
    monkeypatch.setenv("FAKE_RC", "134")
    traces = _traces(tmp_path, [SMALL, "kernel-35629.traceg.xz"])
    res = AccelSimBackend().run(_job(tmp_path, traces, isa_compat="ampere",
                                     header_overrides={"*": {"nregs": 32}}))
    job = tmp_path / "job"
    assert (job / "called.txt").read_text().split() == [
        "-trace", "traces/kernelslist.g", "-config", "gpgpusim.config", "-config", "trace.config"]
    assert (job / "ldpath.txt").read_text().startswith(str(lib))
    sent = (job / "sent.txt").read_text()
    assert "kernel-35601.traceg" in sent and "-binary version = 80" in sent
    assert "-nregs = 32" in sent and (job / "gpgpusim.config").exists()
    assert not res.ok
    assert "REDG" in res.reason and "undefined instruction" in res.reason
    assert "SIGABRT" in res.reason or "134" in res.reason
    k1, k2 = res.records
    assert k1["complete"] and k1["cycles"] == 56068 and k1["job_id"] == "job-1"
    assert k1["backend"] == "accelsim" and k1["workload"] == "mamba1_scan_pair"
    assert k1["trace_hash"] and k1["accelsim_trace_file"] == SMALL
    assert not k2["complete"]
    assert res.provenance["isa_compat"]["changed"] == {"VIADD": 16}
    with lzma.open(job / STDOUT_NAME, "rt") as f:  # stdout kept, compressed
        assert f.read() == lzma.open(TWO_CRASH, "rt").read()
    assert json.loads((job / "result.json").read_text())["ok"] is False


def test_timeout_kills_the_simulator(fake_install, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    monkeypatch.setenv("FAKE_SLEEP", "30")
    traces = _traces(tmp_path, [SMALL])
    res = AccelSimBackend().run(_job(tmp_path, traces, isa_compat="ampere", timeout_s=1,
                                     header_overrides={"*": {"nregs": 32}}))
    assert not res.ok and "timed out after 1 s" in res.reason
    assert res.wall_s < 15
    assert not any(r.get("complete") for r in res.records)


def test_finished_run_gives_records(fake_install, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    traces = _traces(tmp_path, [SMALL])
    res = AccelSimBackend().run(_job(tmp_path, traces, isa_compat="ampere",
                                     header_overrides={"*": {"nregs": 32}}))
    assert res.ok, res.reason
    (r,) = res.records
    assert r["cycles"] == 56068 and r["complete"] and r["config"] == "baseline"
    assert res.provenance["parse"]["n_unknown_lines"] == 0


SWEEP = """\
name: accelsim_e2e
dir: {dir}
workloads:
  - name: elementwise
    traces: mamba1_torch_elementwise
    kernels: ["kernel-35621.traceg.xz", "kernel-35622.traceg.xz"]
gpu:
  base: h100
  axes:
    l2_size: ["25 MiB", "50 MiB", "100 MiB"]
backends: accelsim
options:
  isa_compat: ampere
resources:
  cpus: 1
  mem: 4G
  time: 10m
executor:
  kind: local
  max_attempts: 1
"""


@pytest.mark.accelsim
def test_real_accelsim_three_job_sweep(tmp_path):
    """A 3-job sweep (three L2 sizes of the H100 preset) of the repo's sample trace set
    through the real simulator, end to end: plan, run, gather; each job's numbers, parsed
    again from its own compressed stdout, are found in the sweep's HDF5 file."""
    if not os.environ.get("ACCELSIM_ROOT"):
        pytest.skip("ACCELSIM_ROOT is not set: no Accel-Sim install to run")
    from click.testing import CliRunner

    from simfront.cli import cli
    from simfront.sim.accelsim import parse as acs

    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP.format(dir=tmp_path / "out"))
    res = CliRunner().invoke(cli, ["sweep", "run", str(sweep)])
    assert res.exit_code == 0, res.output
    h5 = tmp_path / "out" / "results.h5"
    jobs = h5store.read_jobs(h5)
    assert len(jobs) == 3 and jobs["ok"].all(), jobs.get("reason")
    df = h5store.read_records(h5)
    assert len(df) == 6 and df["complete"].all()
    for job_id in jobs["job_id"]:
        logs = list((tmp_path / "out").glob(f"jobs/{job_id}/**/{STDOUT_NAME}"))
        assert len(logs) == 1
        recs = acs.kernel_records(acs.parse_file(logs[0]))
        rows = df[df.job_id == job_id].sort_values("kernel_uid")
        assert list(rows["cycles"]) == [r["cycles"] for r in recs]
        assert list(rows["thread_instructions"]) == [r["thread_instructions"] for r in recs]
        assert list(rows["l2_total_accesses"]) == [r["l2_total_accesses"] for r in recs]
        assert (rows["cycles"] > 0).all()
    # the same kernels in every job: their instruction counts cannot depend on the L2 size
    assert df.groupby("kernel_uid")["instructions"].nunique().eq(1).all()
    assert set(df["config"]) == {f"h100[l2_size={s}]" for s in ("25 MiB", "50 MiB", "100 MiB")}


def test_cli_check_compat_and_run(fake_install, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from simfront.sim.accelsim.cli import accelsim

    runner = CliRunner()
    res = runner.invoke(accelsim, ["check"])
    assert res.exit_code == 0 and "major      1" in res.output
    traces = _traces(tmp_path, [SMALL])
    res = runner.invoke(accelsim, ["compat", str(traces), str(tmp_path / "c"), "--nregs", "32"])
    assert res.exit_code == 0, res.output
    assert "8 of 328 instructions lowered (VIADD 8)" in res.output
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    res = runner.invoke(accelsim, ["run", str(traces), "--out", str(tmp_path / "j"),
                                   "--config-dir", str(_config_dir(tmp_path)), "--isa-compat", "ampere",
                                   "--nregs", "32"])
    assert res.exit_code == 0, res.output
    assert "56,068" in res.output


def test_configs_written_from_a_gpu_description(fake_install, tmp_path, monkeypatch):
    from simfront.gpu.presets import load_gpu

    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    traces = _traces(tmp_path, [SMALL])
    gpu = load_gpu("h100")
    job = SimJob(job_id="j", trace_dir=traces, gpu=gpu, out_dir=tmp_path / "job",
                 options={"isa_compat": "ampere", "header_overrides": {"*": {"nregs": 32}}})
    res = AccelSimBackend().run(job)
    assert res.ok, res.reason
    assert (tmp_path / "job" / "gpgpusim.config").read_text().count("-gpgpu_n_mem ") == 1
    from simfront.gpu import config_hash

    assert res.records[0]["config"] == "h100"
    assert res.records[0]["config_hash"] == config_hash(gpu)  # as the model and sweeps key it


def test_assertion_on_stderr_is_quoted(fake_install, tmp_path, monkeypatch):
    """assert() writes to stderr: a real run's stdout then just stops mid-kernel."""
    text = lzma.open(BASELINE_LOG, "rt").read()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.index("kernel_name = ")])
    root, _ = fake_install
    binary = root / "bin" / "release" / "accel-sim.out"
    binary.write_text(FAKE.replace('echo "fake stderr line" >&2', 'echo "accel-sim.out: '
                                   "shader.cc:3812: void barrier_set_t::deallocate_barrier("
                                   "unsigned int): Assertion \\`active.any() == false' failed."
                                   '" >&2'))
    monkeypatch.setenv("FAKE_LOG", str(cut))
    monkeypatch.setenv("FAKE_RC", "134")
    traces = _traces(tmp_path, [SMALL])
    res = AccelSimBackend().run(_job(tmp_path, traces, isa_compat="ampere",
                                     header_overrides={"*": {"nregs": 32}}))
    assert not res.ok
    assert res.reason.startswith("simulator assertion failed")
    assert "deallocate_barrier" in res.reason and "active.any() == false" in res.reason
    assert [r["complete"] for r in res.records] == [False]


def test_repaired_sample_and_accelsim_2x(fake_install, tmp_path, monkeypatch, repo_root):
    """The repo's sample traces carry repaired headers (binary version 90): a 1.x install
    refuses them without --isa-compat, a 2.x install takes them as they are; a 1.x install
    converts Accel-Sim 2.x .tracez kernels with a traceDsm it finds."""
    root, _ = fake_install
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    sample = repo_root / "traces" / "mamba1_torch_elementwise"
    job = SimJob(job_id="s", trace_dir=sample, gpu=None, out_dir=tmp_path / "a",
                 kernels=("kernel-35621.traceg.xz",), options={"config_dir": str(_config_dir(tmp_path))})
    res = AccelSimBackend().run(job)
    assert not res.ok and "binary version '90'" in res.reason
    (root / "ISA_Def").mkdir()
    (root / "ISA_Def" / "hopper_opcode.h").write_text("// map\n")
    res = AccelSimBackend().run(job)
    assert res.ok, res.reason
    assert (tmp_path / "a" / "traces" / "kernel-35621.traceg.xz").is_symlink()
    # .tracez through traceDsm (a stand-in that writes the text trace next to its input)
    (root / "ISA_Def" / "hopper_opcode.h").unlink()
    dsm = root / "bin" / "traceDsm"
    dsm.write_text(f'#!/bin/sh\nxzcat {sample / "kernel-35621.traceg.xz"} > "${{1%.tracez}}.traceg"\n')
    dsm.chmod(0o755)
    tz = tmp_path / "tz"
    tz.mkdir()
    (tz / "kernel-1.tracez").write_bytes(b"binary")
    (tz / "kernelslist.g").write_text("kernel-1.tracez\n")
    res = AccelSimBackend().run(SimJob(job_id="z", trace_dir=tz, gpu=None, out_dir=tmp_path / "z",
                                       options={"config_dir": str(_config_dir(tmp_path)),
                                                "isa_compat": "ampere"}))
    assert res.ok, res.reason
    assert (tmp_path / "z" / "traces" / "kernel-1.traceg").exists()
    assert res.records[0]["accelsim_trace_file"] == "kernel-1.traceg"


def test_header_overrides_without_isa_compat(fake_install, tmp_path, monkeypatch):
    root, _ = fake_install
    (root / "ISA_Def").mkdir()
    (root / "ISA_Def" / "hopper_opcode.h").write_text("// map\n")  # 2.x: takes sm_90
    monkeypatch.setenv("FAKE_LOG", _log(tmp_path, BASELINE_LOG))
    traces = _traces(tmp_path, [SMALL])
    res = AccelSimBackend().run(_job(tmp_path, traces, header_overrides={
        "*": {"nregs": 32}, SMALL: {"binary_version": 90}}))
    assert res.ok, res.reason
    sent = (tmp_path / "job" / "sent.txt").read_text()
    assert "-binary version = 90" in sent and "-nregs = 32" in sent
    assert "isa_compat" not in res.provenance

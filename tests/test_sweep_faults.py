"""A sweep's files under the faults a long sweep on a shared file system meets: result files
deleted, torn or with a byte changed, a damaged job store or results.h5, an edited input, two
sweeps of one name, a read-only folder, a full disk, bad input files, kill -9 at random
moments. Each test damages real files and runs the real `simfront` command (or the library
in this process) and asserts the outcome: the job reruns, the file is rebuilt, or the
command stops with a one-line error naming the file; never a lost or doubled record.

The jobs are real model jobs on the smallest kernels of the shipped H100 sample
(a few milliseconds each)."""

from __future__ import annotations

import collections
import contextlib
import lzma
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simfront.core.errors import SweepError
from simfront.core.paths import REPO_ROOT
from simfront.stats.h5store import read_jobs, read_records
from simfront.sweep.runner import Sweep
from simfront.sweep.testing import small_kernel_workloads, write_sweep
from simfront.sweep.worker import job_dir, read_result, read_runs
from simfront.traces.store import StoredSet, read_manifest

ACCELSIM_LOG = REPO_ROOT / "tests" / "data" / "accelsim" / "selective_scan_fwd_baseline.out.xz"


def _cli(*args: str, umask: int | None = None) -> subprocess.CompletedProcess:
    """The `simfront` command as a user runs it (its main(), exit status and all)."""
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([sys.executable, "-m", "simfront", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300, preexec_fn=pre)


def _main(capsys, *args: str) -> subprocess.CompletedProcess:
    """`simfront` through its main() in this process (quicker than a new one, for the
    commands that stop before any job runs); the same result shape as ``_cli``."""
    from simfront.cli import main

    capsys.readouterr()
    try:
        main(list(args))
        rc = 0
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), rc, out.out, out.err)


#: the CLI's exit status for input it cannot use (a bad file, field or filter)
INPUT_ERROR = 2


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed with one `error:` line (no traceback) that says ``words``."""
    assert r.returncode != 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _model_sweep(tmp_path: Path, name: str, n: int = 4, **kw) -> Path:
    kw.setdefault("resources", {"cpus": 1, "mem": "1G", "time": "120s"})
    return write_sweep(tmp_path, name, traces=small_kernel_workloads(n), backends="model",
                       executor={"workers": 2, "max_attempts": 2, "backoff": "0s"}, **kw)


def _records_once(s: Sweep) -> None:
    """results.h5 has every planned job's record exactly once (one kernel a job)."""
    recs = read_records(s.results_path)
    counts = collections.Counter(recs.job_id)
    ids = [j.job_id for j in s.plan().jobs]
    assert sorted(counts) == sorted(ids) and set(counts.values()) == {1}, counts
    assert read_jobs(s.results_path).ok.all()


def _ok_runs(s: Sweep) -> collections.Counter:
    return collections.Counter(r["job_id"] for r in read_runs(s.directory) if r["ok"])


# --------------------------------------------------------------------------- result files


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "digit":
        # still valid JSON, a different number: only the checksum can tell
        i = data.index(b'"cycles":') + len(b'"cycles":')
        d = data[i:i + 1]
        path.write_bytes(data[:i] + (b"7" if d != b"7" else b"8") + data[i + 1:])
    elif how == "byte":
        i = random.Random(7).randrange(len(data))
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1:])
    else:
        raise ValueError(how)


DAMAGES = ("delete", "truncate", "empty", "digit", "byte")


def test_lost_or_damaged_result_files_are_named_requeued_and_rerun(tmp_path):
    path = _model_sweep(tmp_path, "res", n=len(DAMAGES) + 1)
    s = Sweep.open(path)
    assert s.run(progress=False).counts["done"] == len(DAMAGES) + 1
    ids = [j.job_id for j in s.plan().jobs]
    victims = dict(zip(ids, DAMAGES))  # one job per kind of damage; the last one intact
    for job_id, how in victims.items():
        _damage(job_dir(s.directory, job_id) / "result.json", how)

    # gather writes what survives, then says whose records are missing: not exit 0
    r = _cli("sweep", "gather", str(path))
    _one_line_error(r, "result.json", f"of {len(DAMAGES)} finished job(s)", "queued again",
                    "sweep run")
    assert set(read_records(s.results_path).job_id) == {ids[-1]}
    reasons = dict(zip(s.status().job_id, s.status().reason))
    assert "missing" in reasons[ids[0]] and "not whole JSON" in reasons[ids[1]]
    assert "empty" in reasons[ids[2]] and "checksum mismatch" in reasons[ids[3]]
    # status tells the truth: those jobs are not done
    r = _cli("sweep", "status", str(path), "--jobs")
    assert r.returncode == 0 and "done 1, failed 0" in r.stdout, r.stdout
    assert all(f"{j}  queued" in r.stdout for j in victims)

    # and one lost while no command looked: the resume finds it before it runs the rest
    (job_dir(s.directory, ids[-1]) / "result.json").unlink()
    r = _cli("sweep", "run", str(path), "-q")
    assert r.returncode == 0, r.stderr
    assert "1 finished job(s) had lost or damaged result files" in r.stderr
    assert f"jobs/{ids[-1]}/result.json: missing" in r.stderr
    assert f"started {len(ids)} attempts" in r.stdout
    _records_once(s)
    assert set(_ok_runs(s).values()) == {2}


def test_a_worker_never_trusts_a_damaged_result(tmp_path):
    """The worker's own check (a requeued array task, a second driver): a result.json whose
    checksum fails is not 'already done'."""
    from simfront.sweep.worker import run_job

    path = _model_sweep(tmp_path, "worker", n=1)
    s = Sweep.open(path)
    s.run(progress=False)
    job_id = s.plan().jobs[0].job_id
    res = job_dir(s.directory, job_id) / "result.json"
    _damage(res, "digit")
    assert read_result(res)[1].startswith("checksum mismatch")
    out = run_job(s.directory, job_id, 2, s.plan().jobs[0])
    assert out["ok"] and not out["reused"]
    assert read_result(res)[1] is None


# --------------------------------------------------------------------------- kill -9


def test_kill_9_at_random_moments_loses_and_doubles_nothing(tmp_path):
    path = _model_sweep(tmp_path, "kill9", n=12)
    s = Sweep.open(path)
    rng = random.Random(30)
    kills = 0
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-m", "simfront", "sweep", "run", str(path),
                                 "-q"], cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 2.5))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-whatever
            kills += 1
        proc.wait(30)
    assert kills >= 3
    r = _cli("sweep", "run", str(path), "-q")
    assert r.returncode == 0, r.stderr
    assert "done 12, failed 0" in r.stdout
    _records_once(s)
    assert s.store.integrity_ok()


# --------------------------------------------------------------------------- edited inputs


def _edit_header(kernel: Path) -> None:
    """Change one header line of an xz kernel trace (its register count)."""
    text = lzma.decompress(kernel.read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ln.startswith("-nregs"))
    n = int(lines[i].split("=")[1])
    lines[i] = f"-nregs = {n + 8}\n"
    kernel.write_bytes(lzma.compress("".join(lines).encode()))


def test_an_edited_stored_trace_makes_its_jobs_stale(tmp_path):
    sel = tmp_path / "sets" / "sel"
    shutil.copytree(REPO_ROOT / "traces" / "mamba1_selective_scan", sel)
    path = write_sweep(tmp_path, "edited", traces=[{"traces": str(sel),
                                                    "kernels": ["kernel-35636"]}],
                       backends="model", resources={"cpus": 1, "mem": "1G", "time": "120s"})
    s = Sweep.open(path)
    first = s.run(progress=False)
    assert first.counts["done"] == 1
    old_id = s.plan().jobs[0].job_id

    _edit_header(sel / "kernel-35636.traceg.xz")
    assert StoredSet("sel", sel, read_manifest(sel)).verify() == ["kernel-35636.traceg.xz"]
    r = _cli("sweep", "run", str(path), "-q")
    assert r.returncode == 0, r.stderr
    assert "(1 new)" in r.stdout and "started 1 attempts" in r.stdout, r.stdout
    assert "kernel-35636.traceg.xz changed since the set was registered" in r.stderr
    s2 = Sweep.open(path)
    new_id = s2.plan().jobs[0].job_id
    assert new_id != old_id
    recs = read_records(s2.results_path)
    assert list(recs.job_id) == [new_id]  # the stale job's records left results.h5

    # unchanged since: nothing new, and the check used its cache (no second hashing)
    r = _cli("sweep", "run", str(path), "-q")
    assert "(0 new)" in r.stdout and "started 0 attempts" in r.stdout


def test_planning_reads_a_registered_set_by_its_stored_bytes(tmp_path, monkeypatch):
    """Planning checks a shipped set by its files' stored hashes (no decompression); a file
    recompressed at another level is hashed by its text, and keeps its jobs' ids."""
    from simfront.sweep import inputs
    from simfront.traces import store

    sel = tmp_path / "sets" / "sel"
    shutil.copytree(REPO_ROOT / "traces" / "mamba1_selective_scan", sel)
    manifest = read_manifest(sel)
    assert all(k.get("stored_sha256") for k in manifest["kernels"])
    texts = []
    real = store.kernel_text_hash
    monkeypatch.setattr(store, "kernel_text_hash", lambda f: texts.append(f) or real(f))
    before = inputs.trace_info(sel, tmp_path / "a")
    assert texts == [] and before.edited == ()

    k = sel / "kernel-35636.traceg.xz"
    k.write_bytes(lzma.compress(lzma.decompress(k.read_bytes()), preset=1))
    inputs._TRACE_CACHE.clear()
    after = inputs.trace_info(sel, tmp_path / "b")
    assert texts == [k] and after.edited == () and after.content_hash == before.content_hash

    _edit_header(k)
    inputs._TRACE_CACHE.clear()
    edited = inputs.trace_info(sel, tmp_path / "c")
    assert [f for f, _ in edited.edited] == [k.name]
    assert edited.content_hash != before.content_hash


def test_an_edited_gpu_file_makes_its_jobs_stale(tmp_path):
    gpu = tmp_path / "mygpu.yaml"
    shutil.copyfile(REPO_ROOT / "gpu_configs" / "h100.yaml", gpu)
    path = _model_sweep(tmp_path, "gpufile", n=2)
    text = path.read_text().replace("base: h100", f"base: {gpu}")
    path.write_text(text)
    s = Sweep.open(path)
    s.run(progress=False)
    old = {j.job_id for j in s.plan().jobs}
    gpu.write_text(gpu.read_text().replace("sm_count: 132", "sm_count: 120", 1))
    s2 = Sweep.open(path)
    summary = s2.run(progress=False)
    assert summary.sync["added"] == 2 and summary.started == 2
    assert not old & {j.job_id for j in s2.plan().jobs}
    _records_once(s2)


# --------------------------------------------------------------------------- sweep files


def test_two_sweep_files_of_one_name_are_refused(tmp_path):
    a = _model_sweep(tmp_path, "same", n=2)
    b = tmp_path / "other.yaml"
    b.write_text(a.read_text().replace(small_kernel_workloads(2)[1]["kernels"][0],
                                       small_kernel_workloads(3)[2]["kernels"][0]))
    s = Sweep.open(a)
    s.run(progress=False)
    before = read_records(s.results_path)
    _one_line_error(_cli("sweep", "run", str(b)), "field 'name'", "belongs to", str(a),
                    "same name 'same'")
    with pytest.raises(SweepError, match="belongs to"):
        Sweep.open(b)  # so plan, status and gather refuse it too
    pd_equal = read_records(s.results_path).equals(before)
    assert pd_equal, "the first sweep's results were touched"
    # the first file still works; renaming the second gives it its own folder
    Sweep.open(a).status()
    b.write_text(b.read_text().replace("name: same", "name: same2"))
    assert Sweep.open(b).run(progress=False).counts["done"] == 2


def test_a_backwards_range_names_its_field(tmp_path, capsys):
    path = _model_sweep(tmp_path, "back", n=1, axes={"sm_count": {"start": 132, "stop": 66,
                                                                  "step": 66}})
    r = _main(capsys, "sweep", "plan", str(path))
    _one_line_error(r, "gpu.axes.sm_count.stop", "runs backwards", "line")
    path = _model_sweep(tmp_path, "back2", n=1, axes={"tensor_vector_ratio": {
        "start": 32, "stop": 2, "factor": 2}})
    r2 = _main(capsys, "sweep", "plan", str(path))
    _one_line_error(r2, "tensor_vector_ratio.stop", "backwards")
    assert (r.returncode, r2.returncode) == (INPUT_ERROR, INPUT_ERROR)


def test_an_empty_trace_set_and_a_kernel_filter_matching_nothing_fail(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "kernelslist.g").write_text("")
    path = write_sweep(tmp_path, "empty", traces=str(empty), backends="model")
    runs = [_main(capsys, "sweep", "run", str(path), "-q"), _main(capsys, "sim", "run", str(empty)),
            _main(capsys, "sim", "run", str(REPO_ROOT / "traces" / "mamba1_selective_scan"),
                  "--kernel", "*no_such_kernel*")]
    _one_line_error(runs[0], "workloads[0].traces", "no kernel launches")
    _one_line_error(runs[1], "lists no kernel launches")
    _one_line_error(runs[2], "matches no kernel")
    assert [r.returncode for r in runs] == [INPUT_ERROR] * 3


def test_binary_sweep_and_gpu_files_are_named(tmp_path, capsys):
    rng = random.Random(1)
    junk = bytes(rng.randrange(256) for _ in range(400))
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(junk)
    r = _main(capsys, "sweep", "plan", str(bad))
    _one_line_error(r, str(bad.name), "not a text file")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_bytes(junk)
    path = _model_sweep(tmp_path, "bingpu", n=1)
    path.write_text(path.read_text().replace("base: h100", f"base: {gpu}"))
    r2 = _main(capsys, "sweep", "run", str(path))
    _one_line_error(r2, "field 'gpu.base'", "gpu.yaml")
    assert (r.returncode, r2.returncode) == (INPUT_ERROR, INPUT_ERROR)


# --------------------------------------------------------------------------- job store, HDF5


def _damage_db(db: Path, where: str) -> None:
    data = bytearray(db.read_bytes())
    if where == "header":
        data[:100] = b"\x13" * 100
    else:  # every page after the first: the tables' b-trees
        for i in range(4096, len(data), 97):
            data[i] = (data[i] + 41) % 256
    db.write_bytes(bytes(data))


def test_a_damaged_job_store_is_named_then_rebuilt_from_result_files(tmp_path):
    path = _model_sweep(tmp_path, "db", n=4)
    s = Sweep.open(path)
    s.run(progress=False)
    s.store.close()
    for i, where in enumerate(("header", "pages")):
        _damage_db(s.store.path, where)
        if i == 0:
            r = _cli("sweep", "status", str(path))
            _one_line_error(r, "jobs.sqlite", "damaged", "sweep run")
        r = _cli("sweep", "run", str(path), "-q")
        assert r.returncode == 0, r.stderr
        assert "jobs.sqlite was damaged; moved to jobs.sqlite.damaged-" in r.stderr
        assert "started 0 attempts" in r.stdout and "done 4, failed 0" in r.stdout
        s2 = Sweep.open(path)
        _records_once(s2)
        assert set(_ok_runs(s2).values()) == {1}  # restored from results, nothing ran again
        s2.store.close()
    assert len(list(s.directory.glob("jobs.sqlite.damaged-*"))) == 2


def test_a_damaged_results_file_is_named_and_rebuilt(tmp_path, capsys):
    path = _model_sweep(tmp_path, "h5", n=3)
    s = Sweep.open(path)
    s.run(progress=False)
    h5 = s.results_path
    for how in ("truncate", "garbage"):
        data = h5.read_bytes()
        h5.write_bytes(data[:len(data) // 3] if how == "truncate" else b"\x00junk" * 500)
        _one_line_error(_main(capsys, "stats", "show", str(h5)), "results.h5")
        r = _main(capsys, "sweep", "status", str(path))
        assert r.returncode == 0 and "unreadable" in r.stdout and "sweep gather" in r.stdout
        r = _cli("sweep", "gather", str(path))
        assert r.returncode == 0, r.stderr
        _records_once(s)


def test_results_are_readable_by_the_group(tmp_path):
    path = _model_sweep(tmp_path, "mode", n=2)
    for mask, want in ((0o022, 0o644), (0o027, 0o640)):
        old = os.umask(mask)
        try:
            s = Sweep.open(path)
            assert s.run(progress=False).counts["done"] == 2
        finally:
            os.umask(old)
        files = [s.results_path] + [job_dir(s.directory, j.job_id) / "result.json"
                                    for j in s.plan().jobs]
        for f in files:
            assert stat.S_IMODE(f.stat().st_mode) == want, (f, oct(f.stat().st_mode))
        s.store.close()
        shutil.rmtree(s.directory)


# --------------------------------------------------------------------------- stats parse


def test_stats_parse_of_a_truncated_or_failed_log_exits_1(tmp_path, capsys):
    text = lzma.decompress(ACCELSIM_LOG.read_bytes()).decode()
    whole = tmp_path / "whole.out"
    whole.write_text(text)
    cut = tmp_path / "cut.out"
    cut.write_text("\n".join(text.splitlines()[:800]) + "\n")
    assert _main(capsys, "stats", "parse", str(whole)).returncode == 0
    r = _main(capsys, "stats", "parse", str(cut))
    assert r.returncode == 1 and "FAILED" in r.stderr, r.stderr
    assert _main(capsys, "stats", "parse", str(cut), "--json").returncode == 1
    crash = REPO_ROOT / "tests" / "data" / "accelsim" / "selective_scan_fwd_vector_2x_crash.out.xz"
    assert _main(capsys, "stats", "parse", str(crash)).returncode == 1


# --------------------------------------------------------------------------- the file system


@contextlib.contextmanager
def _mounted(target: Path, *args: str):
    """``mount ARGS target`` for the test's duration; skips where mounting is not allowed
    (not root, or a container without the capability)."""
    target.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(args)}) here: {r.stderr.strip() or r.returncode};"
                    f" the test needs root with CAP_SYS_ADMIN")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def test_a_read_only_sweep_folder_gives_a_named_error(tmp_path):
    # root ignores file modes, so the folder is made read-only the way a file system does
    path = _model_sweep(tmp_path, "ro", n=2)
    s = Sweep.open(path)
    s.run(progress=False)
    s.store.close()
    with _mounted(s.directory, "--bind", "-o", "ro", str(s.directory)):
        assert os.statvfs(s.directory).f_flag & os.ST_RDONLY
        for cmd in ("run", "gather", "status"):
            line = _one_line_error(_cli("sweep", cmd, str(path)))
            assert str(s.directory) in line and ("Read-only" in line or "readonly" in line
                                                 or "unable to open" in line), line
    _records_once(s)  # nothing lost


def test_a_full_disk_gives_a_named_error_and_a_resume_completes(tmp_path):
    mnt = tmp_path / "small"
    with _mounted(mnt, "-t", "tmpfs", "-o", "size=8m", "tmpfs"):
        path = _model_sweep(tmp_path, "full", n=3, extra=f"dir: {mnt / 'sweep'}\n")
        Sweep.open(path).run(progress=False)
        path = _model_sweep(tmp_path, "full", n=6, extra=f"dir: {mnt / 'sweep'}\n")
        filler = mnt / "filler"
        with open(filler, "wb", buffering=0) as f:  # every block the tmpfs has left
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        r = _cli("sweep", "run", str(path), "-q")
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
        assert "No space left on device" in r.stderr or "disk is full" in r.stderr, r.stderr
        filler.unlink()
        _cli("sweep", "retry", str(path))
        r = _cli("sweep", "run", str(path), "-q")
        assert r.returncode == 0, r.stderr
        assert "done 6, failed 0" in r.stdout
        _records_once(Sweep.open(path))

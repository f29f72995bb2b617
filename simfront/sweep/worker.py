"""The worker: runs one job through the backend interface and writes its outcome atomically.

Every executor ends up here, in a pool process (local) or as an array task
(``python -m simfront.sweep.worker --sweep-dir D --manifest M --index I``). A job lives in
``<sweep dir>/jobs/<job id>/``: ``job.json`` (what to run, written by the driver),
``status.json`` (this attempt started: host, pid, time), ``result.json`` (the outcome and
per-kernel records: the commit point) and ``out/`` (the backend's files). Every backend run
also appends one line to ``<sweep dir>/runs.log``: the audit trail that shows each job ran
once.

Exactly once: the worker holds an exclusive lock on the job's ``lock`` file while it runs,
and a job whose ``result.json`` says ok is never run again, whoever asks. So a driver that
was killed and restarted, a second driver, or a requeued array task cannot run a finished
job twice, and two attempts of one job never overlap.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simfront.core.atomic import file_mode
from simfront.core.disk_cache import max_bytes, trim
from simfront.gpu import GPU
from simfront.sim.backend import SimJob, get_backend
from simfront.sweep import inputs
from simfront.sweep.plan import JobSpec

JOBS_DIR = "jobs"
RUNS_LOG = "runs.log"


def job_dir(sweep_dir: str | Path, job_id: str) -> Path:
    return Path(sweep_dir) / JOBS_DIR / job_id


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temporary file beside ``path``, then rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, default=_json_default, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def read_json(path: Path) -> Any | None:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError:
        return None  # never produced by an atomic writer; treat as absent


#: key of a result file's checksum: the SHA-256 of the rest of the result as canonical JSON
CHECKSUM = "sha256"


def _canonical(result: dict[str, Any]) -> bytes:
    body = {k: v for k, v in result.items() if k != CHECKSUM}
    return json.dumps(body, sort_keys=True, separators=(",", ":"),
                      default=_json_default).encode()


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Commit a job's outcome: its checksum inside, written atomically (the commit point).
    The checksum lets a reader tell a byte flipped on disk from a real record."""
    # through JSON once, so the checksum is of what a reader will parse back
    plain = json.loads(_canonical(result))
    write_json_atomic(path, {**plain, CHECKSUM: hashlib.sha256(_canonical(plain)).hexdigest()})


def read_result(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A job's ``result.json`` and, when it cannot be used, why: ``(None, "missing")``, or
    ``(None, "<what is wrong>")`` for a torn, unparsable, damaged or unreadable file.
    A file without a checksum (written before they were) is taken as it parses."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    if not data:
        return None, "empty (0 bytes)"
    try:
        result = json.loads(data)
    except ValueError as exc:
        return None, f"not whole JSON ({len(data)} bytes; {exc.msg} at byte {exc.pos})"
    if not isinstance(result, dict):
        return None, "not a JSON object"
    want = result.get(CHECKSUM)
    if want is not None and hashlib.sha256(_canonical(result)).hexdigest() != want:
        return None, "checksum mismatch (the file changed after it was written)"
    return result, None


def write_job_file(sweep_dir: str | Path, spec: JobSpec) -> Path:
    d = job_dir(sweep_dir, spec.job_id)
    path = d / "job.json"
    if not path.exists():
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, spec.to_dict())
    return path


def finished_result(sweep_dir: str | Path, job_id: str) -> dict[str, Any] | None:
    """The job's result if it finished ok, else None."""
    r, _ = read_result(job_dir(sweep_dir, job_id) / "result.json")
    return r if r is not None and r.get("ok") else None


def run_job(sweep_dir: str | Path, job_id: str, attempt: int,
            spec: JobSpec | None = None) -> dict[str, Any]:
    """Run one attempt of a job unless it already finished; return its outcome (without the
    records, which stay in ``result.json``)."""
    d = job_dir(sweep_dir, job_id)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # waits while another attempt of this job runs
        done, _ = read_result(d / "result.json")  # a damaged one is rerun, not trusted
        if done is not None and done.get("ok"):
            return _summary(done, reused=True)
        if spec is None:
            spec = JobSpec.from_dict(json.loads((d / "job.json").read_text()))
        host, pid, started = socket.gethostname(), os.getpid(), time.time()
        write_json_atomic(d / "status.json", {"job_id": job_id, "attempt": attempt,
                                              "state": "running", "host": host, "pid": pid,
                                              "started_at": started})
        if spec.backend == "model":
            _trim_model_cache()
        result = _execute(spec, d)
        with _committing():
            finished = time.time()
            _log_run(Path(sweep_dir), job_id, attempt, host, pid, started, finished,
                     result["ok"])
            result.update(job_id=job_id, attempt=attempt, host=host, pid=pid,
                          started_at=started, finished_at=finished, wall_s=finished - started,
                          exit_code=0 if result["ok"] else 1)
            write_result(d / "result.json", result)
        return _summary(result, reused=False)


_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


@contextmanager
def _committing() -> Iterator[None]:
    """Hold off stop signals (a driver's shutdown, `scancel`, a terminal) from a run's end to
    its result file: a stop in between would leave a run in runs.log, its side effects done,
    and no result, so the job would run again. Held signals land as soon as the file is
    written; SIGKILL cannot be held, and the local driver sends it only after a grace."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _trim_model_cache() -> None:
    """The model's prepared kernels and issue-model runs, and the decoded traces, on disk
    each held under ``SIMFRONT_CACHE_MAX_GB`` before each model job (so the cache exceeds
    it by one job's at most): a many-configuration sweep otherwise fills the disk its
    results go to. Before, not after: nothing may come between a backend's work and its
    result being written, where a stop would make it run twice."""
    from simfront.sim.model.api import prepared_cache_dir
    from simfront.sim.model.reuse import runs_dir
    from simfront.traces import decoded

    for where, pattern in ((prepared_cache_dir(), "*.pkl"), (decoded.cache_dir(), "*.chunks"),
                           (runs_dir(), "*.runs")):
        if where is not None:
            trim(where, max_bytes(), pattern)


def _log_run(sweep_dir: Path, job_id: str, attempt: int, host: str, pid: int, started: float,
             finished: float, ok: bool) -> None:
    """One line per backend run in ``runs.log`` (O_APPEND, one write): the audit trail that
    shows every job ran once, whatever happened to drivers and tasks."""
    line = f"{job_id} {attempt} {host} {pid} {started:.3f} {finished:.3f} {'ok' if ok else 'failed'}\n"
    fd = os.open(sweep_dir / RUNS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_runs(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """The entries of ``runs.log``."""
    path = Path(sweep_dir) / RUNS_LOG
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 7:
            out.append({"job_id": f[0], "attempt": int(f[1]), "host": f[2], "pid": int(f[3]),
                        "started_at": float(f[4]), "finished_at": float(f[5]), "ok": f[6] == "ok"})
    return out


def _summary(result: dict[str, Any], reused: bool) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k != "records"}
    out["reused"] = reused
    out["n_records"] = len(result.get("records") or ())
    return out


def _execute(spec: JobSpec, d: Path) -> dict[str, Any]:
    """Check the job's GPU, call the backend; any exception becomes a failed outcome with a
    reason."""
    try:
        inputs.import_plugins(spec.imports, Path(spec.import_base) if spec.import_base else None)
        backend = get_backend(spec.backend)
        gpu = inputs.job_gpu(spec.gpu, spec.config_hash, spec.backend)
        timeout = spec.timeout_s
        if spec.fallback:
            # leave the stand-in time within the job's own limit
            timeout = spec.fallback_after_s or (0.8 * spec.timeout_s if spec.timeout_s
                                                else None)
        job = SimJob(job_id=spec.job_id, trace_dir=Path(spec.trace_dir), gpu=gpu,
                     out_dir=d / "out", kernels=spec.kernels, options=dict(spec.options),
                     timeout_s=timeout)
        job.out_dir.mkdir(parents=True, exist_ok=True)
        res = backend.run(job)
        records = [_identify(dict(r), spec) for r in (res.records or [])]
        reason = res.reason
        if not res.ok and not reason:
            reason = f"backend '{spec.backend}' reported failure without a reason"
        out = {"ok": bool(res.ok), "reason": reason, "records": records,
               "provenance": dict(res.provenance or {}), "backend_wall_s": res.wall_s}
        if spec.fallback:
            out = _stand_in(spec, d, gpu, out)
    except Exception as exc:
        tb = traceback.format_exc(limit=-3)
        return {"ok": False, "reason": f"{type(exc).__name__}: {exc}", "traceback": tb,
                "records": [], "provenance": {}}
    return out


def _stand_in(spec: JobSpec, d: Path, gpu: GPU, out: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec.fallback`` on the kernels the job's backend did not finish and merge its
    records in; the job is ok when every launch has a complete record from one of them."""
    from simfront.sweep import fallback  # loads numba (split.py reads traces)

    files = [f for f, _, _ in inputs.select_kernels(inputs.kernel_files(Path(spec.trace_dir)),
                                                    spec.kernels)]
    missing = fallback.unfinished(files, out["records"], out["reason"], spec.backend)
    out["provenance"]["fallback"] = {"backend": spec.fallback, "kernels": missing}
    if not missing:
        return out
    other = get_backend(spec.fallback)
    other.check_gpu(gpu)
    job = SimJob(job_id=spec.job_id, trace_dir=Path(spec.trace_dir), gpu=gpu,
                 out_dir=d / "fallback", kernels=tuple(missing), options=dict(spec.options),
                 timeout_s=spec.timeout_s)
    job.out_dir.mkdir(parents=True, exist_ok=True)
    res = other.run(job)
    stand = [_identify(dict(r), spec) for r in (res.records or [])]
    for r in stand:
        r.update(backend=other.name or spec.fallback, backend_version=str(other.version()))
    records = fallback.merge(out["records"], stand, files, missing, spec.backend)
    left = fallback.unfinished(files, records, None, spec.fallback)
    ok = not left
    reason = None if ok else (
        f"{len(left)} of {len(files)} kernels have no record from {spec.backend} or "
        f"{spec.fallback}: " + "; ".join(f"{f}: {w}" for f, w in list(left.items())[:3])
        + (f" (stand-in: {res.reason})" if res.reason else ""))
    out["provenance"]["fallback"].update(ok=bool(res.ok), reason=res.reason,
                                         provenance=dict(res.provenance or {}))
    return {**out, "ok": ok, "reason": reason, "records": records,
            "primary_reason": out["reason"]}


def _identify(record: dict[str, Any], spec: JobSpec) -> dict[str, Any]:
    """The job's identity on every record: the sweep knows what the job is (its workload
    label, config name and hashes), so these columns agree with the jobs table. A backend's
    per-kernel trace hash is kept; the set's hash fills it where missing."""
    record.update(job_id=spec.job_id, backend=spec.backend,
                  backend_version=spec.backend_version, config=spec.config,
                  config_hash=spec.config_hash, workload=spec.workload)
    if record.get("trace_hash") in (None, ""):
        record["trace_hash"] = spec.trace_hash
    return record


def read_manifest(path: Path) -> list[tuple[str, int]]:
    """A batch manifest: line i (from 0) is ``<job id> <attempt>`` for array task i."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            jid, att = line.split()
            out.append((jid, int(att)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simfront.sweep.worker",
                                description="Run one sweep job (what executors call).")
    p.add_argument("--sweep-dir", required=True, type=Path)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", help="job id (with --attempt)")
    g.add_argument("--manifest", type=Path, help="batch manifest; the task is --index")
    p.add_argument("--attempt", type=int, default=1)
    p.add_argument("--index", type=int, help="array task index (default $SLURM_ARRAY_TASK_ID)")
    p.add_argument("--per-task", type=int, default=1,
                   help="jobs per array task: task i runs manifest lines i*N .. i*N+N-1")
    a = p.parse_args(argv)
    if a.manifest is not None:
        index = a.index
        if index is None:
            env = os.environ.get("SLURM_ARRAY_TASK_ID") or os.environ.get("PBS_ARRAY_INDEX")
            if env is None:
                p.error("--index is required outside an array job")
            index = int(env)
        entries = read_manifest(a.manifest)
        mine = entries[index * a.per_task:(index + 1) * a.per_task]
        if index < 0 or not mine:
            print(f"error: task {index} not in {a.manifest} ({len(entries)} jobs, "
                  f"{a.per_task} per task)", file=sys.stderr)
            return 2
    else:
        mine = [(a.job, a.attempt)]
    all_ok = True
    for job_id, attempt in mine:
        out = run_job(a.sweep_dir, job_id, attempt)
        all_ok &= bool(out["ok"])
        print(json.dumps({k: out.get(k) for k in ("job_id", "attempt", "ok", "reason", "reused",
                                                  "wall_s", "n_records")}), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

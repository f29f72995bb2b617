"""The capture driver: run a workload's step under a tracer or ncu in a subprocess, check
what came out, and register it in the trace store with its provenance.

Nothing is registered unless the subprocess exited cleanly and its output validates: a
tracer that crashes, hangs or writes nothing gives a :class:`CaptureError` naming the log.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from simfront.capture.match import match_launches
from simfront.capture.metrics import metric_list
from simfront.capture.tracers import Sampling, Tracer, Window, accelsim_postprocess
from simfront.capture.validate import ValidationReport, validate_trace_set
from simfront.core.errors import BackendError, ConfigError, InputError
from simfront.core.launches import (SIDECAR, multiplicity, ncu_launches,
                                      read_sidecar, traced_launches, window_launches)
from simfront.core.ncu import read_ncu_csv
from simfront.core.provenance import sha256_file, tool_versions
from simfront.stats.ncu_configs import CONFIG_PROFILE, expand_trace_set
from simfront.traces.multiplicity import write_multiplicity
from simfront.traces.store import TraceStore

NCU_CSV = "ncu.csv"
#: Environment of every run of a step (untraced, traced, profiled). Triton autotunes in each
#: process by timing its candidates; under a tracer or ncu those timings are distorted, so a
#: traced run would pick other configs (other grids and blocks) than an untraced one. With
#: the autotuning cache on, the first run's choice is reused by the later ones.
STEP_ENV = {"TRITON_CACHE_AUTOTUNING": "1"}
CAPTURE_JSON = "capture.json"
LOG_TAIL = 4000


class CaptureError(BackendError):
    """A traced or profiled run that failed: crashed, timed out or wrote nothing."""


@dataclass(frozen=True)
class Step:
    """What runs: a registered workload (``python -m simfront.workloads.run``) or a script."""

    workload: str
    preset: str = "tiny"
    iterations: int = 3
    window_iteration: int = -1
    overrides: tuple[str, ...] = ()
    script_args: tuple[str, ...] = ()
    #: the window (and the iteration before it) on this many SMs, a green context; None: all
    sms: int | None = None

    @property
    def is_script(self) -> bool:
        return self.workload.endswith(".py")

    def command(self, summary: Path | None = None) -> list[str]:
        if self.is_script:
            if self.sms is not None:
                raise ConfigError("an SM count applies to registered workloads only (a "
                                  "script makes its own contexts)", field="sms")
            # absolute: the traced run's working folder is the trace folder
            return [sys.executable, os.path.abspath(self.workload), *self.script_args]
        cmd = [sys.executable, "-m", "simfront.workloads.run", self.workload, "--preset",
               self.preset, "--iterations", str(self.iterations), "--window",
               str(self.window_iteration)]
        for o in self.overrides:
            cmd += ["--set", o]
        if self.sms is not None:
            cmd += ["--sms", str(self.sms)]
        if summary is not None:
            cmd += ["--summary", str(summary)]
        return cmd

    @property
    def label(self) -> str:
        return Path(self.workload).stem if self.is_script else f"{self.workload}-{self.preset}"


@dataclass
class RunRecord:
    command: list[str]
    env: dict[str, str]
    returncode: int
    wall_s: float
    log: str
    summary: dict[str, Any] | None = None


def _tail(path: Path, n: int = LOG_TAIL) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode(errors="replace")


def run_logged(cmd: list[str], env_extra: dict[str, str], log: Path, timeout: float,
               cwd: Path | None = None, stdout_file: Path | None = None) -> RunRecord:
    """Run ``cmd`` with ``env_extra`` added to the environment; stderr (and stdout unless
    ``stdout_file``) go to ``log``. Never raises for the program's failure: the record says."""
    env = dict(os.environ)
    env.update(env_extra)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "wb") as lf:
        out = open(stdout_file, "wb") if stdout_file else lf
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=lf, env=env, cwd=cwd,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # the whole process group: a tracer's helper processes too
                os.killpg(proc.pid, 9)
                proc.wait()
                rc = -9
                lf.write(f"\n[simfront] killed after {timeout:.0f} s\n".encode())
        except OSError as exc:
            raise CaptureError(f"cannot start {cmd[0]}: {exc}") from None
        finally:
            if stdout_file:
                out.close()
    return RunRecord(cmd, env_extra, rc, time.perf_counter() - t0, str(log))


def _summary_from(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def gpu_info() -> dict[str, str]:
    """GPU name, driver and CUDA versions of this machine (empty where not found)."""
    info: dict[str, str] = {}
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,driver_version",
                                  "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=30).stdout.strip().splitlines()
            if out:
                name, _, drv = out[0].partition(",")
                info.update(gpu=name.strip(), driver=drv.strip())
            head = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
            for tok in head.split("|"):
                if "CUDA Version" in tok:
                    info["cuda_driver"] = tok.split(":")[-1].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    nvcc = shutil.which("nvcc")
    if nvcc:
        try:
            v = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                               timeout=30).stdout
            for line in v.splitlines():
                if "release" in line:
                    info["cuda_toolkit"] = line.split("release")[-1].split(",")[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return info


@dataclass
class CaptureResult:
    kind: str                       # "trace" or "profile"
    out_dir: str
    run: RunRecord
    baseline: RunRecord | None = None
    report: ValidationReport | None = None
    registered: str | None = None
    match: dict[str, Any] | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "out_dir": self.out_dir, "run": asdict(self.run),
             "baseline": asdict(self.baseline) if self.baseline else None,
             "report": self.report.to_dict() if self.report else None,
             "registered": self.registered, "match": self.match, "stats": self.stats}
        return d


def _dir_size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.glob("kernel-*") if p.is_file())


def trace(step: Step, out_dir: str | Path, tracer: Tracer, window: Window = Window("iteration"),
          sampling: Sampling = Sampling(), timeout: float = 1800, baseline: bool = False,
          reference_ncu: str | Path | None = None, store: str | Path | None = None,
          name: str | None = None, list_only: bool = False,
          dedup: bool = False) -> CaptureResult:
    """Trace ``step`` into ``out_dir``; validate; register in ``store`` when given.

    ``baseline`` also runs the step untraced first (for the slowdown). ``reference_ncu``
    is an ncu CSV of the same step (``simfront profile``) whose launches the trace must
    match one to one; with Accel-Sim's tracer it is how missing kernels and garbage header
    fields are found.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise InputError("output folder is not empty", out_dir)
    tdir = out_dir / "trace"
    tdir.mkdir(parents=True)
    base = None
    if baseline:
        base = run_logged(step.command(out_dir / "baseline.json"), dict(STEP_ENV),
                          out_dir / "baseline.log", timeout)
        base.summary = _summary_from(out_dir / "baseline.json")
    env = {**STEP_ENV, **tracer.env(tdir, window, sampling, list_only=list_only, dedup=dedup)}
    rec = run_logged(step.command(out_dir / "summary.json"), env, out_dir / "trace.log", timeout,
                     cwd=tdir)
    rec.summary = _summary_from(out_dir / "summary.json")
    res = CaptureResult("trace", str(out_dir), rec, base)
    if rec.returncode != 0:
        why = "timed out" if rec.returncode == -9 else (
            f"was killed by signal {-rec.returncode}" if rec.returncode < 0
            else f"exited with status {rec.returncode}")
        raise CaptureError(f"the traced run {why}; nothing registered. Log {rec.log}:\n"
                           f"{_tail(Path(rec.log), 1500)}")
    if tracer.kind == "accelsim":
        accelsim_postprocess(tdir, tracer.path.parent / "post-traces-processing")
    sidecar = None
    if tracer.kind == "simfront":
        if not (tdir / SIDECAR).exists():
            raise CaptureError(f"the tracer wrote no launch records ({tdir / SIDECAR}): was it "
                               f"loaded? nothing registered. Log {rec.log}:\n"
                               f"{_tail(Path(rec.log), 1500)}")
        all_launches = read_sidecar(tdir / SIDECAR)
        sidecar = window_launches(all_launches)
        res.stats["launches_total"] = len(all_launches)
        res.stats["launches_window"] = len(sidecar)
        res.stats["api_counts"] = _count(x.api for x in sidecar)
        res.stats["graph_launches"] = sum(x.graph for x in sidecar)
        if dedup:
            mult = multiplicity(sidecar)
            res.stats["launches_traced"] = len(mult)
            res.stats["repeats"] = sum(mult.values()) - len(mult)
            write_multiplicity(tdir, mult)
    if list_only:
        res.stats["list_only"] = True
        _write_json(out_dir / CAPTURE_JSON, res.to_dict())
        return res
    reference = None
    if reference_ncu is not None:
        reference = ncu_launches(read_ncu_csv(reference_ncu))
    # the trace holds the distinct launches only; the reference (ncu) every launch
    traced = traced_launches(sidecar) if sidecar is not None else None
    if reference is not None and traced is not None and len(traced) != len(sidecar):
        keep = {x.order for x in sidecar if x.traced}
        reference = [r for r in reference if r.order in keep] if len(reference) == len(
            sidecar) else reference
    report = validate_trace_set(tdir, tracer.kind, sidecar=traced, reference=reference)
    res.report = report
    res.match = report.match
    res.stats.update(kernels=report.n_kernels, trace_bytes=_dir_size(tdir),
                     traced_wall_s=round(rec.wall_s, 2))
    if base is not None:
        res.stats["untraced_wall_s"] = round(base.wall_s, 2)
        res.stats["slowdown_wall"] = round(rec.wall_s / max(base.wall_s, 1e-9), 1)
        if base.summary and rec.summary:
            w = rec.summary.get("window")
            if w is not None:
                res.stats["step_ms_untraced"] = base.summary["step_ms"][w]
                res.stats["step_ms_traced"] = rec.summary["step_ms"][w]
                res.stats["slowdown_step"] = round(
                    rec.summary["step_ms"][w] / max(base.summary["step_ms"][w], 1e-9), 1)
    _write_json(out_dir / CAPTURE_JSON, res.to_dict())
    if not report.ok:
        raise CaptureError("the trace fails validation; nothing registered:\n  " +
                           "\n  ".join(str(f) for f in report.findings if f.severity == "error"))
    if store is not None:
        res.registered = register(tdir, step, tracer, window, sampling, rec, report,
                                  store, name or step.label, out_dir)
        _write_json(out_dir / CAPTURE_JSON, res.to_dict())
    return res


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[str(x)] = out.get(str(x), 0) + 1
    return out


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def provenance(step: Step, tracer: Tracer | None, window: Window | None,
               sampling: Sampling | None, rec: RunRecord) -> dict[str, Any]:
    s = rec.summary or {}
    versions = dict(s.get("versions") or {})
    versions.update({k: v for k, v in tool_versions().items() if k not in versions})
    if tracer is not None:
        digest = tracer.sha256 or sha256_file(tracer.path)
        versions["tracer"] = f"{tracer.kind} {tracer.path.name} sha256:{digest[:16]}"
    g = gpu_info()
    return {
        "workload": {"name": step.workload, "preset": step.preset,
                     "iterations": step.iterations, "window_iteration": s.get("window"),
                     "window_sms": step.sms,
                     "config": s.get("config"), "params": s.get("params"),
                     "command": " ".join(shlex.quote(c) for c in rec.command)},
        "gpu": s.get("device_name") or g.get("gpu", ""),
        "driver": g.get("driver", ""),
        "cuda": g.get("cuda_toolkit") or g.get("cuda_driver", ""),
        "tools": versions,
        "capture_window": str(window) if window else "",
        "sampling": str(sampling) if sampling else "none",
        "captured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": f"simfront capture ({tracer.kind if tracer else 'ncu'})",
    }


def register(tdir: Path, step: Step, tracer: Tracer, window: Window, sampling: Sampling,
             rec: RunRecord, report: ValidationReport, store: str | Path, name: str,
             out_dir: Path) -> str:
    """Register a validated trace set; the launch sidecar, the validation report and an ncu
    profile (if one sits beside it) are stored next to the kernels."""
    fields = provenance(step, tracer, window, sampling, rec)
    fields["validation"] = {"tracer": report.tracer, "ok": report.ok,
                            "untrusted_fields": report.untrusted_fields,
                            "defects": [str(f) for f in report.defects][:100],
                            "match": report.match}
    ts = TraceStore(store)
    # Sampled kernels hold only some thread blocks by design (their headers say which), so
    # the store's every-block check would refuse them; the capture validated them instead.
    ts.register(tdir, fields, name=name, check_body=not sampling.active)
    dest = Path(ts.root) / name
    store_sidecar(tdir / SIDECAR, dest / SIDECAR)
    for extra in (out_dir / NCU_CSV, out_dir / "ncu_matched.csv"):
        if extra.exists():
            shutil.copy2(extra, dest / extra.name)
    _write_json(dest / CAPTURE_JSON, {"validation": report.to_dict()})
    return str(dest)


def store_sidecar(src: Path, dst: Path) -> None:
    """Copy the launch records of the window only: a step's first iteration can launch
    ~10^5 kernels (Triton autotuning), whose records would outweigh the traces."""
    if not src.exists():
        return
    keep = []
    with open(src) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("traced") or rec.get("window_open") or "same_as" in rec:
                keep.append(line if line.endswith("\n") else line + "\n")
    tmp = dst.with_name(dst.name + ".part")
    tmp.write_text("".join(keep))
    os.replace(tmp, dst)


#: ncu's filter for one launch per launch configuration (function, grid, block, shared memory)
PER_CONFIG_ARGS = ("--filter-mode", "per-launch-config", "--launch-count", "1")


def profile(step: Step, out_dir: str | Path, metrics: str = "full", timeout: float = 1800,
            ncu: str = "ncu", trace_dir: str | Path | None = None,
            extra_args: tuple[str, ...] = (), per_config: bool = False) -> CaptureResult:
    """Profile the windowed iteration of ``step`` with ncu into ``out_dir/ncu.csv``; when
    ``trace_dir`` (a capture with simfront's sidecar, or a stored set) is given, match the
    profile to it launch by launch and write ``ncu_matched.csv`` there.

    ``per_config``: profile only the first launch of each launch configuration into
    ``ncu-configs.csv`` (a model-size step: 88 configurations for 2,068 launches, about a
    minute of ncu); with ``trace_dir`` the profile is laid over its launches
    (:mod:`simfront.stats.ncu_configs`) and the pairing summarized."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = shutil.which(ncu)
    if exe is None:
        raise CaptureError(f"'{ncu}' (Nsight Compute) not found on PATH")
    if per_config:
        extra_args = (*PER_CONFIG_ARGS, *extra_args)
    csv_path = out_dir / (CONFIG_PROFILE if per_config else NCU_CSV)
    part = out_dir / (csv_path.name + ".part")
    cmd = [exe, "--profile-from-start", "off", "--clock-control", "none", "--csv", "--page",
           "raw", "--metrics", ",".join(metric_list(metrics)), *extra_args,
           *step.command(out_dir / "summary.json")]
    rec = run_logged(cmd, dict(STEP_ENV), out_dir / "ncu.log", timeout, stdout_file=part)
    rec.summary = _summary_from(out_dir / "summary.json")
    if rec.returncode != 0:
        raise CaptureError(f"ncu exited with status {rec.returncode}; log {rec.log}:\n"
                           f"{_tail(Path(rec.log), 1500)}")
    _strip_to_csv(part, csv_path)

    df = read_ncu_csv(csv_path)
    if len(df) == 0:
        raise CaptureError(f"ncu profiled no kernel (empty window?); log {rec.log}")
    res = CaptureResult("profile", str(out_dir), rec)
    res.stats.update(launches=len(df), ncu_wall_s=round(rec.wall_s, 1))
    if trace_dir is not None and per_config:
        tdir = Path(trace_dir)
        tdir = tdir if (tdir / SIDECAR).exists() else tdir / "trace"
        res.match = {"summary": expand_trace_set(tdir, profile=csv_path).summary()}
    elif trace_dir is not None:
        res.match = match_profile(csv_path, trace_dir, out_dir / "ncu_matched.csv")
    _write_json(out_dir / "profile.json", {**res.to_dict(),
                                           "provenance": provenance(step, None, Window("iteration"),
                                                                    None, rec),
                                           "metrics": list(metric_list(metrics))})
    return res


def _strip_to_csv(src: Path, dst: Path) -> None:
    """ncu's stdout holds the program's own output and ``==PROF==`` lines before the CSV;
    keep the CSV (from its ``"ID"`` header line) only."""
    with open(src, "rb") as f, open(dst.with_name(dst.name + ".tmp"), "wb") as g:
        started = False
        for line in f:
            if not started and line.startswith(b'"ID"'):
                started = True
            if started:
                g.write(line)
    os.replace(dst.with_name(dst.name + ".tmp"), dst)
    src.unlink()
    if not started:
        raise CaptureError(f"ncu wrote no CSV (see {src.with_name('ncu.log')})")


def match_profile(ncu_csv: str | Path, trace_dir: str | Path,
                  out_csv: str | Path | None = None) -> dict[str, Any]:
    """Match an ncu profile to a capture's launches (its sidecar) one to one; write the
    per-launch pairs (trace kernel file + id beside the ncu row index) when asked."""
    trace_dir = Path(trace_dir)
    side = trace_dir / SIDECAR if (trace_dir / SIDECAR).exists() else trace_dir / "trace" / SIDECAR
    launches = window_launches(read_sidecar(side))
    df = read_ncu_csv(ncu_csv)
    prof = ncu_launches(df)
    m = match_launches(launches, prof)
    if out_csv is not None:
        rows = []
        for i, j in m.pairs:
            x = launches[i]
            rows.append({"trace_order": i, "kernel_id": x.kernel_id, "file": x.file,
                         "name": x.key, "grid": "%d,%d,%d" % x.grid,
                         "block": "%d,%d,%d" % x.block, "api": x.api, "graph": x.graph,
                         "regs_trace": x.regs, "shmem_trace": x.shmem, "ncu_row": j,
                         "regs_ncu": prof[j].regs, "shmem_ncu": prof[j].shmem})
        pd.DataFrame(rows).to_csv(out_csv, index=False)
    return {"one_to_one": m.one_to_one, "exact": m.exact, "summary": m.summary(),
            "n_trace": m.n_a, "n_ncu": m.n_b,
            "config_mismatches": list(m.config_mismatches)[:50],
            "field_mismatches": list(m.field_mismatches)[:50],
            "only_trace": [launches[i].key for i in m.only_a][:50],
            "only_ncu": [prof[j].key for j in m.only_b][:50]}

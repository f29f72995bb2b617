"""Backends for exercising the sweep machinery itself (not simulators): a no-op one for
measuring orchestration overhead, and a probe that fails on demand.

Import this module (sweep file ``executor: {imports: [simfront.sweep.testing]}``) to
register them:

- ``sweep-noop``: returns one empty record at once.
- ``sweep-probe``: options ``log`` (a file each finished run appends its job id to, the
  evidence for exactly-once), ``sleep_s``, and ``faults`` (a JSON file mapping job ids to
  ``crash`` (SIGSEGV), ``exit`` (exits 3), ``hang`` (never returns), ``raise``
  (an exception), ``error`` (a clean ok=False) or ``flaky`` (crashes on its first attempt
  only)). The faults file is read at run time, so a test can pick jobs after planning.
"""

from __future__ import annotations

import faulthandler
import fcntl
import json
import os
import signal
import time
from pathlib import Path

import yaml

from simfront.core.paths import repo_dir
from simfront.sim.backend import Backend, SimJob, SimResult, register

# The H100 trace samples the test suite ships (tests/data/README.md): a checkout has them.
SAMPLE_TRACES = repo_dir("tests") / "data" / "h100" / "traces"


def _record(job: SimJob) -> dict:
    return {"job_id": job.job_id, "kernel_uid": 1, "kernel_id": 0, "kernel_name": "probe",
            "complete": True, "cycles": float(len(job.job_id)), "sim_wall_s": 0.0}


class NoopBackend(Backend):
    name = "sweep-noop"

    def version(self) -> str:
        return "1"

    def run(self, job: SimJob) -> SimResult:
        return SimResult(job.job_id, self.name, ok=True, records=[_record(job)])


class ProbeBackend(Backend):
    name = "sweep-probe"

    def version(self) -> str:
        return "1"

    def run(self, job: SimJob) -> SimResult:
        t0 = time.time()
        opts = job.options
        fault = None
        if opts.get("faults"):
            try:
                fault = json.loads(Path(opts["faults"]).read_text()).get(job.job_id)
            except FileNotFoundError:
                fault = None
        if fault == "flaky":
            marker = job.out_dir / "flaky-seen"
            if marker.exists():
                fault = None
            else:
                marker.write_text("x")
                fault = "crash"
        if opts.get("sleep_s"):
            time.sleep(float(opts["sleep_s"]))
        if fault == "crash":
            faulthandler.disable()  # a test crash needs no Python stack dump
            os.kill(os.getpid(), signal.SIGSEGV)
        elif fault == "exit":
            os._exit(3)
        elif fault == "hang":
            while True:
                time.sleep(60)
        elif fault == "raise":
            raise RuntimeError("probe asked to raise")
        elif fault == "error":
            return SimResult(job.job_id, self.name, ok=False, reason="probe reported an error")
        if opts.get("log"):
            with open(opts["log"], "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                f.write(f"{job.job_id} {os.getpid()}\n")
        return SimResult(job.job_id, self.name, ok=True, records=[_record(job)],
                         wall_s=time.time() - t0)


register(NoopBackend.name, NoopBackend)
register(ProbeBackend.name, ProbeBackend)


def write_sweep(directory: Path, name: str = "t", *, traces: str | list = "mamba1_scan_step",
                axes: dict | None = None, backends: str | list = "sweep-probe",
                options: dict | None = None, resources: dict | None = None,
                executor: dict | None = None, extra: str = "") -> Path:
    """Write a sweep file over the H100 trace samples in tests/data for tests and benchmarks."""
    sets = [traces] if isinstance(traces, str) else list(traces)
    workloads = []
    for t in sets:
        w = dict(t) if isinstance(t, dict) else {"traces": t}
        if "/" not in w["traces"] and not w["traces"].startswith("{"):
            w["traces"] = str(SAMPLE_TRACES / w["traces"])
        workloads.append(w)
    doc: dict = {"name": name, "workloads": workloads,
                 "gpu": {"base": "h100", **({"axes": axes} if axes else {})},
                 "backends": backends,
                 "resources": resources or {"cpus": 1, "mem": "1G", "time": "60s"},
                 "executor": {"imports": ["simfront.sweep.testing"], **(executor or {})}}
    if options:
        doc["options"] = options
    path = Path(directory) / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False) + extra)
    return path


def kernel_workloads(set_name: str = "mamba1_scan_step", n: int = 8) -> list[dict]:
    """``n`` workloads of one kernel each from a sample trace set: distinct jobs that need
    no GPU axes."""
    d = SAMPLE_TRACES / set_name
    files = sorted(f.name for f in d.iterdir() if f.name.startswith("kernel-"))[:n]
    return [{"name": f.split(".")[0], "traces": str(d),
             "kernels": [f]} for f in files]


def small_kernel_workloads(n: int = 8, set_name: str = "mamba1_scan_step") -> list[dict]:
    """``n`` workloads of one kernel each, the sample set's smallest trace files first: on
    the built-in model each is a few milliseconds (elementwise and random-fill kernels), so
    real model jobs in the hundreds stay quick."""
    d = SAMPLE_TRACES / set_name
    files = sorted((f for f in d.iterdir() if f.name.startswith("kernel-")),
                   key=lambda f: (f.stat().st_size, f.name))[:n]
    return [{"name": f.name.split(".")[0], "traces": str(d), "kernels": [f.name]}
            for f in files]

"""The model as a simfront backend (name ``model``, the default)."""

from __future__ import annotations

import fnmatch
import json
import os
import time
from pathlib import Path
from typing import Any

from simfront.core import jit
from simfront.core.errors import SimfrontError
from simfront.core.provenance import sha256_file, tool_versions
from simfront.gpu import config_hash, load_gpu
from simfront.sim.backend import Backend, SimJob, SimResult
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.carry import L2Carry
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import MODEL
from simfront.traces.reader import SCANNER, TraceSet

#: Bump when the model's numbers change for the same inputs.
MODEL_VERSION = "model-1.28"
RESULT_NAME = "result.json"
#: How a kernel's L2 starts (``job.options["l2"]``): empty, or as the previous kernel left it.
L2_COLD, L2_WARM = "cold", "warm"
L2_MODES = (L2_COLD, L2_WARM)


def _selected(kernels, wanted: tuple[str, ...] | None):
    if not wanted:
        return list(kernels)
    out = []
    for k in kernels:
        name = k.header.name
        stem = k.path.name.split(".")[0]
        if any(k.path.name == w or stem == w or fnmatch.fnmatchcase(k.path.name, w)
               or fnmatch.fnmatchcase(name, w) for w in wanted):
            out.append(k)
    return out


class ModelBackend(Backend):
    """Runs every selected kernel of the job's trace set through the built-in model.

    ``job.options``: ``launches`` (dict kernel file/stem -> {regs, shmem}: launch facts
    where the trace header is not to be trusted), ``params`` (dict of ModelParams settings
    by ``group.field`` name, such as ``{"l2.dirty_share": 0.2}``),
    ``l2`` (``cold``, the default: every kernel starts with an empty L2, as ncu measures it;
    ``warm``: the selected kernels run in launch order, each starting with the L2 the
    previous one left, as in an unprofiled step; see ``carry``).
    A kernel whose trace cannot be read gets a record with ``complete`` False; the job then
    fails with the reason, keeping the other kernels' records.
    """

    name = "model"

    def version(self) -> str:
        return MODEL_VERSION

    def run(self, job: SimJob) -> SimResult:
        t0 = time.monotonic()
        out = Path(job.out_dir)
        records: list[dict[str, Any]] = []
        failures: list[str] = []
        prov: dict[str, Any] = {"tools": tool_versions(), "model_version": MODEL_VERSION}
        try:
            gpu = load_gpu(job.gpu)
            params = DEFAULT_PARAMS.with_(**(job.options.get("params") or {}))
            prov["params"] = params.as_dict()
            chash = config_hash(gpu)
            prov.update({"config": gpu.name, "config_hash": chash})
            ts = TraceSet(job.trace_dir)
            kernels = _selected(ts.kernels(), job.kernels)
            l2_mode = job.options.get("l2", L2_COLD) or L2_COLD
            if l2_mode not in L2_MODES:
                raise TypeError(f"options.l2 must be one of {', '.join(L2_MODES)}, "
                                f"not {l2_mode!r}")
            prov["l2"] = l2_mode
            carry = L2Carry.empty(gpu) if l2_mode == L2_WARM else None
        except (SimfrontError, TypeError, KeyError) as exc:
            return self._finish(job, out, t0, False, f"not run: {exc}", [], prov)
        # the compiled parts no other process is compiling: two workers starting at once
        # compile one each (the model first, the longer), then load the other's
        jit.warm_ahead((MODEL, SCANNER))
        launches = job.options.get("launches", {}) or {}
        deadline = t0 + job.timeout_s if job.timeout_s else None
        for uid, k in enumerate(kernels, start=1):
            if deadline and time.monotonic() > deadline:
                failures.append(f"timed out after {job.timeout_s:g} s before {k.path.name}")
                break
            stem = k.path.name.split(".")[0]
            launch = launches.get(k.path.name) or launches.get(stem)
            base = {"job_id": job.job_id, "backend": self.name,
                    "backend_version": MODEL_VERSION, "config": gpu.name,
                    "config_hash": chash, "workload": Path(job.trace_dir).name,
                    "kernel_uid": uid, "trace_hash": sha256_file(k.path),
                    "launch_count": ts.count(k.path.name)}
            try:
                rec = simulate_kernel(k, gpu, launch, params, l2=carry)
            except SimfrontError as exc:
                failures.append(f"{k.path.name}: {exc}")
                records.append({**base, "kernel_id": k.kernel_id,
                                "kernel_name": k.header.name, "complete": False})
                continue
            records.append({**base, **rec})
        reason = "; ".join(failures) if failures else None
        return self._finish(job, out, t0, not failures, reason, records, prov)

    def _finish(self, job, out: Path, t0: float, ok: bool, reason, records, prov) -> SimResult:
        res = SimResult(job_id=job.job_id, backend=self.name, ok=ok, records=records,
                        reason=reason, provenance=prov, wall_s=time.monotonic() - t0)
        try:
            out.mkdir(parents=True, exist_ok=True)
            data = {"job_id": res.job_id, "backend": res.backend, "ok": res.ok,
                    "reason": res.reason, "wall_s": res.wall_s, "records": res.records,
                    "provenance": res.provenance}
            tmp = out / (RESULT_NAME + ".tmp")
            tmp.write_text(json.dumps(data, indent=1, default=str, allow_nan=True))
            os.replace(tmp, out / RESULT_NAME)
        except OSError:
            pass  # the records are returned either way
        return res

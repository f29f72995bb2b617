"""Expanding a sweep file into jobs with content-addressed ids, and estimating their cost.

A job id is a hash of what determines its result: the trace content (and kernel filter),
the GPU description (its config hash), the backend, the backend's version and its options.
The same job in two sweep files, or after an unrelated edit, keeps its id and its result.
"""

from __future__ import annotations

import copy
import itertools
import os
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Iterator

from simfront.core.errors import BackendError, SimfrontError, SweepError
from simfront.core.provenance import sha256_json
from simfront.gpu import GPU
from simfront.sim.backend import get_backend
from simfront.sweep import inputs
from simfront.sweep.spec import SweepSpec

#: Assumed simulation rate per backend (seconds per MB of compressed trace) until finished
#: jobs in the store give a measured one. Rough, and said to be so where printed: the model
#: took ~4 s per MB on traces/mamba2_lm-tiny (1.4 MB of xz, 232 MB of text) and ~20 s per MB
#: on the better-compressed selective-scan sample, on the 2-core CPU machine
#: (bench/RESULTS.md); Accel-Sim ~80 s for the 17 KB selective_scan_fwd.
DEFAULT_S_PER_MB = {"model": 5.0, "accelsim": 3000.0}
_FALLBACK_S_PER_MB = 60.0


@dataclass(frozen=True)
class JobSpec:
    """Everything a worker needs to run one job, and nothing that changes its result unsaid."""

    job_id: str
    workload: str
    trace_dir: str
    trace_hash: str
    trace_bytes: int
    kernels: tuple[str, ...] | None
    base_gpu: str
    params: dict[str, Any]
    config: str
    config_hash: str
    #: the description built (and validated) once at plan time; ``config_hash`` is its hash
    gpu: GPU
    backend: str
    backend_version: str
    options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    imports: tuple[str, ...] = ()
    import_base: str = ""
    #: split jobs: launch run -> the later identical launches it stands for (split.py)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    #: the backend that stands in for kernels this one refuses, fails or times out on
    fallback: str | None = None
    fallback_after_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "gpu"}
        d["kernels"] = list(self.kernels) if self.kernels is not None else None
        d["imports"] = list(self.imports)
        d["gpu"] = self.gpu.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobSpec":
        d = dict(d)
        if not isinstance(d.get("gpu"), dict):
            raise SweepError(f"job {d.get('job_id')} carries no GPU description (a spec "
                             f"written by an older simfront: plan the sweep again, and delete "
                             f"the job's job.json if it has one)", field="gpu")
        d["gpu"] = GPU.from_dict(d["gpu"])
        d["kernels"] = tuple(d["kernels"]) if d.get("kernels") is not None else None
        d["imports"] = tuple(d.get("imports") or ())
        d["duplicates"] = {k: list(v) for k, v in (d.get("duplicates") or {}).items()}
        return cls(**d)


def job_id_for(trace_hash: str, kernels: tuple[str, ...] | None, config_hash: str,
               backend: str, backend_version: str, options: dict[str, Any]) -> str:
    return sha256_json({"trace": trace_hash, "kernels": list(kernels) if kernels else None,
                        "config": config_hash, "backend": backend,
                        "backend_version": backend_version, "options": options})[:20]


@dataclass
class Plan:
    spec: SweepSpec
    jobs: list[JobSpec]
    duplicates: int = 0  # combinations that collapsed onto an existing job id
    #: what the user should know that is not an error (an edited trace set's new jobs)
    notes: list[str] = field(default_factory=list)

    def estimate(self, measured_s_per_mb: dict[str, float] | None = None) -> "CostEstimate":
        return estimate_cost(self.jobs, self.spec, measured_s_per_mb or {})


def variant_points(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every combination of axis values (product or zip), each with the fixed parameters."""
    names = [a.name for a in spec.axes]
    if not names:
        return [dict(spec.fixed)]
    combos: Iterable[tuple] = (zip(*(a.values for a in spec.axes)) if spec.combine == "zip"
                               else itertools.product(*(a.values for a in spec.axes)))
    return [{**spec.fixed, **dict(zip(names, combo))} for combo in combos]


def plan_sweep(spec: SweepSpec) -> Plan:
    """Expand a sweep into jobs; errors name the sweep file's key and line."""
    base_dir = spec.path.parent
    try:
        inputs.import_plugins(spec.executor.imports, base_dir)
    except Exception as exc:  # a user module: any failure is theirs to see
        raise SweepError(f"cannot import: {type(exc).__name__}: {exc}", spec.path,
                         spec.line_of("executor.imports"), "executor.imports") from None

    traces = []
    notes = []
    for i, w in enumerate(spec.workloads):
        key = f"workloads[{i}].traces"
        try:
            path = inputs.resolve_traces(w.traces, base_dir)
        except FileNotFoundError as exc:
            raise SweepError(str(exc), spec.path, w.line, "traces") from None
        try:
            info = inputs.trace_info(path, spec.directory / "inputs")
            launches = inputs.kernel_files(path)
        except (SimfrontError, OSError) as exc:
            raise SweepError(f"cannot read trace set {path}: {exc}", spec.path,
                             spec.line_of(key) or w.line, key) from None
        if not launches:
            raise SweepError(f"trace set {path} has no kernel launches (its kernelslist.g "
                             f"lists none): nothing to simulate", spec.path,
                             spec.line_of(key) or w.line, key)
        if info.edited:
            shown = ", ".join(f for f, _ in info.edited[:3]) + (
                f" and {len(info.edited) - 3} more" if len(info.edited) > 3 else "")
            notes.append(f"trace set {path}: {shown} changed since the set was registered "
                         f"(no longer what manifest.json says): its jobs are new jobs; "
                         f"'simfront traces register --overwrite' records the new content")
        n_bytes = info.n_bytes
        if w.kernels:
            try:
                chosen = inputs.select_kernels(inputs.kernel_files(path), w.kernels)
            except (SimfrontError, OSError) as exc:
                raise SweepError(f"cannot list the kernels of {path}: {exc}", spec.path,
                                 w.line, "kernels") from None
            if not chosen:
                raise SweepError(f"selects no kernel of {path} (kernel names are mangled: "
                                 f"'*selective_scan_fwd*' matches '_Z25selective_scan_fwd_"
                                 f"kernel...'; trace file names such as "
                                 f"'kernel-35636.traceg.xz' work too)", spec.path,
                                 spec.line_of(f"workloads[{spec.workloads.index(w)}].kernels")
                                 or w.line, "kernels")
            n_bytes = sum(size for _, _, size in chosen)
        traces.append((w, info, n_bytes))

    gpus = _gpus(spec)
    backends = []
    for name in spec.backends:
        try:
            b = get_backend(name)
            backends.append((name, str(b.version())))
        except BackendError as exc:
            raise SweepError(str(exc), spec.path, spec.line_of("backends"), "backends") from None

    jobs: list[JobSpec] = []
    seen: set[str] = set()
    duplicates = 0
    units = {w.name: _units(spec, w, info, n_bytes) for w, info, n_bytes in traces}
    for ((params, gpu, config, chash), (w, info, _)), (bname, bver) in itertools.product(
            _job_order(gpus, traces), backends):
        fallback = spec.fallback if spec.fallback and spec.fallback.backend != bname else None
        id_options = ({**spec.options, "fallback": [fallback.backend, fallback.after_s]}
                      if fallback else spec.options)
        for kernels, dups, n_bytes in units[w.name]:
            jid = job_id_for(info.content_hash, kernels, chash, bname, bver, id_options)
            if jid in seen:
                duplicates += 1
                continue
            seen.add(jid)
            jobs.append(JobSpec(job_id=jid, workload=w.name, trace_dir=str(info.path),
                                trace_hash=info.content_hash, trace_bytes=n_bytes,
                                kernels=kernels, base_gpu=spec.base_gpu, params=params,
                                config=config, config_hash=chash, gpu=gpu, backend=bname,
                                backend_version=bver, options=dict(spec.options),
                                timeout_s=float(spec.resources.time_s),
                                imports=spec.executor.imports, import_base=str(base_dir),
                                duplicates=dups,
                                fallback=fallback.backend if fallback else None,
                                fallback_after_s=fallback.after_s if fallback else None))
    return Plan(spec=spec, jobs=jobs, duplicates=duplicates, notes=notes)


def _job_order(gpus: list, traces: list) -> Iterator[tuple[Any, Any]]:
    """(configuration, trace set) pairs, configurations outermost and each set's turned back
    by its place: set s takes configuration k - s in its k-th turn. A local pool's first
    jobs are then different sets, each making its set's trace pass (the model's prepared
    kernels, on disk) for the set's later jobs, instead of two workers making the same one
    at once; and one configuration's jobs of two sets lie as many jobs apart as there are
    sets and one more, so that with no more workers than sets the later starts once the
    earlier is done and finds on disk the issue-model runs of the kernels they share (the
    paper-size Mamba1 step on ``h100-tv4`` after the Mamba2 one makes 194 runs instead of
    330; bench/RESULTS.md, *Model speed and the refactor*)."""
    for k in range(len(gpus)):
        for s, trace in enumerate(traces):
            yield gpus[(k - s) % len(gpus)], trace


def _units(spec: SweepSpec, w: Any, info: Any, n_bytes: int
           ) -> list[tuple[tuple[str, ...] | None, dict[str, list[str]], int]]:
    """(kernel filter, duplicates, stored bytes) of each job of a trace set: the whole set
    (or its ``kernels:`` filter) in one job, or with ``split`` a job per group of launches."""
    if spec.split is None:
        return [(w.kernels, {}, n_bytes)]
    from simfront.sweep import split

    files = inputs.select_kernels(inputs.kernel_files(info.path), w.kernels)
    size = {f: s for f, _, s in files}
    names = [f for f, _, _ in files]
    hashes = (split.launch_hashes(info.path, names, spec.directory / "launches",
                                  info.content_hash) if spec.split.dedup else None)
    return [(g.files, {k: list(v) for k, v in g.duplicates.items()},
             sum(size[f] for f in g.files))
            for g in split.group_launches(names, hashes, spec.split.kernels_per_job)]


def _gpus(spec: SweepSpec) -> list[tuple[dict[str, Any], GPU, str, str]]:
    """(params, GPU, config name, config hash) per variant point, each description built and
    validated once, checked axis by axis first so an error names the axis that caused it."""
    try:
        known = inputs.variant_params()
        inputs.build_gpu(spec.base_gpu, {})
    except SweepError as exc:
        raise SweepError(exc.reason, spec.path, spec.line_of("gpu.base"), "gpu.base") from None
    except UnicodeDecodeError as exc:
        raise SweepError(f"GPU description '{spec.base_gpu}' is not a text file (byte "
                         f"{exc.start} is not UTF-8)", spec.path,
                         spec.line_of("gpu.base") or spec.line_of("gpu"), "gpu.base") from None
    except (SimfrontError, LookupError, ValueError, TypeError) as exc:
        raise SweepError(f"cannot load GPU '{spec.base_gpu}': {exc}", spec.path,
                         spec.line_of("gpu.base") or spec.line_of("gpu"), "gpu.base") from None
    for key, names in (("gpu.set", list(spec.fixed)), ("gpu.axes", [a.name for a in spec.axes])):
        for n in names:
            if known and n not in known:
                raise SweepError(f"'{n}' is not a GPU variant parameter; choose from: "
                                 f"{', '.join(sorted(known))}", spec.path,
                                 spec.line_of(f"{key}.{n}"), f"{key}.{n}")
    # Each axis's values, the other axes at their first value: a bad value is then blamed
    # on its own axis (parameters may depend on each other, so none is tried alone).
    first = {a.name: a.values[0] for a in spec.axes}
    built: dict[str, GPU] = {}  # a description per distinct parameter set, built once

    def build(params: dict[str, Any], key: str) -> GPU:
        k = sha256_json(params)
        if k not in built:
            built[k] = _build(spec, params, key)
        return built[k]

    for a in spec.axes:
        for v in a.values:
            build({**spec.fixed, **first, a.name: v}, f"gpu.axes.{a.name}")
    out = []
    for params in variant_points(spec):
        gpu = build(params, "gpu.axes" if spec.axes else "gpu.set")
        name, chash = inputs.gpu_identity(gpu, spec.base_gpu, params)
        out.append((params, gpu, name, chash))
    return out


def _build(spec: SweepSpec, params: dict[str, Any], key: str) -> GPU:
    try:
        return inputs.build_gpu(spec.base_gpu, params)
    except (SimfrontError, LookupError, ValueError, TypeError) as exc:
        msg = getattr(exc, "reason", None) or str(exc)
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise SweepError(f"bad GPU variant ({shown}): {msg}", spec.path,
                         spec.line_of(key) or spec.line_of("gpu"), key) from None


@dataclass(frozen=True)
class CostEstimate:
    jobs: int
    cpu_s: float                 # estimated total CPU time
    wall_s: float                # estimated wall time with `workers` jobs at once
    reserved_cpu_s: float        # upper bound: every job uses its whole time limit
    basis: dict[str, str]        # per backend: where the rate came from
    local: bool = True           # wall time is for this machine's local executor

    def describe(self) -> str:
        wall = f" (~{_hms(self.wall_s)} wall on this machine)" if self.local else ""
        lines = [f"{self.jobs} jobs; estimated cost {_hms(self.cpu_s)} CPU time{wall}, at "
                 f"most {_hms(self.reserved_cpu_s)} CPU time reserved by the time limits"]
        for b, basis in sorted(self.basis.items()):
            lines.append(f"  {b}: {basis}")
        return "\n".join(lines)


def estimate_cost(jobs: list[JobSpec], spec: SweepSpec,
                  measured_s_per_mb: dict[str, float]) -> CostEstimate:
    total = 0.0
    basis: dict[str, str] = {}
    for j in jobs:
        rate = measured_s_per_mb.get(j.backend)
        if rate is None:
            rate = DEFAULT_S_PER_MB.get(j.backend, _FALLBACK_S_PER_MB)
            basis[j.backend] = f"assumed {rate:g} s per MB of trace (no finished jobs yet)"
        else:
            basis[j.backend] = f"{rate:.3g} s per MB of trace, measured on finished jobs"
        total += rate * j.trace_bytes / 1e6 * spec.resources.cpus
    workers = max(1, (os.cpu_count() or 1) // spec.resources.cpus)
    reserved = len(jobs) * spec.resources.time_s * spec.resources.cpus
    return CostEstimate(jobs=len(jobs), cpu_s=total, wall_s=total / workers,
                        reserved_cpu_s=float(reserved), basis=basis,
                        local=spec.executor.kind == "local")


def _hms(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"

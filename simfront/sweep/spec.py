"""Sweep files: the typed form of ``experiments/*.yaml`` and the parser that checks them.

A sweep file names trace sets, a base GPU and axes over its variant parameters, backends,
resources and executor settings (see ``docs/sweeps.md``). :func:`load_sweep` turns it into a
frozen :class:`SweepSpec`; every unknown key or bad value is a :class:`SweepError` naming the
key and its line. Expanding the spec into jobs is :mod:`simfront.sweep.plan`'s work.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simfront.core.errors import SweepError
from simfront.sim.backend import DEFAULT_BACKEND
from simfront.sweep.registry import executor_names
from simfront.sweep.yamlfile import LineDict, LineList, load_yaml


@dataclass(frozen=True)
class Workload:
    """A trace set and an optional kernel filter (trace file names or fnmatch patterns)."""

    name: str
    traces: str
    kernels: tuple[str, ...] | None = None
    line: int = 0


@dataclass(frozen=True)
class Axis:
    """One swept GPU variant parameter and the values it takes."""

    name: str
    values: tuple[Any, ...]
    line: int = 0


@dataclass(frozen=True)
class Resources:
    """What one job may use: CPUs, memory (MiB) and wall time (s, also the per-job timeout)."""

    cpus: int = 1
    mem_mb: int = 2048
    time_s: int = 3600


@dataclass(frozen=True)
class ExecutorSettings:
    """How jobs run. ``kind`` picks the executor; the Slurm fields matter only to Slurm."""

    kind: str = "local"
    workers: int | None = None          # local: processes; None = sized to the machine
    max_attempts: int = 3               # attempts per job before it is marked failed
    backoff_s: float = 2.0              # wait before retry n is backoff_s * 2**(n-1)
    poll_s: float = 2.0                 # batch executors: seconds between status checks
    imports: tuple[str, ...] = ()       # modules the worker imports first (user backends)
    partition: str | None = None
    chunk: int = 1000                   # jobs per `sbatch --array`
    parallel: int | None = None         # at most this many tasks of an array at once (%N)
    jobs_per_task: int = 1              # jobs run one after another by one array task
    extra_args: tuple[str, ...] = ()    # more sbatch options, passed as given


@dataclass(frozen=True)
class Split:
    """One job per group of ``kernels_per_job`` launches instead of one per trace set;
    with ``dedup``, a launch identical to an earlier one runs once (simfront.sweep.split)."""

    kernels_per_job: int = 1
    dedup: bool = True


@dataclass(frozen=True)
class Fallback:
    """A backend that stands in for the kernels the sweep's backend refuses, fails on, or
    has not finished within ``after_s`` seconds (default: the job's time limit)."""

    backend: str
    after_s: float | None = None


@dataclass(frozen=True)
class SweepSpec:
    name: str
    path: Path
    directory: Path
    workloads: tuple[Workload, ...]
    base_gpu: str
    fixed: dict[str, Any]
    axes: tuple[Axis, ...]
    combine: str
    backends: tuple[str, ...]
    options: dict[str, Any]
    resources: Resources
    executor: ExecutorSettings
    description: str = ""
    lines: dict[str, int] = field(default_factory=dict, compare=False)
    split: Split | None = None
    fallback: Fallback | None = None

    def line_of(self, key: str) -> int | None:
        """Line of a dotted key (``gpu.axes.l2_size``) in the sweep file, where known."""
        return self.lines.get(key)


COMBINE = ("product", "zip")

_TOP = {"name", "description", "dir", "workloads", "gpu", "backends", "options", "resources",
        "executor", "split", "fallback"}
_SPLIT = {"kernels_per_job", "dedup"}
_FALLBACK = {"backend", "after"}
_WORKLOAD = {"name", "traces", "kernels"}
_GPU = {"base", "set", "axes", "combine"}
_RESOURCES = {"cpus", "mem", "time"}
_EXECUTOR = {"kind", "workers", "max_attempts", "backoff", "poll", "imports", "slurm"}
_SLURM = {"partition", "chunk", "parallel", "jobs_per_task", "extra_args"}
_RANGE = {"start", "stop", "step", "factor"}


class _Ctx:
    """Where we are in the file, so errors can name the key and its line."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: dict[str, int] = {}

    def err(self, msg: str, key: str, line: int | None) -> SweepError:
        return SweepError(msg, self.path, line, key)

    def mapping(self, value: Any, key: str, line: int | None, allowed: set[str]) -> LineDict:
        if not isinstance(value, dict):
            raise self.err(f"must be a mapping, not {_kind(value)}", key, line)
        if not isinstance(value, LineDict):
            value = LineDict(value)
        for k in value:
            if k not in allowed:
                raise self.err(f"unknown key '{k}'; allowed here: {', '.join(sorted(allowed))}",
                               f"{key}.{k}" if key else str(k), value.line_of(k))
            self.lines[f"{key}.{k}" if key else str(k)] = value.line_of(k)
        return value


def _kind(value: Any) -> str:
    """How a value reads in an error message."""
    for t, name in ((dict, "a mapping"), (list, "a list"), (str, "a string"),
                    (bool, "a boolean"), (int, "an integer"), (float, "a number")):
        if isinstance(value, t):
            return name
    return "empty" if value is None else type(value).__name__


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file."""
    path = Path(path)
    data = load_yaml(path)
    return parse_sweep(data, path)


def parse_sweep(data: Any, path: Path) -> SweepSpec:
    ctx = _Ctx(path)
    if data is None:
        raise SweepError("empty sweep file", path, 1)
    top = ctx.mapping(data, "", 1, _TOP)
    for required in ("workloads", "gpu"):
        if required not in top:
            raise ctx.err(f"missing required key '{required}'", required, top.line)

    name = _string(ctx, top, "name", "name", default=path.stem)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ctx.err("must be letters, digits, '.', '_' or '-' (it names a directory)",
                      "name", top.line_of("name"))
    description = _string(ctx, top, "description", "description", default="")
    dir_value = _string(ctx, top, "dir", "dir", default=None)
    directory = (path.parent / dir_value) if dir_value else path.parent / ".sweeps" / name

    workloads = _workloads(ctx, top)
    base, fixed, axes, combine = _gpu(ctx, top)
    backends = _backends(ctx, top)
    options = top.get("options", {}) or {}
    if not isinstance(options, dict):
        raise ctx.err("must be a mapping of backend options", "options", top.line_of("options"))
    resources = _resources(ctx, top)
    executor = _executor(ctx, top)
    split = _split(ctx, top)
    fallback = _fallback(ctx, top, backends, resources)
    return SweepSpec(split=split, fallback=fallback, name=name, path=path.resolve(), directory=directory.resolve(),
                     workloads=workloads, base_gpu=base, fixed=dict(fixed), axes=axes,
                     combine=combine, backends=backends, options=dict(options),
                     resources=resources, executor=executor, description=description,
                     lines=ctx.lines)


# --------------------------------------------------------------------------- sections


def _string(ctx: _Ctx, m: LineDict, key: str, dotted: str, default: Any = ...) -> Any:
    if key not in m or m[key] is None:
        if default is ...:
            raise ctx.err(f"missing required key '{key}'", dotted, m.line)
        return default
    v = m[key]
    if not isinstance(v, str) or not v.strip():
        raise ctx.err(f"must be a non-empty string, not {_kind(v)}", dotted, m.line_of(key))
    return v


def _workloads(ctx: _Ctx, top: LineDict) -> tuple[Workload, ...]:
    items = top["workloads"]
    line = top.line_of("workloads")
    if isinstance(items, (str, dict)):
        items = LineList([items])
        items.line, items.lines = line, [line]
    if not isinstance(items, list) or not items:
        raise ctx.err("must be a non-empty list of trace sets", "workloads", line)
    out: list[Workload] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        key = f"workloads[{i}]"
        item_line = items.line_of(i) if isinstance(items, LineList) else line
        if isinstance(item, str):
            item = LineDict(traces=item)
            item.line = item_line
            item.lines = {"traces": item_line}
        m = ctx.mapping(item, key, item_line, _WORKLOAD)
        traces = _string(ctx, m, "traces", f"{key}.traces")
        name = _string(ctx, m, "name", f"{key}.name", default=Path(traces.rstrip("/")).name)
        if name in seen:
            raise ctx.err(f"workload name '{name}' used twice; give each a distinct 'name'",
                          f"{key}.name", m.line_of("name"))
        seen.add(name)
        kernels = None
        if m.get("kernels") is not None:
            k = m["kernels"]
            if isinstance(k, str):
                k = [k]
            if not isinstance(k, list) or not k or not all(isinstance(x, str) and x for x in k):
                raise ctx.err("must be a kernel file name or pattern, or a list of them",
                              f"{key}.kernels", m.line_of("kernels"))
            kernels = tuple(k)
        out.append(Workload(name=name, traces=traces, kernels=kernels, line=m.line))
    return tuple(out)


def _gpu(ctx: _Ctx, top: LineDict) -> tuple[str, dict, tuple[Axis, ...], str]:
    g = top["gpu"]
    if isinstance(g, str):  # `gpu: h100` means the base alone, no axes
        return g, {}, (), "product"
    m = ctx.mapping(g, "gpu", top.line_of("gpu"), _GPU)
    base = _string(ctx, m, "base", "gpu.base")
    fixed = m.get("set") or LineDict()
    if not isinstance(fixed, dict):
        raise ctx.err("must be a mapping of variant parameters to values", "gpu.set",
                      m.line_of("set"))
    for k in fixed:
        ctx.lines[f"gpu.set.{k}"] = fixed.line_of(k) if isinstance(fixed, LineDict) else m.line
    combine = m.get("combine", "product")
    if combine not in COMBINE:
        raise ctx.err(f"must be one of {', '.join(COMBINE)}, not {combine!r}", "gpu.combine",
                      m.line_of("combine"))
    axes: list[Axis] = []
    raw = m.get("axes") or LineDict()
    if not isinstance(raw, dict):
        raise ctx.err("must be a mapping of variant parameters to values", "gpu.axes",
                      m.line_of("axes"))
    for name, value in raw.items():
        key = f"gpu.axes.{name}"
        line = raw.line_of(name) if isinstance(raw, LineDict) else m.line_of("axes")
        ctx.lines[key] = line
        if name in fixed:
            raise ctx.err(f"'{name}' is both fixed in gpu.set and swept", key, line)
        axes.append(Axis(name=str(name), values=_axis_values(ctx, value, key, line), line=line))
    if combine == "zip" and len({len(a.values) for a in axes}) > 1:
        raise ctx.err("with combine: zip every axis needs the same number of values, got "
                      + ", ".join(f"{a.name}={len(a.values)}" for a in axes), "gpu.combine",
                      m.line_of("combine"))
    return base, dict(fixed), tuple(axes), combine


def _axis_values(ctx: _Ctx, value: Any, key: str, line: int) -> tuple[Any, ...]:
    if isinstance(value, list):
        if not value:
            raise ctx.err("an axis needs at least one value", key, line)
        for i, v in enumerate(value):
            if isinstance(v, (dict, list)) or v is None:
                raise ctx.err(f"value {i + 1} must be a scalar, not {_kind(v)}", key,
                              value.line_of(i) if isinstance(value, LineList) else line)
        if len(set(map(repr, value))) != len(value):
            raise ctx.err("repeats a value", key, line)
        return tuple(value)
    if isinstance(value, dict):
        m = ctx.mapping(value, key, line, _RANGE)
        for k in ("start", "stop"):
            if k not in m:
                raise ctx.err(f"a range needs 'start', 'stop' and 'step' or 'factor'", key, line)
            if not _is_number(m[k]):
                raise ctx.err(f"'{k}' must be a number, not {_kind(m[k])}", f"{key}.{k}",
                              m.line_of(k))
        if ("step" in m) == ("factor" in m):
            raise ctx.err("a range needs exactly one of 'step' or 'factor'", key, line)
        start, stop = m["start"], m["stop"]
        if stop < start:
            # a range that runs backwards would give one value (start) and look fine
            raise ctx.err(f"range runs backwards: 'stop' ({stop}) is below 'start' ({start}); "
                          f"a range goes up from start to stop", f"{key}.stop",
                          m.line_of("stop"))
        if "step" in m:
            step = m["step"]
            if not _is_number(step) or step <= 0:
                raise ctx.err("must be a positive number", f"{key}.step", m.line_of("step"))
            n = int((stop - start) / step + 1e-9) + 1
            values = [start + i * step for i in range(max(n, 0))]
        else:
            factor = m["factor"]
            if not _is_number(factor) or factor <= 1:
                raise ctx.err("must be a number above 1", f"{key}.factor", m.line_of("factor"))
            values, v = [], start
            while v <= stop * (1 + 1e-9) and len(values) < 10_000:
                values.append(v)
                v = v * factor
        if not values:
            raise ctx.err(f"range from {start} to {stop} is empty", key, line)
        if all(isinstance(x, int) for x in (start, m.get("step", 1), m.get("factor", 2))):
            values = [int(round(x)) for x in values]
        return tuple(values)
    if value is None:
        raise ctx.err("an axis needs a value, a list of values or a range", key, line)
    return (value,)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _backends(ctx: _Ctx, top: LineDict) -> tuple[str, ...]:
    if "backends" not in top or top["backends"] is None:
        return (DEFAULT_BACKEND,)
    v = top["backends"]
    line = top.line_of("backends")
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise ctx.err("must be a backend name or a list of them", "backends", line)
    if len(set(v)) != len(v):
        raise ctx.err("names a backend twice", "backends", line)
    return tuple(v)


def _split(ctx: _Ctx, top: LineDict) -> Split | None:
    """``split: kernel`` (one job per launch) or ``split: {kernels_per_job: N, dedup: B}``."""
    v = top.get("split")
    line = top.line_of("split")
    if v is None or v is False:
        return None
    if v == "kernel" or v is True:
        return Split()
    if not isinstance(v, dict):
        raise ctx.err(f"must be 'kernel' or a mapping with kernels_per_job and dedup, not "
                      f"{_kind(v)}", "split", line)
    m = ctx.mapping(v, "split", line, _SPLIT)
    n = m.get("kernels_per_job", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ctx.err(f"must be a whole number >= 1, not {n!r}", "split.kernels_per_job",
                      m.line_of("kernels_per_job"))
    dedup = m.get("dedup", True)
    if not isinstance(dedup, bool):
        raise ctx.err(f"must be true or false, not {dedup!r}", "split.dedup", m.line_of("dedup"))
    return Split(kernels_per_job=n, dedup=dedup)


def _fallback(ctx: _Ctx, top: LineDict, backends: tuple[str, ...],
              resources: Resources) -> Fallback | None:
    """``fallback: model`` or ``fallback: {backend: model, after: 20m}``."""
    v = top.get("fallback")
    line = top.line_of("fallback")
    if v is None:
        return None
    if isinstance(v, str):
        v = LineDict(backend=v)
        v.line, v.lines = line, {"backend": line}
    m = ctx.mapping(v, "fallback", line, _FALLBACK)
    backend = _string(ctx, m, "backend", "fallback.backend")
    if backend in backends and len(backends) == 1:
        raise ctx.err(f"'{backend}' is the sweep's only backend: it cannot stand in for "
                      f"itself", "fallback.backend", m.line_of("backend"))
    after = None
    if m.get("after") is not None:
        after = parse_duration(m["after"], ctx, "fallback.after", m.line_of("after"))
        if after >= resources.time_s:
            raise ctx.err(f"must be shorter than resources.time ({resources.time_s} s): the "
                          f"stand-in runs within the same job", "fallback.after",
                          m.line_of("after"))
    return Fallback(backend=backend, after_s=after)


def _resources(ctx: _Ctx, top: LineDict) -> Resources:
    if top.get("resources") is None:
        return Resources()
    m = ctx.mapping(top["resources"], "resources", top.line_of("resources"), _RESOURCES)
    cpus = m.get("cpus", 1)
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        raise ctx.err(f"must be a whole number of CPUs >= 1, not {cpus!r}", "resources.cpus",
                      m.line_of("cpus"))
    mem = parse_mem(m.get("mem", "2G"), ctx, m.line_of("mem"))
    time_s = parse_duration(m.get("time", "1h"), ctx, "resources.time", m.line_of("time"))
    return Resources(cpus=cpus, mem_mb=mem, time_s=max(1, math.ceil(time_s)))


def _executor(ctx: _Ctx, top: LineDict) -> ExecutorSettings:
    if top.get("executor") is None:
        return ExecutorSettings()
    raw = top["executor"]
    if isinstance(raw, str):
        raw = LineDict(kind=raw)
        raw.line = top.line_of("executor")
        raw.lines = {"kind": raw.line}
    m = ctx.mapping(raw, "executor", top.line_of("executor"), _EXECUTOR)
    kw: dict[str, Any] = {}
    kind = m.get("kind", "local")
    if kind not in executor_names():
        raise ctx.err(f"unknown executor {kind!r}; choose one of: "
                      f"{', '.join(executor_names())}", "executor.kind", m.line_of("kind"))
    kw["kind"] = kind
    if m.get("workers") not in (None, "auto"):
        kw["workers"] = _positive_int(ctx, m, "workers", "executor.workers")
    if "max_attempts" in m:
        kw["max_attempts"] = _positive_int(ctx, m, "max_attempts", "executor.max_attempts")
    if "backoff" in m:
        kw["backoff_s"] = float(parse_duration(m["backoff"], ctx, "executor.backoff",
                                               m.line_of("backoff"), allow_zero=True))
    if "poll" in m:
        kw["poll_s"] = float(parse_duration(m["poll"], ctx, "executor.poll", m.line_of("poll")))
    if m.get("imports") is not None:
        imp = m["imports"]
        imp = [imp] if isinstance(imp, str) else imp
        if not isinstance(imp, list) or not all(isinstance(x, str) and x for x in imp):
            raise ctx.err("must be a module name or a list of them", "executor.imports",
                          m.line_of("imports"))
        kw["imports"] = tuple(imp)
    if m.get("slurm") is not None:
        s = ctx.mapping(m["slurm"], "executor.slurm", m.line_of("slurm"), _SLURM)
        if "partition" in s:
            kw["partition"] = _string(ctx, s, "partition", "executor.slurm.partition")
        if "chunk" in s:
            kw["chunk"] = _positive_int(ctx, s, "chunk", "executor.slurm.chunk")
        if "parallel" in s:
            kw["parallel"] = _positive_int(ctx, s, "parallel", "executor.slurm.parallel")
        if "jobs_per_task" in s:
            kw["jobs_per_task"] = _positive_int(ctx, s, "jobs_per_task",
                                                "executor.slurm.jobs_per_task")
        if "extra_args" in s:
            extra = s["extra_args"]
            extra = [extra] if isinstance(extra, str) else extra
            if not isinstance(extra, list) or not all(isinstance(x, str) and x.startswith("-")
                                                      for x in extra):
                raise ctx.err("must be a list of sbatch options such as '--qos=low'",
                              "executor.slurm.extra_args", s.line_of("extra_args"))
            kw["extra_args"] = tuple(extra)
    return ExecutorSettings(**kw)


def _positive_int(ctx: _Ctx, m: LineDict, key: str, dotted: str) -> int:
    v = m[key]
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ctx.err(f"must be a whole number >= 1, not {v!r}", dotted, m.line_of(key))
    return v


_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)\s*$")
_CLOCK = re.compile(r"^\s*(?:(\d+)-)?(\d+):(\d{1,2})(?::(\d{1,2}))?\s*$")


def parse_mem(value: Any, ctx: _Ctx | None = None, line: int | None = None) -> int:
    """``'4G'``, ``'512M'``, ``'1.5GiB'`` -> MiB."""
    m = _MEM.match(value) if isinstance(value, str) else None
    if m is None:
        msg = f"must be a size such as '4G' or '512M', not {value!r}"
        raise ctx.err(msg, "resources.mem", line) if ctx else SweepError(msg, field="mem")
    scale = {"": 1 / 1024 / 1024, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    mb = int(float(m.group(1)) * scale[m.group(2).upper()])
    if mb < 1:
        msg = f"{value!r} is under 1 MiB"
        raise ctx.err(msg, "resources.mem", line) if ctx else SweepError(msg, field="mem")
    return mb


def parse_duration(value: Any, ctx: _Ctx | None = None, key: str = "time",
                   line: int | None = None, allow_zero: bool = False) -> float:
    """``'90s'``, ``'30m'``, ``'2h'``, ``'1-00:00:00'``, ``'01:30:00'`` -> seconds. A bare
    number is refused: Slurm reads it as minutes, most people as seconds."""
    seconds: float | None = None
    if isinstance(value, str):
        m = _DUR.match(value)
        if m:
            unit = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}[m.group(2)]
            seconds = float(m.group(1)) * unit
        else:
            c = _CLOCK.match(value)
            if c:
                days, a, b, d = c.groups()
                h, mi, s = (int(a), int(b), int(d)) if d is not None else (0, int(a), int(b))
                seconds = ((int(days or 0) * 24 + h) * 60 + mi) * 60 + s
    if seconds is None or seconds < 0 or (seconds == 0 and not allow_zero):
        msg = (f"must be a duration with a unit ('90s', '30m', '2h') or a clock time "
               f"('01:30:00'), not {value!r}")
        raise ctx.err(msg, key, line) if ctx else SweepError(msg, field=key)
    return seconds

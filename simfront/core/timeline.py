"""Kernel timelines: every kernel launch of the windowed iteration with its start and
duration, read from CUPTI through ``torch.profiler`` rather than ncu.

ncu replays each kernel alone, so it measures kernels but not the step: the gaps between
kernels, where the GPU waits for the host, are invisible to it. A timeline keeps them, and it
costs the step almost nothing, so it is also how a step is timed under a hardware what-if
(a green context holding a subset of the SMs, or another GPU) where ncu may not run.

A timeline is written as a CSV in the layout of ``ncu --csv --page raw`` (a header row, a
unit row, one row per launch) with the columns ``ID``, ``Kernel Name``, ``Grid Size``,
``Block Size``, ``Stream``, ``gpu__time_duration.sum`` (ns) and ``start`` (ns from the first
kernel's start), so :func:`simfront.core.ncu.read_ncu_csv`, launch pairing and correlation
read it as they read a profile. A ``timeline.json`` beside it holds the condition (the GPU
as torch reports it: name, SM count, L2 size; the SMs the step ran on), the step's wall time
(host time between device synchronizes around the timed iteration), the GPU's busy share of
it (the union of kernel intervals over the wall time) and the peak GPU memory of the timed
iteration (``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` at its
start). Files of format 1 have no GPU description and no memory; they read with those None.

Parsing is pure; only :class:`KernelTimer` needs torch.
"""

from __future__ import annotations

import csv
import io
import json
import lzma
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from simfront.core.atomic import write_bytes, write_text
from simfront.core.errors import InputError

TIMELINE_FORMAT = 2
COLUMNS = ("ID", "Kernel Name", "Grid Size", "Block Size", "Stream", "gpu__time_duration.sum",
           "start")
UNITS = ("", "", "", "", "", "nsecond", "nsecond")


@dataclass(frozen=True)
class KernelSpan:
    """One kernel launch as CUPTI saw it."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    start_ns: float
    dur_ns: float
    stream: int = 0
    regs: int | None = None
    shmem: int | None = None


@dataclass(frozen=True)
class GpuInfo:
    """The GPU a timeline ran on, as the driver reports it through torch (the whole GPU: a
    green context's SM count is the timeline's ``sms``)."""

    name: str
    sm_count: int
    l2_bytes: int | None               # None: torch too old to report it
    memory_bytes: int | None = None
    compute_capability: str = ""

    @classmethod
    def from_props(cls, props: Any) -> GpuInfo:
        """From ``torch.cuda.get_device_properties(i)``."""
        l2 = getattr(props, "L2_cache_size", None)
        return cls(name=str(props.name), sm_count=int(props.multi_processor_count),
                   l2_bytes=None if l2 is None else int(l2),
                   memory_bytes=int(props.total_memory),
                   compute_capability=f"{props.major}.{props.minor}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuInfo:
        return cls(**data)


def device_gpu(device: str = "cuda") -> GpuInfo:
    """The GPU of ``device``, read from torch."""
    import torch

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    return GpuInfo.from_props(torch.cuda.get_device_properties(index))


@dataclass
class TimelineSummary:
    """What a timeline says of the step as a whole."""

    label: str
    device_name: str
    sms: int | None                    # SMs the step ran on (None: the whole GPU)
    launches: int
    kernel_ms: float                   # summed kernel durations
    busy_ms: float                     # union of kernel intervals: the GPU doing anything
    span_ms: float                     # first kernel start to last kernel end
    step_ms: float | None              # host wall time of the step, device synchronised
    # busy_ms / step_ms: of the profiled iteration, which CUPTI slows on the host side; the
    # wall-clock share of an untimed step is simfront.analysis.wallclock's (extra's
    # untimed_step_ms)
    busy_share: float | None
    extra: dict[str, Any] = field(default_factory=dict)
    format: int = TIMELINE_FORMAT
    # format 2
    gpu: GpuInfo | None = None
    peak_mem_bytes: int | None = None  # max_memory_allocated over the timed iteration
    mem_start_bytes: int | None = None  # memory_allocated as it began: weights, optimizer state

    @property
    def wall_step_ms(self) -> float | None:
        """The wall-clock step: the untimed iteration before the timed one where it was
        measured (no CUPTI attached), else the timed one."""
        return self.extra.get("untimed_step_ms") or self.step_ms


def _dim3(value: Any) -> tuple[int, int, int]:
    v = list(value) if isinstance(value, (list, tuple)) else [value]
    v = [int(x) for x in v] + [1, 1, 1]
    return (v[0], v[1], v[2])


def spans_from_chrome_trace(trace: dict[str, Any]) -> list[KernelSpan]:
    """Kernel spans of a ``torch.profiler`` chrome trace (``export_chrome_trace``), in start
    order. Kineto writes microseconds with nanosecond decimals."""
    out = []
    for ev in trace.get("traceEvents", []):
        if ev.get("cat") != "kernel" or ev.get("ph") != "X":
            continue
        args = ev.get("args", {})
        out.append(KernelSpan(name=str(ev.get("name", "")), grid=_dim3(args.get("grid", 1)),
                              block=_dim3(args.get("block", 1)),
                              start_ns=float(ev["ts"]) * 1e3, dur_ns=float(ev["dur"]) * 1e3,
                              stream=int(args.get("stream", 0) or 0),
                              regs=args.get("registers per thread"),
                              shmem=args.get("shared memory")))
    out.sort(key=lambda s: s.start_ns)
    return out


def busy_ns(spans: Iterable[KernelSpan]) -> float:
    """Length of the union of the spans' intervals: kernels on several streams overlap."""
    total, end = 0.0, None
    for s in sorted(spans, key=lambda s: s.start_ns):
        a, b = s.start_ns, s.start_ns + s.dur_ns
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def summarize(spans: list[KernelSpan], label: str, device_name: str, sms: int | None,
              step_ms: float | None, *, gpu: GpuInfo | None = None,
              peak_mem_bytes: int | None = None, mem_start_bytes: int | None = None,
              **extra: Any) -> TimelineSummary:
    busy = busy_ns(spans) / 1e6
    span = ((max(s.start_ns + s.dur_ns for s in spans) - spans[0].start_ns) / 1e6
            if spans else 0.0)
    return TimelineSummary(label=label, device_name=device_name, sms=sms, launches=len(spans),
                           kernel_ms=round(sum(s.dur_ns for s in spans) / 1e6, 4),
                           busy_ms=round(busy, 4), span_ms=round(span, 4),
                           step_ms=None if step_ms is None else round(step_ms, 4),
                           busy_share=round(busy / step_ms, 4) if step_ms else None,
                           extra=extra, gpu=gpu, peak_mem_bytes=peak_mem_bytes,
                           mem_start_bytes=mem_start_bytes)


@dataclass(frozen=True)
class WindowMeasure:
    """What :class:`StepProbe` measured of one iteration."""

    spans: list[KernelSpan]
    step_ms: float | None              # host time between the synchronizes around it
    peak_mem_bytes: int | None
    mem_start_bytes: int | None


def record(measure: WindowMeasure, label: str, gpu: GpuInfo | None, sms: int | None,
           **extra: Any) -> TimelineSummary:
    """The timeline record of a measured iteration on ``gpu`` (None: not a GPU)."""
    return summarize(measure.spans, label, gpu.name if gpu is not None else "cpu", sms,
                     measure.step_ms, gpu=gpu, peak_mem_bytes=measure.peak_mem_bytes,
                     mem_start_bytes=measure.mem_start_bytes, **extra)


def write_timeline(path: str | Path, spans: list[KernelSpan]) -> None:
    """The spans as an ncu-layout CSV (see the module's docstring)."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerow(UNITS)
    t0 = spans[0].start_ns if spans else 0.0
    for i, s in enumerate(spans):
        w.writerow([i, s.name, "(%d, %d, %d)" % s.grid, "(%d, %d, %d)" % s.block, s.stream,
                    f"{s.dur_ns:.0f}", f"{s.start_ns - t0:.0f}"])
    write_text(Path(path), buf.getvalue())


def read_timeline_json(path: str | Path) -> TimelineSummary:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read timeline summary: {exc}", path) from None
    try:
        if isinstance(data.get("gpu"), dict):
            data["gpu"] = GpuInfo.from_dict(data["gpu"])
        return TimelineSummary(**data)
    except (TypeError, AttributeError) as exc:
        raise InputError(f"not a timeline summary ({exc})", path) from None


def write_timeline_json(path: str | Path, summary: TimelineSummary) -> None:
    write_text(Path(path), json.dumps(asdict(summary), indent=1, sort_keys=True) + "\n")


class KernelTimer:
    """Collects CUDA kernel spans between :meth:`start` and :meth:`stop` with
    ``torch.profiler`` (CUPTI activity records: no replay, no serialisation)."""

    def __init__(self) -> None:
        self._prof = None
        self.spans: list[KernelSpan] = []

    def start(self) -> None:
        import torch

        self._prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        self._prof.__enter__()

    def stop(self, scratch: Path) -> list[KernelSpan]:
        assert self._prof is not None, "start() first"
        self._prof.__exit__(None, None, None)
        scratch.parent.mkdir(parents=True, exist_ok=True)
        self._prof.export_chrome_trace(str(scratch))
        self.spans = spans_from_chrome_trace(json.loads(scratch.read_text()))
        scratch.unlink()
        self._prof = None
        return self.spans


def _sync() -> None:
    import torch

    # the current stream first: under a green context (simfront.workloads.green.sm_subset)
    # it belongs to another CUDA context than the one synchronize() waits on
    torch.cuda.current_stream().synchronize()
    torch.cuda.synchronize()


class StepProbe:
    """Measures one iteration between :meth:`open` and :meth:`close`: its kernels under
    CUPTI, the host time between device synchronizes around it and the peak GPU memory
    allocated through torch while it ran. ``cuda=False``: the wall time only."""

    def __init__(self, scratch: Path, cuda: bool = True) -> None:
        self.scratch = scratch
        self.cuda = cuda
        self.timer = KernelTimer()
        self._t0 = 0.0
        self._mem0: int | None = None

    def open(self) -> None:
        import time

        if self.cuda:
            import torch

            _sync()
            torch.cuda.reset_peak_memory_stats()
            self._mem0 = int(torch.cuda.memory_allocated())
            self.timer.start()
        self._t0 = time.perf_counter()

    def close(self) -> WindowMeasure:
        import time

        if not self.cuda:
            return WindowMeasure([], (time.perf_counter() - self._t0) * 1e3, None, None)
        import torch

        _sync()
        step_ms = (time.perf_counter() - self._t0) * 1e3
        peak = int(torch.cuda.max_memory_allocated())
        spans = self.timer.stop(self.scratch)
        return WindowMeasure(spans, step_ms, peak, self._mem0)


def gpu_prefix(device_name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``h100``: the file-name prefix of a device's timelines
    in a trace set's ``whatif/`` folder."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,4})\b", device_name)
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


def store_beside(timeline_dir: str | Path, label: str, trace_dir: str | Path,
                 force: bool = False, folder: str = "whatif") -> tuple[Path, Path]:
    """Copy ``timeline-<label>.{csv,json}`` of ``timeline_dir`` into the trace set's
    ``folder`` (``whatif/``; ``hold/`` for a shared-memory hold's run, see
    :mod:`simfront.analysis.occupancy`) as ``<gpu>-<label>.csv.xz`` and ``.json`` (the
    names :mod:`simfront.analysis.whatif` reads). An existing timeline there is kept
    unless ``force``."""
    src = Path(timeline_dir)
    csv_in, js_in = src / f"timeline-{label}.csv", src / f"timeline-{label}.json"
    summary = read_timeline_json(js_in)
    if not csv_in.is_file():
        raise InputError("timeline CSV missing", csv_in)
    dest = Path(trace_dir) / folder
    stem = f"{gpu_prefix(summary.device_name)}-{label}"
    csv_out, js_out = dest / f"{stem}.csv.xz", dest / f"{stem}.json"
    if not force and (csv_out.exists() or js_out.exists()):
        raise InputError(f"{stem} is already there (use --force to replace it)", dest)
    dest.mkdir(parents=True, exist_ok=True)
    write_bytes(csv_out, lzma.compress(csv_in.read_bytes()))
    write_bytes(js_out, js_in.read_bytes())
    return csv_out, js_out

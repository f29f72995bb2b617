"""Kernel timelines of one step under hardware conditions that can be changed per process:
the whole GPU, or a subset of its SMs through a CUDA green context.

Used by ``python -m simfront.workloads.run ... --timeline DIR [--sms 132,96,64,32]``. The
step is built once and warmed up on the whole GPU (Triton compiles and autotunes there, as in
a capture), then each condition runs two iterations, a warm one and a timed one, so every
condition times the same kernels. Green contexts split SMs, not L2 or DRAM: the `sm_count`
variant of a GPU description changes the same thing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from simfront.capture.timeline import (KernelTimer, TimelineSummary, summarize, write_timeline,
                                       write_timeline_json)
from simfront.errors import ConfigError
from simfront.workloads.runner import RunSummary, run_workload
from simfront.workloads.workload import Workload


def parse_sms(text: str) -> list[int | None]:
    """``"all,96,64"`` -> ``[None, 96, 64]`` (None: the whole GPU)."""
    out: list[int | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("all", "full", ""):
            out.append(None)
            continue
        try:
            n = int(part)
        except ValueError:
            raise ConfigError(f"SM count must be an integer or 'all', got {part!r}",
                              field="--sms") from None
        if n < 1:
            raise ConfigError(f"SM count must be positive, got {n}", field="--sms")
        out.append(n)
    return out


def condition_label(sms: int | None) -> str:
    return "all" if sms is None else f"sms{sms}"


@contextlib.contextmanager
def sm_subset(sms: int | None, device: str = "cuda") -> Iterator[int | None]:
    """Run what is inside on ``sms`` SMs (a green context's stream made current); None: the
    whole GPU, unchanged. Yields the SM count the context was given."""
    if sms is None:
        yield None
        return
    import torch

    from torch.cuda.green_contexts import GreenContext

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    total = torch.cuda.get_device_properties(index).multi_processor_count
    if sms >= total:
        yield None
        return
    ctx = GreenContext.create(num_sms=sms, device_id=index)
    stream = ctx.Stream()
    with torch.cuda.stream(stream):
        yield sms
    stream.synchronize()


def run_timelines(wl: Workload, sms_list: list[int | None], out_dir: Path,
                  warmup: int = 1) -> list[TimelineSummary]:
    """Time the step's kernels under each condition; write ``timeline-<label>.csv`` and
    ``timeline-<label>.json`` per condition into ``out_dir``."""
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    if warmup:
        run_workload(wl, warmup, None, profiler=False, nvtx_name="")
    device_name = (torch.cuda.get_device_name(wl.device) if wl.device.startswith("cuda")
                   else "cpu")
    results = []
    for sms in sms_list:
        timer = KernelTimer()
        label = condition_label(sms)
        with sm_subset(sms, wl.device) as given:
            run: RunSummary = run_workload(
                wl, 2, 1, profiler=False,
                on_window_start=lambda _wl: timer.start(),
                on_window_end=lambda _wl: timer.stop(out_dir / f".{label}.trace.json"))
        spans = timer.spans
        write_timeline(out_dir / f"timeline-{label}.csv", spans)
        summ = summarize(spans, label, device_name, given, run.step_ms[1],
                         untimed_step_ms=run.step_ms[0], workload=wl.name, preset=wl.preset,
                         config_hash=run.config_hash, versions=run.versions)
        write_timeline_json(out_dir / f"timeline-{label}.json", summ)
        results.append(summ)
    return results

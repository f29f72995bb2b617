"""How the device scripts time a call: CUDA events around it, the median of back-to-back
calls after warm-ups, and the JSON file a script's rows go to."""

from __future__ import annotations

import json
import statistics
from pathlib import Path


def median_us(fn, calls: int, before=None, warmups: int = 1) -> float:
    """The median of ``calls`` CUDA-event times of ``fn()``, in microseconds, after
    ``warmups`` untimed calls; ``before()`` runs ahead of every call, untimed."""
    import torch

    for _ in range(warmups):
        if before:
            before()
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        if before:
            before()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(times)


def write_rows(path: str | Path | None, calls: int, rows: list[dict]) -> None:
    """The rows with the GPU's name and SM count, the calls per figure and torch's
    version, as JSON (nothing where ``path`` is None)."""
    import torch

    if path is None:
        return

    props = torch.cuda.get_device_properties(0)
    Path(path).write_text(json.dumps({"gpu": props.name, "sms": props.multi_processor_count,
                                      "calls": calls, "torch": torch.__version__,
                                      "rows": rows}, indent=1) + "\n")


def kernel_name(fn) -> str:
    """The name of the first CUDA kernel ``fn()`` launches (one call under torch's
    profiler; not under ncu, whose profiling takes CUPTI)."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return next((e.name for e in prof.events() if e.device_type.name == "CUDA"), "")


def emit(rows: list[dict], row: dict) -> None:
    """Keep a row and print it as a JSON line (progress a device call's output shows)."""
    rows.append(row)
    print(json.dumps(row), flush=True)

"""Run a workload for a few iterations and bracket exactly one steady-state iteration for a
tracer or profiler: ``cudaProfilerStart``/``Stop`` (``torch.cuda.profiler``) and an NVTX
range named ``simfront.step`` around it, with the device synchronised on both sides so the
window holds that iteration's launches and nothing else."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from simfront.core.errors import ConfigError
from simfront.core.provenance import sha256_json, tool_versions
from simfront.workloads.green import sm_subset
from simfront.workloads.workload import Workload, build

NVTX_STEP = "simfront.step"
SUMMARY_FORMAT = 1


@dataclass(frozen=True)
class RunSummary:
    """What a run did; printed as one JSON line by ``python -m simfront.workloads.run``."""

    workload: str
    preset: str
    impl: str
    device: str
    device_name: str
    amp: str
    params: int
    iterations: int
    window: int | None                 # 0-based index of the bracketed iteration
    nvtx_range: str | None
    step_ms: list[float]               # wall time of every iteration, device synchronised
    losses: list[float]
    config: dict[str, Any]
    versions: dict[str, str] = field(default_factory=dict)
    config_hash: str = ""              # sha256 of workload, impl, amp and config: what ran
    window_sms: int | None = None      # SMs the window ran on (a green context); None: all
    format: int = SUMMARY_FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


def check_window(iterations: int, window: int | None) -> None:
    if iterations < 1:
        raise ConfigError("iterations must be at least 1", field="iterations")
    if window is None:
        return
    if not 1 <= window < iterations:
        raise ConfigError(f"window must name a steady-state iteration, 1..{iterations - 1} "
                          f"(the first one compiles Triton kernels and allocates), got {window}",
                          field="window")


def run_workload(wl: Workload, iterations: int = 3, window: int | None = -1, *,
                 on_window_start: Callable[[Workload], None] | None = None,
                 on_window_end: Callable[[Workload], None] | None = None,
                 profiler: bool = True, nvtx_name: str = NVTX_STEP,
                 window_sms: int | None = None) -> RunSummary:
    """Run ``iterations`` steps of a built workload; iteration ``window`` (default -1: the
    last; None: no window) is bracketed. Hooks run inside the bracket, right after it opens
    and right before it closes, with the device idle.

    ``window_sms``: the window and the iteration before it run on that many SMs (a green
    context, :func:`simfront.workloads.green.sm_subset`); the earlier ones on the whole GPU,
    so Triton autotunes there, as in a capture, and the window runs the kernels a trace of
    the same step holds."""
    import torch

    if window is not None and window < 0:
        window += iterations
    check_window(iterations, window)
    if window_sms is not None and window is None:
        raise ConfigError("an SM count for the window needs a window", field="sms")
    cuda = wl.device.startswith("cuda")

    def sync() -> None:
        if cuda:
            # the current stream first: under a green context (simfront.workloads.sm_subset)
            # it belongs to another CUDA context than the one synchronize() waits on
            torch.cuda.current_stream().synchronize()
            torch.cuda.synchronize()
    times, losses = [], []
    # the green context, entered before the window; closed after it, or on an error
    with contextlib.ExitStack() as subset:
        for it in range(iterations):
            in_window = it == window
            sync()
            if window_sms is not None and it == window - 1:
                subset.enter_context(sm_subset(window_sms, wl.device))
            if in_window:
                if cuda and profiler:
                    torch.cuda.profiler.start()
                if cuda and nvtx_name:
                    torch.cuda.nvtx.range_push(nvtx_name)
                if on_window_start is not None:
                    on_window_start(wl)
            t0 = time.perf_counter()
            loss = wl.step()
            sync()
            times.append((time.perf_counter() - t0) * 1e3)
            if in_window:
                if on_window_end is not None:
                    on_window_end(wl)
                if cuda and nvtx_name:
                    torch.cuda.nvtx.range_pop()
                if cuda and profiler:
                    torch.cuda.profiler.stop()
                subset.close()
            losses.append(loss)     # read after the window: .item() would add a copy inside it
    loss_values = [float(x) for x in losses]
    device_name = torch.cuda.get_device_name(wl.device) if cuda else "cpu"
    extra = ("torch", "triton", "mamba_ssm", "torch_geometric")
    info = wl.describe()
    return RunSummary(workload=wl.name, preset=wl.preset, impl=wl.impl, device=wl.device,
                      device_name=device_name, amp=wl.amp, params=info["params"],
                      iterations=iterations, window=window,
                      nvtx_range=nvtx_name if (window is not None and cuda) else None,
                      step_ms=[round(t, 3) for t in times],
                      losses=[round(v, 6) for v in loss_values], config=info["config"],
                      versions=tool_versions(*extra),
                      config_hash=sha256_json({k: info[k] for k in
                                               ("workload", "impl", "amp", "config")}),
                      window_sms=window_sms)


def run(name: str, preset: str = "tiny", iterations: int = 3, window: int | None = -1, *,
        device: str = "cuda", impl: str = "auto", overrides: dict[str, Any] | None = None,
        amp: str = "bf16", on_window_start: Callable[[Workload], None] | None = None,
        on_window_end: Callable[[Workload], None] | None = None, profiler: bool = True,
        nvtx_name: str = NVTX_STEP, window_sms: int | None = None) -> RunSummary:
    """Build workload ``name`` and run it (see ``run_workload``)."""
    if window is not None and window >= 0:
        check_window(iterations, window)
    wl = build(name, preset, device=device, impl=impl, overrides=overrides, amp=amp)
    return run_workload(wl, iterations, window, on_window_start=on_window_start,
                        on_window_end=on_window_end, profiler=profiler, nvtx_name=nvtx_name,
                        window_sms=window_sms)

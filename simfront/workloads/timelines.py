"""Kernel timelines of one step under hardware conditions that can be changed per process:
the whole GPU, a subset of its SMs through a CUDA green context, or an L2 made smaller by a
persisting-L2 set-aside that a pinned buffer fills.

Used by ``python -m simfront.workloads.run ... --timeline DIR [--sms 132,96,64,32]``. The
step is built once and warmed up on the whole GPU (Triton compiles and autotunes there, as in
a capture), then each condition runs two iterations, a warm one and a timed one, so every
condition times the same kernels. Green contexts split SMs, not L2 or DRAM: the `sm_count`
variant of a GPU description changes the same thing.

The set-aside (``cudaLimitPersistingL2CacheSize``) is this process's context limit, reset
before the process ends; it shrinks the L2 that normal accesses see only while persisting
lines occupy it, so a buffer of the set-aside's size is read with a persisting access-policy
window before every timed iteration (bench/device/l2_persist.cu measured that this moves the
working-set knee; bench/RESULTS.md). It stands for the `l2_size` variant, except that the
persisting mode also slowed write-heavy streaming kernels by 13-29% on the H100 at 25 MiB,
and with the limit set alone (bench/device/l2_setaside_stream.py).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from simfront.core.timeline import (StepProbe, TimelineSummary, device_gpu, record,
                                       write_timeline, write_timeline_json)
from simfront.workloads.green import sm_subset
from simfront.workloads.shared_hold import SharedHold
from simfront.workloads.runner import RunSummary, run_workload
from simfront.workloads.workload import Workload


def condition_label(sms: int | None, l2_setaside_mb: int | None = None,
                    shared_hold_kib: int | None = None) -> str:
    if shared_hold_kib:
        return f"shmem{shared_hold_kib}k"
    if l2_setaside_mb:
        return f"l2set{l2_setaside_mb}"
    return "all" if sms is None else f"sms{sms}"


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int)]


class _LaunchAttrValue(ctypes.Union):
    # cudaStreamAttrValue is cudaLaunchAttributeValue: a 64-byte union
    _fields_ = [("accessPolicyWindow", _AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


_LIMIT_PERSISTING_L2 = 0x06
_STREAM_ATTR_ACCESS_POLICY_WINDOW = 1
_PROP_STREAMING, _PROP_PERSISTING = 1, 2


def _cudart() -> ctypes.CDLL:
    """The CUDA runtime torch already loaded (dlopen of the soname returns that copy)."""
    import torch

    major = int(str(torch.version.cuda).split(".")[0])
    return ctypes.CDLL(f"libcudart.so.{major}")


class L2SetAside:
    """Hold ``mb`` MiB of the L2 with persisting lines of a pinned buffer."""

    def __init__(self, mb: int) -> None:
        import torch

        self.rt = _cudart()
        want = mb << 20
        self._check(self.rt.cudaDeviceSetLimit(_LIMIT_PERSISTING_L2, ctypes.c_size_t(want)),
                    "cudaDeviceSetLimit(PersistingL2CacheSize)")
        got = ctypes.c_size_t()
        self._check(self.rt.cudaDeviceGetLimit(ctypes.byref(got), _LIMIT_PERSISTING_L2),
                    "cudaDeviceGetLimit")
        self.bytes = int(got.value)
        self.buffer = torch.ones(self.bytes // 4, dtype=torch.float32, device="cuda")
        self.stream = torch.cuda.Stream()
        val = _LaunchAttrValue()
        w = val.accessPolicyWindow
        w.base_ptr, w.num_bytes, w.hitRatio = self.buffer.data_ptr(), self.bytes, 1.0
        w.hitProp, w.missProp = _PROP_PERSISTING, _PROP_STREAMING
        self._check(self.rt.cudaStreamSetAttribute(
            ctypes.c_void_p(self.stream.cuda_stream), _STREAM_ATTR_ACCESS_POLICY_WINDOW,
            ctypes.byref(val)), "cudaStreamSetAttribute(AccessPolicyWindow)")

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUDA error {rc}")

    def fill(self) -> None:
        """Read the buffer through the window so its lines persist, then wait for it."""
        import torch

        with torch.cuda.stream(self.stream):
            self.buffer.sum()
        self.stream.synchronize()

    def release(self) -> None:
        self.rt.cudaCtxResetPersistingL2Cache()
        self.rt.cudaDeviceSetLimit(_LIMIT_PERSISTING_L2, ctypes.c_size_t(0))
        del self.buffer


def run_timelines(wl: Workload, sms_list: list[int | None], out_dir: Path,
                  warmup: int = 1, l2_setaside_mb: int | None = None,
                  shared_hold_kib: tuple[int, ...] = (),
                  hold_kernels: tuple[str, ...] = ("*",)) -> list[TimelineSummary]:
    """Time the step's kernels under each condition (each SM count of ``sms_list``, then, if
    given, the whole GPU with ``l2_setaside_mb`` MiB of L2 set aside, then the whole GPU with
    each of ``shared_hold_kib`` KiB of shared memory held around the launches of the Triton
    kernels ``hold_kernels`` names: ``shared_hold``); write ``timeline-<label>.csv`` and
    ``timeline-<label>.json`` per condition into ``out_dir``."""

    out_dir.mkdir(parents=True, exist_ok=True)
    if warmup:
        run_workload(wl, warmup, None, profiler=False, nvtx_name="")
    cuda = wl.device.startswith("cuda")
    gpu = device_gpu(wl.device) if cuda else None
    results = []
    conditions = [(sms, None, None) for sms in sms_list]
    if l2_setaside_mb:
        conditions.append((None, l2_setaside_mb, None))
    conditions += [(None, None, kib) for kib in shared_hold_kib]
    for sms, setaside_mb, hold_kib in conditions:
        label = condition_label(sms, setaside_mb, hold_kib)
        probe = StepProbe(out_dir / f".{label}.trace.json", cuda=cuda)
        setaside = L2SetAside(setaside_mb) if setaside_mb else None
        hold = SharedHold(hold_kib, tuple(hold_kernels)) if hold_kib else None
        entered = []

        def start(_wl, probe=probe, setaside=setaside, hold=hold) -> None:
            if setaside is not None:
                setaside.fill()
            if hold is not None:
                entered.append(hold.held())
                entered[-1].__enter__()
            probe.open()

        def end(_wl, probe=probe) -> None:
            measured.append(probe.close())
            while entered:
                entered.pop().close()

        measured = []
        try:
            with sm_subset(sms, wl.device) as given:
                run: RunSummary = run_workload(wl, 2, 1, profiler=False,
                                               on_window_start=start, on_window_end=end)
        finally:
            if setaside is not None:
                setaside.release()
            while entered:  # a step that failed inside the window: its kernels restored
                entered.pop().close(check=False)
        write_timeline(out_dir / f"timeline-{label}.csv", measured[0].spans)
        extra = {"l2_setaside_bytes": setaside.bytes} if setaside is not None else {}
        if hold is not None:
            extra.update(shared_hold_bytes=hold.bytes, held_kernels=sorted(hold.held_names),
                         held_launches=hold.launches,
                         held_clock_ghz={k: round(sum(v) / len(v), 4)
                                         for k, v in sorted(hold.clocks.items())})
        summ = record(measured[0], label, gpu, given, untimed_step_ms=run.step_ms[0],
                      workload=wl.name, preset=wl.preset, config=run.config,
                      config_hash=run.config_hash,
                      versions=run.versions, **extra)
        write_timeline_json(out_dir / f"timeline-{label}.json", summ)
        results.append(summ)
    return results

"""Less shared memory on every SM, for chosen kernels of a step: an occupancy what-if on
hardware, per process, with no device-wide setting changed.

Around each launch of a held kernel (a Triton kernel of ``mamba_ssm`` whose name matches the
hold's patterns), three small kernels of ``cuda/shared_hold.cu`` run: on a stream of its
own a holder grid puts one block on every SM that keeps ``bytes`` of dynamic shared memory
(its carve-out preference the largest, so the SM's L1 is what the largest carve-out leaves);
on the step's stream a wait kernel returns once every SM is held, then the kernel runs, then
a release kernel lets the holders go. The held kernel's blocks find ``bytes`` plus the 1 KiB
the runtime reserves per block less shared memory, one block slot and one warp slot less, so
fewer of them fit on an SM when shared memory limits them; every other kernel of the step
runs as usual. The GPU description's ``shared_held`` variant is the model's side of it.

Nothing waits on the host: the kernels order themselves on the device, so the step's own
synchronizes stay what they are. A hold that did not take (an SM never held, a wait timed
out) is an error when the hold closes, naming how many launches it missed.
"""

from __future__ import annotations

import ctypes
import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simfront.core.errors import ConfigError, SimfrontError
from simfront.gpu.sm import SHMEM_RESERVED

PTX = Path(__file__).with_name("cuda") / "shared_hold.ptx"
#: Unsigned words of one hold's state (``shared_hold.cu``): four counters, two 64-bit sums
#: and a claim per SM.
STATE_WORDS = 8 + 256
#: Launches one hold context can serve before its state buffer is used up.
MAX_LAUNCHES = 4096
#: How long a holder or a wait lasts at most (ns): a hold that never takes ends the step
#: late, not never.
MAX_NS = 2_000_000_000
#: The modules whose Triton kernels can be held.
MODULE_PREFIX = "mamba_ssm.ops.triton"

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9


class HoldError(SimfrontError):
    """A shared-memory hold that could not be set up or did not take."""


def parse_kib(text: str) -> list[int]:
    """``"64,117"`` -> ``[64, 117]``: the KiB of shared memory each condition holds."""
    out = []
    for part in text.split(","):
        part = part.strip().lower().removesuffix("k").removesuffix("kib")
        try:
            n = int(part)
        except ValueError:
            raise ConfigError(f"shared memory to hold must be a whole number of KiB, got "
                              f"{part!r}", field="--hold-shared") from None
        if n < 1:
            raise ConfigError(f"shared memory to hold must be positive, got {n} KiB",
                              field="--hold-shared")
        out.append(n)
    return out


def fits(shared_per_sm: int, block_shared: int, held: int,
         reserved: int = SHMEM_RESERVED) -> int:
    """Blocks of ``block_shared`` bytes that fit on an SM of ``shared_per_sm`` bytes of
    shared memory beside a holder of ``held`` bytes (each block also holds ``reserved``)."""
    left = shared_per_sm - (held + reserved if held else 0)
    return max(0, left // (block_shared + reserved))


class _Driver:
    """The CUDA driver calls the hold needs, on torch's current context."""

    def __init__(self) -> None:
        self.cu = ctypes.CDLL("libcuda.so.1")

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(rc, ctypes.byref(name))
            raise HoldError(f"{what} failed: {name.value.decode() if name.value else rc}")

    def module(self, ptx: bytes) -> ctypes.c_void_p:
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)),
                   "cuModuleLoadData(shared_hold.ptx)")
        return mod

    def function(self, mod: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()),
                   f"cuModuleGetFunction({name})")
        return fn

    def set_attribute(self, fn: ctypes.c_void_p, attr: int, value: int, what: str) -> None:
        self.check(self.cu.cuFuncSetAttribute(fn, attr, ctypes.c_int(value)), what)

    def launch(self, fn, grid: int, block: int, shared: int, stream: int, *args) -> None:
        vals = [a if isinstance(a, ctypes._SimpleCData) else ctypes.c_uint64(a) for a in args]
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                               for v in vals])
        self.check(self.cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared,
                                          ctypes.c_void_p(stream), ptrs, None),
                   "cuLaunchKernel(shared hold)")


@dataclass
class SharedHold:
    """Hold ``kib`` KiB of shared memory on every SM around each launch of the Triton
    kernels of ``mamba_ssm`` whose names match ``kernels`` (fnmatch patterns), while
    :meth:`held` is entered."""

    kib: int
    kernels: tuple[str, ...] = ("*",)
    held_names: set[str] = field(default_factory=set)
    launches: int = 0
    #: the kernel each launch held was of, in order
    rows: list[str] = field(default_factory=list)
    #: per held kernel, the SM clock (GHz) the holders saw during each of its launches
    clocks: dict[str, list[float]] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return self.kib << 10

    def _setup(self) -> None:
        import torch

        torch.cuda.init()
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.n_sm = props.multi_processor_count
        # As many holders as fit on every SM at once (at most 16 an SM, the block slots
        # left): every SM gets one, the others on an SM leave at once, and none waits for
        # room, which would keep the held kernel's blocks waiting behind it.
        per_sm = int(getattr(props, "shared_memory_per_multiprocessor", 0) or 0)
        self.holders = self.n_sm * max(1, min(16, per_sm // (self.bytes + SHMEM_RESERVED)))
        limit = int(getattr(props, "shared_memory_per_block_optin", 0) or 0)
        if limit and self.bytes > limit:
            raise ConfigError(f"{self.kib} KiB is more shared memory than one block can hold "
                              f"({limit >> 10} KiB)", field="--hold-shared")
        torch.empty(1, device="cuda")  # the primary context current on this thread
        self.drv = _Driver()
        self.mod = self.drv.module(PTX.read_bytes() + b"\0")
        self.fn_hold = self.drv.function(self.mod, "simfront_hold")
        self.fn_wait = self.drv.function(self.mod, "simfront_hold_wait")
        self.fn_release = self.drv.function(self.mod, "simfront_hold_release")
        self.drv.set_attribute(self.fn_hold, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               self.bytes, "cuFuncSetAttribute(max dynamic shared)")
        # All three prefer the largest carve-out: an SM that the wait or the release kernel
        # found idle and carved for little shared memory could take no holder while they
        # sit on it, and the wait would never end.
        for fn in (self.fn_hold, self.fn_wait, self.fn_release):
            self.drv.set_attribute(fn, _CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                   100, "cuFuncSetAttribute(preferred carve-out)")
        self.state = torch.zeros((MAX_LAUNCHES, STATE_WORDS), dtype=torch.int32, device="cuda")
        self.stream = torch.cuda.Stream()

    def acquire(self, name: str = "") -> int:
        """Enqueue a hold before the next launch (of kernel ``name``) on the current stream;
        its state's row."""
        import torch

        if self.launches >= MAX_LAUNCHES:
            raise HoldError(f"a shared-memory hold serves at most {MAX_LAUNCHES} launches")
        row = self.launches
        self.launches += 1
        self.rows.append(name)
        ptr = self.state[row].data_ptr()
        self.stream.wait_stream(torch.cuda.current_stream())
        self.drv.launch(self.fn_hold, self.holders, 32, self.bytes, self.stream.cuda_stream,
                        ptr, ctypes.c_uint64(MAX_NS))
        self.drv.launch(self.fn_wait, 1, 32, 0, torch.cuda.current_stream().cuda_stream,
                        ptr, ctypes.c_uint32(self.n_sm), ctypes.c_uint64(MAX_NS))
        return row

    def release(self, row: int) -> None:
        import torch

        self.drv.launch(self.fn_release, 1, 1, 0, torch.cuda.current_stream().cuda_stream,
                        self.state[row].data_ptr())

    def check(self) -> None:
        """After the held launches finished: every one of them had every SM held. Notes the
        SM clock of each (``clocks``)."""
        self.stream.synchronize()
        st = self.state[: self.launches, :4].cpu()
        sums = self.state[: self.launches, 4:8].cpu().numpy().view(np.uint64)
        for name, cycles, ns in zip(self.rows, sums[:, 0], sums[:, 1]):
            if ns:
                self.clocks.setdefault(name, []).append(float(cycles) / float(ns))
        failed = ((st[:, 1] < self.n_sm) | (st[:, 3] > 0)).nonzero().flatten().tolist()
        if failed:
            names = sorted({self.rows[i] for i in failed})
            raise HoldError(
                f"shared-memory hold of {self.kib} KiB did not take on {len(failed)} of "
                f"{self.launches} launches, of {', '.join(names)} (fewest SMs held "
                f"{int(st[:, 1].min())} of {self.n_sm}; a held kernel whose block needs more "
                f"shared memory than the hold leaves waits for the holders to time out)")

    def held(self):
        """A context: the matching kernels' launches held while it is entered."""
        return _Entered(self)


class _HeldKernel:
    """A Triton kernel whose ``kernel[grid](...)`` launches run held."""

    def __init__(self, kernel, name: str, hold: SharedHold) -> None:
        self._kernel, self._name, self._hold = kernel, name, hold

    def __getitem__(self, grid):
        launch = self._kernel[grid]

        def run(*args, **kwargs):
            row = self._hold.acquire(self._name)
            try:
                return launch(*args, **kwargs)
            finally:
                self._hold.release(row)
                self._hold.held_names.add(self._name)
        return run

    def __getattr__(self, name):
        return getattr(self._kernel, name)


def triton_kernels(patterns: tuple[str, ...]) -> list[tuple[object, str, object]]:
    """(module, attribute name, kernel) of every loaded Triton kernel of ``mamba_ssm`` whose
    name matches one of ``patterns``."""
    from triton.runtime.jit import KernelInterface

    out = []
    for mname, mod in list(sys.modules.items()):
        if not mname.startswith(MODULE_PREFIX) or mod is None:
            continue
        for name, obj in list(vars(mod).items()):
            if isinstance(obj, KernelInterface) and any(fnmatch.fnmatchcase(name, p)
                                                        for p in patterns):
                out.append((mod, name, obj))
    return out


class _Entered:
    def __init__(self, hold: SharedHold) -> None:
        self.hold = hold
        self.patched: list[tuple[object, str, object]] = []

    def __enter__(self) -> SharedHold:
        h = self.hold
        if not hasattr(h, "drv"):
            h._setup()
        found = triton_kernels(h.kernels)
        if not found:
            raise ConfigError(f"no Triton kernel of {MODULE_PREFIX} matches "
                              f"{', '.join(h.kernels)} (is the workload's step built?)",
                              field="--hold-kernels")
        for mod, name, kernel in found:
            setattr(mod, name, _HeldKernel(kernel, name, h))
            self.patched.append((mod, name, kernel))
        return h

    def __exit__(self, *exc) -> None:
        self.close(check=exc[0] is None)

    def close(self, check: bool = True) -> None:
        """The held kernels back as they were; with ``check``, the hold's launches checked
        (:meth:`SharedHold.check`)."""
        for mod, name, kernel in self.patched:
            setattr(mod, name, kernel)
        self.patched.clear()
        if check:
            self.hold.check()

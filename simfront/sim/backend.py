"""The backend interface: one job (a trace set + a GPU description) in, per-kernel records out.

Two implementations: the built-in trace-driven timing model (``simfront.sim.model``, the
default, nothing to install) and Accel-Sim (``simfront.sim.accelsim``, an external install
named by the user). The sweep stage only talks to this interface.
"""

from __future__ import annotations

import abc
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from simfront.core.errors import BackendError
from simfront.gpu import GPU


@dataclass(frozen=True)
class SimJob:
    """One unit of simulation work.

    ``gpu`` is a finished, validated GPU description (``simfront.gpu.GPU``; ``None`` only
    where a backend option names the simulator's own config files instead, as Accel-Sim's
    ``config_dir``); ``kernels`` selects launches of the trace set (trace file names such as
    ``kernel-35636.traceg.xz`` or ``fnmatch`` patterns on the kernel name); ``None`` means
    all of them.
    """

    job_id: str
    trace_dir: Path
    gpu: GPU | None
    out_dir: Path
    kernels: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.gpu is not None and not isinstance(self.gpu, GPU):
            # a preset name or a file path here would reach the simulator unvalidated
            raise TypeError(f"SimJob.gpu must be a simfront.gpu.GPU (load_gpu(...) and "
                            f"validate it), got {type(self.gpu).__name__} {self.gpu!r:.60}")


@dataclass
class SimResult:
    """What a backend returns. ``records`` holds one dict per kernel launch with the columns of
    ``simfront.stats.schema``; ``ok`` is False when the run failed, and ``reason`` then quotes
    the cause (the simulator's own last lines where there are any). Records of kernels that
    finished before a failure are kept, marked ``complete``."""

    job_id: str
    backend: str
    ok: bool
    records: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0


class Backend(abc.ABC):
    """A simulator behind simfront. Subclasses are registered with :func:`register`."""

    name: str = ""

    @abc.abstractmethod
    def version(self) -> str:
        """A version string that goes into job ids: a new version means new results."""

    def check_available(self) -> None:
        """Raise BackendError, saying what to install or set, if this backend cannot run here."""

    def check_gpu(self, gpu: GPU, pipes_used: "set[str] | None" = None) -> None:
        """Raise ConfigError (naming the field or option and the rule) if this simulator
        would refuse or crash on ``gpu``, a description that passed its own checks
        (``simfront.gpu.validate``). Runs before any job, so a sweep fails at plan time."""

    @abc.abstractmethod
    def run(self, job: SimJob) -> SimResult:
        """Run one job; never raise for a simulator failure, return ``ok=False`` instead."""


_REGISTRY: dict[str, Callable[[], Backend]] = {}


def register(name: str, factory: Callable[[], Backend]) -> None:
    _REGISTRY[name] = factory


#: The built-in backends and the modules whose import registers them.
BUILTIN_MODULES = {"model": "simfront.sim.model", "accelsim": "simfront.sim.accelsim"}


def backend_names() -> list[str]:
    for name in BUILTIN_MODULES:
        _load_builtin(name)
    return sorted(_REGISTRY)


def get_backend(name: str) -> Backend:
    """The backend called ``name``; the error lists the valid names."""
    if name not in _REGISTRY:
        _load_builtin(name)
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise BackendError(f"unknown backend '{name}'; choose one of: "
                           f"{', '.join(backend_names())}") from None


def check_gpu(gpu: GPU, backends: "tuple[str, ...] | list[str] | None" = None,
              pipes_used: "set[str] | None" = None) -> None:
    """Each named backend's :meth:`Backend.check_gpu`; by default every built-in backend's,
    so that a description accepted once runs on either (results are compared across them)."""
    for name in backends if backends is not None else BUILTIN_MODULES:
        get_backend(name).check_gpu(gpu, pipes_used)


def _load_builtin(name: str) -> None:
    # Importing a backend module registers it. Only the module of the backend asked for is
    # imported, so a Slurm task running Accel-Sim does not pay for the model's numba import.
    module = BUILTIN_MODULES.get(name)
    if module is not None:
        importlib.import_module(module)


DEFAULT_BACKEND = "model"

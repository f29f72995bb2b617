"""Executors by name. This module sits below the executors: ``local.py`` and ``slurm.py``
register themselves here when imported, and the built-in ones are imported by name on first
use, so neither the executor interface nor the registry imports an implementation (no
import circle) and a sweep that runs locally never imports the Slurm code.

A plugin (``executor.imports`` in a sweep file) registers its own with
:func:`register_executor`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from simfront.core.errors import SweepError

if TYPE_CHECKING:  # types only: the sweep file reader (spec.py) asks this module for names
    from simfront.sweep.executor import Executor
    from simfront.sweep.spec import ExecutorSettings, Resources
    from simfront.sweep.store import JobStore

_EXECUTORS: dict[str, Callable[..., Executor]] = {}

#: The built-in executors and the modules whose import registers them.
BUILTIN_MODULES = {"local": "simfront.sweep.local", "slurm": "simfront.sweep.slurm"}


def register_executor(name: str, factory: Callable[..., Executor]) -> None:
    _EXECUTORS[name] = factory


def _load_builtin() -> None:
    for module in BUILTIN_MODULES.values():
        importlib.import_module(module)


def executor_names() -> list[str]:
    _load_builtin()
    return sorted(_EXECUTORS)


def make_executor(kind: str, sweep_dir: Path, store: JobStore, settings: ExecutorSettings,
                  resources: Resources, sweep_name: str = "sweep") -> Executor:
    if kind not in _EXECUTORS:
        _load_builtin()
    try:
        factory = _EXECUTORS[kind]
    except KeyError:
        raise SweepError(f"unknown executor '{kind}'; choose one of: {', '.join(sorted(_EXECUTORS))}",
                         field="executor.kind") from None
    return factory(sweep_dir, store, settings, resources, sweep_name)

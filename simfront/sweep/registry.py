"""Executors by name: the one list of them. This module sits below the executors: the
built-in ones are named here as ``module:class`` strings and imported on first use, so
neither the executor interface nor the registry imports an implementation, no
implementation imports the registry (no import circle), and a sweep that runs locally never
imports the Slurm code.

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

#: The built-in executors: name -> ``module:class`` of the executor.
BUILTIN_EXECUTORS = {"local": "simfront.sweep.local:LocalExecutor",
                     "slurm": "simfront.sweep.slurm:SlurmExecutor"}


def register_executor(name: str, factory: Callable[..., Executor]) -> None:
    """Add an executor (a plugin's, named in a sweep file's ``executor.imports``)."""
    _EXECUTORS[name] = factory


def executor_names() -> list[str]:
    """The built-in executors and every registered one."""
    return sorted(set(BUILTIN_EXECUTORS) | set(_EXECUTORS))


def _factory(kind: str) -> Callable[..., Executor] | None:
    if kind in _EXECUTORS:
        return _EXECUTORS[kind]
    if kind in BUILTIN_EXECUTORS:
        module, name = BUILTIN_EXECUTORS[kind].split(":")
        return getattr(importlib.import_module(module), name)
    return None


def make_executor(kind: str, sweep_dir: Path, store: JobStore, settings: ExecutorSettings,
                  resources: Resources, sweep_name: str = "sweep") -> Executor:
    factory = _factory(kind)
    if factory is None:
        raise SweepError(f"unknown executor '{kind}'; choose one of: {', '.join(executor_names())}",
                         field="executor.kind")
    return factory(sweep_dir, store, settings, resources, sweep_name)

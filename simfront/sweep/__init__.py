"""sweep stage: sweep files -> content-addressed jobs -> a durable job store -> executors
(local process pool, Slurm arrays) -> one HDF5 file of results per sweep.

Names are imported on first use so that ``python -m simfront.sweep.worker`` (every array
task) does not load the driver's modules first.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"JobSpec": "plan", "Plan": "plan", "plan_sweep": "plan", "Sweep": "runner",
            "SweepSpec": "spec", "load_sweep": "spec", "JobStore": "store"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"simfront.sweep.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'simfront.sweep' has no attribute '{name}'")

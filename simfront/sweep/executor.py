"""The executor interface: where attempts run. The driver (:mod:`simfront.sweep.runner`) owns
the store and the loop; an executor only starts attempts, reports how they ended, and stops
them. Local and Slurm executors are one file each; a batch scheduler such as PBS is a short
subclass of :class:`simfront.sweep.batch.BatchExecutor`. Executors are found by name through
:mod:`simfront.sweep.registry`.
"""

from __future__ import annotations

import abc
import sqlite3
from pathlib import Path

from simfront.core.errors import SweepError
from simfront.sweep.spec import ExecutorSettings, Resources
from simfront.sweep.store import Claim, JobStore, Outcome


class Executor(abc.ABC):
    """Runs attempts of jobs. :meth:`poll` and :meth:`adopt` return two lists: attempts that
    ended (ok or not; the store counts them) and attempts that were lost without the job
    being at fault (a driver stopped before they started), which go back uncounted."""

    name: str = ""

    def __init__(self, sweep_dir: Path, store: JobStore, settings: ExecutorSettings,
                 resources: Resources, sweep_name: str = "sweep"):
        self.sweep_dir = Path(sweep_dir)
        self.store = store
        self.settings = settings
        self.resources = resources
        self.sweep_name = sweep_name

    @abc.abstractmethod
    def capacity(self) -> int:
        """How many more attempts it takes now."""

    @abc.abstractmethod
    def start(self, claims: list[Claim]) -> dict[str, str]:
        """Start these attempts; return where each runs (job id -> ref)."""

    @abc.abstractmethod
    def poll(self, timeout: float) -> tuple[list[Outcome], list[tuple[str, int]]]:
        """Wait up to ``timeout`` s; return (finished attempts, lost attempts)."""

    @abc.abstractmethod
    def adopt(self, rows: list[sqlite3.Row]) -> tuple[list[Outcome], list[tuple[str, int]]]:
        """Take over attempts an earlier driver left running: report those that ended,
        keep watching the live ones."""

    @abc.abstractmethod
    def in_flight(self) -> int:
        """Attempts started and not yet reported."""

    def cancel(self, refs: list[str]) -> None:
        """Stop attempts by ref (another process's driver may own them)."""

    def shutdown(self, interrupted: bool) -> tuple[list[Outcome], list[tuple[str, int]]]:
        """Stop. Returns (attempts that finished while stopping, attempts stopped unfinished,
        to give back to the queue)."""
        return [], []


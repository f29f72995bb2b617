"""The exception hierarchy. Messages say where the problem is and what to do next."""

from __future__ import annotations

from pathlib import Path


class SimfrontError(Exception):
    """Base of every error simfront raises on purpose; the CLI prints these without a traceback."""


class InputError(SimfrontError):
    """Bad input data: names the file, and the line and field where known."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None):
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{': '.join([', '.join(where), message]) if where else message}")


class TraceFormatError(InputError):
    """A trace file that does not follow Accel-Sim's trace format."""


class ConfigError(InputError):
    """A GPU description or simulator option that is inconsistent or would crash a simulator."""


class SweepError(InputError):
    """A malformed sweep file or an inconsistent job store."""


class BackendError(SimfrontError):
    """A backend that cannot run (not installed, wrong version, refused input)."""

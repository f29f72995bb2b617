"""CLI of the workloads stage: thin wrappers over the library functions of simfront.workloads."""

from __future__ import annotations

import click

# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = []

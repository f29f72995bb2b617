"""CLI of the sim stage: thin wrappers over the library functions of simfront.sim."""

from __future__ import annotations

import click


@click.group("sim")
def sim() -> None:
    """Simulate trace sets with a backend (the built-in model by default)."""


def _add_backend_commands() -> None:
    from simfront.sim.accelsim.cli import accelsim
    from simfront.sim.model.cli import run_cmd

    sim.add_command(run_cmd)
    sim.add_command(accelsim)


_add_backend_commands()

# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [sim]

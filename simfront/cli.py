"""The `simfront` command: a thin shell over the library. Each stage owns its subcommands
in its own ``cli.py``; this file only gathers them and turns SimfrontError into a clean exit."""

from __future__ import annotations

import sys

import click

from simfront import __version__
from simfront.analysis.cli import commands as analysis_commands
from simfront.capture.cli import commands as capture_commands
from simfront.core.errors import SimfrontError
from simfront.gpu.cli import commands as gpu_commands
from simfront.sim.cli import commands as sim_commands
from simfront.stats.cli import commands as stats_commands
from simfront.sweep.cli import commands as sweep_commands
from simfront.traces.cli import commands as traces_commands
from simfront.workloads.cli import commands as workloads_commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="simfront")
def cli() -> None:
    """Cycle-level GPU simulation of deep-learning training, from capture to answers."""


def _register() -> None:
    # every stage's commands, so that `simfront --help` lists them all
    for group in (traces_commands, gpu_commands, sweep_commands, sim_commands,
                  stats_commands, analysis_commands, capture_commands, workloads_commands):
        for command in group:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    try:
        # Without standalone mode click returns a command's exit status (click.exceptions.Exit,
        # e.g. `stats parse` of a failed run) instead of exiting with it.
        status = cli.main(args=argv, prog_name="simfront", standalone_mode=False)
    except SimfrontError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    if isinstance(status, int) and not isinstance(status, bool) and status != 0:
        sys.exit(status)

"""CLI of the workloads stage: thin wrappers over the library functions of simfront.workloads."""

from __future__ import annotations

import json

import click

from simfront.workloads.counts import param_count
from simfront.workloads.presets import as_dict
from simfront.workloads.registry import WORKLOADS, get_spec
from simfront.workloads.run import main


@click.group(name="workloads")
def workloads() -> None:
    """Training steps of Mamba-family models (list, show, run)."""


@workloads.command(name="list")
def list_cmd() -> None:
    """Workload names, their presets and what they are."""
    for spec in WORKLOADS.values():
        click.echo(f"{spec.name:12s} {','.join(spec.preset_names):16s} {spec.summary}")


@workloads.command(name="show")
@click.argument("name", type=click.Choice(sorted(WORKLOADS)))
@click.option("--preset", default="tiny", show_default=True)
def show_cmd(name: str, preset: str) -> None:
    """A preset's full config and analytic parameter count, as JSON."""
    cfg = get_spec(name).config(preset)
    click.echo(json.dumps({"workload": name, "preset": preset, "params": param_count(cfg),
                           "config": as_dict(cfg)}, indent=2))


@workloads.command(name="run", context_settings={"ignore_unknown_options": True,
                                                  "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_cmd(args: tuple[str, ...]) -> None:
    """Run a step, bracketing one iteration (python -m simfront.workloads.run; -h for help)."""
    code = main(list(args))
    if code:
        raise SystemExit(code)

# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [workloads]

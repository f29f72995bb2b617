"""CLI of the workloads stage: thin wrappers over the library functions of simfront.workloads."""

from __future__ import annotations

import json
from pathlib import Path

import click

from simfront.workloads.counts import param_count
from simfront.workloads.presets import as_dict
from simfront.workloads.registry import WORKLOADS, get_spec
from simfront.workloads.run import main
from simfront.workloads.ablation import VARIANTS, AblationError, TritonConfig, make_variant, parse_autotune_log
from simfront.workloads.ablation import ablation_report


@click.group(name="workloads")
def workloads() -> None:
    """Training steps of Mamba-family models (list, show, run, ablate)."""


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

@workloads.command(name="ablate")
@click.option("--list", "list_variants", is_flag=True, help="List the variants and exit.")
@click.option("--package", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The installed package folder to copy (e.g. .../site-packages/mamba_ssm).")
@click.option("--kernel", "kernels", multiple=True, metavar="NAME",
              help="A Triton kernel (top-level def) to change and pin (repeatable).")
@click.option("--variant", default="base", show_default=True, metavar="V",
              help="One of `--list`'s variants.")
@click.option("--config-from", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A log of a run with TRITON_PRINT_AUTOTUNING=1: each kernel pinned to "
                   "the config it was first tuned to.")
@click.option("--config", "config_args", multiple=True, metavar="NAME=K=V,...",
              help="A kernel's config, e.g. NAME=BLOCK_SIZE_M=64,BLOCK_SIZE_N=64,"
                   "BLOCK_SIZE_K=32,num_warps=4,num_stages=4 (wins over --config-from).")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the package copy and ablation.json; put it first on "
                   "PYTHONPATH to run the variant.")
def ablate_cmd(list_variants, package, kernels, variant, config_from, config_args, out):
    """Copy a package with Triton kernels' vector work changed and their tiling pinned,
    for a timed and traced run of the variant (docs/ablation.md)."""
    if list_variants:
        for v in VARIANTS.values():
            click.echo(f"{v.name:6s} {v.description}")
        return
    if package is None or out is None or not kernels:
        raise click.UsageError("--package, --kernel and -o are needed (or --list)")
    configs: dict[str, TritonConfig] = {}
    if config_from is not None:
        log = parse_autotune_log(config_from.read_text(errors="replace"))
        for k in kernels:
            if k in log.configs:
                configs[k] = log.configs[k]
            others = log.others(k)
            if others:
                click.echo(f"{k}: tuned for {len(others) + 1} keys in {config_from}; pinned "
                           f"to the first, others: "
                           + "; ".join(f"{key} -> {c.as_dict()}" for key, c in others),
                           err=True)
    for arg in config_args:
        name, sep, text = arg.partition("=")
        if not sep:
            raise AblationError(f"--config '{arg}' is not NAME=K=V,...", field="config")
        configs[name] = TritonConfig.parse(text)
    record = make_variant(package, out, list(kernels), variant, configs)
    click.echo(json.dumps({k: {"sites": r["sites"], "config": r["config"]}
                           for k, r in record["kernels"].items()}))


@workloads.command(name="ablate-report")
@click.argument("set_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Rows as JSON.")
def ablate_report_cmd(set_dir, as_json):
    """Each ablated kernel's time per variant and condition against base (SET_DIR: one set's
    folder of bench/device/ablate.sh, <variant>/timeline-<condition>.csv)."""
    from dataclasses import asdict

    rows = ablation_report(set_dir)
    if as_json:
        click.echo(json.dumps([{**asdict(r), "ratio": r.ratio} for r in rows], indent=1))
        return
    click.echo(f"{'kernel':40s} {'cond':6s} {'variant':7s} {'launches':>9s} {'us':>10s} "
               f"{'base us':>10s} {'ratio':>6s}")
    for r in rows:
        launches = (f"{r.launches}" if r.launches == r.base_launches
                    else f"{r.launches}/{r.base_launches}")
        click.echo(f"{r.kernel[:40]:40s} {r.condition:6s} {r.variant:7s} {launches:>9s} "
                   f"{r.time_us:10.1f} {r.base_us:10.1f} {r.ratio:6.3f}")


# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [workloads]

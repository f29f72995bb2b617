"""CLI of the gpu stage: thin wrappers over the library functions of simfront.gpu.

    simfront config list
    simfront config show h100            # derived peaks and the tensor:vector ratio
    simfront config gen h100-tv8 --out cfg/
    simfront config diff h100 h100-vec2x
    simfront config validate my_gpu.yaml [--pipes tensor,fp32]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from simfront.gpu import (config_hash, derived, format_derived, load_gpu, preset_names, validate,
                          with_variants)

# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = []


def _variants(pairs: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--set")
        k, v = pair.split("=", 1)
        out[k.strip()] = yaml.safe_load(v)
    return out


def _load(spec: str, sets: tuple[str, ...] = ()):
    gpu = load_gpu(spec)
    params = _variants(sets)
    return with_variants(gpu, **params) if params else gpu


@click.group("config")
def config() -> None:
    """GPU descriptions: show, generate Accel-Sim files, compare, validate."""


@config.command("list")
def list_cmd() -> None:
    """The named presets with their tensor:vector ratio."""
    for name in preset_names():
        g = load_gpu(name)
        d = derived(g)
        click.echo(f"{name:18s} {g.sm_count:4d} SMs  {d.ratio_text:>6s}  L2 {g.l2.size}  "
                   f"DRAM {d.dram_bandwidth.tb_per_s:.2f} TB/s  core {g.clocks.core}")


@config.command("show")
@click.argument("spec")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Apply a variant parameter (see VARIANT_PARAMS), e.g. l2_size='25 MiB'.")
@click.option("--yaml", "as_yaml", is_flag=True, help="Print the full description as YAML.")
@click.option("--json", "as_json", is_flag=True, help="Print derived figures as JSON.")
def show(spec: str, sets: tuple[str, ...], as_yaml: bool, as_json: bool) -> None:
    """Derived peaks of a preset name or YAML file (tensor FLOP/clk/SM by dtype, vector
    FLOP/clk, SFU ops, DRAM and L2 bandwidth, tensor:vector ratio)."""
    gpu = _load(spec, sets)
    if as_yaml:
        click.echo(yaml.safe_dump(gpu.to_dict(), sort_keys=False), nl=False)
        return
    if as_json:
        d = derived(gpu)
        click.echo(json.dumps({
            "name": gpu.name, "config_hash": config_hash(gpu),
            "tensor_vector_ratio": float(d.tensor_vector_ratio),
            "tensor_flop_per_clk_sm": d.tensor_flop_per_clk_sm,
            "vector_flop_per_clk_sm": d.vector_flop_per_clk_sm,
            "sfu_ops_per_clk_sm": d.sfu_ops_per_clk_sm,
            "dram_bandwidth_bytes_per_s": d.dram_bandwidth.bytes_per_s,
            "l2_bandwidth_bytes_per_s": d.l2_bandwidth.bytes_per_s,
        }, indent=2))
        return
    click.echo(format_derived(gpu))
    click.echo(f"config hash: {config_hash(gpu)}")


@config.command("gen")
@click.argument("specs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Directory for the files (one sub-directory per GPU when several).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Apply a variant parameter to every GPU.")
def gen(specs: tuple[str, ...], out: Path, sets: tuple[str, ...]) -> None:
    """Write Accel-Sim gpgpusim.config, trace.config and the interconnect file."""
    from simfront.sim.accelsim.config import write_accelsim_config

    for spec in specs:
        gpu = _load(spec, sets)
        target = out if len(specs) == 1 else out / Path(spec).stem
        paths = write_accelsim_config(gpu, target)
        click.echo(f"{gpu.name}: " + ", ".join(str(p) for p in paths.values()))


@config.command("diff")
@click.argument("a")
@click.argument("b")
def diff(a: str, b: str) -> None:
    """Fields that differ between two descriptions, and their derived figures."""
    ga, gb = load_gpu(a), load_gpu(b)
    rows = _diff(ga.to_dict(), gb.to_dict())
    da, db = derived(ga), derived(gb)
    for label, x, y in (("tensor:vector", da.ratio_text, db.ratio_text),
                        ("DRAM TB/s", f"{da.dram_bandwidth.tb_per_s:.3f}",
                         f"{db.dram_bandwidth.tb_per_s:.3f}"),
                        ("L2 TB/s", f"{da.l2_bandwidth.tb_per_s:.2f}",
                         f"{db.l2_bandwidth.tb_per_s:.2f}")):
        if x != y:
            rows.append((f"(derived) {label}", x, y))
    if not rows:
        click.echo(f"{ga.name} and {gb.name} describe the same GPU")
        return
    width = max(len(r[0]) for r in rows)
    click.echo(f"{'field':{width}s}  {ga.name}  ->  {gb.name}")
    for path, x, y in rows:
        click.echo(f"{path:{width}s}  {x}  ->  {y}")


def _diff(x: Any, y: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(x, dict) and isinstance(y, dict):
        rows = []
        for k in list(x) + [k for k in y if k not in x]:
            if path == "" and k == "name":
                continue
            rows += _diff(x.get(k), y.get(k), f"{path}.{k}" if path else k)
        return rows
    return [] if x == y else [(path, x, y)]


@config.command("validate")
@click.argument("spec")
@click.option("--no-accelsim", is_flag=True, help="Check only the description's own rules.")
@click.option("--pipes", default="", metavar="P1,P2",
              help="Pipes the trace uses (tensor,fp32,...): zero units of these are errors.")
def validate_cmd(spec: str, no_accelsim: bool, pipes: str) -> None:
    """Check a preset, a YAML description, or a directory holding Accel-Sim configs."""
    from simfront.sim.accelsim.checks import accelsim_warnings, validate_accelsim_options
    from simfront.sim.accelsim.config import (GPGPUSIM_CONFIG, accelsim_options,
                                              read_options, validate_for_accelsim)

    used = {p.strip() for p in pipes.split(",") if p.strip()}
    path = Path(spec)
    if path.is_dir() and (path / GPGPUSIM_CONFIG).is_file():
        opts, raw, _ = read_options(path)
        opts.update(raw)
        validate_accelsim_options(opts, used)
        for w in accelsim_warnings(opts):
            click.secho(f"warning: {w}", fg="yellow", err=True)
        click.echo(f"{path}: Accel-Sim options OK")
        return
    gpu = _load(spec)
    if no_accelsim:
        validate(gpu, pipes_used=used)
    else:
        validate_for_accelsim(gpu, pipes_used=used)
        for w in accelsim_warnings(accelsim_options(gpu)):
            click.secho(f"warning: {w}", fg="yellow", err=True)
    click.echo(f"{gpu.name}: OK" + ("" if no_accelsim else " (Accel-Sim rules included)"))


commands.append(config)

"""`simfront accelsim ...`: check an install, rewrite traces (--isa-compat), run one job.

Thin wrappers over simfront.sim.accelsim; registered through ``simfront.sim.cli.commands``.
"""

from __future__ import annotations

from pathlib import Path

import click
from tqdm import tqdm

from simfront.core.errors import BackendError
from simfront.gpu.presets import load_gpu
from simfront.sim.accelsim.install import find_install
from simfront.sim.accelsim.isa_compat import rewrite_traceset
from simfront.sim.accelsim.runner import AccelSimBackend
from simfront.sim.backend import SimJob
from simfront.stats.cli import SUMMARY_COLUMNS, _table


def _overrides(nregs: int | None, shmem: int | None) -> dict:
    ov: dict = {}
    if nregs is not None:
        ov["nregs"] = nregs
    if shmem is not None:
        ov["shmem"] = shmem
    return {"*": ov} if ov else {}


@click.group("accelsim")
def accelsim() -> None:
    """The Accel-Sim backend: install check, ISA-compat trace rewriting, single runs."""


@accelsim.command("check")
@click.option("--accelsim-root", type=click.Path(path_type=Path), default=None,
              help="Accel-Sim's gpu-simulator folder (default: $ACCELSIM_ROOT)")
def check_cmd(accelsim_root: Path | None) -> None:
    """Say which Accel-Sim install would run, and what it accepts."""
    inst = find_install(accelsim_root)
    for k, v in inst.describe().items():
        click.echo(f"{k:10s} {v}")
    click.echo(f"{'accepts':10s} binary versions {sorted(inst.binary_versions)}; "
               f"{'.tracez and ' if inst.reads_tracez else ''}.traceg[.xz] traces")
    for note in inst.notes:
        click.echo(f"note: {note}")


@accelsim.command("compat")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--isa-compat", "target", type=click.Choice(["ampere"]), default="ampere",
              show_default=True, help="opcode map to rewrite for")
@click.option("--binary-version", type=click.Choice(["80", "86"]), default="80",
              show_default=True)
@click.option("--nregs", type=int, default=None, help="set -nregs in every header")
@click.option("--shmem", type=int, default=None, help="set -shmem in every header")
@click.option("--xz", is_flag=True, help="write .traceg.xz instead of plain .traceg")
def compat_cmd(trace_dir: Path, out_dir: Path, target: str, binary_version: str,
               nregs: int | None, shmem: int | None, xz: bool) -> None:
    """Write a copy of TRACE_DIR that Accel-Sim 1.x can replay (Hopper -> Ampere map)."""
    bar = tqdm(desc="rewriting", unit="kernel", file=click.get_text_stream("stderr"))
    rep = rewrite_traceset(trace_dir, out_dir, target=target, binary_version=int(binary_version),
                           header_overrides=_overrides(nregs, shmem), compress=xz,
                           progress=lambda f: bar.update(1))
    bar.close()
    click.echo(rep.summary())


@accelsim.command("run")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="the job's working directory")
@click.option("--config-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="folder with gpgpusim.config and trace.config")
@click.option("--gpu", default=None, help="GPU preset or YAML (configs written by simfront.gpu)")
@click.option("--kernel", "kernels", multiple=True, help="kernel file or name pattern (repeat)")
@click.option("--isa-compat", type=click.Choice(["ampere"]), default=None)
@click.option("--nregs", type=int, default=None, help="header override for every kernel")
@click.option("--shmem", type=int, default=None, help="header override for every kernel")
@click.option("--timeout", type=float, default=None, help="wall-time limit in seconds")
@click.option("--memory-gb", type=float, default=32.0, show_default=True)
@click.option("--accelsim-root", type=click.Path(path_type=Path), default=None)
def run_cmd(trace_dir: Path, out_dir: Path, config_dir: Path | None, gpu: str | None,
            kernels: tuple[str, ...], isa_compat: str | None, nregs: int | None,
            shmem: int | None, timeout: float | None, memory_gb: float,
            accelsim_root: Path | None) -> None:
    """Run one Accel-Sim job on TRACE_DIR and print its per-kernel summary."""
    if (config_dir is None) == (gpu is None):
        raise click.UsageError("give exactly one of --config-dir or --gpu")
    gpu_obj = None
    if gpu is not None:
        gpu_obj = load_gpu(gpu)
    options = {"memory_limit_gb": memory_gb, "header_overrides": _overrides(nregs, shmem)}
    if config_dir is not None:
        options["config_dir"] = str(config_dir)
    if isa_compat:
        options["isa_compat"] = isa_compat
    if accelsim_root:
        options["accelsim_root"] = str(accelsim_root)
    job = SimJob(job_id=out_dir.name, trace_dir=trace_dir, gpu=gpu_obj, out_dir=out_dir,
                 kernels=kernels or None, options=options, timeout_s=timeout)
    res = AccelSimBackend().run(job)
    if res.records:
        click.echo(_table(res.records, list(SUMMARY_COLUMNS)))
    if "isa_compat" in res.provenance:
        click.echo(res.provenance["isa_compat"]["summary"], err=True)
    click.echo(f"{'ok' if res.ok else 'FAILED: ' + str(res.reason)} ({res.wall_s:.1f} s); "
               f"results in {out_dir / 'result.json'}", err=True)
    if not res.ok:
        raise BackendError(res.reason or "failed")


commands: list[click.Command] = [accelsim]

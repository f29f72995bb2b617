"""``simfront sim run``: a trace set through a backend (the model by default)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click
import pandas as pd

from simfront.core.categories import short_name

from simfront.core.errors import SimfrontError

from simfront.gpu import load_gpu

from simfront.sim.backend import SimJob, get_backend

from simfront.sim.model.simulate import BLIND_WORK_SHARE
from simfront.sim.model.validation import pair_launches, read_ncu


def _launches_from_ncu(path: Path, trace_dir: Path) -> dict:
    """Registers and shared memory per kernel file, from ncu records of the same step."""
    pairs, _ = pair_launches(trace_dir, read_ncu(path))
    return {p.kernel.path.name: p.launch for p in pairs}


def _warn_blind(records: pd.DataFrame) -> None:
    """Name the launches whose sampled blocks did none of the grid's work."""
    if "sim_traced_work_share" not in records:
        return
    blind = records[records["sim_traced_work_share"] < BLIND_WORK_SHARE]
    if blind.empty:
        return
    names = ", ".join(f"kernel-{r.kernel_id} ({r.kernel})" for r in blind.itertuples())
    click.echo(f"note: {len(blind)} launch(es) timed blind, their traced blocks holding under "
               f"{BLIND_WORK_SHARE:.0%} of the grid's average block (blocks that exit at "
               f"once): their memory traffic is not simulated. {names}", err=True)


@click.command("run")
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--gpu", "gpu_spec", default="h100", show_default=True,
              help="GPU preset name or description YAML.")
@click.option("--kernel", "kernels", multiple=True,
              help="Kernel file, stem or fnmatch pattern on file or kernel name (repeatable).")
@click.option("--backend", default="model", show_default=True, help="Backend name.")
@click.option("--ncu", "ncu_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="ncu CSV of the same step: registers/shared memory per launch.")
@click.option("--out", "out_csv", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the per-kernel records to this CSV.")
@click.option("--job-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the backend's own output (default: a temporary one).")
def run_cmd(trace_dir: Path, gpu_spec: str, kernels: tuple[str, ...], backend: str,
            ncu_path: Path | None, out_csv: Path | None, job_dir: Path | None) -> None:
    """Simulate the kernels of TRACE_DIR and print one line per kernel."""
    gpu = load_gpu(gpu_spec)
    options = {}
    if ncu_path is not None:
        options["launches"] = _launches_from_ncu(ncu_path, trace_dir)
    with tempfile.TemporaryDirectory() as tmp:
        job = SimJob(job_id="cli", trace_dir=trace_dir, gpu=gpu,
                     out_dir=job_dir or Path(tmp), kernels=kernels or None, options=options)
        res = get_backend(backend).run(job)
    df = pd.DataFrame(res.records)
    if not df.empty:
        show = df.assign(kernel=df["kernel_name"].map(short_name).str.slice(0, 40))
        cols = [c for c in ("kernel_uid", "kernel", "grid", "block", "cycles", "time_us",
                            "bound", "l2_hit_rate", "dram_read_bytes", "sim_wall_s")
                if c in show]
        click.echo(show[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        _warn_blind(show)
    if out_csv is not None:
        out_csv.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_path = tempfile.mkstemp(dir=out_csv.parent, suffix=".tmp")
        os.close(fd)
        df.to_csv(tmp_path, index=False)
        os.replace(tmp_path, out_csv)
        click.echo(f"wrote {len(df)} records to {out_csv}", err=True)
    if not res.ok:
        raise SimfrontError(f"job failed: {res.reason}")
    if not res.records:
        # an empty answer must not pass for a simulation that ran
        if kernels:
            raise SimfrontError(f"--kernel {' --kernel '.join(kernels)} matches no kernel of "
                                f"{trace_dir} (a trace file name, its stem such as "
                                f"'kernel-35636', or an fnmatch pattern on the file or the "
                                f"mangled kernel name)")
        raise SimfrontError(f"{trace_dir / 'kernelslist.g'} lists no kernel launches: nothing "
                            f"to simulate")

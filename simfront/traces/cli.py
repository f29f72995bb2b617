"""CLI of the traces stage: thin wrappers over the library functions of simfront.traces."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import yaml

from simfront.core.errors import InputError
from simfront.traces.cubin import read_kernels
from simfront.traces.repair import base_name, load_records, repair_set
from simfront.traces.stats import iter_set_stats, stats_frame, write_stats
from simfront.traces.store import TraceStore, trace_hash
from simfront.traces.validate import validate_set


def _store(root: str | None):
    return TraceStore(root)


def _trace_dir(name_or_dir: str, root: str | None) -> Path:
    """A trace directory given as a path, or as the name of a stored set."""
    p = Path(name_or_dir)
    if p.is_dir():
        return p
    store = _store(root)
    if (store.root / name_or_dir).is_dir():
        return store.get(name_or_dir).path
    raise InputError("neither a trace directory nor a trace set in the store", p)


_root_option = click.option("--store", "root", type=click.Path(file_okay=False), default=None,
                            help="Trace store directory (default: the repository's traces/).")


@click.group("traces")
def traces() -> None:
    """Accel-Sim-format SASS traces: list, inspect, validate, repair, statistics."""


@traces.command("ls")
@_root_option
def ls_cmd(root: str | None) -> None:
    """List the trace sets in the store."""
    sets = _store(root).sets()
    if not sets:
        click.echo(f"no trace sets in {_store(root).root}")
        return
    click.echo(f"{'set':28s} {'kernels':>7s} {'text MB':>8s} {'stored MB':>9s}  workload")
    for s in sets:
        ks = s.kernels
        text = sum(k.get("text_bytes", 0) for k in ks) / 1e6
        stored = sum(k.get("stored_bytes", 0) for k in ks) / 1e6
        wl = s.manifest.get("workload") or ""
        if isinstance(wl, dict):
            wl = wl.get("name", "")
        click.echo(f"{s.name:28s} {len(ks):7d} {text:8.1f} {stored:9.2f}  {wl}")


@traces.command("show")
@click.argument("name")
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole manifest as JSON.")
def show_cmd(name: str, root: str | None, as_json: bool) -> None:
    """Show a stored trace set's manifest: provenance and per-kernel hashes."""
    s = _store(root).get(name)
    m = s.manifest
    if as_json:
        click.echo(json.dumps(m, indent=2))
        return
    click.echo(f"{s.name}  ({s.path})")
    for key in ("workload", "gpu", "driver", "cuda", "tools", "capture_window", "captured",
                "source", "repairs"):
        if m.get(key) not in (None, "", {}):
            value = m[key]
            text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
            click.echo(f"  {key:15s} {text}")
    click.echo(f"  {'set_sha256':15s} {m.get('set_sha256')}")
    click.echo(f"  {'kernels':15s} {len(s.kernels)}")
    for k in s.kernels:
        click.echo(f"    {k['file']:28s} {k['sha256'][:16]}  grid {tuple(k['grid'])} block "
                   f"{tuple(k['block'])} nregs {k['nregs']} shmem {k['shmem']}  "
                   f"{k['name'][:60]}")


@traces.command("validate")
@click.argument("directory")
@_root_option
@click.option("--headers-only", is_flag=True, help="Check headers only, not the bodies.")
@click.option("--max-problems", default=50, show_default=True,
              help="Print at most this many problems.")
def validate_cmd(directory: str, root: str | None, headers_only: bool, max_problems: int) -> None:
    """Check a trace directory (headers and structure); exit 1 on any error."""
    report = validate_set(_trace_dir(directory, root), body=not headers_only, progress=True)
    for p in report.problems[:max_problems]:
        click.echo(str(p), err=p.severity == "error")
    if len(report.problems) > max_problems:
        click.echo(f"... {len(report.problems) - max_problems} more problems", err=True)
    click.echo(report.summary())
    if not report.ok:
        sys.exit(1)


@traces.command("repair")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(),
              help="Directory for the corrected copy (must not exist).")
@click.option("--launches", type=click.Path(exists=True, dir_okay=False),
              help="Launch records, JSON lines (kernel_id, name, grid, block, regs, shmem).")
@click.option("--ncu", type=click.Path(exists=True, dir_okay=False),
              help="ncu --csv --page raw file; rows matched by kernel name, grid and block.")
@click.option("--cubin", type=click.Path(exists=True, dir_okay=False),
              help="Cubin, library with a fatbin, or wheel: register counts by kernel name.")
@click.option("--binary-version", type=int, default=None,
              help="SM version of the capture GPU (90 for sm_90).")
@click.option("--kernel", "kernels", multiple=True,
              help="Keep only these kernels (file, kernel-N or id); repeatable.")
@click.option("--xz-preset", default=6, show_default=True, help="xz level for .xz files.")
def repair_cmd(directory: str, out: str, launches: str | None, ncu: str | None,
               cubin: str | None, binary_version: int | None, kernels: tuple[str, ...],
               xz_preset: int) -> None:
    """Write a copy of DIRECTORY with nregs/shmem/binary version from launch records."""
    records = load_records(launches, ncu, cubin, binary_version)
    if not records and binary_version is None:
        raise click.UsageError("give --launches, --ncu and/or --binary-version")
    report = repair_set(directory, out, records, binary_version, list(kernels) or None,
                        xz_preset=xz_preset, progress=True)
    changed = sum(1 for k in report.kernels if k["changes"])
    click.echo(f"wrote {out}: {len(report.kernels)} kernels, {changed} with repaired headers "
               f"(details in {Path(out) / 'repairs.json'})")


@traces.command("register")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--name", default=None, help="Set name in the store (default: directory name).")
@click.option("--manifest", "fields_file", type=click.Path(exists=True, dir_okay=False),
              help="JSON or YAML file of provenance fields (workload, gpu, driver, cuda, ...).")
@_root_option
@click.option("--overwrite", is_flag=True, help="Replace a set of the same name.")
def register_cmd(directory: str, name: str | None, fields_file: str | None, root: str | None,
                 overwrite: bool) -> None:
    """Validate DIRECTORY and add it to the store with a computed manifest."""
    fields = {}
    if fields_file:
        fields = yaml.safe_load(Path(fields_file).read_text()) or {}
        if not isinstance(fields, dict):
            raise InputError("provenance file is not a mapping", fields_file)
    s = _store(root).register(directory, fields, name=name, overwrite=overwrite)
    click.echo(f"registered {s.name}: {len(s.kernels)} kernels, set sha256 {s.set_hash[:16]}")


@traces.command("stats")
@click.argument("directory")
@_root_option
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the table to .csv or .h5/.hdf5.")
@click.option("--kernel", "kernels", multiple=True, help="Only these kernels; repeatable.")
@click.option("--no-footprint", is_flag=True, help="Skip distinct line/sector counting.")
def stats_cmd(directory: str, root: str | None, out: str | None, kernels: tuple[str, ...],
              no_footprint: bool) -> None:
    """Per-kernel instruction mix, FLOPs and memory footprint of a trace directory."""
    path = _trace_dir(directory, root)
    stats = list(iter_set_stats(path, list(kernels) or None, progress=True,
                                footprint=not no_footprint))
    df = stats_frame(stats)
    _print_stats(stats)
    if out:
        write_stats(df, out, attrs={"trace_dir": str(path)})
        click.echo(f"wrote {out} ({len(df)} kernels, {len(df.columns)} columns)")


def _short(name: str, width: int = 34) -> str:
    try:
        n = base_name(name)
    except Exception:  # a name c++filt cannot handle still prints
        n = name
    return n if len(n) <= width else n[: width - 1] + "…"


def _print_stats(stats) -> None:
    cats = ("tensor", "fp32", "fp16", "int", "sfu", "conversion", "memory", "control", "sync",
            "uniform", "misc", "unknown")
    head = (f"{'kernel':12s} {'name':34s} {'warp insts':>11s} "
            + " ".join(f"{c[:6]:>8s}" for c in cats)
            + f" {'lanes%':>6s} {'vecFLOP':>9s} {'tenFLOP':>9s} {'lines':>7s}")
    click.echo(head)
    for s in stats:
        cat = s.by_category()
        f = s.flops()
        click.echo(f"{s.file.split('.')[0]:12s} {_short(s.name):34s} {s.warp_instructions:11,d} "
                   + " ".join(f"{cat[c]:8d}" for c in cats)
                   + f" {100 * s.active_lane_fraction:6.1f} {f['vector']:9.3g} "
                   f"{f['tensor']:9.3g} {s.lines_128b:7d}")
        unknown = s.unknown_opcodes()
        if unknown:
            click.echo(f"{'':12s} unknown opcodes (counted as 'unknown'): "
                       + ", ".join(f"{k} x{v}" for k, v in sorted(unknown.items())))
    total = sum(s.warp_instructions for s in stats)
    click.echo(f"{len(stats)} kernels, {total:,} warp instructions")


@traces.command("cubin")
@click.argument("binary", type=click.Path(exists=True, dir_okay=False))
@click.option("--grep", "pattern", default=None, help="Only kernels whose name contains this.")
def cubin_cmd(binary: str, pattern: str | None) -> None:
    """Register counts of the kernels in a cubin, a library's fatbin, or a wheel."""
    kernels = [k for k in read_kernels(binary) if pattern is None or pattern in k.name]
    for k in kernels:
        click.echo(f"sm_{k.sm} regs {k.regs:3d} shared_section {k.shared_section:6d}  {k.name}")
    click.echo(f"{len(kernels)} kernels")


@traces.command("hash")
@click.argument("directory")
@click.argument("kernel")
@_root_option
def hash_cmd(directory: str, kernel: str, root: str | None) -> None:
    """SHA-256 of a kernel's decompressed trace text (the id jobs use)."""
    p = Path(directory)
    click.echo(trace_hash(p if p.is_dir() else directory, kernel, _store(root)))


# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [traces]

"""Nsight Compute records: ``ncu --csv --page raw`` files into one row per kernel launch.

Such a file has the metric names in row 1, their units in row 2 and one launch per further
row, numbers printed with thousands separators (``1,958.40``). :func:`read_ncu_csv` returns
a pandas DataFrame with

- every raw metric column, numbers parsed and **converted to base units**: times to
  seconds, byte multiples to bytes, percentages to fractions (so a ``...pct...`` column
  holds 0.54, not 54), rates to per-second; the unit after conversion of every column is in
  ``df.attrs["units"]`` (and the unit as printed in ``df.attrs["ncu_units"]``);
- tidy derived columns that use the names of ``simfront.stats.schema`` where they mean the
  same (``kernel_name``, ``grid``, ``block``, ``cycles``, ``time_us``, ``instructions``,
  ``occupancy``, ``l1_hit_rate``, ``l2_hit_rate``, ``dram_read_bytes``,
  ``dram_write_bytes``, ``dram_util``, ``pipe_busy_<pipe>``) plus the ones only ncu gives
  (FLOP counts, arithmetic intensity, clock) — see :data:`DERIVED`;
- ``category``: the operator the kernel belongs to (``simfront.core.categories``).

Derived columns are present only when the metrics they come from are in the file; the
loader never guesses a value that was not measured.
"""

from __future__ import annotations

import bz2
import csv
import functools
import io
import gzip
import lzma
import re
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.core.categories import kernel_category, short_name
from simfront.core.errors import InputError

#: Unit as ncu prints it -> (base unit, factor to multiply by).
UNIT_SCALE: dict[str, tuple[str, float]] = {
    "ns": ("s", 1e-9), "usecond": ("s", 1e-6), "us": ("s", 1e-6), "msecond": ("s", 1e-3),
    "ms": ("s", 1e-3), "nsecond": ("s", 1e-9), "second": ("s", 1.0), "s": ("s", 1.0),
    "byte": ("byte", 1.0), "Kbyte": ("byte", 1e3), "Mbyte": ("byte", 1e6),
    "Gbyte": ("byte", 1e9), "Tbyte": ("byte", 1e12), "KB": ("byte", 1e3), "MB": ("byte", 1e6),
    "GB": ("byte", 1e9), "KiB": ("byte", 1024.0), "MiB": ("byte", 1024.0 ** 2),
    "byte/second": ("byte/s", 1.0), "Kbyte/second": ("byte/s", 1e3),
    "Mbyte/second": ("byte/s", 1e6), "Gbyte/second": ("byte/s", 1e9),
    "Tbyte/second": ("byte/s", 1e12),
    "%": ("fraction", 0.01),
    "cycle/nsecond": ("cycle/s", 1e9), "cycle/usecond": ("cycle/s", 1e6),
    "cycle/second": ("cycle/s", 1.0),
    "hz": ("Hz", 1.0), "Khz": ("Hz", 1e3), "Mhz": ("Hz", 1e6), "Ghz": ("Hz", 1e9),
}

#: Columns that stay text.
TEXT_COLUMNS = frozenset({"Process Name", "Host Name", "Kernel Name", "Block Size",
                          "Grid Size", "launch__kernel_name", "launch__func_cache_config",
                          "launch__cluster_scheduling_policy", "launch__tpc_enabled",
                          "device__attribute_display_name",
                          "device__attribute_confidential_computing_mode"})

#: ncu pipe -> simfront pipe (the shared vocabulary). ncu's ``fma`` pipe executes FP32
#: FFMA/FADD/FMUL (and packed FP16 on sm_90); its ``alu`` pipe integer, logic, compare and
#: conversion work; ``xu`` is the special-function unit.
NCU_PIPES: dict[str, str] = {"tensor": "tensor", "fma": "fp32", "alu": "int", "xu": "sfu",
                             "lsu": "lsu"}

#: Derived columns and their units.
DERIVED: dict[str, str] = {
    "launch": "", "kernel_name": "", "short_name": "", "category": "", "stream": "",
    "grid": "", "block": "", "grid_size": "blocks", "block_size": "threads",
    "regs_per_thread": "registers", "shmem_per_block": "byte",
    "duration_s": "s", "time_us": "us", "cycles": "cycles", "clock_hz": "Hz",
    "instructions": "warp instructions", "ipc": "warp instructions/cycle",
    "occupancy": "fraction", "l1_hit_rate": "fraction", "l2_hit_rate": "fraction",
    "dram_read_bytes": "byte", "dram_write_bytes": "byte", "dram_bytes": "byte",
    "dram_util": "fraction", "dram_bw": "byte/s", "sm_util": "fraction",
    "pipe_busy_tensor": "fraction", "pipe_busy_fp32": "fraction", "pipe_busy_int": "fraction",
    "inst_pipe_tensor": "warp instructions", "inst_pipe_fp32": "warp instructions",
    "inst_pipe_int": "warp instructions", "inst_pipe_sfu": "warp instructions",
    "inst_pipe_lsu": "warp instructions",
    "tensor_flops": "FLOP", "fp32_flops": "FLOP", "fp16_flops": "FLOP", "vector_flops": "FLOP",
    "flops": "FLOP", "arithmetic_intensity": "FLOP/byte",
}

_NUM_RE = re.compile(r"^[+-]?[\d,]*\.?\d+(?:[eE][+-]?\d+)?$")


def _to_number(series: pd.Series) -> pd.Series | None:
    """The column as floats if every non-empty cell is a number, else None."""
    # plain Python over the cells: pandas' string methods cost ~2 ms a column in overhead,
    # and an ncu file has hundreds of columns
    cells = [str(v).strip() for v in series]
    present = [v for v in cells if v and v.lower() != "n/a"]
    if not present or not all(_NUM_RE.match(v) for v in present):
        return None
    cleaned = [np.nan if v in ("", "n/a", "N/A") else v
               for v in (c.replace(",", "") for c in cells)]
    return pd.to_numeric(pd.Series(cleaned, index=series.index, dtype=object),
                         errors="coerce")


def _dims(text: pd.Series) -> pd.Series:
    # "(32, 1, 1)" -> "32,1,1", the schema's form.
    return text.astype(str).str.replace(r"[()\s]", "", regex=True)


COMPRESSED_SUFFIXES = (".xz", ".gz", ".bz2")


def ncu_files(directory: str | Path, pattern: str = "*.ncu.csv") -> list[Path]:
    """The files of a directory matching ``pattern``, also when stored compressed."""
    directory = Path(directory)
    return sorted(f for suffix in ("",) + COMPRESSED_SUFFIXES
                  for f in directory.glob(pattern + suffix))


def _open_text(path: Path):
    """The CSV as text, also when stored compressed (``.xz``, ``.gz``, ``.bz2``)."""
    opener = {".xz": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    return opener(path, "rt", newline="", encoding="utf-8", errors="replace")


def read_ncu_csv(path: str | Path) -> pd.DataFrame:
    """One row per kernel launch of an ``ncu --csv --page raw`` file, units converted to base
    units, with the derived columns of :data:`DERIVED` and ``category``.

    Raises InputError (naming the file and line) for a file that is not such a CSV.
    """
    # A study reads the same few files many times over (a what-if reads a set's ncu.csv for
    # every job it plans): a file is parsed once per process while its size and mtime stay.
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read ncu CSV: {exc.strerror or exc}", path) from None
    return _parsed(str(path), st.st_size, st.st_mtime_ns).copy()


@functools.lru_cache(maxsize=32)
def _parsed(name: str, size: int, mtime_ns: int) -> pd.DataFrame:
    path = Path(name)
    try:
        with _open_text(path) as f:
            rows = list(csv.reader(f))
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read ncu CSV: {getattr(exc, 'strerror', None) or exc}",
                         path) from None
    # ncu may print its own "==PROF==" lines before the table when stdout was captured.
    start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if start is None:
        raise InputError("not an ncu '--csv --page raw' file: no header row starting with "
                         "\"ID\"", path, 1)
    names = rows[start]
    if len(rows) < start + 2:
        raise InputError("ncu CSV has no unit row (row 2)", path, start + 2)
    units_row = rows[start + 1]
    if len(units_row) != len(names) or units_row[0] != "":
        raise InputError("row 2 must hold the units of the metrics (run ncu with --page raw "
                         "--csv)", path, start + 2)
    data = rows[start + 2:]
    for i, r in enumerate(data):
        if len(r) != len(names):
            raise InputError(f"has {len(r)} fields, the header has {len(names)}", path,
                             start + 3 + i)
    if not data:
        raise InputError("ncu CSV holds no kernel launches", path, start + 3)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"duplicate metric columns: {', '.join(dup)}", path, start + 1)

    raw = pd.DataFrame(data, columns=names)
    columns: dict[str, pd.Series] = {}
    units: dict[str, str] = {}
    ncu_units: dict[str, str] = {}
    for name, unit in zip(names, units_row):
        ncu_units[name] = unit
        col = raw[name]
        num = None if name in TEXT_COLUMNS else _to_number(col)
        if num is None:
            columns[name] = col
            units[name] = ""
            continue
        base, factor = UNIT_SCALE.get(unit, (unit, 1.0))
        columns[name] = num * factor if factor != 1.0 else num
        units[name] = base
    df = pd.DataFrame(columns)
    derived = _derive(df)
    for name in derived:
        units[name] = DERIVED[name]
    out = pd.concat([df, pd.DataFrame(derived, index=df.index)], axis=1)
    out.attrs["units"] = units
    out.attrs["ncu_units"] = ncu_units
    out.attrs["source"] = str(path)
    return out


def _col(df: pd.DataFrame, *names: str) -> pd.Series | None:
    for n in names:
        if n in df.columns:
            return df[n]
    return None


def _derive(df: pd.DataFrame) -> dict[str, pd.Series]:
    d: dict[str, pd.Series] = {}

    def put(name: str, value) -> None:
        if value is not None:
            d[name] = value

    put("launch", _col(df, "ID"))
    name = _col(df, "Kernel Name", "launch__function_name")
    if name is not None:
        d["kernel_name"] = name
        d["short_name"] = name.map(short_name)
        d["category"] = name.map(kernel_category)
    put("stream", _col(df, "launch__stream_id", "Stream"))
    g = _col(df, "Grid Size")
    put("grid", _dims(g) if g is not None else None)
    b = _col(df, "Block Size")
    put("block", _dims(b) if b is not None else None)
    put("grid_size", _col(df, "launch__grid_size"))
    put("block_size", _col(df, "launch__block_size"))
    put("regs_per_thread", _col(df, "launch__registers_per_thread"))
    st, dy = _col(df, "launch__shared_mem_per_block_static"), _col(df, "launch__shared_mem_per_block_dynamic")
    if st is not None and dy is not None:
        d["shmem_per_block"] = st + dy

    dur = _col(df, "gpu__time_duration.sum", "gpu__time_duration.avg")
    if dur is not None:
        d["duration_s"] = dur
        d["time_us"] = dur * 1e6
    # ncu's "Elapsed Cycles" (SOL section) is gpc__cycles_elapsed.max.
    cyc = _col(df, "gpc__cycles_elapsed.max", "sm__cycles_elapsed.max", "gpc__cycles_elapsed.avg")
    if cyc is not None:
        d["cycles"] = cyc
        if dur is not None:
            d["clock_hz"] = cyc / dur.where(dur > 0)
    inst = _col(df, "sm__inst_executed.sum")
    if inst is not None:
        d["instructions"] = inst
        if cyc is not None:
            d["ipc"] = inst / cyc.where(cyc > 0)
    put("occupancy", _col(df, "sm__warps_active.avg.pct_of_peak_sustained_active"))
    put("l1_hit_rate", _col(df, "l1tex__t_sector_hit_rate.pct"))
    put("l2_hit_rate", _col(df, "lts__t_sector_hit_rate.pct"))
    rd, wr = _col(df, "dram__bytes_read.sum"), _col(df, "dram__bytes_write.sum")
    put("dram_read_bytes", rd)
    put("dram_write_bytes", wr)
    if rd is not None and wr is not None:
        d["dram_bytes"] = rd + wr
        if dur is not None:
            d["dram_bw"] = (rd + wr) / dur.where(dur > 0)
    put("dram_util", _col(df, "dram__throughput.avg.pct_of_peak_sustained_elapsed"))
    put("sm_util", _col(df, "sm__throughput.avg.pct_of_peak_sustained_elapsed"))
    for ncu_pipe, pipe in NCU_PIPES.items():
        put(f"pipe_busy_{pipe}",
            _col(df, f"sm__pipe_{ncu_pipe}_cycles_active.avg.pct_of_peak_sustained_active"))
        put(f"inst_pipe_{pipe}", _col(df, f"sm__inst_executed_pipe_{ncu_pipe}.sum"))

    # FLOPs as ncu's roofline counts them: an FMA is 2, thread-level SASS counts; the
    # tensor "ops" counter already counts FLOPs (the LM head's 8192x50280x768 GEMM shows
    # 6.36e11 = 2*M*N*K with N padded to the tile).
    tensor = _col(df, "sm__ops_path_tensor_src_bf16_dst_fp32.sum")
    extra_tensor = [df[c] for c in df.columns
                    if c.startswith("sm__ops_path_tensor_") and c.endswith(".sum")
                    and c != "sm__ops_path_tensor_src_bf16_dst_fp32.sum"]
    if tensor is not None or extra_tensor:
        total = sum(extra_tensor, tensor if tensor is not None else 0)
        d["tensor_flops"] = total
    ffma, fadd, fmul = (_col(df, f"sm__sass_thread_inst_executed_op_{o}_pred_on.sum")
                        for o in ("ffma", "fadd", "fmul"))
    if ffma is not None and fadd is not None and fmul is not None:
        d["fp32_flops"] = 2 * ffma + fadd + fmul
    hfma = _col(df, "sm__sass_thread_inst_executed_op_hfma_pred_on.sum")
    hadd = _col(df, "sm__sass_thread_inst_executed_op_hadd_pred_on.sum")
    hmul = _col(df, "sm__sass_thread_inst_executed_op_hmul_pred_on.sum")
    if hfma is not None:
        d["fp16_flops"] = 2 * hfma + (hadd if hadd is not None else 0) + (hmul if hmul is not None else 0)
    if "fp32_flops" in d or "fp16_flops" in d:
        d["vector_flops"] = d.get("fp32_flops", 0) + d.get("fp16_flops", 0)
    if "vector_flops" in d or "tensor_flops" in d:
        d["flops"] = d.get("vector_flops", 0) + d.get("tensor_flops", 0)
        if "dram_bytes" in d:
            d["arithmetic_intensity"] = d["flops"] / d["dram_bytes"].where(d["dram_bytes"] > 0)
    return d


def read_ncu_dir(directory: str | Path, pattern: str = "*.ncu.csv") -> pd.DataFrame:
    """Every ncu CSV of a directory (compressed ones too), one frame, with a ``workload``
    column (the file name without ``.ncu.csv``)."""
    directory = Path(directory)
    files = ncu_files(directory, pattern)
    if not files:
        raise InputError(f"no files matching '{pattern}'", directory)
    frames = []
    for f in files:
        df = read_ncu_csv(f)
        df.insert(0, "workload", workload_name(f))
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    out.attrs["units"] = frames[0].attrs["units"]
    return out


def workload_name(path: str | Path) -> str:
    name = Path(path).name
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    for suffix in (".ncu.csv", ".csv"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_source_pages(path: str | Path) -> dict[str, pd.DataFrame]:
    """ncu's source page per kernel (``ncu --section SourceCounters --page source
    --print-source sass --csv``): for the first launch of each kernel name, one row per SASS
    instruction with ``pc`` (its offset from the kernel's first instruction), ``Source`` and
    every counter as a number (``Warp Stall Sampling (All Samples)``, ``stall_<reason>``,
    ``Instructions Executed``...). Lines ncu prints about itself (``==PROF==``) and the
    workload's own output are skipped."""
    with _open_text(Path(path)) as f:
        text = f.read().splitlines()
    starts = [i for i, line in enumerate(text) if line.startswith('"Kernel Name"')]
    if not starts:
        raise InputError(f"{path}: no '\"Kernel Name\"' line: not an ncu source page")
    out: dict[str, pd.DataFrame] = {}
    for a, b in zip(starts, starts[1:] + [len(text)]):
        name = text[a].split(",")[1].strip('"')
        if name in out:
            continue
        body = [line for line in text[a + 1:b] if line.startswith('"')]
        df = pd.read_csv(io.StringIO("\n".join(body)))
        for c in df.columns:
            if c not in ("Address", "Source"):
                num = _to_number(df[c])
                if num is not None:
                    df[c] = num
        df["Source"] = df["Source"].astype(str).str.strip()
        addr = df["Address"].astype(str).map(lambda a: int(a, 16))
        df.insert(0, "pc", addr - addr.min())
        out[name] = df
    return out

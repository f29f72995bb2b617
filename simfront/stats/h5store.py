"""One HDF5 file per sweep: per-kernel records, per-job outcomes and provenance.

Layout (documented in ``docs/stats.md``; bump :data:`FORMAT_VERSION` when it changes)::

    /                   attrs: format="simfront-results", format_version, created_utc,
                               simfront_version, and the caller's attrs (sweep name, ...)
    /records/<column>   one 1-D dataset per column, one row per kernel launch
                        attrs: dtype (schema dtype), unit, doc
    /jobs/<column>      one 1-D dataset per column, one row per job (ok or failed)

Tables are stored column by column so a backend may add columns (``schema.OPEN_PREFIXES``)
without a fixed compound type, and so one column can be read without the rest. Attribute and
cell values that are not scalars (dicts, lists) are stored as JSON text.

The sweep stage calls :func:`write_results` (or :func:`append_results`) and analysis calls
:func:`read_records` / :func:`read_jobs`. Writes go to a temporary file that replaces the
target only once complete, so a crash never leaves a half-written results file.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import h5py
import numpy as np
import pandas as pd

from simfront import __version__
from simfront.core.errors import InputError
from simfront.stats import schema

FORMAT = "simfront-results"
FORMAT_VERSION = 1

#: Columns of the jobs table that every writer should fill; more are allowed.
JOB_COLUMNS: tuple[schema.Column, ...] = (
    schema.Column("job_id", "str", "", "content-addressed id of the job"),
    schema.Column("backend", "str", "", "backend name"),
    schema.Column("backend_version", "str", "", "backend version string"),
    schema.Column("ok", "bool", "", "the job finished and its records are results"),
    schema.Column("reason", "str", "", "why the job failed, quoting the simulator's last lines"),
    schema.Column("config", "str", "", "GPU description name"),
    schema.Column("config_hash", "str", "", "SHA-256 of the GPU description"),
    schema.Column("workload", "str", "", "trace set name"),
    schema.Column("trace_hash", "str", "", "SHA-256 of the trace set (or its kernelslist)"),
    schema.Column("wall_s", "float", "s", "wall time of the job"),
    schema.Column("n_kernels", "int", "", "records the job produced"),
    schema.Column("provenance", "str", "", "JSON: tool versions, install, options"),
)
_JOB_BY_NAME = {c.name: c for c in JOB_COLUMNS}

_STR = h5py.string_dtype("utf-8")


# --------------------------------------------------------------------------- writing


def write_results(path: str | Path, records: list[dict[str, Any]], jobs: list[dict[str, Any]],
                  attrs: Mapping[str, Any] | None = None,
                  steps: list[dict[str, Any]] | None = None) -> Path:
    """Write a whole results file (replacing any old one) atomically; return its path.
    ``steps``: one row per trace set x GPU x backend gathered from per-kernel jobs
    (``simfront.sweep.results.step_rows``), written as the ``steps`` table when given."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["created_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            f.attrs["simfront_version"] = __version__
            for key, value in (attrs or {}).items():
                if key in ("format", "format_version"):
                    continue
                f.attrs[key] = _attr_value(value)
            _write_table(f.create_group("records"), records, schema.BY_NAME)
            _write_table(f.create_group("jobs"), jobs, _JOB_BY_NAME)
            _write_provenance(f.create_group("provenance"), jobs)
            if steps is not None:
                _write_table(f.create_group("steps"), steps, {})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def append_results(path: str | Path, records: list[dict[str, Any]], jobs: list[dict[str, Any]],
                   attrs: Mapping[str, Any] | None = None) -> Path:
    """Add records and jobs to a results file (created if absent), atomically.

    Rows of a job already in the file are replaced by the new ones (a re-run job)."""
    path = Path(path)
    if not path.exists():
        return write_results(path, records, jobs, attrs)
    old_attrs = read_attrs(path)
    new_ids = {j.get("job_id") for j in jobs} | {r.get("job_id") for r in records}
    old_records = [r for r in _read_rows(path, "records") if r.get("job_id") not in new_ids]
    old_jobs = [j for j in _read_rows(path, "jobs") if j.get("job_id") not in new_ids]
    merged = {k: v for k, v in old_attrs.items()
              if k not in ("format", "format_version", "created_utc", "simfront_version")}
    merged.update(attrs or {})
    return write_results(path, old_records + list(records), old_jobs + list(jobs), merged)


_PROVENANCE_KEYS = ("backend", "backend_version", "config", "config_hash", "workload",
                    "trace_hash", "params")


def _write_provenance(group: h5py.Group, jobs: list[dict[str, Any]]) -> None:
    """One subgroup per job whose attributes say what produced it (job, config, traces).

    The same facts are columns of /jobs; here they are attributes, so that h5dump/HDFView
    show a job's provenance, and the nested ``provenance`` dict is spread one key each."""
    for job in jobs:
        jid = str(job.get("job_id", ""))
        if not jid or jid in group:
            continue
        g = group.create_group(jid.replace("/", "_"))
        for k in _PROVENANCE_KEYS:
            if not _missing(job.get(k)):
                g.attrs[k] = _attr_value(job[k])
        prov = job.get("provenance")
        if isinstance(prov, str):
            try:
                prov = json.loads(prov)
            except ValueError:
                prov = {"text": prov}
        for k, v in (prov or {}).items():
            value = _attr_value(v)
            if isinstance(value, str) and len(value) > 16_000:
                # HDF5 keeps attributes in the object header (64 KiB in all): big ones
                # (an isa-compat report of many kernels) become string datasets
                g.create_dataset(str(k), data=value, dtype=_STR)
            else:
                g.attrs[str(k)] = value


def read_provenance(path: str | Path, job_id: str) -> dict[str, Any]:
    """The provenance attributes of one job (JSON values decoded)."""
    with _open(path) as f:
        if "provenance" not in f or job_id not in f["provenance"]:
            raise InputError(f"no provenance for job '{job_id}'", path)
        g = f["provenance"][job_id]
        out = {k: _decode_attr(v) for k, v in g.attrs.items()}
        out.update({k: _decode_attr(g[k].asstr()[()]) for k in g})
        return out


def _decode_attr(v: Any) -> Any:
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, str) and (v[:1] in "[{" or v == "null"):
        try:
            return json.loads(v)
        except ValueError:
            pass
    return v


def _attr_value(value: Any) -> Any:
    if isinstance(value, (str, bool, int, float, np.integer, np.floating)):
        return value
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, default=str)


def _kind(values: Iterable[Any]) -> str:
    """The narrowest schema dtype that holds every non-missing value."""
    kind = None
    for v in values:
        if _missing(v):
            continue
        if isinstance(v, (bool, np.bool_)):
            k = "bool"
        elif isinstance(v, (int, np.integer)):
            k = "int"
        elif isinstance(v, (float, np.floating)):
            k = "float"
        else:
            return "str"
        if kind is None or kind == k:
            kind = k
        elif {kind, k} <= {"int", "float"}:
            kind = "float"
        else:
            return "str"
    return kind or "float"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _write_table(group: h5py.Group, rows: list[dict[str, Any]],
                 known: Mapping[str, schema.Column]) -> None:
    names: dict[str, None] = {}
    for c in known.values():  # documented columns first, in schema order
        if any(c.name in r for r in rows):
            names[c.name] = None
    for r in rows:
        for k in r:
            names.setdefault(k, None)
    group.attrs["n_rows"] = len(rows)
    group.attrs["columns"] = json.dumps(list(names))
    for name in names:
        values = [r.get(name) for r in rows]
        col = known.get(name)
        kind = col.dtype if col is not None else _kind(values)
        data = _column_array(values, kind, name)
        ds = group.create_dataset(name, data=data, compression="gzip" if len(rows) > 256 else None)
        ds.attrs["dtype"] = kind
        ds.attrs["unit"] = col.unit if col is not None else _open_unit(name)
        ds.attrs["doc"] = col.doc if col is not None else _open_doc(name)


def _column_array(values: list[Any], kind: str, name: str) -> np.ndarray:
    try:
        if kind == "str":
            return np.array(["" if _missing(v) else (v if isinstance(v, str) else
                             json.dumps(v, sort_keys=True, default=str)) for v in values],
                            dtype=object).astype(_STR)
        if kind == "bool":
            # Missing booleans become False: a record that does not say it completed did not.
            return np.array([bool(v) if not _missing(v) else False for v in values], dtype=bool)
        if kind == "int" and not any(_missing(v) for v in values):
            return np.array([int(v) for v in values], dtype=np.int64)
        return np.array([np.nan if _missing(v) else float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"column '{name}' holds a value that is not {kind}: {exc}") from None


def _open_unit(name: str) -> str:
    if name.startswith(("l1d_", "l1i_", "l1c_", "l1t_", "l2_")):
        return "accesses" if not name.endswith(("_rate", "_util")) else "fraction"
    if name.startswith("stall_"):
        return "cycles"
    return ""


def _open_doc(name: str) -> str:
    for prefix, doc in schema.OPEN_PREFIXES.items():
        if name.startswith(prefix):
            return doc
    return ""


# --------------------------------------------------------------------------- reading


def _open(path: str | Path) -> h5py.File:
    path = Path(path)
    if not path.exists():
        raise InputError("results file not found", path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"not an HDF5 file ({exc})", path) from None
    if f.attrs.get("format") != FORMAT:
        f.close()
        raise InputError(f"not a simfront results file (format attribute is not '{FORMAT}')", path)
    version = int(f.attrs.get("format_version", 0))
    if version > FORMAT_VERSION:
        f.close()
        raise InputError(f"results format version {version} is newer than this simfront reads "
                         f"({FORMAT_VERSION}); upgrade simfront", path)
    return f


def _read_table(path: str | Path, table: str, columns: list[str] | None = None) -> pd.DataFrame:
    with _open(path) as f:
        if table not in f:
            raise InputError(f"no '{table}' table", path)
        g = f[table]
        order = json.loads(g.attrs.get("columns", "[]")) or list(g.keys())
        if columns is not None:
            missing = [c for c in columns if c not in g]
            if missing:
                raise InputError(f"no column(s) {', '.join(missing)} in table '{table}'", path)
            order = columns
        data: dict[str, Any] = {}
        for name in order:
            ds = g[name]
            kind = ds.attrs.get("dtype", "")
            if kind == "str":
                data[name] = pd.array(ds.asstr()[()], dtype=object)
            elif kind == "int" and ds.dtype.kind == "f":
                data[name] = pd.array(ds[()], dtype="Int64") if len(ds) else pd.array([], "Int64")
            else:
                data[name] = ds[()]
        n = int(g.attrs.get("n_rows", 0))
        return pd.DataFrame(data, index=pd.RangeIndex(n))


def read_records(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """The per-kernel records table as a DataFrame (one row per kernel launch)."""
    return _read_table(path, "records", columns)


def read_steps(path: str | Path) -> pd.DataFrame:
    """One row per step (trace set x GPU x backend); empty if the file has no steps table."""
    with _open(path) as f:
        if "steps" not in f:
            return pd.DataFrame()
    return _read_table(path, "steps")


def read_jobs(path: str | Path) -> pd.DataFrame:
    """The jobs table as a DataFrame (one row per job, ok or failed)."""
    return _read_table(path, "jobs")


def read_attrs(path: str | Path) -> dict[str, Any]:
    """The file's attributes; JSON-encoded values are decoded."""
    with _open(path) as f:
        return {k: _decode_attr(v) for k, v in f.attrs.items()}


def column_info(path: str | Path, table: str = "records") -> pd.DataFrame:
    """dtype, unit and doc of every column of a table."""
    with _open(path) as f:
        g = f[table]
        order = json.loads(g.attrs.get("columns", "[]")) or list(g.keys())
        rows = [{"column": n, "dtype": g[n].attrs.get("dtype", ""), "unit": g[n].attrs.get("unit", ""),
                 "doc": g[n].attrs.get("doc", "")} for n in order]
    return pd.DataFrame(rows)


def _read_rows(path: str | Path, table: str) -> list[dict[str, Any]]:
    df = _read_table(path, table)
    rows = []
    for rec in df.to_dict("records"):
        rows.append({k: (None if v is pd.NA else (v.item() if isinstance(v, np.generic) else v))
                     for k, v in rec.items()})
    return rows


def export_table(path: str | Path, out: str | Path, table: str = "records") -> Path:
    """Write a table of a results file as CSV or Parquet (by ``out``'s suffix), atomically."""
    out = Path(out)
    df = read_jobs(path) if table == "jobs" else read_records(path)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise InputError("export format is chosen by the suffix: .csv or .parquet", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        else:
            try:
                df.to_parquet(tmp, index=False)
            except ImportError as exc:
                raise InputError(f"Parquet export needs pyarrow ({exc})", out) from None
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out

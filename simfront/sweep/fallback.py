"""Mixed backends: a second backend stands in for the kernels the sweep's backend did not
finish (Accel-Sim refusing an opcode it cannot lower, failing, or running past
``fallback.after``), so a step still gets a record for every launch, and every record says
which backend made it (``backend``; ``requested_backend`` and ``fallback_reason`` on the
stand-ins).

Pure functions over records; the worker (:mod:`simfront.sweep.worker`) runs the backends.
"""

from __future__ import annotations

from typing import Any

from simfront.sweep.split import kernel_id_of


def record_file(record: dict[str, Any], files: list[str]) -> str | None:
    """Which of the job's trace files a record is of: Accel-Sim names the file
    (``accelsim_trace_file``), every backend gives the tracer's ``kernel_id``."""
    f = record.get("accelsim_trace_file")
    if isinstance(f, str) and f:
        stem = f.split(".", 1)[0]
        for name in files:
            if name.split(".", 1)[0] == stem:
                return name
    kid = record.get("kernel_id")
    if kid is not None and kid == kid:  # NaN is no id
        for name in files:
            if kernel_id_of(name) == int(kid):
                return name
    return None


def unfinished(files: list[str], records: list[dict[str, Any]],
               job_reason: str | None, backend: str) -> dict[str, str]:
    """The job's files without a complete record, each with why: the record's own reason
    (a refused kernel says which opcode), else the job's, else that none came back."""
    done = {record_file(r, files) for r in records if r.get("complete")}
    why = {}
    for r in records:
        f = record_file(r, files)
        if f is not None and not r.get("complete") and r.get("reason"):
            why[f] = str(r["reason"])
    out = {}
    for f in files:
        if f in done:
            continue
        out[f] = why.get(f) or (f"{backend}: {job_reason}" if job_reason
                                else f"{backend} returned no complete record")
    return out


def merge(primary: list[dict[str, Any]], stand_in: list[dict[str, Any]], files: list[str],
          missing: dict[str, str], requested: str) -> list[dict[str, Any]]:
    """The primary's complete records, and the stand-in's for the kernels it did not finish
    (marked with the backend asked for and the reason); an unfinished primary record is
    kept only where the stand-in has none either, so the failure stays visible."""
    covered: set[str] = set()
    out = []
    for r in stand_in:
        f = record_file(r, files)
        if f is None or f not in missing:
            continue
        out.append({**r, "requested_backend": requested, "fallback_reason": missing[f]})
        if r.get("complete"):
            covered.add(f)
    kept = [r for r in primary
            if r.get("complete") or record_file(r, files) not in covered]
    return kept + out

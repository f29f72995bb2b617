"""Gathering finished jobs' records into the sweep's one HDF5 file (``results.h5``).

The layout is the stats stage's (:mod:`simfront.stats.h5store`); it writes to a temporary
file and renames it, so the file on disk is always a whole earlier or a whole newer one.

Split sweeps (``split:`` in the sweep file, :mod:`simfront.sweep.split`) come back as one job
per kernel or group: gathering gives each launch that was not run because an identical one
was its copy of that launch's records (``same_launch_as``), and sums every trace set x GPU
x backend into one row of the ``steps`` table, saying how many launches have a record and
which backend made them. A deduplicated capture's kernels stand for several launches each
(``multiplicity.txt``): every record carries its ``launch_count`` and step totals weight by
it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from simfront.core.provenance import tool_versions
from simfront.sweep import inputs
from simfront.sweep.split import kernel_id_of
from simfront.sweep.store import JobStore
from simfront.sweep.worker import job_dir, read_result
from simfront.traces.multiplicity import count_of, read_multiplicity

RESULTS_FILE = "results.h5"


def gather(sweep_dir: str | Path, store: JobStore, sweep_name: str,
           out: str | Path | None = None) -> Path:
    """Write every planned job's outcome, and the records of those that finished, to HDF5."""
    from simfront.stats.h5store import write_results

    sweep_dir = Path(sweep_dir)
    table = store.table()
    specs = {s.job_id: s for s in store.specs()}
    records: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for row in table.itertuples(index=False):
        if row.state not in ("done", "failed"):
            continue
        spec = specs[row.job_id]
        result, problem = read_result(job_dir(sweep_dir, row.job_id) / "result.json")
        result = result or {}
        ok = row.state == "done" and bool(result.get("ok"))
        reason = row.reason or ""
        if row.state == "done" and not ok:
            # Sweep.gather queues such jobs again first; one lost since then says so here
            reason = f"result.json {problem or 'says the job failed'}"
        recs = result.get("records") or [] if ok else []
        recs = recs + copy_duplicates(recs, spec.duplicates)
        _count_launches(recs, spec.trace_dir)
        records.extend(recs)
        jobs.append({"job_id": row.job_id, "backend": spec.backend,
                     "backend_version": spec.backend_version, "ok": ok,
                     "reason": reason, "config": spec.config,
                     "config_hash": spec.config_hash, "workload": spec.workload,
                     "trace_hash": spec.trace_hash, "wall_s": row.wall_s,
                     "n_kernels": len(recs), "attempts": row.attempts,
                     "host": row.host or "", "exit_code": row.exit_code,
                     "params": json.dumps(spec.params, sort_keys=True, default=str),
                     "provenance": json.dumps(result.get("provenance") or {}, sort_keys=True,
                                              default=str)})
    path = Path(out) if out is not None else sweep_dir / RESULTS_FILE
    attrs = {"sweep": sweep_name, "tools": tool_versions(), "n_jobs": len(jobs),
             "n_jobs_planned": int(len(table))}
    steps = step_rows(records, expected_launches(specs.values()))
    return write_results(path, records, jobs, attrs, steps=steps)


def copy_duplicates(records: list[dict[str, Any]],
                    duplicates: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Records for the launches a split job did not run because an identical launch was run:
    a copy of that launch's record with the duplicate's kernel id and file."""
    if not duplicates:
        return []
    by_id = {kernel_id_of(f): dups for f, dups in duplicates.items()}
    out = []
    for r in records:
        kid = r.get("kernel_id")
        for dup in by_id.get(int(kid) if kid is not None else None, ()):
            c = {**r, "kernel_id": kernel_id_of(dup), "same_launch_as": kid}
            if "accelsim_trace_file" in c:
                c["accelsim_trace_file"] = dup
            out.append(c)
    return out


def _count_launches(records: list[dict[str, Any]], trace_dir: str) -> None:
    """Each record's ``launch_count`` from the set's multiplicity (by kernel id)."""
    counts = read_multiplicity(trace_dir)
    by_id = {kernel_id_of(f): n for f, n in counts.items()}
    for r in records:
        kid = r.get("kernel_id")
        r.setdefault("launch_count", by_id.get(int(kid), 1) if kid is not None else 1)


def _step_key(spec_or_record: Any) -> tuple[str, str, str]:
    get = (spec_or_record.get if isinstance(spec_or_record, dict)
           else lambda k: getattr(spec_or_record, k))
    backend = get("requested_backend") if isinstance(spec_or_record, dict) else None
    return (get("workload"), get("config_hash"), backend or get("backend"))


def expected_launches(specs: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Launches each step (trace set x GPU x backend) has, over all its jobs."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for s in specs:
        files = [f for f, _, _ in inputs.select_kernels(inputs.kernel_files(Path(s.trace_dir)),
                                                       s.kernels)]
        files += [d for v in s.duplicates.values() for d in v]
        counts = read_multiplicity(s.trace_dir)
        row = out.setdefault(_step_key(s), {"config": s.config, "kernels": 0, "launches": 0,
                                            "jobs": 0})
        row["kernels"] += len(files)
        row["launches"] += sum(count_of(counts, f) for f in files)
        row["jobs"] += 1
    return out


def step_rows(records: list[dict[str, Any]],
              expected: dict[tuple[str, str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step: kernels (trace files) and window launches planned, complete records,
    cycles and time summed over the launches they stand for, and how many records each
    backend made (a mixed-backend step says so)."""
    rows = []
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        grouped.setdefault(_step_key(r), []).append(r)
    for key in sorted(set(expected) | set(grouped)):
        recs = [r for r in grouped.get(key, []) if r.get("complete")]
        exp = expected.get(key, {})
        made = Counter(str(r.get("backend")) for r in recs)
        kernels = int(exp.get("kernels", len(recs)))

        def weighted(col: str) -> float:
            return float(sum(float(r.get(col) or 0) * int(r.get("launch_count") or 1)
                             for r in recs))

        rows.append({
            "workload": key[0], "config": exp.get("config") or (recs[0]["config"] if recs
                                                                else ""),
            "config_hash": key[1], "backend": key[2], "jobs": int(exp.get("jobs", 0)),
            "kernels": kernels, "launches": int(exp.get("launches", kernels)),
            "records": len(recs), "complete": len(recs) == kernels,
            "cycles": weighted("cycles"), "time_us": weighted("time_us"),
            "same_launch_records": sum(1 for r in recs if r.get("same_launch_as") is not None),
            "by_backend": json.dumps(dict(sorted(made.items())))})
    return rows

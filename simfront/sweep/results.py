"""Gathering finished jobs' records into the sweep's one HDF5 file (``results.h5``).

The layout is the stats stage's (:mod:`simfront.stats.h5store`); it writes to a temporary
file and renames it, so the file on disk is always a whole earlier or a whole newer one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simfront.provenance import tool_versions
from simfront.sweep.store import JobStore
from simfront.sweep.worker import job_dir, read_json

RESULTS_FILE = "results.h5"


def gather(sweep_dir: str | Path, store: JobStore, sweep_name: str,
           out: str | Path | None = None) -> Path:
    """Write every planned job's outcome, and the records of those that finished, to HDF5."""
    from simfront.stats.h5store import write_results
    from simfront.stats.launches import fill_launch_counts

    sweep_dir = Path(sweep_dir)
    table = store.table()
    specs = {s.job_id: s for s in store.specs()}
    records: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for row in table.itertuples(index=False):
        if row.state not in ("done", "failed"):
            continue
        spec = specs[row.job_id]
        result = read_json(job_dir(sweep_dir, row.job_id) / "result.json") or {}
        ok = row.state == "done" and bool(result.get("ok"))
        recs = result.get("records") or [] if ok else []
        # a backend that does not know the set is deduplicated (Accel-Sim runs the
        # kernelslist of distinct kernels) leaves the count out: the trace set has it
        fill_launch_counts(recs, spec.trace_dir)
        records.extend(recs)
        jobs.append({"job_id": row.job_id, "backend": spec.backend,
                     "backend_version": spec.backend_version, "ok": ok,
                     "reason": row.reason or "", "config": spec.config,
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
    return write_results(path, records, jobs, attrs)

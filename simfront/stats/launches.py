"""Launch counts in per-kernel records: a deduplicated trace set simulates each distinct
launch once, and its record stands for ``launches`` launches of the step. Every total over a
step (time, DRAM bytes, instructions) weights a record by that count; per-launch tables show
the record once beside its count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from simfront.errors import InputError

LAUNCHES = "launches"


def launch_weights(df: pd.DataFrame) -> pd.Series:
    """Each record's launch count (1 where the column is absent or empty: sets that were
    not deduplicated)."""
    if LAUNCHES not in df:
        return pd.Series(1, index=df.index, dtype="int64")
    w = pd.to_numeric(df[LAUNCHES], errors="coerce").fillna(1)
    if (w < 1).any():
        bad = df.index[w < 1][0]
        raise InputError(f"record {bad} has a launch count of {w[bad]:g} (below 1)",
                         field=LAUNCHES)
    return w.astype("int64")


def step_total(df: pd.DataFrame, column: str) -> float:
    """``column`` summed over the step: each record times its launch count."""
    return float((pd.to_numeric(df[column], errors="coerce") * launch_weights(df)).sum())


def fill_launch_counts(records: list[dict[str, Any]], trace_dir: str | Path) -> None:
    """Give records that lack a launch count the one of their kernel file in ``trace_dir``
    (matched by kernel id); a set without multiplicity.txt leaves them as they are."""
    from simfront.traces.multiplicity import read_multiplicity

    mult = read_multiplicity(trace_dir)
    if not mult:
        return
    by_id = {}
    for f, n in mult.items():
        stem = f.split(".", 1)[0]
        if stem.startswith("kernel-") and stem[7:].isdigit():
            by_id[int(stem[7:])] = n
    for r in records:
        if r.get(LAUNCHES) is None and r.get("kernel_id") is not None:
            r[LAUNCHES] = by_id.get(int(r["kernel_id"]), 1)

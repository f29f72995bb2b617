"""Launch counts in per-kernel records: a deduplicated trace set simulates each distinct
launch once, and its record stands for ``launch_count`` launches of the step. Every total over a
step (time, DRAM bytes, instructions) weights a record by that count; per-launch tables show
the record once beside its count. (The sweep's gathering fills the count for backends that
leave it out: ``simfront.sweep.results``.)"""

from __future__ import annotations

import pandas as pd

from simfront.core.errors import InputError

LAUNCHES = "launch_count"


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


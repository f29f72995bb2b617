"""Correlation of simulated (or modelled) cycles with hardware cycles, per kernel, as
Accel-Sim users know it: a log-log scatter, MAPE and Pearson's r.

Launches are matched by kernel and occurrence: the i-th launch of a kernel (by its short
name, so mangled trace names meet ncu's demangled ones) in the simulated records is paired
with the i-th launch of the same kernel in the ncu records. Grid sizes must agree where both
sides state them; pairs that disagree are dropped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simfront.analysis.categories import kernel_category, short_name
from simfront.errors import InputError


@dataclass
class Correlation:
    backend: str
    matched: pd.DataFrame      # name, category, hw_cycles, sim_cycles, error
    mape: float
    pearson: float
    pearson_log: float
    unmatched_sim: int
    unmatched_hw: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"backend": self.backend, "kernels": int(len(self.matched)), "mape": self.mape,
                "pearson": self.pearson, "pearson_log": self.pearson_log,
                "unmatched_sim": self.unmatched_sim, "unmatched_hw": self.unmatched_hw}


def mape(measured: np.ndarray, predicted: np.ndarray) -> float:
    measured = np.asarray(measured, float)
    predicted = np.asarray(predicted, float)
    return float(np.mean(np.abs(predicted - measured) / measured))


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    if len(a) < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _keyed(df: pd.DataFrame, name_col: str) -> pd.DataFrame:
    out = df.copy()
    out["_short"] = out[name_col].astype(str).map(short_name)
    out["_occ"] = out.groupby("_short").cumcount()
    return out


def correlate(sim: pd.DataFrame, hw: pd.DataFrame, sim_cycles: str = "cycles",
              hw_cycles: str = "cycles") -> Correlation:
    """Pair launches and compute the error statistics (see module doc)."""
    for df, col, what in ((sim, sim_cycles, "simulated"), (hw, hw_cycles, "hardware")):
        if col not in df or "kernel_name" not in df:
            raise InputError(f"{what} records need 'kernel_name' and '{col}' columns")
    s = _keyed(sim[sim[sim_cycles].notna() & (sim[sim_cycles] > 0)], "kernel_name")
    h = _keyed(hw[hw[hw_cycles].notna() & (hw[hw_cycles] > 0)], "kernel_name")
    m = s.merge(h, on=["_short", "_occ"], suffixes=("_sim", "_hw"))
    notes = []
    if "grid_sim" in m and "grid_hw" in m:
        ok = (m["grid_sim"].astype(str) == m["grid_hw"].astype(str)) | m["grid_sim"].isna() | \
             (m["grid_sim"].astype(str) == "")
        if (~ok).any():
            notes.append(f"{int((~ok).sum())} pairs dropped: grid sizes differ")
        m = m[ok]
    if m.empty:
        raise InputError("no launch of the simulated records matches one of the hardware "
                         "records (by kernel name and occurrence)")
    matched = pd.DataFrame({
        "name": m["_short"], "occurrence": m["_occ"],
        "category": m["_short"].map(kernel_category),
        "hw_cycles": m[f"{hw_cycles}_hw" if f"{hw_cycles}_hw" in m else hw_cycles].astype(float),
        "sim_cycles": m[f"{sim_cycles}_sim" if f"{sim_cycles}_sim" in m else sim_cycles].astype(float),
    }).reset_index(drop=True)
    matched["error"] = (matched["sim_cycles"] - matched["hw_cycles"]) / matched["hw_cycles"]
    backend = str(sim["backend"].iloc[0]) if "backend" in sim and len(sim) else "simulated"
    return Correlation(backend=backend, matched=matched,
                       mape=mape(matched["hw_cycles"], matched["sim_cycles"]),
                       pearson=pearson(matched["hw_cycles"], matched["sim_cycles"]),
                       pearson_log=pearson(np.log(matched["hw_cycles"]),
                                           np.log(matched["sim_cycles"])),
                       unmatched_sim=len(s) - len(matched), unmatched_hw=len(h) - len(matched),
                       notes=notes)

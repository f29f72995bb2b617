"""Correlation of simulated (or modelled) cycles with hardware cycles, per kernel, as
Accel-Sim users know it: a log-log scatter, MAPE and Pearson's r.

Launches are paired by :mod:`simfront.stats.matching`: the two lists are aligned in launch
order, and two launches pair when their kernel (short name, so mangled trace names meet
ncu's demangled ones), grid and block agree (grid and block where both sides state them).
Launches of either side left without a partner are counted, not guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simfront.core.categories import kernel_category, short_name
from simfront.core.errors import InputError
from simfront.gpu import config_hash, load_gpu
from simfront.stats.matching import align, launch_key, mape, pearson


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


def base_config_records(sim: pd.DataFrame, config: str | None = None,
                        base_gpu: str = "h100") -> pd.DataFrame:
    """The records of one GPU config: ``config`` by name, else the config that is the base
    GPU unmodified (same description hash), else the first."""
    if "config" not in sim or sim["config"].nunique() <= 1:
        return sim
    if config is None and "config_hash" in sim:
        base = sim[sim["config_hash"] == config_hash(load_gpu(base_gpu))]
        if len(base):
            return base
    config = config or str(sim["config"].iloc[0])
    if config not in set(sim["config"]):
        raise InputError(f"no records of config '{config}'; the file holds: "
                         f"{', '.join(sorted(map(str, sim['config'].unique())))}")
    return sim[sim["config"] == config]


def _keys(df: pd.DataFrame, dims: bool) -> list[tuple]:
    grid = df["grid"] if dims else [None] * len(df)
    block = df["block"] if dims else [None] * len(df)
    return [launch_key(n, g, b) for n, g, b in zip(df["kernel_name"], grid, block)]


def _in_launch_order(sim: pd.DataFrame) -> pd.DataFrame:
    return sim.sort_values("kernel_uid", kind="stable") if "kernel_uid" in sim else sim


def correlate(sim: pd.DataFrame, hw: pd.DataFrame, sim_cycles: str = "cycles",
              hw_cycles: str = "cycles", workload: str | None = None) -> Correlation:
    """Pair launches and compute the error statistics (see module doc). When ``sim`` holds
    several workloads (one ncu file is one step), ``workload`` picks one; by default the one
    whose launches pair best with ``hw``."""
    for df, col, what in ((sim, sim_cycles, "simulated"), (hw, hw_cycles, "hardware")):
        if col not in df or "kernel_name" not in df:
            raise InputError(f"{what} records need 'kernel_name' and '{col}' columns")
    s = sim[sim[sim_cycles].notna() & (sim[sim_cycles] > 0)]
    h = hw[hw[hw_cycles].notna() & (hw[hw_cycles] > 0)].reset_index(drop=True)
    dims = all(c in s and c in h for c in ("grid", "block"))
    notes: list[str] = []
    if "workload" in s and s["workload"].nunique() > 1:
        if workload is None:
            hk = _keys(h, dims)
            workload = max(s["workload"].unique(), key=lambda w: len(
                align(_keys(_in_launch_order(s[s["workload"] == w]), dims), hk)))
            notes.append(f"workload '{workload}' of {s['workload'].nunique()}: the one whose "
                         "launches pair best with the hardware records")
        s = s[s["workload"] == workload]
    s = _in_launch_order(s).reset_index(drop=True)
    pairs = align(_keys(s, dims), _keys(h, dims))
    if not pairs:
        raise InputError("no launch of the simulated records matches one of the hardware "
                         "records (by kernel name" + (", grid and block)" if dims else ")"))
    i, j = (list(x) for x in zip(*pairs))
    names = s["kernel_name"].iloc[i].map(short_name).to_numpy()
    matched = pd.DataFrame({
        "name": names,
        "occurrence": pd.Series(names).groupby(names).cumcount().to_numpy(),
        "category": [kernel_category(n) for n in names],
        "hw_cycles": h[hw_cycles].iloc[j].astype(float).to_numpy(),
        "sim_cycles": s[sim_cycles].iloc[i].astype(float).to_numpy(),
    })
    matched["error"] = (matched["sim_cycles"] - matched["hw_cycles"]) / matched["hw_cycles"]
    backend = str(sim["backend"].iloc[0]) if "backend" in sim and len(sim) else "simulated"
    return Correlation(backend=backend, matched=matched,
                       mape=mape(matched["hw_cycles"], matched["sim_cycles"]),
                       pearson=pearson(matched["hw_cycles"], matched["sim_cycles"]),
                       pearson_log=pearson(np.log(matched["hw_cycles"]),
                                           np.log(matched["sim_cycles"])),
                       unmatched_sim=len(s) - len(matched), unmatched_hw=len(h) - len(matched),
                       notes=notes)

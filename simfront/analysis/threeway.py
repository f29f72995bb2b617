"""Model vs Accel-Sim vs H100: per kernel and per step, at the baseline GPU and under its
what-ifs (ratio, L2, SM variants), and where the two simulators disagree on a what-if.

Records come from one or more sweeps' HDF5 files holding both backends at the same GPU
descriptions (same ``config_hash``). A record made by a stand-in (``requested_backend``, see
:mod:`simfront.sweep.fallback`) counts for the backend that was asked for in the per-kernel
table, where it is marked, but never in a what-if ratio: a ratio from the model standing in
for Accel-Sim would only echo the model. Hardware is the ncu profile of the same step,
paired launch by launch with :mod:`simfront.stats.matching` at the baseline only (the H100
ran one configuration).

A what-if ratio is step cycles at the variant over step cycles at the baseline (each launch
weighted by the window launches it stands for, ``launch_count``, in a deduplicated capture),
over the launches both backends finished at both configurations, so a kernel one of them lacks
changes neither. The two disagree on a what-if when their ratios differ by more than ``tol``
(relative), and in *direction* when one says faster and the other slower (each by more than
``tol / 2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simfront.core.categories import short_name
from simfront.core.errors import InputError
from simfront.gpu import config_hash, load_gpu
from simfront.stats.matching import align, launch_key, mape, pearson

if TYPE_CHECKING:
    from simfront.analysis.report import Report

MODEL, ACCELSIM = "model", "accelsim"


@dataclass
class ThreeWay:
    kernels: pd.DataFrame    # one row per workload x config x launch
    steps: pd.DataFrame      # one row per workload x config
    whatifs: pd.DataFrame    # one row per workload x non-baseline config
    errors: pd.DataFrame     # per workload x backend at the baseline: MAPE, Pearson vs ncu
    base_config: str
    disagreements: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _asked(df: pd.DataFrame) -> pd.Series:
    if "requested_backend" not in df:
        return df["backend"].astype(str)
    req = df["requested_backend"].fillna("").astype(str)
    return req.where(req != "", df["backend"].astype(str))


def kernel_table(records: pd.DataFrame) -> pd.DataFrame:
    """Complete records as one row per workload x config x launch, with each asked-for
    backend's cycles (``model_cycles``, ``accelsim_cycles``) and who made Accel-Sim's."""
    need = {"workload", "config", "config_hash", "kernel_id", "kernel_name", "cycles",
            "backend"}
    missing = need - set(records.columns)
    if missing:
        raise InputError(f"records lack column(s) {', '.join(sorted(missing))}")
    r = records[records["complete"].astype(bool)] if "complete" in records else records
    r = r[r["cycles"].notna() & (r["cycles"] > 0)].copy()
    r["asked"] = _asked(r)
    asked = set(r["asked"])
    if not {MODEL, ACCELSIM} <= asked:
        raise InputError(f"a three-way table needs records of both '{MODEL}' and "
                         f"'{ACCELSIM}'; these hold: {', '.join(sorted(asked)) or 'none'}")
    key = ["workload", "config_hash", "kernel_id"]
    out = None
    for b in (MODEL, ACCELSIM):
        side = r[r["asked"] == b].drop_duplicates(key, keep="last")
        cols = {"cycles": f"{b}_cycles", "backend": f"{b}_made_by"}
        side = side[key + ["config", "kernel_name"] + [c for c in ("grid", "block")
                                                        if c in side] + list(cols)]
        side = side.rename(columns=cols)
        out = side if out is None else out.merge(
            side.drop(columns=[c for c in ("config", "kernel_name", "grid", "block")
                               if c in side]), on=key, how="outer")
        if b == ACCELSIM:  # config, name and dims of launches only Accel-Sim has
            fill = side.set_index(key)
            idx = out.set_index(key).index
            for c in ("config", "kernel_name", "grid", "block"):
                if c in out and c in fill:
                    out[c] = out[c].fillna(pd.Series(fill[c].reindex(idx).to_numpy(),
                                                     index=out.index))
    if "launch_count" in r:
        counts = r.drop_duplicates(key).set_index(key)["launch_count"]
        out["launch_count"] = counts.reindex(out.set_index(key).index).fillna(1).to_numpy()
    else:
        out["launch_count"] = 1
    out["stand_in"] = out[f"{ACCELSIM}_made_by"].notna() & (
        out[f"{ACCELSIM}_made_by"] != ACCELSIM)
    return out.sort_values(key).reset_index(drop=True)


def _step(df: pd.DataFrame, col: str) -> float:
    """Step cycles: each launch's cycles times the window launches it stands for."""
    return float((df[col] * df["launch_count"]).sum())


def _pair_hardware(base: pd.DataFrame, hw: pd.DataFrame) -> pd.Series:
    """ncu cycles of each baseline launch (NaN where no ncu launch pairs with it)."""
    h = hw[hw["cycles"].notna() & (hw["cycles"] > 0)].reset_index(drop=True)
    dims = all(c in base and c in h for c in ("grid", "block"))

    def keys(df):
        return [launch_key(n, g if dims else None, b if dims else None)
                for n, g, b in zip(df["kernel_name"], df["grid"] if dims else [None] * len(df),
                                   df["block"] if dims else [None] * len(df))]

    out = pd.Series(np.nan, index=base.index)
    for i, j in align(keys(base), keys(h)):
        out.iloc[i] = float(h["cycles"].iloc[j])
    return out


def three_way(records: pd.DataFrame, hw: dict[str, pd.DataFrame] | None = None,
              base_config_hash: str | None = None, tol: float = 0.05) -> ThreeWay:
    """The three-way comparison (module doc). ``hw``: workload -> ncu records of that step;
    ``base_config_hash``: the baseline GPU (default: the unmodified h100 preset if the
    records hold it, else the configuration with the most launches)."""
    k = kernel_table(records)
    if base_config_hash is None:
        h100 = config_hash(load_gpu("h100"))
        base_config_hash = h100 if (k["config_hash"] == h100).any() else str(
            k["config_hash"].value_counts().index[0])
    if not (k["config_hash"] == base_config_hash).any():
        raise InputError(f"no records at the baseline configuration {base_config_hash}")
    base_name = str(k.loc[k["config_hash"] == base_config_hash, "config"].iloc[0])
    notes: list[str] = []

    # hardware at the baseline, launch by launch
    k["hw_cycles"] = np.nan
    err_rows = []
    for w, h in (hw or {}).items():
        sel = (k["workload"] == w) & (k["config_hash"] == base_config_hash)
        if not sel.any():
            notes.append(f"ncu records for '{w}', but no baseline records of it")
            continue
        base = k[sel].sort_values("kernel_id")
        k.loc[base.index, "hw_cycles"] = _pair_hardware(base, h).to_numpy()
        paired = k.loc[base.index]
        notes.append(f"{w}: {int(paired['hw_cycles'].notna().sum())} of {len(base)} baseline "
                     f"launches paired with {len(h)} ncu launches")
        for b in (MODEL, ACCELSIM):
            m = paired[paired["hw_cycles"].notna() & paired[f"{b}_cycles"].notna()]
            own = m if b == MODEL else m[~m["stand_in"]]
            err_rows.append({"workload": w, "backend": b, "kernels": len(own),
                             "mape": mape(own["hw_cycles"], own[f"{b}_cycles"]) if len(own)
                             else np.nan,
                             "pearson": pearson(own["hw_cycles"], own[f"{b}_cycles"]),
                             "sim_total": float(own[f"{b}_cycles"].sum()),
                             "hw_total": float(own["hw_cycles"].sum())})
    for b in (MODEL, ACCELSIM):
        k[f"{b}_err"] = (k[f"{b}_cycles"] - k["hw_cycles"]) / k["hw_cycles"]

    # steps: the launches both backends finished (Accel-Sim's own records) at a config
    both = k[k[f"{MODEL}_cycles"].notna() & k[f"{ACCELSIM}_cycles"].notna() & ~k["stand_in"]]
    step_rows = []
    for (w, chash), g in k.groupby(["workload", "config_hash"], sort=True):
        c = both[(both["workload"] == w) & (both["config_hash"] == chash)]
        step_rows.append({
            "workload": w, "config": str(g["config"].iloc[0]), "config_hash": chash,
            "baseline": chash == base_config_hash, "launches": len(g),
            "common": len(c), "stand_ins": int(g["stand_in"].sum()),
            f"{MODEL}_cycles": _step(c, f"{MODEL}_cycles"),
            f"{ACCELSIM}_cycles": _step(c, f"{ACCELSIM}_cycles"),
            "hw_cycles": _step(c, "hw_cycles") if c["hw_cycles"].notna().all()
            and len(c) and chash == base_config_hash else np.nan})
    steps = pd.DataFrame(step_rows)

    # what-ifs: ratios over the launches common to both configs and both backends
    wi_rows, disagreements = [], []
    for w in sorted(k["workload"].unique()):
        b0 = both[(both["workload"] == w) & (both["config_hash"] == base_config_hash)]
        for chash in sorted(set(both.loc[both["workload"] == w, "config_hash"])
                            - {base_config_hash}):
            v = both[(both["workload"] == w) & (both["config_hash"] == chash)]
            ids = sorted(set(b0["kernel_id"]) & set(v["kernel_id"]))
            if not ids:
                continue
            x0, x1 = b0.set_index("kernel_id").loc[ids], v.set_index("kernel_id").loc[ids]
            rm = _step(x1, f"{MODEL}_cycles") / _step(x0, f"{MODEL}_cycles")
            ra = _step(x1, f"{ACCELSIM}_cycles") / _step(x0, f"{ACCELSIM}_cycles")
            opposite = (rm - 1) * (ra - 1) < 0 and min(abs(rm - 1), abs(ra - 1)) > tol / 2
            differ = abs(ra / rm - 1) > tol
            per_k = (x1[f"{ACCELSIM}_cycles"] / x0[f"{ACCELSIM}_cycles"]) / (
                x1[f"{MODEL}_cycles"] / x0[f"{MODEL}_cycles"])
            worst = per_k.map(lambda q: abs(np.log(q))).sort_values(ascending=False)
            config = str(v["config"].iloc[0])
            wi_rows.append({"workload": w, "config": config, "config_hash": chash,
                            "kernels": len(ids), f"{MODEL}_ratio": rm,
                            f"{ACCELSIM}_ratio": ra, "disagree": bool(differ or opposite),
                            "opposite": bool(opposite),
                            "worst_kernels": ", ".join(
                                f"{short_name(x1.loc[i, 'kernel_name'])}#{i}"
                                for i in worst.index[:3])})
            if differ or opposite:
                disagreements.append(
                    f"{w} at {config} vs {base_name}: the model says {rm:.3f}x the baseline "
                    f"cycles, Accel-Sim {ra:.3f}x"
                    + (" (opposite directions)" if opposite else "")
                    + f" over {len(ids)} launches; most apart: {wi_rows[-1]['worst_kernels']}")
    return ThreeWay(kernels=k, steps=steps, whatifs=pd.DataFrame(wi_rows),
                    errors=pd.DataFrame(err_rows), base_config=base_name,
                    disagreements=disagreements, notes=notes)


def add_threeway(report: "Report", t: ThreeWay) -> None:
    """The comparison as report sections, the disagreements first."""
    s = report.section(f"Model vs Accel-Sim vs H100 (baseline: {t.base_config})")
    if t.disagreements:
        s.text("Where Accel-Sim and the model disagree on a what-if:")
        for d in t.disagreements:
            s.text(f"- {d}")
    elif len(t.whatifs):
        s.text("Accel-Sim and the model agree on every what-if here (within the tolerance).")
    for title, df in (("Against the H100 (ncu), baseline launches", t.errors),
                      ("Steps (launches both simulators finished)", t.steps),
                      ("What-ifs: step cycles over the baseline's", t.whatifs)):
        if len(df):
            s.table(df, caption=title, floatfmt="{:.4g}")
    for n in t.notes:
        s.text(f"- {n}")

"""The design-space study: what each GPU parameter a sweep varies buys the step.

A sweep over several GPU axes (tensor:vector ratio x L2 size x SM count, say) answers
"does a larger L2 pay, and up to where?" one axis at a time: the step's time along the axis
with every other axis at the base GPU's own value, and where more of it stops gaining
``min_gain`` of step time per doubling, then the same at every combination of the other
axes, since what pays on 132 SMs need not on 33. A sweep's records come in through
:func:`axis_points` (the GPU of each configuration, from the jobs' variant parameters) and
:func:`design_study`; nothing here reads files.

Axes are read as quantities of the GPU the job ran on (the GPU stage builds it from the
job's parameters), so that ``"25 MiB"`` and ``26214400`` are one L2 size and a ratio axis
given as ``"8:1"`` sorts with 16. "More" of an axis is more of the resource: more SMs, more
L2, more bandwidth, a higher clock, a shorter fixed cost a kernel, and for the tensor:vector
ratio more vector units (a lower ratio, read as the vector scale over the base, as the
balance study does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simfront.analysis.balance import knee_point, stop_paying_point
from simfront.core.categories import kernel_category
from simfront.core.errors import ConfigError, InputError
from simfront.gpu import derived
from simfront.gpu.derived import tensor_vector_ratio
from simfront.gpu.gpu import GPU
from simfront.stats.launches import launch_weights
from simfront.sweep.inputs import build_gpu


@dataclass(frozen=True)
class Axis:
    """How a variant parameter reads as a number of the GPU, and which way is more."""
    label: str
    read: Callable[[GPU], float]
    #: True where a smaller value is more of the resource (the ratio: more vector units)
    less_is_more: bool = False


AXES: dict[str, Axis] = {
    "tensor_vector_ratio": Axis("tensor:vector ratio",
                                lambda g: float(tensor_vector_ratio(g)), less_is_more=True),
    "l2_size": Axis("L2 (MiB)", lambda g: g.l2.size.bytes / 2 ** 20),
    "sm_count": Axis("SMs", lambda g: float(g.sm_count)),
    "dram_bandwidth": Axis("DRAM (TB/s)",
                           lambda g: float(derived(g).dram_bandwidth.bytes_per_s) / 1e12),
    "clock": Axis("SM clock (MHz)", lambda g: g.clocks.core.hz / 1e6),
    "empty_kernel_ns": Axis("a kernel's fixed cost (ns)",
                            lambda g: float(g.empty_kernel_ns or 0.0), less_is_more=True),
}


@dataclass
class DesignResult:
    """One workload's design study. ``points``: a row per configuration (its axis values,
    ``time`` the step's time in ``unit``, ``speedup`` over the base point); ``along``: per
    axis, the axis with the others at the base (value, time, speedup, ``gain`` per doubling
    from the previous value); ``pays``: per axis and combination of the other axes, the
    value from which more stops paying (``None``: the last step still pays) and the knee;
    ``categories``: per axis, each kernel category's time along it (the others at base)."""
    workload: str
    axes: list[str]
    base: dict[str, float]
    points: pd.DataFrame
    along: dict[str, pd.DataFrame]
    pays: dict[str, pd.DataFrame]
    categories: dict[str, pd.DataFrame]
    min_gain: float
    unit: str = "us"
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "axes": self.axes,
                               "base": {a: _plain(v) for a, v in self.base.items()},
                               "configs": len(self.points),
                               "min_gain": self.min_gain, "notes": self.notes}
        best = self.points.loc[self.points["time"].idxmin()]
        out["fastest"] = {**{a: _plain(best[a]) for a in self.axes},
                          "speedup": float(best["speedup"])}
        for a in self.axes:
            at_base = self.pays[a].loc[self.pays[a]["at_base"]].iloc[0]
            col = self.pays[a]["stops_paying"]
            out[a] = {"values": [_plain(v) for v in self.along[a]["value"]],
                      "speedup_along": [float(v) for v in self.along[a]["speedup"]],
                      "stops_paying_at_base": _num(at_base["stops_paying"]),
                      "knee_at_base": _num(at_base["knee"]),
                      "stops_paying_elsewhere": sorted({_num(v) for v in col}, key=_order)}
        return out


def _plain(v: Any) -> float | str:
    return v if isinstance(v, str) else float(v)


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _order(v: float | None) -> float:
    return math.inf if v is None else v


# --------------------------------------------------------------------------- inputs


def axis_points(jobs: pd.DataFrame, base_gpu: str = "h100") -> tuple[pd.DataFrame, dict]:
    """The GPU axes a sweep's jobs vary, as a frame indexed by configuration name (a column
    per axis), and the base point (the base GPU's own values, or the swept values nearest
    them; a choice, or a parameter the GPU stage cannot read: a value that the
    configurations at the others' base have). ``jobs``: the results file's jobs table
    (``config``, ``params`` as JSON, ``ok``); a configuration named ``BASE[...]`` is built
    on BASE."""
    if "params" not in jobs or "config" not in jobs:
        raise InputError("the sweep's jobs table has no 'params' or 'config' column: which "
                         "GPU each job ran on is unknown")
    ok = jobs[jobs["ok"].astype(bool)] if "ok" in jobs else jobs
    params = {c: json.loads(p) if isinstance(p, str) and p else {}
              for c, p in zip(ok["config"], ok["params"])}
    written = varying_params(params.values())
    rows, base = {}, {}
    for config, p in params.items():
        gpu = _gpu_of(config, p, base_gpu)
        rows[config] = {k: _value(k, p.get(k), gpu) for k in written}
    # a parameter written two ways ('25 MiB', 26214400) is one value: no axis
    points = pd.DataFrame.from_dict(rows, orient="index", columns=written)
    varying = [k for k in written if points[k].nunique(dropna=False) > 1]
    if not varying:
        raise InputError(f"the sweep's {len(params)} configuration(s) vary no GPU parameter: "
                         "a design study needs at least one axis")
    points = points[varying]
    own = _gpu_of(next(iter(params)), {}, base_gpu)
    for k in varying:
        base[k] = _base_value(k, points[k], own)
    # a parameter the GPU stage cannot read: a value that the configurations at the base of
    # the others have (two of them may be one GPU, which the sweep runs once)
    readable = [k for k in varying if not isinstance(base[k], str) and k in AXES]
    at_base = points[(points[readable] == pd.Series({k: base[k] for k in readable})).all(axis=1)]
    for k in varying:
        if k not in readable and len(at_base):
            base[k] = sorted(at_base[k].unique(), key=str)[0]
    return points, base


def varying_params(params: Iterable[dict], leave_out: Iterable[str] = ()) -> list[str]:
    """The names of the parameters whose written values differ among ``params`` (one dict
    of variant parameters a configuration), sorted; ``leave_out`` not among them."""
    params = list(params)
    keys = sorted({k for p in params for k in p} - set(leave_out))
    return [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in params}) > 1]


def value_text(v: Any) -> str:
    """An axis value as the tables and the CLI write it."""
    return v if isinstance(v, str) else f"{v:g}"


def config_base(config: str, default: str) -> str:
    """The base GPU a configuration's name says it was built on (``h100[...]`` -> h100)."""
    name = str(config).split("[", 1)[0]
    return name or default


def _gpu_of(config: str, params: dict, base_gpu: str) -> GPU | None:
    """The GPU a configuration ran on: ``params`` over the GPU its name says it was built
    on, else over ``base_gpu``; None where neither builds."""
    for base in (config_base(config, base_gpu), base_gpu):
        try:
            return build_gpu(base, params, validate=False)
        except ConfigError:
            continue
    return None


def _value(name: str, raw: Any, gpu: GPU | None) -> Any:
    axis = AXES.get(name)
    if axis is not None and gpu is not None:
        return axis.read(gpu)
    try:
        return float(raw)
    except (TypeError, ValueError):
        return json.dumps(raw, sort_keys=True) if isinstance(raw, (dict, list)) else raw


def _base_value(name: str, values: pd.Series, gpu: GPU | None) -> Any:
    """The base GPU's own value of an axis, or the swept value nearest it (log scale); an
    axis the GPU stage cannot read: its first value in sorted order (``axis_points`` may
    choose another)."""
    uniq = sorted(values.dropna().unique(), key=lambda v: (isinstance(v, str), v))
    axis = AXES.get(name)
    if axis is None or gpu is None or any(isinstance(v, str) for v in uniq):
        return uniq[0]
    own = axis.read(gpu)
    if own <= 0 or any(v <= 0 for v in uniq):
        return float(min(uniq, key=lambda v: abs(v - own)))
    return float(min(uniq, key=lambda v: abs(math.log(v / own))))


# --------------------------------------------------------------------------- the study


def step_points(rec: pd.DataFrame, points: pd.DataFrame, time_col: str = "time_us"
                ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """One workload's step time at each configuration (the kernels that have a result at
    every configuration, each launch counted) and each kernel category's, by configuration;
    with notes on what was left out."""
    rec = rec[rec["config"].isin(points.index)]
    if "complete" in rec:
        rec = rec[rec["complete"].fillna(True).astype(bool)]
    rec = rec[rec[time_col].notna() & (rec[time_col] > 0)]
    key = rec[[c for c in ("workload", "kernel_uid") if c in rec] or ["kernel_name"]]
    rec = rec.assign(_key=key.astype(str).agg("/".join, axis=1),
                     _t=rec[time_col].astype(float) * launch_weights(rec).to_numpy(float))
    if "category" not in rec:
        rec["category"] = rec["kernel_name"].astype(str).map(kernel_category)
    per = rec.pivot_table(index="_key", columns="config", values="_t", aggfunc="mean")
    per = per.reindex(columns=[c for c in points.index if c in per.columns])
    notes = []
    full = per.notna().all(axis=1)
    if not full.all():
        notes.append(f"{int((~full).sum())} kernels lack a result at some configuration and "
                     "are left out")
    per = per[full]
    if per.empty:
        raise InputError("no kernel has a result at every configuration")
    cats = rec.drop_duplicates("_key").set_index("_key")["category"].reindex(per.index)
    by_cat = per.groupby(cats).sum().T
    return per.sum(axis=0).rename("time").to_frame(), by_cat, notes


def _resource(axis: str, values: np.ndarray, base: float) -> np.ndarray:
    """An axis's values as how much of the resource, over the base (the ratio inverted)."""
    a = AXES.get(axis)
    values = np.asarray(values, float)
    return base / values if a is not None and a.less_is_more else values / base


def along_axis(points: pd.DataFrame, axis: str, fixed: dict[str, Any]) -> pd.DataFrame:
    """The points with every other axis at ``fixed``, in order of more resource: value,
    time, speedup, and the gain per doubling from the previous point."""
    sel = points
    for k, v in fixed.items():
        if k != axis:
            sel = sel[sel[k] == v]
    a = AXES.get(axis)
    sel = sel.sort_values(axis, ascending=not (a is not None and a.less_is_more))
    out = pd.DataFrame({"value": sel[axis].to_numpy(), "time": sel["time"].to_numpy(),
                        "speedup": sel["speedup"].to_numpy()}, index=sel.index)
    if len(out) and not isinstance(out["value"].iloc[0], str):
        x = np.log2(_resource(axis, out["value"].to_numpy(float), float(out["value"].iloc[0])))
        s = out["speedup"].to_numpy(float)
        step = np.diff(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_doubling = np.where(step > 0, (s[1:] / s[:-1] - 1.0) / step, np.nan)
        out["gain"] = np.concatenate([[np.nan], per_doubling])
    return out


def where_it_pays(points: pd.DataFrame, axes: list[str], base: dict, axis: str,
                  min_gain: float) -> pd.DataFrame:
    """For each combination of the other axes: where more of ``axis`` stops paying and the
    curve's knee (as axis values; None: the last step still pays, or no knee)."""
    others = [a for a in axes if a != axis]
    combos = (points[others].drop_duplicates().to_dict("records") if others else [{}])
    rows = []
    for combo in combos:
        line = along_axis(points, axis, combo)
        row = {**combo, "stops_paying": None, "knee": None, "points": len(line),
               "at_base": all(combo[k] == base[k] for k in others)}
        if len(line) >= 2 and not isinstance(line["value"].iloc[0], str):
            v = line["value"].to_numpy(float)
            x = np.log2(_resource(axis, v, float(v[0])))
            s = line["speedup"].to_numpy(float) / float(line["speedup"].iloc[0])
            row["stops_paying"] = _back(axis, stop_paying_point(x, s, min_gain), v[0])
            row["knee"] = _back(axis, knee_point(x, s), v[0])
        rows.append(row)
    return pd.DataFrame(rows)


def _back(axis: str, x: float | None, first: float) -> float | None:
    """A log2 resource position back to the axis's value."""
    if x is None:
        return None
    a = AXES.get(axis)
    v = first / 2.0 ** x if a is not None and a.less_is_more else first * 2.0 ** x
    return float(round(v, 6))


def design_study(rec: pd.DataFrame, points: pd.DataFrame, base: dict,
                 min_gain: float = 0.02) -> dict[str, DesignResult]:
    """A design study per workload (and backend) of a sweep's records; ``points`` and
    ``base`` from :func:`axis_points`."""
    axes = list(points.columns)
    base_match = points.index[np.logical_and.reduce([points[a] == base[a] for a in axes])]
    if len(base_match) == 0:
        raise InputError(f"no configuration is at the base point "
                         f"{', '.join(f'{a}={base[a]}' for a in axes)}: a design study reads "
                         "each axis with the others there; sweep that point, or name another "
                         "base GPU (--base)")
    time_col = "time_us" if "time_us" in rec and rec["time_us"].notna().any() else "cycles"
    out = {}
    groups = [c for c in ("workload", "backend") if c in rec]
    for key, g in rec.groupby(groups) if groups else [("all", rec)]:
        name = "/".join(map(str, key)) if isinstance(key, tuple) else str(key)
        step, cats, notes = step_points(g, points, time_col)
        pts = points.join(step, how="inner")
        if base_match[0] not in pts.index:
            raise InputError(f"{name}: no result at the base configuration {base_match[0]}")
        pts["speedup"] = float(pts.loc[base_match[0], "time"]) / pts["time"]
        along = {a: along_axis(pts, a, base) for a in axes}
        out[name] = DesignResult(
            workload=name, axes=axes, base=base, points=pts, along=along,
            pays={a: where_it_pays(pts, axes, base, a, min_gain) for a in axes},
            categories={a: cats.reindex(along[a].index).set_axis(along[a]["value"])
                        for a in axes},
            min_gain=min_gain, unit="us" if time_col == "time_us" else time_col, notes=notes)
    return out

"""The tensor:vector balance study: how a training step's kernels respond to the ratio of
tensor-core throughput to vector (FP32/FP16/INT/SFU) throughput.

Input: per-kernel records of one workload simulated at several ratios (a sweep), as a
DataFrame with a ratio column, a kernel key and a time column. The **ratio** is tensor FLOP
per cycle over vector FP32 FLOP per cycle of the simulated GPU: an H100 SM does 4096 dense
BF16 tensor FLOP and 256 FP32 FLOP per cycle, so 16; twice the vector units give 8.
Smaller ratios mean more vector units.

Output (:class:`BalanceResult`):

- per kernel and for the step (the sum of kernel times, so weighted by time over the
  step): time and speedup against the ratio, relative to the baseline ratio;
- which pipe limits each kernel at each ratio (the backend's ``bound`` where it names one,
  else the busiest ``pipe_busy_*``), grouped into tensor / vector / memory-or-latency;
- tensor-limited and vector-limited step time per ratio and the ratio where they are
  equal (:func:`crossing_ratio`, interpolated log-linearly);
- the knee past which more vector units stop paying (:func:`knee_point`, Kneedle on
  speedup against log2 of the vector scale) and the first ratio where one more doubling of
  vector units gains less than ``min_gain`` of step time (:func:`stop_paying_point`);
- bootstrap intervals of all of these over kernels (resampling the step's launches).

Pure functions over DataFrames and arrays; plots and reports live elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simfront.core.categories import kernel_category
from simfront.core.errors import InputError
from simfront.stats.launches import launch_weights

#: Pipe (or limiter) names that count as tensor or vector; anything else is memory/latency.
TENSOR_LIMITERS = frozenset({"tensor", "hmma", "hgmma", "tensor_core"})
VECTOR_LIMITERS = frozenset({"fp32", "fp16", "int", "sfu", "vector", "alu", "fma", "xu",
                             "fp64", "uniform"})
VECTOR_PIPES = ("fp32", "fp16", "int", "sfu")

H100_TENSOR_FLOP_PER_CYCLE = 4096.0
H100_FP32_FLOP_PER_CYCLE = 256.0
H100_RATIO = H100_TENSOR_FLOP_PER_CYCLE / H100_FP32_FLOP_PER_CYCLE


def limiter_class(name: str | float | None) -> str:
    """tensor / vector / other for a limiter or pipe name (``pipe:fp32``, ``fp32``, ...)."""
    if not isinstance(name, str) or not name:
        return "other"
    n = name.lower().split(":")[-1].replace("pipe_busy_", "").replace("pipe_", "").strip()
    if n in TENSOR_LIMITERS:
        return "tensor"
    if n in VECTOR_LIMITERS:
        return "vector"
    return "other"


def limiting_pipe(records: pd.DataFrame) -> pd.Series:
    """The pipe or resource that limits each record: the backend's ``bound`` if it names
    one, else the busiest ``pipe_busy_*`` column."""
    pipe_cols = [c for c in records.columns if c.startswith("pipe_busy_")]
    busiest = (records[pipe_cols].fillna(-1).idxmax(axis=1).str.replace("pipe_busy_", "",
                                                                        regex=False)
               if pipe_cols else pd.Series("", index=records.index))
    if "bound" in records:
        b = records["bound"].astype("string").fillna("")
        return b.where(b != "", busiest).astype(str)
    return busiest.astype(str)


# --------------------------------------------------------------------------- curve finders


def crossing_ratio(ratios: np.ndarray, a: np.ndarray, b: np.ndarray) -> float | None:
    """The ratio where curves ``a`` and ``b`` (e.g. tensor- and vector-limited time) are
    equal, interpolating ``log(a/b)`` linearly in ``log(ratio)`` (exact for power laws);
    None when they do not cross inside the swept range. With several crossings, the one at
    the largest ratio (fewest vector units) is returned."""
    r = np.asarray(ratios, float)
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    order = np.argsort(-r)
    r, a, b = r[order], a[order], b[order]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(np.maximum(a, 1e-300)) - np.log(np.maximum(b, 1e-300))
    zero_a, zero_b = a <= 0, b <= 0
    d[zero_a & ~zero_b] = -np.inf
    d[zero_b & ~zero_a] = np.inf
    d[zero_a & zero_b] = np.nan
    for i in range(len(r)):
        if d[i] == 0:
            return float(r[i])
        if i + 1 < len(r) and np.isfinite(d[i]) and np.isfinite(d[i + 1]) and d[i] * d[i + 1] < 0:
            t = d[i] / (d[i] - d[i + 1])
            return float(np.exp(np.log(r[i]) + t * (np.log(r[i + 1]) - np.log(r[i]))))
        if i + 1 < len(r) and (np.isinf(d[i]) or np.isinf(d[i + 1])) and \
                np.sign(d[i]) * np.sign(d[i + 1]) < 0:
            # one side is zero at a point: the crossing is between, at the geometric mean
            return float(np.sqrt(r[i] * r[i + 1]))
    return None


def knee_point(x: np.ndarray, y: np.ndarray, min_bulge: float = 0.05) -> float | None:
    """Kneedle (Satopaa et al., 2011) for an increasing, concave curve: the x of the point
    farthest above the chord after scaling both axes to [0, 1]. None when the curve does not
    bend (a straight line or flat: nothing stops paying) -- its farthest point is less than
    ``min_bulge`` above the chord."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if len(x) < 3:
        return None
    order = np.argsort(x)
    x, y = x[order], y[order]
    xr, yr = x[-1] - x[0], y[-1] - y[0]
    if xr <= 0 or yr <= 0:
        return None
    xn, yn = (x - x[0]) / xr, (y - y[0]) / yr
    diff = yn - xn
    i = int(np.argmax(diff))
    if diff[i] < min_bulge:
        return None
    return float(x[i])


def stop_paying_point(x: np.ndarray, speedup: np.ndarray, min_gain: float = 0.02) -> float | None:
    """The first x (log2 of vector scale) from which every further step gains less than
    ``min_gain`` of step time per doubling of vector units. None if the last step still
    pays."""
    x = np.asarray(x, float)
    s = np.asarray(speedup, float)
    order = np.argsort(x)
    x, s = x[order], s[order]
    if len(x) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = (s[1:] / s[:-1] - 1.0) / np.maximum(x[1:] - x[:-1], 1e-12)
    paying = gain >= min_gain
    if paying[-1]:
        return None
    last_paying = np.nonzero(paying)[0]
    idx = 0 if len(last_paying) == 0 else last_paying[-1] + 1
    return float(x[idx])


# --------------------------------------------------------------------------- the study


@dataclass
class BalanceResult:
    ratios: np.ndarray                  # swept ratios, descending (fewer vector units first)
    baseline_ratio: float
    kernel_time: pd.DataFrame           # kernels x ratios, time of one launch in ``unit``
    kernel_limiter: pd.DataFrame        # kernels x ratios, limiting pipe name
    kernels: pd.DataFrame               # per kernel: name, category, base time, share, best speedup
    step: pd.DataFrame                  # per ratio: time, speedup, tensor/vector/other-limited time
    category_speedup: pd.DataFrame      # category x ratio
    crossing: float | None
    crossing_busy: float | None
    knee: float | None                  # as a ratio
    stop_paying: float | None           # as a ratio
    min_gain: float
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    unit: str = "us"
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        s = self.step
        best = s["speedup"].max()
        return {
            "ratios": [float(r) for r in self.ratios],
            "baseline_ratio": self.baseline_ratio,
            "kernels": int(len(self.kernels)),
            "step_speedup_max": float(best),
            "ratio_of_max_speedup": float(s["speedup"].idxmax()),
            "crossing_ratio": self.crossing,
            "crossing_ratio_busy": self.crossing_busy,
            "knee_ratio": self.knee,
            "stop_paying_ratio": self.stop_paying,
            "min_gain_per_doubling": self.min_gain,
            "intervals": {k: (None if v is None else [float(v[0]), float(v[1])])
                          for k, v in self.intervals.items()},
        }


def _vector_scale(ratios: np.ndarray, baseline: float) -> np.ndarray:
    # more vector units = smaller ratio; scale 2 = twice the baseline's vector throughput
    return baseline / np.asarray(ratios, float)


def balance_study(records: pd.DataFrame, ratio_col: str = "ratio",
                  key_cols: tuple[str, ...] | None = None, time_col: str | None = None,
                  baseline_ratio: float | None = None, min_gain: float = 0.02,
                  n_boot: int = 500, seed: int = 0) -> BalanceResult:
    """The balance study over records of one workload at several ratios (see module doc).

    ``key_cols`` name a launch across configs (default: ``workload`` and ``kernel_uid``
    where present); ``time_col`` defaults to ``time_us``, else ``cycles``. Only kernels that
    have a result at every ratio are compared (a failed job would otherwise look like a
    speedup); those dropped are listed in ``notes``.
    """
    if ratio_col not in records:
        raise InputError(f"records have no '{ratio_col}' column: say which column holds the "
                         "tensor:vector ratio (--ratio-column)")
    if time_col is None:
        time_col = next((c for c in ("time_us", "cycles") if c in records and
                         records[c].notna().any()), None)
        if time_col is None:
            raise InputError("records have neither time_us nor cycles")
    if key_cols is None:
        key_cols = tuple(c for c in ("workload", "kernel_uid") if c in records)
        if not key_cols:
            key_cols = ("kernel_name",)
    rec = records.copy()
    if "complete" in rec:
        rec = rec[rec["complete"].fillna(True).astype(bool)]
    rec = rec[rec[time_col].notna() & (rec[time_col] > 0)]
    rec["_ratio"] = rec[ratio_col].astype(float)
    rec["_key"] = rec[list(key_cols)].astype(str).agg("/".join, axis=1)
    rec["_limiter"] = limiting_pipe(rec)
    notes: list[str] = []
    dup = rec.duplicated(["_key", "_ratio"])
    if dup.any():
        notes.append(f"{int(dup.sum())} duplicate (kernel, ratio) records: times averaged")
    time = rec.pivot_table(index="_key", columns="_ratio", values=time_col, aggfunc="mean")
    lim = rec.pivot_table(index="_key", columns="_ratio", values="_limiter", aggfunc="first")
    ratios = np.array(sorted(time.columns, reverse=True), float)
    if len(ratios) < 2:
        raise InputError(f"a balance study needs at least two ratios; the records hold "
                         f"{len(ratios)} ({ratio_col} = {list(ratios)})")
    time, lim = time[ratios], lim.reindex(index=time.index, columns=ratios)
    full = time.notna().all(axis=1)
    if not full.all():
        notes.append(f"{int((~full).sum())} kernels lack a result at some ratio and are left "
                     f"out: {', '.join(time.index[~full][:5])}")
    time, lim = time[full], lim[full]
    if time.empty:
        raise InputError("no kernel has a result at every ratio")
    if baseline_ratio is None:
        baseline_ratio = H100_RATIO if H100_RATIO in ratios else float(ratios[0])
    if baseline_ratio not in ratios:
        raise InputError(f"baseline ratio {baseline_ratio} is not among the swept ratios "
                         f"{list(ratios)}")

    meta_cols = [c for c in ("kernel_name", "category", "workload", "kernel_uid") if c in rec]
    meta = rec.drop_duplicates("_key").set_index("_key").reindex(time.index)[meta_cols]
    if "category" not in meta and "kernel_name" in meta:
        meta["category"] = meta["kernel_name"].map(kernel_category)
    # a record of a deduplicated set stands for several launches: the step counts each
    w = (rec.assign(_w=launch_weights(rec)).groupby("_key")["_w"].first()
         .reindex(time.index).fillna(1).to_numpy(float))
    base = time[baseline_ratio]
    kernels = meta.copy()
    kernels["base_time"] = base                # one launch
    kernels["launch_count"] = w.astype(int)
    kernels["share"] = base * w / (base * w).sum()
    kernels["best_speedup"] = time.rdiv(base, axis=0).max(axis=1)
    kernels["limiter_at_base"] = lim[baseline_ratio]

    T = time.to_numpy() * w[:, None]           # every launch of each kernel
    cls = np.vectorize(limiter_class)(lim.to_numpy().astype(str))
    busy = _busy_shares(rec, time.index, ratios)
    step, crossing, crossing_busy = _step_table(T, cls, busy, ratios, baseline_ratio)
    x = np.log2(_vector_scale(ratios, baseline_ratio))
    knee_x = knee_point(x, step["speedup"].to_numpy())
    stop_x = stop_paying_point(x, step["speedup"].to_numpy(), min_gain)
    to_ratio = (lambda v: None if v is None else float(baseline_ratio / 2.0 ** v))

    if "category" in kernels:
        cat = pd.DataFrame(T, index=time.index, columns=ratios).groupby(kernels["category"]).sum()
        cat_speed = cat.rdiv(cat[baseline_ratio], axis=0)
    else:
        cat_speed = pd.DataFrame()

    result = BalanceResult(ratios=ratios, baseline_ratio=float(baseline_ratio),
                           kernel_time=time, kernel_limiter=lim, kernels=kernels, step=step,
                           category_speedup=cat_speed, crossing=crossing,
                           crossing_busy=crossing_busy, knee=to_ratio(knee_x),
                           stop_paying=to_ratio(stop_x), min_gain=min_gain,
                           unit="us" if time_col == "time_us" else time_col, notes=notes)
    if n_boot and len(T) >= 3:
        result.intervals = _bootstrap(T, cls, busy, ratios, baseline_ratio, min_gain, n_boot, seed)
    else:
        notes.append("too few kernels for a bootstrap: no intervals")
    return result


def _busy_shares(rec: pd.DataFrame, keys: pd.Index, ratios: np.ndarray) -> np.ndarray | None:
    """(kernels, ratios, 2): tensor and vector pipe busy fractions, or None if absent."""
    if "pipe_busy_tensor" not in rec:
        return None
    vec_cols = [f"pipe_busy_{p}" for p in VECTOR_PIPES if f"pipe_busy_{p}" in rec]
    if not vec_cols:
        return None
    r = rec.assign(_vec=rec[vec_cols].max(axis=1))
    t = r.pivot_table(index="_key", columns="_ratio", values="pipe_busy_tensor").reindex(
        index=keys, columns=ratios)
    v = r.pivot_table(index="_key", columns="_ratio", values="_vec").reindex(index=keys,
                                                                             columns=ratios)
    return np.stack([t.fillna(0).to_numpy(), v.fillna(0).to_numpy()], axis=-1)


def _step_table(T: np.ndarray, cls: np.ndarray, busy: np.ndarray | None, ratios: np.ndarray,
                baseline: float) -> tuple[pd.DataFrame, float | None, float | None]:
    total = T.sum(axis=0)
    b = int(np.nonzero(ratios == baseline)[0][0])
    step = pd.DataFrame({
        "ratio": ratios, "vector_scale": _vector_scale(ratios, baseline), "time": total,
        "speedup": total[b] / total,
        "tensor_limited": (T * (cls == "tensor")).sum(axis=0),
        "vector_limited": (T * (cls == "vector")).sum(axis=0),
        "other_limited": (T * (cls == "other")).sum(axis=0),
    }).set_index("ratio", drop=False)
    crossing = crossing_ratio(ratios, step["tensor_limited"].to_numpy(),
                              step["vector_limited"].to_numpy())
    crossing_busy = None
    if busy is not None:
        step["tensor_busy"] = (T * busy[..., 0]).sum(axis=0)
        step["vector_busy"] = (T * busy[..., 1]).sum(axis=0)
        crossing_busy = crossing_ratio(ratios, step["tensor_busy"].to_numpy(),
                                       step["vector_busy"].to_numpy())
    return step, crossing, crossing_busy


def _bootstrap(T, cls, busy, ratios, baseline, min_gain, n_boot, seed):
    """5-95% intervals over kernels resampled with replacement."""
    rng = np.random.default_rng(seed)
    n = len(T)
    b = int(np.nonzero(ratios == baseline)[0][0])
    x = np.log2(_vector_scale(ratios, baseline))
    idx = rng.integers(0, n, size=(n_boot, n))
    tot = T[idx].sum(axis=1)                                    # (boot, ratios)
    speed = tot[:, [b]] / tot
    tl = (T * (cls == "tensor"))[idx].sum(axis=1)
    vl = (T * (cls == "vector"))[idx].sum(axis=1)
    cross, knees, stops = [], [], []
    for i in range(n_boot):
        c = crossing_ratio(ratios, tl[i], vl[i])
        cross.append(np.nan if c is None else c)
        k = knee_point(x, speed[i])
        knees.append(np.nan if k is None else baseline / 2.0 ** k)
        s = stop_paying_point(x, speed[i], min_gain)
        stops.append(np.nan if s is None else baseline / 2.0 ** s)

    def iv(v):
        v = np.asarray(v, float)
        v = v[np.isfinite(v)]
        # an interval only when most resamples agree that the quantity exists
        if len(v) < 0.5 * n_boot:
            return None
        return (float(np.percentile(v, 5)), float(np.percentile(v, 95)))

    out = {"crossing_ratio": iv(cross), "knee_ratio": iv(knees), "stop_paying_ratio": iv(stops)}
    best = speed.max(axis=1)
    out["step_speedup_max"] = (float(np.percentile(best, 5)), float(np.percentile(best, 95)))
    for j, r in enumerate(ratios):
        out[f"speedup@{r:g}"] = (float(np.percentile(speed[:, j], 5)),
                                 float(np.percentile(speed[:, j], 95)))
    return out

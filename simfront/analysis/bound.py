"""The analytic bound of the balance study, from instruction mixes alone.

Each kernel needs ``F_T`` tensor FLOPs and ``F_V`` vector FLOPs (and moves ``D`` DRAM
bytes). On a GPU doing ``P_T`` tensor FLOP/s and ``P_V = P_T / ratio`` vector FLOP/s (and
``B`` byte/s), no schedule beats::

    t_k(ratio) >= max(F_T / P_T, F_V * ratio / P_T, D / B)

The step bound is the sum over kernels (kernels of a step run one after another). A
kernel's own balance ratio, where its tensor and vector work take equal time, is
``F_T / F_V``; the step's is ``sum F_T / sum F_V`` (tensor-pipe time = vector-pipe time).
The bound ignores latency, issue limits and overlap, so real kernels are slower and respond
less: it says how much a ratio *could* pay, the simulated sweep what it does.

Mixes come from ncu records (``tensor_flops``/``vector_flops``/``dram_bytes`` of
:func:`simfront.core.ncu.read_ncu_csv`) or from the traces' instruction mixes
(:func:`mix_from_traces`, through ``simfront.traces.stats``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simfront.analysis.balance import H100_RATIO, crossing_ratio
from simfront.core.categories import kernel_category
from simfront.core.errors import InputError
from simfront.stats.launches import LAUNCHES, launch_weights


@dataclass
class AnalyticBound:
    ratios: np.ndarray
    step: pd.DataFrame          # per ratio: time_s, speedup, tensor_time_s, vector_time_s
    kernels: pd.DataFrame       # per kernel: F_T, F_V, D, own balance ratio
    balance_ratio: float | None  # sum F_T / sum F_V
    crossing: float | None      # ratio where tensor-bound and vector-bound kernel time are equal
    source: str

    def summary(self) -> dict:
        return {"source": self.source, "balance_ratio": self.balance_ratio,
                "crossing_ratio": self.crossing, "kernels": int(len(self.kernels)),
                "speedup_max": float(self.step["speedup"].max())}


def analytic_bound(mix: pd.DataFrame, ratios, tensor_flops_per_s: float,
                   dram_bw: float | None = None, baseline_ratio: float = H100_RATIO,
                   source: str = "") -> AnalyticBound:
    """The bound over ``ratios`` for kernels with columns ``tensor_flops``, ``vector_flops``
    (and ``dram_bytes`` when ``dram_bw`` is given)."""
    for c in ("tensor_flops", "vector_flops"):
        if c not in mix:
            raise InputError(f"instruction mix lacks '{c}'")
    ratios = np.array(sorted({float(r) for r in ratios} | {float(baseline_ratio)}, reverse=True))
    w = launch_weights(mix).to_numpy(float)     # a deduplicated set's repeats
    ft = mix["tensor_flops"].fillna(0).to_numpy(float) * w
    fv = mix["vector_flops"].fillna(0).to_numpy(float) * w
    mem = (mix["dram_bytes"].fillna(0).to_numpy(float) * w / dram_bw
           if dram_bw and "dram_bytes" in mix else np.zeros(len(mix)))
    t_tensor = ft / tensor_flops_per_s
    t_vec = fv[:, None] * ratios[None, :] / tensor_flops_per_s        # kernels x ratios
    t = np.maximum(np.maximum(t_tensor[:, None], t_vec), mem[:, None])
    total = t.sum(axis=0)
    b = int(np.nonzero(ratios == baseline_ratio)[0][0])
    tensor_bound = (t_tensor[:, None] >= np.maximum(t_vec, mem[:, None])) & (ft[:, None] > 0)
    vector_bound = (t_vec > np.maximum(t_tensor[:, None], mem[:, None]))
    step = pd.DataFrame({"ratio": ratios, "time_s": total, "speedup": total[b] / total,
                         "tensor_time_s": (t * tensor_bound).sum(axis=0),
                         "vector_time_s": (t * vector_bound).sum(axis=0)}).set_index(
        "ratio", drop=False)
    kernels = mix.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        kernels["balance_ratio"] = np.where(fv > 0, ft / fv, np.inf)
    br = float(ft.sum() / fv.sum()) if fv.sum() > 0 else None
    return AnalyticBound(ratios=ratios, step=step, kernels=kernels, balance_ratio=br,
                         crossing=crossing_ratio(ratios, step["tensor_time_s"].to_numpy(),
                                                 step["vector_time_s"].to_numpy()),
                         source=source)


def pipe_time_envelope(duration_s, vector_util, ratios,
                       baseline_ratio: float = H100_RATIO) -> pd.DataFrame:
    """The envelope of a measured step's response from its vector pipes' busy time.

    A kernel of time ``t`` whose busiest vector pipe is busy ``u t`` can gain no more from
    ``f = baseline / ratio`` times the vector units than that busy time shrinking to
    ``u t / f`` with nothing else changing: ``t (1 - u + u / f)`` (no overlap: an upper bound
    on the gain). With fewer units (``f < 1``) the pipe alone needs ``u t / f``: a lower
    bound on the slowdown ``max(t, u t / f)``. Unlike the FLOP bound this counts every
    instruction the pipe runs (integer, compare, conversion), as ncu's pipe utilizations do.
    """
    t = np.asarray(duration_s, float)
    u = np.nan_to_num(np.asarray(vector_util, float))
    ratios = np.array(sorted({float(r) for r in ratios} | {float(baseline_ratio)}, reverse=True))
    rows = []
    for r in ratios:
        f = baseline_ratio / r
        tr = t * (1 - u + u / f) if f >= 1 else np.maximum(t, u * t / f)
        rows.append({"ratio": r, "time_s": tr.sum(), "speedup": t.sum() / tr.sum()})
    return pd.DataFrame(rows).set_index("ratio", drop=False)


def mix_from_ncu(df: pd.DataFrame) -> pd.DataFrame:
    """Per-launch mix from ncu records."""
    cols = ["kernel_name", "category", "tensor_flops", "vector_flops", "dram_bytes"]
    missing = [c for c in cols if c not in df]
    if missing:
        raise InputError(f"ncu records lack {', '.join(missing)}")
    return df[cols].copy()


def mix_from_traces(trace_dir, footprint: bool = True) -> pd.DataFrame:
    """Per-launch mix from a trace set through the trace stage's statistics
    (``simfront.traces.stats``): tensor FLOPs from the MMA shapes, vector FLOPs (FP32,
    FP16, FP64) per active lane, and as ``dram_bytes`` the compulsory traffic, the distinct
    32-byte sectors the kernel touches (a lower bound on DRAM bytes with a cold L2).
    Raises InputError when that stage is not available."""
    try:
        from simfront.traces.stats import iter_set_stats, stats_frame
    except ImportError as exc:
        raise InputError(f"trace statistics are not available ({exc})", trace_dir) from None
    df = stats_frame(iter_set_stats(trace_dir, footprint=footprint))
    if df.empty:
        raise InputError("trace set holds no kernels", trace_dir)
    out = pd.DataFrame({
        "kernel_name": df["name"].astype(str),
        "tensor_flops": df["flops_tensor"].astype(float),
        "vector_flops": df["flops_vector"].astype(float),
    })
    if footprint and "sectors_32b" in df:
        out["dram_bytes"] = df["sectors_32b"].astype(float) * 32
    from simfront.traces.reader import TraceSet

    ts = TraceSet(trace_dir)
    out[LAUNCHES] = [ts.count(f) for f in df["file"]]
    out["category"] = out["kernel_name"].map(kernel_category)
    return out

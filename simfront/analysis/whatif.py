"""How far the model's what-ifs hold on hardware that really changes.

A trace set may ship kernel timelines of the same step measured under hardware conditions
(``TRACE_SET/whatif/<condition>.csv[.xz]`` plus ``.json``, written by
``simfront timeline``): the H100 whole (``h100-all``), on a green context's SMs
(``h100-sms64``), with part of its L2 held by persisting lines (``h100-l2set25``), or another
GPU (``h200-all``). Each condition has a GPU description that changes the same thing in the
model (:func:`condition_gpu`). For each condition this module pairs the timeline's launches
with the trace set's (name, grid and block; launches that Triton or cuBLAS configured
differently on the timing machine pair by name and position and are reported apart, as
library choices rather than hardware effects), runs the model at the baseline and at the
condition, and compares the two what-if ratios (condition over baseline), per kernel and
for the step.

Model runs are cached on disk per (trace set hash, GPU config hash, model version), since a
paper-size set takes about a minute of CPU per configuration.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.errors import InputError
from simfront.stats.matching import align, launch_key, mape

WHATIF_DIR = "whatif"
BASELINE = "h100-all"
#: The H200 as the model sees it: the H100 description with the H200's measured memory
#: (gpu_configs/h100-as-h200.yaml says where each figure comes from).
H200_PRESET = "h100-as-h200"


def _cache_dir() -> Path:
    return Path(os.environ.get("SIMFRONT_CACHE", Path.home() / ".cache" / "simfront")) / "whatif"


def conditions(trace_dir: str | Path) -> list[str]:
    """Condition labels with a timeline beside the trace set, baseline first."""
    d = Path(trace_dir) / WHATIF_DIR
    labels = sorted({re.sub(r"\.csv(\.xz)?$", "", p.name) for p in d.glob("*.csv*")})
    return sorted(labels, key=lambda s: (s != BASELINE, s))


def condition_gpu(label: str, base: str = "h100"):
    """The GPU description standing for a measured condition; InputError for a label this
    module does not know how to model."""
    from simfront.gpu import load_gpu
    from simfront.gpu.variants import with_variants

    gpu = load_gpu(base)
    device, _, cond = label.partition("-")
    if device == "h200" and cond == "all":
        return load_gpu(H200_PRESET)
    if device != "h100":
        raise InputError(f"no GPU description for the what-if condition {label!r}",
                         field="condition")
    if cond == "all":
        return gpu
    if m := re.fullmatch(r"sms(\d+)", cond):
        return with_variants(gpu, sm_count=int(m.group(1)))
    if m := re.fullmatch(r"l2set(\d+)", cond):
        left = gpu.l2.size.bytes - (int(m.group(1)) << 20)
        return with_variants(gpu, l2_size=f"{left >> 20} MiB")
    raise InputError(f"no GPU description for the what-if condition {label!r}",
                     field="condition")


def read_condition(trace_dir: str | Path, label: str) -> pd.DataFrame:
    from simfront.stats.ncu import read_ncu_csv

    d = Path(trace_dir) / WHATIF_DIR
    for name in (f"{label}.csv.xz", f"{label}.csv"):
        if (d / name).exists():
            return read_ncu_csv(d / name)
    raise InputError(f"no timeline for condition {label!r}", d)


# --- pairing ------------------------------------------------------------------------------

@dataclass
class Pairing:
    """Trace launch index -> timeline row, and which pairs differ in launch configuration."""

    pairs: list[tuple[int, int]]
    config_mismatch: set[int] = field(default_factory=set)    # trace indices
    unpaired_trace: list[int] = field(default_factory=list)

    @property
    def exact(self) -> list[tuple[int, int]]:
        return [(i, j) for i, j in self.pairs if i not in self.config_mismatch]


def pair_timeline(trace_keys: list[tuple], timeline: pd.DataFrame) -> Pairing:
    """Align a trace set's launch keys with a timeline's rows: first on (short name, grid,
    block); then, in the gaps between those pairs, on short name alone (the same kernel,
    launched with another configuration)."""
    tl_keys = [launch_key(n, g, b) for n, g, b in
               zip(timeline["kernel_name"], timeline["grid"], timeline["block"])]
    exact = align(trace_keys, tl_keys)
    pairs, mismatch = list(exact), set()
    bounds = [(-1, -1), *exact, (len(trace_keys), len(tl_keys))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        a = list(range(i0 + 1, i1))
        b = list(range(j0 + 1, j1))
        if not a or not b:
            continue
        for x, y in align([trace_keys[i][0] for i in a], [tl_keys[j][0] for j in b]):
            pairs.append((a[x], b[y]))
            mismatch.add(a[x])
    pairs.sort()
    paired = {i for i, _ in pairs}
    return Pairing(pairs, mismatch, [i for i in range(len(trace_keys)) if i not in paired])


# --- the model ----------------------------------------------------------------------------

def model_times(trace_dir: str | Path, gpu, progress: bool = False) -> pd.DataFrame:
    """Modelled time of every launch of a trace set on ``gpu`` (cached on disk): columns
    ``order``, ``kernel``, ``cycles``, ``time_s``, ``bound``."""
    from simfront.gpu import config_hash
    from simfront.sim.model.api import simulate_kernel
    from simfront.sim.model.backend import MODEL_VERSION
    from simfront.traces.reader import TraceSet
    trace_dir = Path(trace_dir)
    try:
        set_hash = json.loads((trace_dir / "manifest.json").read_text())["set_sha256"][:16]
    except (OSError, KeyError, ValueError):
        # an unregistered set: keyed by its kernel list's content
        import hashlib
        set_hash = hashlib.sha256((trace_dir / "kernelslist.g").read_bytes()).hexdigest()[:16]
    cache = _cache_dir() / f"{trace_dir.name}-{set_hash}-{config_hash(gpu)[:16]}-{MODEL_VERSION}.csv"
    if cache.exists():
        return pd.read_csv(cache)
    ts = TraceSet(trace_dir)
    kernels = list(ts.kernels())
    it = kernels
    if progress:
        from tqdm import tqdm

        it = tqdm(kernels, desc=f"model {trace_dir.name} @ {gpu.name}", unit="launch")
    rows = []
    clock = gpu.clocks.core.hz
    for order, k in enumerate(it):
        rec = simulate_kernel(k, gpu)
        rows.append({"order": order, "kernel": k.path.name.split(".")[0],
                     "cycles": rec["cycles"], "time_s": rec["cycles"] / clock,
                     "bound": rec.get("bound")})
    df = pd.DataFrame(rows)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, cache)
    return df


# --- the comparison -----------------------------------------------------------------------

@dataclass
class ConditionResult:
    """One condition of one trace set: model against hardware."""

    trace_set: str
    condition: str
    gpu: str
    kernels: pd.DataFrame            # per paired launch
    hw_step_ratio: float             # whole step's kernel time, condition / baseline
    hw_paired_ratio: float           # the paired launches only
    model_paired_ratio: float
    per_kernel_mape: float           # of the model's ratio against the hardware's
    weighted_mape: float             # the same, weighted by baseline hardware time
    n_paired: int
    n_config_mismatch: int
    n_launches: int

    @property
    def step_error(self) -> float:
        return self.model_paired_ratio / self.hw_paired_ratio - 1.0

    def summary(self) -> dict:
        return {"workload": self.trace_set, "condition": self.condition,
                "hw_ratio": self.hw_paired_ratio, "model_ratio": self.model_paired_ratio,
                "step_error": self.step_error, "per_kernel_mape": self.per_kernel_mape,
                "weighted_mape": self.weighted_mape, "paired": self.n_paired,
                "launches": self.n_launches, "config_mismatch": self.n_config_mismatch,
                "worst": ", ".join(self.worst(3)["short_name"])}

    def worst(self, n: int = 5) -> pd.DataFrame:
        """Kernels (by short name) whose what-if the model misses most, by the hardware
        time the miss is worth."""
        k = self.kernels[~self.kernels.config_mismatch]
        g = k.groupby("short_name").agg(launches=("hw_base_s", "size"),
                                        hw_base_s=("hw_base_s", "sum"),
                                        hw_cond_s=("hw_cond_s", "sum"),
                                        model_base_s=("model_base_s", "sum"),
                                        model_cond_s=("model_cond_s", "sum"))
        g["hw_ratio"] = g.hw_cond_s / g.hw_base_s
        g["model_ratio"] = g.model_cond_s / g.model_base_s
        g["error"] = g.model_ratio / g.hw_ratio - 1.0
        g["miss_s"] = (g.error * g.hw_cond_s).abs()
        return g.sort_values("miss_s", ascending=False).head(n).reset_index()


def _trace_keys(trace_dir: Path) -> list[tuple]:
    from simfront.traces.reader import TraceSet

    return [launch_key(k.header.name, k.header.grid, k.header.block)
            for k in TraceSet(trace_dir).kernels()]


def compare_condition(trace_dir: str | Path, condition: str, progress: bool = False,
                      base_model: pd.DataFrame | None = None) -> ConditionResult:
    """Model against hardware for one measured condition of a trace set."""
    from simfront.analysis.categories import short_name

    trace_dir = Path(trace_dir)
    keys = _trace_keys(trace_dir)
    hw_base = read_condition(trace_dir, BASELINE)
    hw_cond = read_condition(trace_dir, condition)
    if len(hw_base) != len(hw_cond):
        raise InputError(f"the {condition} timeline has {len(hw_cond)} launches, the "
                         f"{BASELINE} one {len(hw_base)}: not the same step",
                         trace_dir / WHATIF_DIR)
    pairing = pair_timeline(keys, hw_base)
    if base_model is None:
        base_model = model_times(trace_dir, condition_gpu(BASELINE), progress)
    gpu = condition_gpu(condition)
    cond_model = model_times(trace_dir, gpu, progress)
    rows = []
    for i, j in pairing.pairs:
        rows.append({"order": i, "kernel": base_model.kernel[i],
                     "short_name": short_name(str(hw_base.kernel_name.iloc[j])),
                     "grid": hw_base.grid.iloc[j], "config_mismatch": i in pairing.config_mismatch,
                     "hw_base_s": float(hw_base.duration_s.iloc[j]),
                     "hw_cond_s": float(hw_cond.duration_s.iloc[j]),
                     "model_base_s": float(base_model.time_s[i]),
                     "model_cond_s": float(cond_model.time_s[i]),
                     "bound_base": base_model.bound[i], "bound_cond": cond_model.bound[i]})
    k = pd.DataFrame(rows)
    k["hw_ratio"] = k.hw_cond_s / k.hw_base_s
    k["model_ratio"] = k.model_cond_s / k.model_base_s
    k["error"] = k.model_ratio / k.hw_ratio - 1.0
    ex = k[~k.config_mismatch]
    w = ex.hw_base_s / ex.hw_base_s.sum()
    return ConditionResult(
        trace_set=trace_dir.name, condition=condition, gpu=gpu.name, kernels=k,
        hw_step_ratio=float(hw_cond.duration_s.sum() / hw_base.duration_s.sum()),
        hw_paired_ratio=float(ex.hw_cond_s.sum() / ex.hw_base_s.sum()),
        model_paired_ratio=float(ex.model_cond_s.sum() / ex.model_base_s.sum()),
        per_kernel_mape=mape(ex.hw_ratio, ex.model_ratio),
        weighted_mape=float(np.sum(w * np.abs(ex.model_ratio / ex.hw_ratio - 1.0))),
        n_paired=len(ex), n_config_mismatch=len(pairing.config_mismatch),
        n_launches=len(keys))


def compare(trace_dir: str | Path, which: list[str] | None = None,
            progress: bool = False) -> list[ConditionResult]:
    """Every measured condition (or ``which``) of a trace set but the baseline."""
    trace_dir = Path(trace_dir)
    labels = [c for c in (which or conditions(trace_dir)) if c != BASELINE]
    if not labels:
        raise InputError("no what-if timelines beside this trace set (whatif/*.csv)", trace_dir)
    base = model_times(trace_dir, condition_gpu(BASELINE), progress)
    return [compare_condition(trace_dir, c, progress, base) for c in labels]


def summary_table(results: list[ConditionResult]) -> pd.DataFrame:
    return pd.DataFrame([r.summary() for r in results])


def summary_text(results: list[ConditionResult]) -> str:
    """One paragraph for a report: how far the model's what-ifs held for this step."""
    if not results:
        return ""
    parts = []
    for r in results:
        parts.append(f"{r.condition}: hardware {r.hw_paired_ratio:.3f}x, model "
                     f"{r.model_paired_ratio:.3f}x ({r.step_error:+.1%}; per kernel "
                     f"{r.per_kernel_mape:.1%})")
    return (f"Model what-ifs against the same step measured on hardware "
            f"({results[0].trace_set}, kernel time relative to the whole H100): "
            + "; ".join(parts) + ".")


def write_results(results: list[ConditionResult], out_dir: str | Path) -> Path:
    """Per-kernel tables (one CSV per condition) and the summary as CSV and JSON."""
    from simfront.atomic import write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        write_text(out / f"{r.trace_set}-{r.condition}.csv", r.kernels.to_csv(index=False))
    table = summary_table(results)
    write_text(out / "whatif_summary.csv", table.to_csv(index=False))
    write_text(out / "whatif_summary.json",
               json.dumps(table.to_dict(orient="records"), indent=1, default=float))
    return out

"""The model against the hardware on vector-work ablations: how much a kernel's time moves
when its vector work changes at the source, with its tiling pinned.

A trace set's ``ablation/`` folder (bench/device/ablate.sh, docs/workloads.md) holds one
folder per variant (``base``, ``exp2``, ``noexp``, ...): the variant's ``ablation.json``,
CUPTI timelines of the whole step (``timeline-<condition>.csv``) and the traces of the
ablated kernels alone. The hardware ratio of a kernel is its summed time in a variant's
timeline over base's, in the same condition; the model's is the same sum of the model's
times for the variant's traces, on the condition's GPU. That ratio is the derivative the
tensor:vector axis rests on, measured where no hardware knob exists.

The model runs each variant's traces with its L2 empty (``l2="cold"``): the folder holds the
ablated kernels without the step around them, so no previous kernel's data can be carried.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.analysis.wallclock import sweep_trace_sets
from simfront.analysis.whatif import condition, model_records
from simfront.core.errors import InputError
from simfront.core.timeline import gpu_prefix
from simfront.workloads.ablation import ALL_KERNELS, ablation_report

ABLATION_DIR = "ablation"


@dataclass(frozen=True)
class AblationFit:
    """One set's ablations: every (kernel, condition, variant) with both ratios."""

    set_name: str
    rows: pd.DataFrame

    @property
    def mape(self) -> float:
        return float(np.mean(np.abs(self.rows.error))) if len(self.rows) else float("nan")

    @property
    def worst(self) -> float:
        return float(np.max(np.abs(self.rows.error))) if len(self.rows) else float("nan")


def ablation_dir(trace_dir: str | Path) -> Path:
    d = Path(trace_dir)
    d = d / ABLATION_DIR if (d / ABLATION_DIR).is_dir() else d
    if not (d / "base").is_dir():
        raise InputError("no ablation variants (ablation/base/) in the trace set", d)
    return d


def ablation_gpu(d: Path) -> str:
    """The GPU preset the ablations ran on: the device the base variant's whole-GPU
    timeline names (``NVIDIA H200`` -> ``h200``), so each condition is that GPU's."""
    js = d / "base" / "timeline-all.json"
    try:
        name = json.loads(js.read_text()).get("device_name")
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"no readable whole-GPU timeline of the base variant ({exc})",
                         js) from None
    if not isinstance(name, str) or not name:
        raise InputError("the base variant's timeline names no device (device_name)", js)
    return gpu_prefix(name)


def model_kernel_times(variant_dir: Path, label: str, base_gpu: str = "h100") -> pd.Series:
    """The model's summed time (us) per kernel name over a variant's traces, on the GPU of
    the condition ``label`` (``all``, ``sms64``, ... of the base GPU)."""
    gpu = condition(f"{base_gpu}-{label}", base_gpu).model_gpu()
    recs = model_records(variant_dir, gpu, l2="cold")
    return recs.groupby("kernel_name").time_us.sum()


def compare(trace_dir: str | Path, base_gpu: str | None = None) -> AblationFit:
    """Hardware and model ratios (variant over base) per ablated kernel, condition and
    variant of one set; ``error`` is model ratio over hardware ratio, minus one. The model's
    GPU is ``base_gpu``'s preset, by default the one the ablations ran on."""
    d = ablation_dir(trace_dir)
    base_gpu = base_gpu or ablation_gpu(d)
    hw = [r for r in ablation_report(d) if r.kernel != ALL_KERNELS]
    cache: dict[tuple[str, str], pd.Series] = {}

    def model(variant: str, label: str) -> pd.Series:
        if (variant, label) not in cache:
            cache[variant, label] = model_kernel_times(d / variant, label, base_gpu)
        return cache[variant, label]

    rows = []
    for r in hw:
        mb, mv = model("base", r.condition), model(r.variant, r.condition)
        if r.kernel not in mb.index or r.kernel not in mv.index:
            raise InputError(f"{r.variant}: no trace of {r.kernel} to model", d / r.variant)
        rows.append({"kernel": r.kernel, "condition": r.condition, "variant": r.variant,
                     "launches": r.launches, "hw_base_us": r.base_us, "hw_us": r.time_us,
                     "hw_ratio": r.ratio, "model_base_us": float(mb[r.kernel]),
                     "model_us": float(mv[r.kernel]),
                     "model_ratio": float(mv[r.kernel] / mb[r.kernel])})
    df = pd.DataFrame(rows)
    if len(df):
        df["error"] = df.model_ratio / df.hw_ratio - 1
        # the ratio's two parts, model over hardware: the base time, and the time the
        # variant adds or saves (the vector work's own cost)
        df["base_model_over_hw"] = df.model_base_us / df.hw_base_us
        df["added_model_over_hw"] = ((df.model_us - df.model_base_us)
                                     / (df.hw_us - df.hw_base_us))
    return AblationFit(d.parent.name if d.name == ABLATION_DIR else d.name, df)


def vector_bound(trace_dir: str | Path, label: str = "all",
                 variant: str = "noexp") -> dict[str, float]:
    """What the hardware says removing the ablated kernels' transcendental work gives the
    step at most: the time ``variant`` saves on the ablated kernels over the step's summed
    kernel time, both from base's timeline of ``label``."""
    d = ablation_dir(trace_dir)
    rows = [r for r in ablation_report(d) if r.condition == label and r.variant == variant]
    step = next((r.base_us for r in rows if r.kernel == ALL_KERNELS), None)
    if not rows or not step:
        raise InputError(f"no {variant} timeline of condition {label}", d)
    saved = sum(r.base_us - r.time_us for r in rows if r.kernel != ALL_KERNELS)
    ablated = sum(r.base_us for r in rows if r.kernel != ALL_KERNELS)
    return {"step_us": step, "ablated_us": ablated, "saved_us": saved,
            "ablated_share": ablated / step, "step_speedup": step / (step - saved)}


def render_markdown(fits: list[AblationFit]) -> str:
    # a ratio is also off where the model's base time is: its two parts beside it
    lines = ["| set | kernel | condition | variant | hw ratio | model ratio | error | "
             "base, model/hw | time added, model/hw |",
             "|---|---|---|---|---|---|---|---|---|"]
    for f in fits:
        for r in f.rows.itertuples():
            lines.append(f"| {f.set_name} | {r.kernel} | {r.condition} | {r.variant} | "
                         f"{r.hw_ratio:.3f} | {r.model_ratio:.3f} | {r.error:+.1%} | "
                         f"{r.base_model_over_hw:.2f} | {r.added_model_over_hw:.2f} |")
    return "\n".join(lines)


def sweep_vector_bounds(results_h5: str | Path) -> dict[str, dict[str, float]]:
    """Workload name -> :func:`vector_bound` for the workloads of a sweep whose trace sets
    ship ablations (resolved as :func:`simfront.analysis.wallclock.sweep_step_shares`
    resolves them); the others are left out."""
    out = {}
    for name, trace_dir in sweep_trace_sets(results_h5).items():
        if (Path(trace_dir) / ABLATION_DIR / "base").is_dir():
            out[name] = vector_bound(trace_dir)
    return out


def bound_sentence(bound: dict[str, float]) -> str:
    """The balance report's line beside the model's speedup."""
    return (f"Measured on hardware (vector-work ablation, `noexp`): removing the exp and min "
            f"of the ablated SSD kernels, {bound['ablated_share']:.1%} of the step's kernel "
            f"time, makes the step at most {bound['step_speedup']:.4f}x faster; more vector "
            "units can only make that work cheaper, not remove it.")

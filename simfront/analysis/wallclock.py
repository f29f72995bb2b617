"""What a kernel-time speedup means for the wall-clock training step.

Simulators answer in kernel time. A training step's wall time also holds the gaps where the
GPU waits for the host to launch the next kernel: measured on the H100, a small step's GPU
is busy for a fraction of the step (the trace set's timeline, ``whatif/h100-all.json``,
records ``busy_share``). A faster GPU shrinks the busy part only, so

    wall speedup = 1 / ((1 - b) + b / s)

for a kernel-time speedup ``s`` and busy share ``b``, taking the host's launch gaps as
fixed (they are host work; a different GPU leaves them as they are). Where the busy share
is small, no GPU change moves the step much: the ceiling is ``1 / (1 - b)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from simfront.core.timeline import TimelineSummary, read_timeline_json
from simfront.sweep.inputs import resolve_traces
from simfront.sweep.spec import load_sweep
from simfront.analysis.whatif import WHATIF_DIR, base_label, has_base

@dataclass(frozen=True)
class StepShare:
    """A step's wall time and the GPU's busy share of it, from a measured timeline."""

    step_ms: float
    busy_ms: float
    kernel_ms: float
    source: str

    @property
    def busy_share(self) -> float:
        return min(1.0, self.busy_ms / self.step_ms)

    @property
    def ceiling(self) -> float:
        """The largest wall-clock speedup any GPU could give this step."""
        b = self.busy_share
        return float("inf") if b >= 1.0 else 1.0 / (1.0 - b)

    def wall_speedup(self, kernel_speedup: float) -> float:
        return wall_speedup(kernel_speedup, self.busy_share)


def wall_speedup(kernel_speedup: float, busy_share: float) -> float:
    """Wall-clock step speedup from a kernel-time speedup at a measured busy share."""
    if kernel_speedup <= 0:
        raise ValueError(f"kernel speedup must be positive, got {kernel_speedup}")
    if not 0.0 <= busy_share <= 1.0:
        raise ValueError(f"busy share must be within [0, 1], got {busy_share}")
    return 1.0 / ((1.0 - busy_share) + busy_share / kernel_speedup)


def from_timeline(summary: TimelineSummary, source: str = "") -> StepShare | None:
    """The step share of a timeline summary; None where it has no step time. The untimed
    step (the iteration before the timed one, no profiler attached) is the wall time;
    the busy time is the timed iteration's."""
    step = summary.extra.get("untimed_step_ms") or summary.step_ms
    if not step:
        return None
    return StepShare(step_ms=float(step), busy_ms=summary.busy_ms, kernel_ms=summary.kernel_ms,
                     source=source)


def step_share(trace_dir: str | Path) -> StepShare | None:
    """The measured step share of a trace set, if a base timeline (the whole GPU it was
    captured on, ``whatif/<gpu>-all.json``: simfront.analysis.whatif.base_label) ships
    beside it."""

    if not has_base(trace_dir):
        return None
    path = Path(trace_dir) / WHATIF_DIR / f"{base_label(trace_dir)}.json"
    return from_timeline(read_timeline_json(path), str(path))


def sweep_trace_sets(results_h5: str | Path) -> dict[str, Path]:
    """Workload name -> trace set of a sweep, resolved as the sweep resolved them. The
    sweep's folder (``.sweeps/NAME/``, beside its ``results.h5``) keeps the sweep file it ran;
    workloads whose trace set is gone are left out."""
    folder = Path(results_h5).parent
    spec_file = folder / "sweep.yaml"
    if not spec_file.exists():
        return {}
    try:
        meta = json.loads((folder / "sweep.json").read_text())
        base = Path(meta["sweep_file"]).parent
    except (OSError, ValueError, KeyError):
        base = folder
    out: dict[str, Path] = {}
    for w in load_sweep(spec_file).workloads:
        try:
            out[w.name] = Path(resolve_traces(w.traces, base))
        except FileNotFoundError:
            continue
    return out


def sweep_step_shares(results_h5: str | Path) -> dict[str, StepShare]:
    """Workload name -> measured step share, for the workloads of a sweep whose trace sets
    ship a baseline timeline (:func:`sweep_trace_sets`)."""
    out: dict[str, StepShare] = {}
    for name, trace_dir in sweep_trace_sets(results_h5).items():
        share = step_share(trace_dir)
        if share is not None:
            out[name] = share
    return out

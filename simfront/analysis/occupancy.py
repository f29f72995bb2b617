"""The model against the hardware on occupancy: how much a kernel's time moves when fewer of
its blocks fit on an SM, with nothing else about it changed.

A trace set's ``hold/`` folder holds one run of ``simfront timeline --hold-shared KIB,...
--trace-set SET``: the step on the whole GPU (``<gpu>-all``) and with KIB of shared memory
held on every SM around each launch of the held Triton kernels (``<gpu>-shmem<KIB>k``,
:mod:`simfront.workloads.shared_hold`). The run keeps its own base because Triton's
autotuning in another process may tile some kernels otherwise than the traces did; a
kernel whose base time in the run is off the set's what-if base (``whatif/<gpu>-all``) by
more than :data:`SAME_TILING` is left out as retuned: its traces are not what ran.

The hardware ratio of a held kernel is its summed time under the hold over the run's base,
over the launches paired exactly with the trace; the model's is the same sum of its times on
the GPU's ``shared_held`` variant over the GPU's own, the held kernels' launches alone, each
with its L2 empty (as the ablation comparison runs them: a kernel's own response).
That ratio is the derivative of a kernel's time in its resident warps: how well its warps
hide each other's latency, which a change of registers per thread (an ablation variant's
code) or of the SM's shared memory moves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.analysis.whatif import (EXACT, base_label, condition, model_records,
                                      pair_timeline, read_timeline, trace_launches)
from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv

HOLD_DIR = "hold"
#: A held kernel's base time in the hold's run within this share of the set's what-if base:
#: the same tiling as traced.
SAME_TILING = 0.03


@dataclass(frozen=True)
class HoldFit:
    """One set's holds: a row per (held kernel, hold) with both ratios, and the held
    kernels left out as retuned."""

    set_name: str
    rows: pd.DataFrame
    retuned: tuple[str, ...]

    @property
    def mape(self) -> float:
        return float(np.mean(np.abs(self.rows.error))) if len(self.rows) else float("nan")


def held_kib(stem: str) -> int:
    """``h200-shmem64k`` -> 64."""
    return int(stem.rsplit("shmem", 1)[1][:-1])


def hold_labels(trace_dir: str | Path) -> tuple[str, list[str]]:
    """The hold run's base label and its held conditions' labels, in KiB order."""
    d = Path(trace_dir) / HOLD_DIR
    stems = sorted({p.name.split(".")[0] for p in d.glob("*.csv*")}) if d.is_dir() else []
    bases = [s for s in stems if s.endswith("-all")]
    held = [s for s in stems if "-shmem" in s]
    if len(bases) != 1 or not held:
        raise InputError("no shared-memory hold run (hold/<gpu>-all and hold/<gpu>-shmem"
                         "<KIB>k timelines)", d)
    return bases[0], sorted(held, key=held_kib)


def _timeline(trace_dir: Path, stem: str) -> tuple[pd.DataFrame, dict]:
    d = trace_dir / HOLD_DIR
    csv = next((p for p in (d / f"{stem}.csv.xz", d / f"{stem}.csv") if p.is_file()), None)
    if csv is None:
        raise InputError(f"no timeline {stem}", d)
    js = d / f"{stem}.json"
    return read_ncu_csv(csv), (json.loads(js.read_text()) if js.is_file() else {})


def _per_kernel(trace: pd.DataFrame, times: pd.Series, ok: pd.Series) -> pd.Series:
    return times[ok].groupby(trace.short_name[ok]).sum()


def compare(trace_dir: str | Path, cache_dir: Path | None = None, progress=None,
            kernels: tuple[str, ...] | None = None) -> HoldFit:
    """Every held kernel (of ``kernels``, names; None: all) of every hold in the set's
    ``hold/`` run, model against hardware."""
    trace_dir = Path(trace_dir)
    base_stem, held = hold_labels(trace_dir)
    summaries = {s: _timeline(trace_dir, s) for s in held}
    names = sorted(set().union(*(set((summ.get("extra") or {}).get("held_kernels") or [])
                                 for _, summ in summaries.values())))
    if kernels is not None:
        names = [n for n in names if n in kernels]
    if not names:
        raise InputError("the hold run names no held kernel (of those asked for)",
                         trace_dir / HOLD_DIR)
    gpu = base_stem[:-4]
    trace = trace_launches(trace_dir)
    base_tl, _ = _timeline(trace_dir, base_stem)
    base_pair = pair_timeline(trace, base_tl)
    ref_tl, _ = read_timeline(trace_dir, base_label(trace_dir, gpu))
    ref_pair = pair_timeline(trace, ref_tl)
    both = (base_pair.match == EXACT) & (ref_pair.match == EXACT)
    run_us = pd.Series(np.where(both, base_tl.time_us.to_numpy()[base_pair.tl], np.nan),
                       index=trace.index)
    ref_us = pd.Series(np.where(both, ref_tl.time_us.to_numpy()[ref_pair.tl], np.nan),
                       index=trace.index)
    drift = _per_kernel(trace, run_us, both) / _per_kernel(trace, ref_us, both) - 1
    model_base = model_records(trace_dir, condition(f"{gpu}-all", gpu).model_gpu(), cache_dir,
                               progress, "cold", tuple(names))
    rows, retuned = [], set()
    for stem in held:
        tl, summ = summaries[stem]
        extra = summ.get("extra") or {}
        held_here = set(extra.get("held_kernels") or []) & set(names)
        clocks = extra.get("held_clock_ghz") or {}
        pair = pair_timeline(trace, tl)
        ok = both & (pair.match == EXACT) & trace.short_name.isin(held_here)
        cond = condition(stem, gpu)
        model = model_records(trace_dir, cond.model_gpu(), cache_dir, progress, "cold",
                              tuple(names))
        cond_us = pd.Series(np.where(ok, tl.time_us.to_numpy()[pair.tl], np.nan),
                            index=trace.index)
        hw_base, hw_cond = _per_kernel(trace, run_us, ok), _per_kernel(trace, cond_us, ok)
        m_base = _per_kernel(trace, trace.file.map(model_base.time_us), ok)
        m_cond = _per_kernel(trace, trace.file.map(model.time_us), ok)
        blocks = model["sim_blocks_per_sm"]
        blocks0 = model_base["sim_blocks_per_sm"]
        for k in hw_base.index:
            if abs(drift.get(k, np.inf)) > SAME_TILING:
                retuned.add(k)
                continue
            files = trace.file[ok & (trace.short_name == k)]
            rows.append({"set": trace_dir.name, "kernel": k,
                         "held_kib": held_kib(stem),
                         "launches": len(files),
                         "blocks": f"{int(blocks0[files].min())}->{int(blocks[files].min())}",
                         "hw_base_us": hw_base[k], "hw_clock_ghz": clocks.get(k, np.nan),
                         "hw_ratio": hw_cond[k] / hw_base[k],
                         "model_ratio": m_cond[k] / m_base[k]})
    df = pd.DataFrame(rows)
    if len(df):
        df["error"] = (df.model_ratio / df.hw_ratio - 1) * 100
    return HoldFit(trace_dir.name, df, tuple(sorted(retuned)))


def render_markdown(fits: list[HoldFit], min_us: float = 0.0) -> str:
    """The rows of every set as one table (kernels of at least ``min_us`` base time), and
    per set the mean |error|."""
    lines = ["| set | kernel | held | blocks per SM (model) | SM clock held (GHz) | hw ratio | "
             "model ratio | error |", "|---|---|---|---|---|---|---|---|"]
    for f in fits:
        for r in f.rows.sort_values(["kernel", "held_kib"]).itertuples():
            if r.hw_base_us < min_us:
                continue
            lines.append(f"| {f.set_name} | {r.kernel} | {r.held_kib} KiB | {r.blocks} | "
                         f"{r.hw_clock_ghz:.3f} | {r.hw_ratio:.3f} | {r.model_ratio:.3f} | "
                         f"{r.error:+.1f}% |")
    return "\n".join(lines)

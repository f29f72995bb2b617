"""ncu profiles of one launch per launch configuration, stood in for every launch of a step.

A model-size step repeats a few dozen launch configurations (function, grid, block, shared
memory) over its layers: the 130M Mamba2 step's 2,068 launches have 88. ncu's per-launch
cost made a profile of every launch too long for a device call (over 200 s per step with a
one-pass metric set), while ``ncu --filter-mode per-launch-config --launch-count 1``
profiles the first launch of each configuration of the window in about a minute. A trace
set keeps such a profile as ``ncu-configs.csv[.xz]`` (:data:`CONFIG_PROFILE`), apart from
``ncu.csv``, which is always one record per launch.

:func:`expand` turns it back into one row per launch of the window, in launch order, so
every analysis that takes a step's per-launch ncu frame (``characterize``, sums over the
step) takes it unchanged. One configuration is not always one amount of work: the grid of
a persistent cuBLAS GEMM does not grow with K, and PyTorch's elementwise kernels keep their
grid over tensors of other sizes (in the 130M Mamba2 step, one ``nvjet_sm90`` configuration
covers launches whose census differs 14x). Where the launches' own work is known (warp
instructions per trace file: the census a sampled trace's header carries), the profiled
record is scaled
to each launch by its work over the profiled launch's: extensive counts (time, cycles,
bytes, FLOPs, instructions) scale, rates and shares do not. Rows say what was done
(``ncu_profiled``, ``ncu_work_scale``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.core.errors import InputError
from simfront.core.launches import SIDECAR, Launch, ncu_launches, read_sidecar, window_launches
from simfront.core.ncu import read_ncu_csv

#: the file name of a per-configuration profile inside a trace set (compressed or not)
CONFIG_PROFILE = "ncu-configs.csv"

#: counts that grow with a launch's work; everything else (rates, shares, sizes) is kept
EXTENSIVE = ("duration_s", "time_us", "cycles", "instructions", "dram_read_bytes",
             "dram_write_bytes", "dram_bytes", "tensor_flops", "fp32_flops", "fp16_flops",
             "vector_flops", "flops")

#: how a launch found its record: its own configuration; the same function and grid (another
#: block: Triton chose other num_warps in the profiled process); the same function only
MATCH_CONFIG, MATCH_GRID, MATCH_NAME = "config", "grid", "name"

#: work ratios closer to 1 than this are left alone (the same work, traced twice)
SCALE_TOLERANCE = 0.02


def config_key(x: Launch) -> tuple:
    """The function, grid and block of a launch. ncu's per-launch-config filter also tells
    launches apart by shared memory; :func:`expand` uses it only to choose between records
    of one key, since a record with unknown shared memory must still match."""
    return (x.key, x.grid, x.block)


@dataclass
class ConfigExpansion:
    """A per-configuration profile laid over a step's launches."""

    frame: pd.DataFrame           # one row per launch of the window, launch order
    configs: int                  # configurations profiled
    unmatched: tuple[str, ...]    # window launches whose configuration ncu did not record
    unused: tuple[str, ...]       # profiled configurations no window launch has

    def _time_share(self, rows: pd.Series) -> float:
        f = self.frame
        if not len(f) or "duration_s" not in f:
            return 0.0
        return float(f.loc[rows, "duration_s"].sum() / f["duration_s"].sum())

    @property
    def scaled_share(self) -> float:
        """Share of the step's profiled time carried by launches scaled to their own work."""
        return self._time_share((self.frame["ncu_work_scale"] - 1).abs() > SCALE_TOLERANCE)

    @property
    def loose_share(self) -> float:
        """Share of the step's profiled time carried by launches matched less than exactly."""
        return self._time_share(self.frame["ncu_match"] != MATCH_CONFIG)

    def summary(self) -> str:
        f = self.frame
        s = (f"{len(f)} launches from {self.configs} profiled configurations"
             f" ({int(f['ncu_profiled'].sum())} launches profiled themselves)")
        loose = f.loc[f["ncu_match"] != MATCH_CONFIG]
        if len(loose):
            s += (f"; {len(loose)} launches by function and nearest grid (Triton chose another "
                  f"launch shape when profiled: {self.loose_share:.0%} of the time)")
        if self.unmatched:
            s += f"; {len(self.unmatched)} launches without a profiled function"
        if "ncu_work_scale" in f:
            n = int(((f["ncu_work_scale"] - 1).abs() > SCALE_TOLERANCE).sum())
            if n:
                s += (f"; {n} launches scaled to their own work "
                      f"({self.scaled_share:.0%} of the time)")
        return s


def find_config_profile(trace_dir: str | Path) -> Path | None:
    """The set's per-configuration profile, if it has one."""
    d = Path(trace_dir)
    found = sorted(d.glob(CONFIG_PROFILE + "*"))
    return found[0] if found else None


def expand(ncu: pd.DataFrame, launches: Sequence[Launch],
           work: Mapping[str, float] | None = None) -> ConfigExpansion:
    """One row per launch of ``launches`` (the window, in order), each the ncu record of its
    configuration, or where the profiled process launched the call with another shape, of
    the same function's nearest grid (``ncu_match``). ``work`` maps a trace file to its launch's work (warp instructions);
    with it, a launch whose trace differs in work from the launch ncu profiled gets the
    record scaled by the ratio. Launches whose configuration was not profiled are left out
    and named in ``unmatched``."""
    if not len(ncu):
        raise InputError("the per-configuration profile has no records")
    prof = ncu_launches(ncu)
    tiers = {MATCH_CONFIG: config_key, MATCH_GRID: lambda x: (x.key, x.grid),
             MATCH_NAME: lambda x: x.key}
    index: dict[str, dict] = {t: {} for t in tiers}
    for j, p in enumerate(prof):
        for t, key in tiers.items():
            index[t].setdefault(key(p), []).append(j)
    rows, orders, files, firsts, how, unmatched = [], [], [], [], [], []
    seen: dict[int, str | None] = {}        # ncu row -> file of the launch it profiled
    for x in launches:
        for t, key in tiers.items():
            cand = index[t].get(key(x))
            if cand:
                break
        else:
            unmatched.append(f"{x.key} grid {x.grid} block {x.block}")
            continue
        if t == MATCH_CONFIG:
            # ncu profiled the first launch of a configuration; a second record of the same
            # key differs in shared memory, so prefer the one that agrees
            j = next((c for c in cand if prof[c].shmem == x.shmem), cand[0])
        else:
            # Triton autotunes in every process: the profiled run may have picked another
            # block (num_warps) or grid (BLOCK sizes) for the same call; take the record of
            # the nearest grid
            j = min(cand, key=lambda c: abs(prof[c].n_ctas - x.n_ctas))
        first = t == MATCH_CONFIG and j not in seen
        if first:
            seen[j] = x.file
        rows.append(j)
        orders.append(x.order)
        files.append(x.file)
        firsts.append(first)
        how.append(t)
    frame = ncu.iloc[rows].reset_index(drop=True).copy()
    frame.insert(0, "trace_order", orders)
    frame.insert(1, "file", files)
    frame["ncu_row"] = rows
    frame["ncu_match"] = how
    frame["ncu_profiled"] = firsts
    scale = np.ones(len(frame))
    if work:
        for i, (j, f) in enumerate(zip(rows, files)):
            # a record matched by name alone stands for another call: no scaling from a
            # profiled launch we cannot name
            w, w0 = work.get(f or ""), work.get(seen.get(j) or "")
            if w and w0 and abs(w / w0 - 1) > SCALE_TOLERANCE:
                scale[i] = w / w0
    frame["ncu_work_scale"] = scale
    # ratios (intensity, utilizations, hit rates) keep: both of their terms scale alike
    for col in EXTENSIVE:
        if col in frame:
            frame[col] = frame[col].astype(float) * scale
    frame["launch"] = np.arange(len(frame))
    unused = tuple(f"{prof[j].key} grid {prof[j].grid}" for j in range(len(prof)) if j not in seen)
    return ConfigExpansion(frame, len(prof), tuple(unmatched), unused)


def census_work(trace_dir: str | Path) -> dict[str, float]:
    """Trace file -> the launch's warp instructions over its whole grid, from the census its
    header carries (sampled launches, tracer 1.1 on); launches traced whole have none, and
    are left unscaled (they are the small grids)."""
    from simfront.traces.reader import TraceSet

    out = {}
    for k in TraceSet(trace_dir).kernels():
        w = k.header.census_warp_instructions
        if w:
            out[k.path.name] = float(w)
    return out


def expand_trace_set(trace_dir: str | Path, work: Mapping[str, float] | None = None,
                     profile: str | Path | None = None) -> ConfigExpansion:
    """:func:`expand` for a trace set: its per-configuration profile over the launches of
    its window (``launches.jsonl``; a deduplicated repeat names its representative's file),
    scaled by ``work``, by default the traces' census (:func:`census_work`)."""
    d = Path(trace_dir)
    path = Path(profile) if profile else find_config_profile(d)
    if path is None:
        raise InputError(f"no per-configuration ncu profile ({CONFIG_PROFILE}[.xz])", d)
    if not (d / SIDECAR).is_file():
        raise InputError("no launch records to lay the profile over", d / SIDECAR)
    if work is None:
        work = census_work(d)
    return expand(read_ncu_csv(path), window_launches(read_sidecar(d / SIDECAR)), work)

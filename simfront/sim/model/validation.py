"""Checking the model against hardware: trace launches paired with ncu records of the same
step, and the error figures (MAPE, Pearson correlation) of modelled against measured cycles.

The ncu file of a step usually holds more launches than its trace set (the 2024 tracer
missed every ``cuLaunchKernelEx`` launch: Triton kernels, cuBLAS sm90 GEMMs), so launches
are *aligned*, not assumed to sit at the same positions: a longest-common-subsequence
alignment of the two launch lists in order, where two launches can pair only when their
function name, grid and block agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simfront.errors import TraceFormatError


def read_ncu(path: str | Path) -> pd.DataFrame:
    """The ncu records of a step (plain or compressed CSV), via ``simfront.stats.ncu``."""
    from simfront.stats.ncu import read_ncu_csv

    return read_ncu_csv(path)


def _key(name: str, grid, block) -> tuple:
    from simfront.analysis.categories import short_name

    g = tuple(int(x) for x in (grid.split(",") if isinstance(grid, str) else grid))
    b = tuple(int(x) for x in (block.split(",") if isinstance(block, str) else block))
    return (short_name(name), g, b)


def align(a: list, b: list) -> list[tuple[int, int]]:
    """Longest common subsequence of two key lists: index pairs (i in a, j in b)."""
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            L[i, j] = L[i + 1, j + 1] + 1 if a[i] == b[j] else max(L[i + 1, j], L[i, j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif L[i + 1, j] >= L[i, j + 1]:
            i += 1
        else:
            j += 1
    return pairs


@dataclass
class Pair:
    kernel: object          # KernelTrace
    order: int              # position in the trace set
    row: pd.Series          # the ncu record

    @property
    def launch(self) -> dict:
        """Registers and shared memory of the launch as ncu measured them."""
        out = {}
        r = self.row.get("regs_per_thread")
        if r is not None and r == r:
            out["regs"] = int(r)
        s = self.row.get("shmem_per_block")
        if s is not None and s == s:
            out["shmem"] = int(round(s))
        return out


def pair_launches(trace_dir: str | Path, ncu: pd.DataFrame) -> tuple[list[Pair], list[str]]:
    """Trace launches paired with ncu rows; the second list names unpaired trace launches."""
    from simfront.traces.reader import TraceSet

    ts = TraceSet(trace_dir)
    kernels = list(ts.kernels())
    ka = [_key(k.header.name, k.header.grid, k.header.block) for k in kernels]
    kb = [_key(n, g, b) for n, g, b in zip(ncu["kernel_name"], ncu["grid"], ncu["block"])]
    pairs = align(ka, kb)
    matched = {i for i, _ in pairs}
    unpaired = [kernels[i].path.name for i in range(len(kernels)) if i not in matched]
    return [Pair(kernels[i], i, ncu.iloc[j]) for i, j in pairs], unpaired


def mape(model, measured) -> float:
    model, measured = np.asarray(model, float), np.asarray(measured, float)
    return float(np.mean(np.abs(model - measured) / measured))


def pearson(model, measured) -> float:
    model, measured = np.asarray(model, float), np.asarray(measured, float)
    if len(model) < 2:
        return float("nan")
    return float(np.corrcoef(model, measured)[0, 1])


def readable(kernel) -> bool:
    """Whether a kernel trace reads to its end (the partial trace set's last file does not)."""
    try:
        for _ in kernel.iter_chunks():
            pass
        return True
    except TraceFormatError:
        return False

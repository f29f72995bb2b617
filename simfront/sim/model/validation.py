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

import pandas as pd

from simfront.core.errors import TraceFormatError
from simfront.core.ncu import read_ncu_csv
from simfront.stats.matching import align, launch_key
from simfront.traces.reader import TraceSet


def read_ncu(path: str | Path) -> pd.DataFrame:
    """The ncu records of a step (plain or compressed CSV), via ``simfront.core.ncu``."""
    return read_ncu_csv(path)


@dataclass
class Pair:
    kernel: object          # KernelTrace
    order: int              # position in the trace set
    row: pd.Series          # the ncu record

    @property
    def launch(self) -> dict:
        """Registers and shared memory of the launch as ncu measured them, and the grid's
        tensor-pipe instructions where the profile has them (how many tiles a sampled
        persistent GEMM's grid holds: ``simfront.sim.model.tiles``)."""
        out = {}
        r = self.row.get("regs_per_thread")
        if r is not None and r == r:
            out["regs"] = int(r)
        s = self.row.get("shmem_per_block")
        if s is not None and s == s:
            out["shmem"] = int(round(s))
        t = self.row.get("sm__inst_executed_pipe_tensor.sum")
        if t is not None and t == t:
            out["tensor_instructions"] = float(t)
        return out


def pair_launches(trace_dir: str | Path, ncu: pd.DataFrame) -> tuple[list[Pair], list[str]]:
    """Trace launches paired with ncu rows; the second list names unpaired trace launches."""
    ts = TraceSet(trace_dir)
    kernels = list(ts.kernels())
    ka = [launch_key(k.header.name, k.header.grid, k.header.block) for k in kernels]
    kb = [launch_key(n, g, b) for n, g, b in zip(ncu["kernel_name"], ncu["grid"], ncu["block"])]
    pairs = align(ka, kb)
    matched = {i for i, _ in pairs}
    unpaired = [kernels[i].path.name for i in range(len(kernels)) if i not in matched]
    return [Pair(kernels[i], i, ncu.iloc[j]) for i, j in pairs], unpaired


def readable(kernel) -> bool:
    """Whether a kernel trace reads to its end (the partial trace set's last file does not)."""
    try:
        for _ in kernel.iter_chunks():
            pass
        return True
    except TraceFormatError:
        return False

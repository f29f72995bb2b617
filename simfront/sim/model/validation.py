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


#: Paired launches whose warp instructions differ by more than this share did other work
#: (the same function, grid and block on a smaller or larger input: the held-out steps'
#: one-block sums executed 1,563 warp instructions under ncu and 2,499 when traced)
OTHER_WORK = 0.10


def same_work(model_instructions, ncu_instructions, whole=True,
              tolerance: float = OTHER_WORK):
    """Whether a paired launch executed the same warp instructions when traced (the model's
    ``instructions``) as under ncu (``sm__inst_executed.sum``), within ``tolerance``. Only
    a launch traced ``whole`` (every block's rows) counts its instructions exactly: a
    sampled launch's count is the census's and the model's scaling's, not a measurement to
    judge the pair by, so it is True, as where ncu has no count. Element-wise on arrays."""
    m = np.asarray(model_instructions, dtype=float)
    n = np.asarray(ncu_instructions, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        other = np.abs(m / n - 1.0) > tolerance
    out = ~(other & np.asarray(whole, dtype=bool))
    return out if out.ndim else bool(out)


def readable(kernel) -> bool:
    """Whether a kernel trace reads to its end (the partial trace set's last file does not)."""
    try:
        for _ in kernel.iter_chunks():
            pass
        return True
    except TraceFormatError:
        return False

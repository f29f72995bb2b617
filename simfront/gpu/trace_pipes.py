"""Which pipes a trace uses, so validation can reject a GPU with zero units of one."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from simfront.gpu.sm import PIPES


def pipes_used(trace_dir: "str | Path", kernels: "Iterable[str] | None" = None) -> set[str]:
    """Team pipe names of the instructions in a trace set (all kernels, or those named by
    their trace file); streams the traces chunk by chunk."""
    from simfront.traces.opcodes import classify
    from simfront.traces.reader import TraceSet

    ts = TraceSet(Path(trace_dir))
    chosen = [ts.kernel(k) for k in kernels] if kernels else list(ts.kernels())
    used: set[str] = set()
    for kernel in chosen:
        for chunk in kernel.iter_chunks():
            used |= {classify(chunk.opcodes[i]).pipe for i in np.unique(chunk.op)}
    return {p for p in used if p in PIPES}

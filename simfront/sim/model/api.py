"""Library entry points of the model: one kernel, or a whole trace set."""

from __future__ import annotations

import time

from simfront.sim.model.combine import combine
from simfront.sim.model.params import DEFAULT_PARAMS, ModelParams
from simfront.sim.model.simulate import run_kernel


def simulate_kernel(kernel, gpu, launch: dict | None = None,
                    params: ModelParams = DEFAULT_PARAMS) -> dict:
    """Model one kernel launch: ``kernel`` a :class:`simfront.traces.reader.KernelTrace`,
    ``gpu`` a GPU description (or a preset name), ``launch`` optional launch facts
    (``regs``, ``shmem``) where the trace header is not to be trusted. Returns a record with
    the columns of ``simfront.stats.schema`` (identity columns: kernel ones only)."""
    from simfront.gpu import load_gpu

    gpu = load_gpu(gpu)
    t0 = time.perf_counter()
    run = run_kernel(kernel, gpu, launch, params)
    rec = combine(run, gpu, params)
    h = kernel.header
    rec = {"kernel_id": kernel.kernel_id, "kernel_name": h.name,
           "grid": ",".join(map(str, h.grid)), "block": ",".join(map(str, h.block)),
           "complete": True, **rec}
    rec["sim_wall_s"] = time.perf_counter() - t0
    return rec

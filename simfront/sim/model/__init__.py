"""The built-in timing model: a fast trace-driven H100-class model, simfront's default
backend (``model``). Method and assumptions: docs/model.md.

    from simfront.sim.model import simulate_kernel
    rec = simulate_kernel(TraceSet(d).kernel("kernel-35636"), "h100")

Modules: ``occupancy`` (launch facts, blocks per SM), ``decode`` (opcode -> pipe, latency,
initiation interval), ``cache`` (sectored L1/L2 simulation, numba), ``issue`` (cycle-level
issue model of one SM, numba), ``simulate`` (the trace pass and the issue model of a
kernel), ``tiles`` (how a persistent GEMM hands out its tiles), ``clock`` (the SM clock a
kernel runs at), ``combine`` (bandwidth bounds, launch overhead, stalls, the record), ``params``
(the model's calibrated constants), ``validation`` (pairing with ncu records, MAPE),
``backend`` (the Backend).
"""

from __future__ import annotations

from simfront.sim.backend import register
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.backend import MODEL_VERSION, ModelBackend
from simfront.sim.model.params import DEFAULT_PARAMS, ModelParams

register("model", ModelBackend)

__all__ = ["simulate_kernel", "ModelBackend", "ModelParams", "DEFAULT_PARAMS",
           "MODEL_VERSION"]

"""The SM clock a kernel runs at, where the GPU description says how it falls under load
(``GPU.clock_limits``); without it, every kernel runs at ``clocks.core``.

The H100 does not run every kernel at its 1980 MHz (bench/RESULTS.md, *The SM clock in a
step*: ncu in green contexts, the paper steps on 132/96/64/32 SMs): kernels without
tensor-pipe work run at 1.96-1.99 GHz on every SM count; any tensor work (an SSD kernel's
tensor pipe busy 6% of the time, or a GEMM's 97%) holds the clock at 1.80-1.85 GHz on 64 to
132 SMs and 1.88-1.91 on 32; and the large GEMMs on many SMs hit the 700 W cap, 1.51 GHz for
the LM head's on 132 SMs, 1.73 on 96. So a what-if on fewer SMs speeds a tensor-bound
kernel's clock by up to a quarter while a memory-bound kernel's stays put.

The model runs the issue loop at the kernel's own clock (memory latencies in ns and
bandwidths in bytes a second become fewer cycles at a lower clock) and converts its cycles
at that clock. The L2 and interconnect clocks stay the description's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from simfront.gpu.units import Frequency
from simfront.sim.model.decode import PIPE_INDEX

#: what sets a kernel's clock (the record's ``sim_clock_limit``)
MAX, TENSOR, POWER = "max", "tensor", "power"


def tensor_share(limits, sms: int) -> float:
    """The share of the core clock a kernel with tensor work runs at on ``sms`` SMs:
    linear between the measured SM counts, held beyond the ends."""
    pts = sorted(limits.tensor, key=lambda t: t.sms)
    xs = [t.sms for t in pts]
    ys = [t.share for t in pts]
    return float(np.interp(sms, xs, ys))


def power_share(limits, sms: int, tensor_busy: float) -> float:
    """The share of the core clock the power cap allows a kernel whose tensor pipes are
    busy ``tensor_busy`` of its active cycles on ``sms`` SMs (1 or more: no limit)."""
    load = sms * tensor_busy / limits.power_sms
    if load <= 0:
        return float("inf")
    return limits.power_share * load ** -limits.power_exponent


def kernel_clock(gpu, sms: int, uses_tensor: bool, tensor_busy: float) -> tuple[float, str]:
    """The clock (Hz) a kernel runs at on ``gpu`` and what sets it (``MAX``, ``TENSOR``,
    ``POWER``). ``sms``: the SMs it keeps busy; ``tensor_busy``: its tensor pipes' busy
    share of an SM's active cycles."""
    core = gpu.clocks.core.hz
    limits = gpu.clock_limits
    if limits is None or not uses_tensor:
        return core, MAX
    t = tensor_share(limits, sms)
    p = power_share(limits, sms, tensor_busy)
    share, what = (t, TENSOR) if t <= p else (p, POWER)
    if share >= 1.0:
        return core, MAX
    return core * share, what


def at_tensor_limit(core: float, t: float) -> tuple[float, str]:
    """A tensor kernel's clock where the power cap allows its tensor limit ``t``."""
    return (core, MAX) if t >= 1.0 else (core * t, TENSOR)


def known_clock(prep, gpu) -> tuple[float, str] | None:
    """:func:`kernel_clock` of a prepared kernel where it does not depend on the issue
    model's busy share: the power cap allows at least the tensor limit even with the
    tensor pipes busy all the time (on fewer SMs, where the cap is far). None where the
    busy share decides (a run at the core clock tells it: :func:`run_clock`)."""
    core = gpu.clocks.core.hz
    limits = gpu.clock_limits
    uses = bool(prep.pipe_counts[PIPE_INDEX["tensor"]] > 0)
    if limits is None or not uses:
        return None  # the core clock: its one run is the run at the core clock
    sms = prep.active_sms
    t = tensor_share(limits, sms)
    # the cap's least share is at the greatest load (busy 1); a margin keeps a pow that
    # rounds the other way from deciding otherwise than kernel_clock does
    if t > power_share(limits, sms, 1.0) * (1.0 - 1e-9):
        return None
    return at_tensor_limit(core, t)


#: What the busy share's bound is taken up by before it decides, in case the steady
#: state's windows, added at their means, put a run's share above its blocks' own: a
#: margin, not a measurement (the paper steps' records are the same with and without the
#: bound, bench/RESULTS.md, *Model speed and the refactor*).
BOUND_MARGIN = 1.05


def bounded_clock(prep, gpu, ops) -> tuple[float, str] | None:
    """:func:`kernel_clock` where a bound on the tensor pipes' busy share decides it without
    a run: SM 0 takes at least a clock for every ``issue_width`` rows a sub-partition
    issues, so the share is at most the tensor pipes' initiation clocks per row issued
    (``ops``: ``simulate.op_timing``), times the issue width over the units, for the
    heaviest of SM 0's blocks. Where the power cap at that share still allows the tensor
    limit, the run at the core clock would find the tensor limit too (a GEMM's share is
    too high to tell: None)."""
    limits = gpu.clock_limits
    tp = PIPE_INDEX["tensor"]
    cols, start, end = prep.sm0_rows()
    W = prep.occ.warps_per_block
    if limits is None or not start.size or start.size % W:
        return None
    op = cols["op"]
    clocks = np.where(ops.pipe[op] == tp, ops.initiation[op], 0)
    cum = np.concatenate([[0], np.cumsum(clocks, dtype=np.int64)])
    per_block_t = (cum[end] - cum[start]).reshape(-1, W).sum(axis=1)
    per_block_r = (end - start).reshape(-1, W).sum(axis=1)
    share = float((per_block_t / np.maximum(per_block_r, 1)).max()
                  * gpu.sm.issue_width / max(1, gpu.sm.units("tensor")))
    sms = prep.active_sms
    t = tensor_share(limits, sms)
    if power_share(limits, sms, min(1.0, share * BOUND_MARGIN)) < t:
        return None
    return at_tensor_limit(gpu.clocks.core.hz, t)


def run_clock(run, gpu) -> tuple[float, str]:
    """:func:`kernel_clock` of a timed kernel (``simulate.KernelRun``): tensor work from
    its trace pass, the busy share from SM 0's simulated time."""
    uses = bool(run.prep.pipe_counts[PIPE_INDEX["tensor"]] > 0)
    return kernel_clock(gpu, run.prep.active_sms, uses, min(1.0, run.busy_share(gpu, "tensor")))


def at_clock(gpu, hz: float):
    """``gpu`` with its SM clock at ``hz``; the L2, interconnect and DRAM keep theirs."""
    return gpu.replace(clocks=dataclasses.replace(gpu.clocks, core=Frequency(int(round(hz)))))

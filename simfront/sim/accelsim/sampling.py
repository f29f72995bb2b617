"""Sampled launches on Accel-Sim: run the traced blocks as a grid of their own, scale back.

A capture made with ``--sample first:N`` keeps T of a launch's N blocks (header
``-tb sampling = ... traced T of N``, and from tracer 1.1 ``-tb census = W warp
instructions`` over all N). Accel-Sim asserts on a grid whose blocks are not all in the
trace, so the rewrite (:mod:`simfront.sim.accelsim.isa_compat`) cuts the grid to T blocks;
this module scales the T-block result to the whole grid the way the model does
(docs/model.md, *Sampled traces*):

    count scale = census / traced warp instructions      (N / T without a census)
    work scale  = count scale / (N / T)                  (1 without a census)
    time scale  = waves(N) / waves(T) x work scale,      waves(B) = ceil(B / (SMs x co-resident
                                                          blocks per SM))

Counts (instructions, cache accesses, DRAM bytes) are multiplied by the count scale; cycles
and time by the time scale. Co-resident blocks per SM are Accel-Sim's own, from the job's
``gpgpusim.config`` (threads, blocks, registers and shared memory per SM), since it is
Accel-Sim's concurrency that the T-block run measured. Every scaled record says so
(``accelsim_sampled``, ``accelsim_traced_blocks``, ``accelsim_time_scale``, ...).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

#: Record columns multiplied by the count scale (totals over the grid).
COUNT_COLUMNS = ("instructions", "thread_instructions", "l1_accesses", "l2_accesses",
                 "dram_read_bytes", "dram_write_bytes")
#: Record columns multiplied by the time scale.
TIME_COLUMNS = ("cycles", "time_us")


@dataclass(frozen=True)
class SmLimits:
    """What bounds co-resident blocks on one simulated SM (from gpgpusim.config)."""

    sm_count: int
    max_threads: int
    max_blocks: int
    registers: int
    shared_bytes: int


@dataclass(frozen=True)
class SampleScale:
    traced_blocks: int
    total_blocks: int
    blocks_per_sm: int
    sm_count: int
    count_scale: float
    work_scale: float
    time_scale: float
    census: int | None

    def as_dict(self) -> dict:
        return asdict(self)


def _opt(lines: list[str], name: str) -> str | None:
    val = None
    for ln in lines:
        t = ln.split(None, 1)
        if len(t) == 2 and t[0] == name:
            val = t[1].split("#", 1)[0].strip()  # the last setting wins, as in GPGPU-Sim
    return val


def sm_limits(config: str | Path) -> SmLimits:
    """SM count and per-SM limits of a ``gpgpusim.config``."""
    lines = Path(config).read_text(errors="replace").splitlines()

    def num(name: str, default: int, field: int = 0, sep: str = ":") -> int:
        v = _opt(lines, name)
        if v is None:
            return default
        try:
            return int(v.split(sep)[field].split()[0])
        except (ValueError, IndexError):
            return default

    clusters = num("-gpgpu_n_clusters", 1)
    per = num("-gpgpu_n_cores_per_cluster", 1)
    return SmLimits(sm_count=clusters * per,
                    max_threads=num("-gpgpu_shader_core_pipeline", 2048),
                    max_blocks=num("-gpgpu_shader_cta", 32),
                    registers=num("-gpgpu_shader_registers", 65536),
                    shared_bytes=num("-gpgpu_shmem_size", 0) or num("-gpgpu_shmem_per_block",
                                                                     49152))


def blocks_per_sm(lim: SmLimits, threads_per_block: int, nregs: int, shmem: int) -> int:
    """Co-resident blocks of one launch on one SM (at least 1)."""
    tpb = max(1, threads_per_block)
    warps = -(-tpb // 32)
    limits = [lim.max_threads // (warps * 32), lim.max_blocks]
    if nregs > 0:
        limits.append(lim.registers // (max(1, nregs) * warps * 32))
    if shmem > 0:
        limits.append(lim.shared_bytes // shmem)
    return max(1, min(limits))


def sample_scale(traced: int, total: int, traced_instructions: int, census: int | None,
                 lim: SmLimits, per_sm: int) -> SampleScale:
    """How a T-block run stands for the N-block launch (see the module doc)."""
    block_scale = total / traced
    count = block_scale
    work = 1.0
    if census and traced_instructions:
        count = census / traced_instructions
        work = count / block_scale
    wave = max(1, lim.sm_count * per_sm)
    time = math.ceil(total / wave) / math.ceil(traced / wave) * work
    return SampleScale(traced, total, per_sm, lim.sm_count, count, work, time, census)


def scale_record(rec: dict, s: SampleScale) -> dict:
    """A copy of an Accel-Sim record scaled from the traced blocks to the whole grid."""
    out = dict(rec)
    for c in COUNT_COLUMNS:
        if isinstance(out.get(c), (int, float)):
            out[c] = out[c] * s.count_scale
    for c in TIME_COLUMNS:
        if isinstance(out.get(c), (int, float)):
            out[c] = out[c] * s.time_scale
    if out.get("cycles"):
        out["ipc"] = out.get("instructions", math.nan) / out["cycles"]
    out.update({"accelsim_sampled": True, "accelsim_traced_blocks": s.traced_blocks,
                "accelsim_total_blocks": s.total_blocks,
                "accelsim_count_scale": s.count_scale, "accelsim_time_scale": s.time_scale,
                "accelsim_work_scale": s.work_scale,
                "accelsim_blocks_per_sm": s.blocks_per_sm,
                "accelsim_unscaled_cycles": rec.get("cycles")})
    return out

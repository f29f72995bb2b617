"""Occupancy: how many thread blocks of a launch one SM holds at a time.

Limits, each from the GPU description: warps per SM, blocks per SM, registers (allocated per
warp in units of ``REG_ALLOC_UNIT``) and shared memory (the largest carve-out, plus the
``SHMEM_RESERVED`` bytes the runtime keeps per block on sm_80 and later).
"""

from __future__ import annotations

from dataclasses import dataclass

from simfront.gpu.sm import SHMEM_RESERVED
from simfront.traces.validate import MAX_REGS, MAX_SHMEM

#: Register allocation granularity per warp (CUDA occupancy calculator, sm_70..sm_90).
REG_ALLOC_UNIT = 256
#: Registers assumed when no record of the launch gives a believable number.
DEFAULT_REGS = 32


@dataclass(frozen=True)
class Launch:
    """Launch parameters the model uses; ``source`` says where regs/shmem came from."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int
    shmem: int
    source: str = "header"

    @property
    def n_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def warps(self, warp_size: int = 32) -> int:
        return -(-self.threads // warp_size)


def launch_from(header, launch: dict | None = None) -> Launch:
    """Launch parameters of a kernel: registers and shared memory from ``launch`` (a dict
    with ``regs``/``shmem``, e.g. from ncu or the capture stage's launch record) when given,
    else from the trace header when the values are believable (a repaired header), else
    :data:`DEFAULT_REGS` registers and no shared memory (the 2024 tracer writes garbage)."""
    launch = launch or {}
    src = []
    regs = launch.get("regs")
    if regs is not None and 0 < int(regs) <= MAX_REGS:
        regs, src_r = int(regs), "launch record"
    elif 0 < header.nregs <= MAX_REGS:
        regs, src_r = header.nregs, "header"
    else:
        regs, src_r = DEFAULT_REGS, f"default {DEFAULT_REGS} (header nregs {header.nregs} invalid)"
    src.append(f"regs: {src_r}")
    shmem = launch.get("shmem")
    if shmem is not None and 0 <= int(shmem) <= MAX_SHMEM:
        shmem, src_s = int(shmem), "launch record"
    elif 0 <= header.shmem <= MAX_SHMEM and 0 < header.nregs <= MAX_REGS:
        # A header whose nregs is believable has been repaired; trust its shmem too.
        shmem, src_s = header.shmem, "header"
    else:
        shmem, src_s = 0, "default 0 (header unverified)"
    src.append(f"shmem: {src_s}")
    return Launch(tuple(header.grid), tuple(header.block), regs, shmem, "; ".join(src))


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_block: int
    limiter: str

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block


def occupancy(launch: Launch, gpu) -> Occupancy:
    sm = gpu.sm
    wpb = max(1, launch.warps(sm.warp_size))
    limits = {"warps": sm.max_warps // wpb, "blocks": sm.max_blocks}
    regs_per_warp = -(-launch.regs * sm.warp_size // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    if regs_per_warp:
        # Registers are split evenly over the sub-partitions; a warp lives in one of them,
        # one of them may hold another kernel's warp (``RegisterFile.held_on_one``).
        per_sp = sm.registers.registers // sm.sub_partitions
        warps = (per_sp // regs_per_warp * (sm.sub_partitions - 1)
                 + (per_sp - sm.registers.held_on_one) // regs_per_warp)
        limits["registers"] = warps // wpb
    if launch.shmem > 0:
        need = launch.shmem + SHMEM_RESERVED
        limits["shared memory"] = sm.l1.max_shared_per_sm.bytes // need
    limiter = min(limits, key=lambda k: limits[k])
    return Occupancy(max(1, limits[limiter]), wpb, limiter)


def l1_bytes(launch: Launch, occ: Occupancy, gpu, headroom: float) -> int:
    """L1 data cache left beside the shared memory the resident blocks use, the rest of the
    SRAM being L1, as the H100's driver carves it: every block holds ``SHMEM_RESERVED``
    bytes, shared memory or not, and the carve-out is the smallest of at least ``headroom``
    times what the resident blocks hold (``ModelParams.l1.carveout_headroom``)."""
    l1 = gpu.sm.l1
    need = headroom * occ.blocks_per_sm * (launch.shmem + SHMEM_RESERVED)
    carve = next((c.bytes for c in sorted(l1.shared_carveouts) if c.bytes >= need),
                 l1.max_shared_per_sm.bytes)
    return max(l1.line.bytes * l1.sets, l1.size.bytes - carve)

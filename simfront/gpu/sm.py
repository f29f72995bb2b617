"""The streaming multiprocessor: sub-partitions, execution pipes, tensor cores, registers.

Counts are per sub-partition (an SMSP: one warp scheduler with its own pipes and register
file slice), as on Volta through Hopper; an SM has ``sub_partitions`` of them. A pipe's
``lanes`` is the threads per clock one unit accepts, so a warp instruction occupies a unit
for ``warp_size / lanes`` clocks (its initiation interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil

from simfront.gpu.units import Size

# The team's pipe names (TEAM.md). 'other' (texture etc.) has no unit of its own here.
PIPES = ("tensor", "fp32", "fp16", "int", "sfu", "fp64", "lsu", "cbu", "uniform")
# Pipes that a "vector" scaling multiplies: the CUDA-core side of the SM (FP32 and FP16
# FMA, INT32, special functions). FP64 is left alone: it is a separate product decision.
VECTOR_PIPES = ("fp32", "fp16", "int", "sfu")
#: Shared memory the runtime reserves per block, shared memory or not (CUDA programming
#: guide, cc 8.0 and later).
SHMEM_RESERVED = 1024
TENSOR_DTYPES = ("bf16", "fp16", "tf32", "fp8", "int8", "fp64")


@dataclass(frozen=True)
class Pipe:
    """One kind of execution unit in a sub-partition.

    units: how many units of this kind a sub-partition has.
    lanes: threads per clock one unit accepts (32 = a warp instruction per clock).
    latency: clocks from issue until a dependent instruction can issue (published
        dependent-issue latency of the kind's common opcodes).
    """

    units: int
    lanes: int
    latency: int

    def initiation(self, warp_size: int = 32) -> int:
        """Clocks a unit is busy with one warp instruction."""
        return max(1, warp_size // self.lanes) if self.lanes > 0 else 0

    def warp_insts_per_clk(self, warp_size: int = 32) -> float:
        return self.units * self.lanes / warp_size


@dataclass(frozen=True)
class Pipes:
    """The non-tensor pipes of a sub-partition, one field per team pipe name."""

    fp32: Pipe
    fp16: Pipe
    int: Pipe
    sfu: Pipe
    fp64: Pipe
    lsu: Pipe
    cbu: Pipe
    uniform: Pipe

    def get(self, name: str) -> Pipe:
        return getattr(self, name)


@dataclass(frozen=True)
class TensorRates:
    """Dense multiply-accumulates per clock of ONE tensor core, by input type."""

    bf16: int
    fp16: int
    tf32: int
    fp8: int
    int8: int
    fp64: int

    def get(self, dtype: str) -> int:
        return getattr(self, dtype)


@dataclass(frozen=True)
class TensorPipe:
    """Tensor cores of a sub-partition.

    units: tensor cores per sub-partition.
    fma_per_clk: dense FMA (MAC) per clock per tensor core, by input type: the peak, which
        Hopper's warpgroup MMAs (HGMMA, wgmma) reach.
    latency: clocks from issue of an mma.sync (HMMA m16n8k16) to its result.
    mma_sync_share: the share of that peak a warp-level mma.sync (HMMA, IMMA, DMMA)
        reaches. A share rather than a rate so that scaling the tensor rates (the
        tensor:vector variants) scales mma.sync with them. 1 where the two are the same
        (Volta to Ampere have no warpgroup MMA).
    """

    units: int
    fma_per_clk: TensorRates
    latency: int
    mma_sync_share: Fraction = Fraction(1)

    # FMAs in one warp-level HMMA.16816 instruction (16 x 8 x 16): what Accel-Sim 1.x sees.
    HMMA_FMAS = 16 * 8 * 16

    def __post_init__(self) -> None:
        # YAML and JSON give "2/3" or 0.5; keep the exact fraction either way.
        object.__setattr__(self, "mma_sync_share", Fraction(str(self.mma_sync_share)))

    def initiation(self, dtype: str = "bf16") -> int:
        """Clocks one tensor core is busy with an HMMA.16816 of ``dtype`` at the peak rate
        (Accel-Sim 1.x's one tensor interval: it mostly runs warpgroup MMAs lowered to
        HMMA.16816, see simfront.sim.accelsim.lowering)."""
        return self.clocks_for(self.HMMA_FMAS, dtype)

    def mma_sync_initiation(self, dtype: str = "bf16") -> int:
        """Clocks one tensor core is busy with a warp-level mma.sync HMMA.16816."""
        return self.clocks_for(self.HMMA_FMAS, dtype, warp_level=True)

    def clocks_for(self, fmas: float, dtype: str = "bf16", warp_level: bool = False) -> int:
        """Whole clocks a tensor core is busy with ``fmas`` FMAs of ``dtype`` (0 without
        that input type); ``warp_level``: issued as mma.sync, at ``mma_sync_share``."""
        rate = Fraction(self.fma_per_clk.get(dtype))
        if warp_level:
            rate *= self.mma_sync_share
        return max(1, ceil(Fraction(fmas) / rate)) if rate > 0 else 0


@dataclass(frozen=True)
class RegisterFile:
    """Registers of an SM (split evenly among the sub-partitions).

    registers: 32-bit registers per SM.
    banks: register banks per SM (Accel-Sim: -gpgpu_num_reg_banks).
    read_ports: operand reads per bank per clock (Accel-Sim:
        -gpgpu_reg_file_port_throughput); scaled with the vector width by variants.
    collector_units: operand collector units per SM (generic collectors).
    max_per_thread: architectural limit per thread.
    held_on_one: registers that a warp of another kernel, resident on every SM, holds in one
        sub-partition (the ``shared_held`` variant's holder); 0 in a GPU's own description,
        and then left out of it.
    """

    registers: int
    banks: int
    read_ports: int
    collector_units: int
    max_per_thread: int = 255
    held_on_one: int = field(default=0, metadata={"omit_if_default": True})

    @property
    def size(self) -> Size:
        return Size(self.registers * 4)


@dataclass(frozen=True)
class L1Shared:
    """The unified L1 data cache / shared memory of an SM.

    size: the unified SRAM (L1 + shared).
    shared_carveouts: the shared-memory sizes the driver can carve out of it (CUDA
        programming guide, per compute capability); the rest is L1.
    max_shared_per_sm / max_shared_per_block: the largest carve-out a kernel can use.
    sets, line, sector: L1 geometry (associativity follows from size and carve-out).
    banks: shared-memory banks (4 B wide).
    l1_latency / shared_latency: load-to-use clocks of an L1 hit and of shared memory.
    """

    size: Size
    shared_carveouts: tuple[Size, ...]
    max_shared_per_sm: Size
    max_shared_per_block: Size
    sets: int
    line: Size
    sector: Size
    banks: int
    l1_banks: int
    l1_latency: int
    shared_latency: int
    mshr_entries: int


@dataclass(frozen=True)
class SM:
    """One SM. ``issue_width`` is warp instructions per scheduler per clock (ncu reports
    ``device__attribute_max_ipc_per_scheduler`` = 1 on the H100)."""

    sub_partitions: int
    warp_size: int
    max_warps: int
    max_blocks: int
    issue_width: int
    scheduler: str
    registers: RegisterFile
    pipes: Pipes
    tensor: TensorPipe
    l1: L1Shared
    # Which tensor input type a warp-level HMMA in a trace is taken to be when one
    # latency/initiation pair must stand for all of them (Accel-Sim 1.x has one).
    hmma_dtype: str = field(default="bf16")

    def units(self, pipe: str) -> int:
        """Units of ``pipe`` per sub-partition (team pipe names)."""
        if pipe == "tensor":
            return self.tensor.units
        return self.pipes.get(pipe).units

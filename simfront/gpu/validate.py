"""Checks that reject, before any job runs, a description no consumer can mean: the
physical rules of the description itself (positive sizes, lanes that divide the warp,
carve-outs that fit the L1, whole cache geometries). Every message names the field and the
rule. What one simulator additionally refuses lives with that simulator (Accel-Sim's:
simfront.sim.accelsim.checks) and is reached through ``Backend.check_gpu``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from simfront.core.errors import ConfigError
from simfront.gpu.gpu import GPU
from simfront.gpu.memory import L2_SET_HASHES, PARTITION_INDEXING
from simfront.gpu.sm import PIPES, TENSOR_DTYPES
from simfront.gpu.units import QUANTITY_TYPES

SCHEDULERS = ("lrr", "gto", "two_level_active", "rrr", "old", "warp_limiting")
IPOLY_BANKS = (16, 32, 64)


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def legal_set_counts(set_hash: str) -> Callable[[int], bool]:
    """Which set counts per bank a cache set-index hash accepts (gpu-cache.cc)."""
    if set_hash == "ipoly":
        return lambda s: s in IPOLY_BANKS
    if set_hash == "fermi":
        return lambda s: s in (32, 64)
    return _pow2   # linear masks with sets-1, xor folds into sets-1: powers of two


def _err(msg: str, field: str) -> ConfigError:
    return ConfigError(msg, field=field)


# ------------------------------------------------------------------ description rules

def _walk(obj: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(obj, QUANTITY_TYPES):
        yield path, obj
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _walk(getattr(obj, f.name), f"{path}.{f.name}" if path else f.name)
    elif isinstance(obj, tuple) and obj and not isinstance(obj[0], tuple):
        for i, x in enumerate(obj):
            yield from _walk(x, f"{path}[{i}]")
    else:
        yield path, obj


# Fields that may be zero (a pipe with no units, the zero shared-memory carve-out, ...).
_MAY_BE_ZERO = ("units", "shared_carveouts", "latency", "fma_per_clk", "mshr_entries",
                "held_on_one")


def _check_positive(gpu: GPU) -> None:
    for path, value in _walk(gpu):
        if path.startswith("raw"):
            continue
        zero_ok = any(part.split("[")[0] in _MAY_BE_ZERO for part in path.split("."))
        if isinstance(value, QUANTITY_TYPES):
            amount = next(iter(dataclasses.asdict(value).values()))
            if amount < 0 or (amount == 0 and not zero_ok):
                raise _err(f"must be positive, got {value}", path)
        elif isinstance(value, int) and not isinstance(value, bool):
            if value < 0 or (value == 0 and not zero_ok):
                raise _err(f"must be {'non-negative' if zero_ok else 'positive'}, got "
                           f"{value}", path)


def validate_description(gpu: GPU, pipes_used: "Iterable[str] | None" = None) -> None:
    """Rules any consumer of a description relies on (the built-in model included)."""
    _check_positive(gpu)
    sm = gpu.sm
    if sm.scheduler not in SCHEDULERS:
        raise _err(f"unknown scheduler {sm.scheduler!r}; valid: {', '.join(SCHEDULERS)}",
                   "sm.scheduler")
    if sm.hmma_dtype not in TENSOR_DTYPES:
        raise _err(f"unknown dtype {sm.hmma_dtype!r}; valid: {', '.join(TENSOR_DTYPES)}",
                   "sm.hmma_dtype")
    for name in PIPES[1:]:
        p = sm.pipes.get(name)
        if p.units and (p.lanes > sm.warp_size or sm.warp_size % p.lanes):
            raise _err(f"lanes must divide the warp size {sm.warp_size} (a warp instruction "
                       f"takes warp_size/lanes clocks), got {p.lanes}",
                       f"sm.pipes.{name}.lanes")
        if p.units and p.latency <= 0:
            raise _err("a pipe with units needs a positive latency",
                       f"sm.pipes.{name}.latency")
    if sm.tensor.units and sm.tensor.fma_per_clk.get(sm.hmma_dtype) <= 0:
        raise _err(f"tensor cores present but 0 {sm.hmma_dtype} FMA/clk",
                   f"sm.tensor.fma_per_clk.{sm.hmma_dtype}")
    if sm.tensor.units and sm.tensor.latency <= 0:
        raise _err("tensor cores need a positive latency", "sm.tensor.latency")
    if not 0 < sm.tensor.mma_sync_share <= 1:
        raise _err(f"a share of the peak must be in (0, 1], got {sm.tensor.mma_sync_share}",
                   "sm.tensor.mma_sync_share")
    for pipe in pipes_used or ():
        if pipe not in PIPES:
            continue
        if sm.units(pipe) == 0:
            raise _err(f"the trace uses the '{pipe}' pipe but the GPU has 0 {pipe} units "
                       f"(its instructions could never issue)",
                       "sm.tensor.units" if pipe == "tensor" else f"sm.pipes.{pipe}.units")
    regs = sm.registers
    for field, value in (("registers", regs.registers), ("banks", regs.banks),
                         ("collector_units", regs.collector_units)):
        if value % sm.sub_partitions:
            raise _err(f"{value} must split evenly over {sm.sub_partitions} sub-partitions",
                       f"sm.registers.{field}")
    if not 0 <= regs.held_on_one < regs.registers // sm.sub_partitions:
        raise _err(f"{regs.held_on_one} registers held must leave some of a sub-partition's "
                   f"{regs.registers // sm.sub_partitions}", "sm.registers.held_on_one")
    if sm.max_warps % sm.sub_partitions:
        raise _err(f"{sm.max_warps} warps must split evenly over {sm.sub_partitions} "
                   f"schedulers", "sm.max_warps")
    # Shared memory and its carve-outs.
    l1 = sm.l1
    carve = l1.shared_carveouts
    if not carve:
        raise _err("at least one shared-memory carve-out is needed", "sm.l1.shared_carveouts")
    if list(carve) != sorted(carve):
        raise _err("carve-outs must be listed in increasing order", "sm.l1.shared_carveouts")
    if carve[-1] > l1.size:
        raise _err(f"carve-out {carve[-1]} is larger than the unified L1/shared "
                   f"{l1.size}", "sm.l1.shared_carveouts")
    if l1.max_shared_per_sm > carve[-1]:
        raise _err(f"shared memory per SM {l1.max_shared_per_sm} is over the largest "
                   f"carve-out {carve[-1]}", "sm.l1.max_shared_per_sm")
    if l1.max_shared_per_block > l1.max_shared_per_sm:
        raise _err(f"shared memory per block {l1.max_shared_per_block} is over the "
                   f"shared memory per SM {l1.max_shared_per_sm}",
                   "sm.l1.max_shared_per_block")
    if l1.size.bytes % (l1.sets * l1.line.bytes):
        raise _err(f"L1 {l1.size} is not a whole number of ways of {l1.sets} sets x "
                   f"{l1.line}", "sm.l1.size")
    if not _pow2(l1.sets):
        raise _err(f"L1 sets must be a power of two, got {l1.sets}", "sm.l1.sets")
    # L2 geometry.
    l2 = gpu.l2
    if l2.set_hash not in L2_SET_HASHES:
        raise _err(f"unknown set hash {l2.set_hash!r}; valid: {', '.join(L2_SET_HASHES)}",
                   "l2.set_hash")
    sets = l2.sets(gpu.dram.channels)
    if sets != int(sets) or sets <= 0:
        raise _err(f"{l2.size} over {l2.banks(gpu.dram.channels)} banks x {l2.assoc} ways "
                   f"x {l2.line} gives {sets:g} sets per bank, not a whole number",
                   "l2.size")
    if not legal_set_counts(l2.set_hash)(int(sets)):
        need = ("16, 32 or 64" if l2.set_hash == "ipoly" else "32 or 64"
                if l2.set_hash == "fermi" else "a power of two")
        raise _err(f"the '{l2.set_hash}' set hash needs {need} sets per bank, got "
                   f"{int(sets)}", "l2.assoc")
    if l2.line.bytes % l2.sector.bytes or l1.line.bytes % l1.sector.bytes:
        raise _err("a line must be a whole number of sectors", "l2.sector")
    d = gpu.dram
    if d.partition_indexing not in PARTITION_INDEXING:
        raise _err(f"unknown partition indexing {d.partition_indexing!r}; valid: "
                   f"{', '.join(PARTITION_INDEXING)}", "dram.partition_indexing")
    if gpu.interconnect.model not in ("xbar", "booksim"):
        raise _err("interconnect model must be 'xbar' or 'booksim'", "interconnect.model")
    if gpu.empty_kernel_ns is not None and not gpu.empty_kernel_ns > 0:
        raise _err(f"empty_kernel_ns must be positive, got {gpu.empty_kernel_ns}",
                   "empty_kernel_ns")
    if gpu.ncu_fixed_cycles is not None and not gpu.ncu_fixed_cycles > 0:
        raise _err(f"ncu_fixed_cycles must be positive, got {gpu.ncu_fixed_cycles}",
                   "ncu_fixed_cycles")
    if gpu.clock_limits is not None:
        _check_clock_limits(gpu.clock_limits)


def _check_clock_limits(cl) -> None:
    if not cl.tensor:
        raise _err("clock_limits.tensor needs at least one SM count", "clock_limits.tensor")
    seen = set()
    for i, t in enumerate(cl.tensor):
        where = f"clock_limits.tensor[{i}]"
        if t.sms < 1:
            raise _err(f"an SM count must be positive, got {t.sms}", f"{where}.sms")
        if t.sms in seen:
            raise _err(f"SM count {t.sms} is given twice", f"{where}.sms")
        seen.add(t.sms)
        if not 0 < t.share <= 1:
            raise _err(f"a clock share must be in (0, 1] of clocks.core, got {t.share}",
                       f"{where}.share")
    if not 0 < cl.power_share:
        raise _err(f"power_share must be positive, got {cl.power_share}",
                   "clock_limits.power_share")
    if cl.power_sms < 1:
        raise _err(f"power_sms must be positive, got {cl.power_sms}", "clock_limits.power_sms")
    if not 0 <= cl.power_exponent <= 2:
        raise _err(f"power_exponent must be in [0, 2], got {cl.power_exponent}",
                   "clock_limits.power_exponent")


# ------------------------------------------------------------------ entry point

def validate(gpu: GPU, pipes_used: "Iterable[str] | None" = None) -> None:
    """Raise ConfigError (naming the field and the rule) if ``gpu`` is not a usable
    description. ``pipes_used``: the team pipe names a trace uses (e.g. from the trace
    stats), to reject zero-unit kinds. What a simulator additionally refuses is checked by
    its backend (``Backend.check_gpu``; Accel-Sim's rules: simfront.sim.accelsim.checks)."""
    validate_description(gpu, set(pipes_used or ()))

"""Variants of a GPU by value: ``with_variants(gpu, tensor_vector_ratio=8, ...)``.

Each parameter changes the description in one documented way and keeps the rest
consistent (pipeline widths and issue width follow the unit counts, register-file read
ports follow the vector width, L2 geometry stays legal for its set hash). The sweep stage
checks its axes against ``VARIANT_PARAMS``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from simfront.core.errors import ConfigError
from simfront.gpu.derived import tensor_vector_ratio as current_ratio
from simfront.gpu.gpu import GPU
from simfront.gpu.sm import SHMEM_RESERVED, TENSOR_DTYPES, VECTOR_PIPES, Pipe, TensorRates
from simfront.gpu.units import Bandwidth, Frequency, Size
from simfront.gpu.validate import legal_set_counts

RATIO_MODES = ("scale_vector", "scale_tensor")


@dataclass(frozen=True)
class VariantParam:
    name: str
    kind: str
    doc: str
    choices: tuple[str, ...] = ()


VARIANT_PARAMS: dict[str, VariantParam] = {p.name: p for p in (
    VariantParam("tensor_vector_ratio", "number or 'T:V'",
                 "Target dense bf16 tensor FMA : FP32 FMA per SM per clock (H100: 16). "
                 "Reached as ratio_mode says."),
    VariantParam("ratio_mode", "choice",
                 "How tensor_vector_ratio is reached. scale_vector: tensor cores stay, the "
                 "vector pipes (fp32, fp16, int, sfu) get f = old/new times the lanes "
                 "(more units per sub-partition when a unit would exceed a warp per clock), "
                 "and issue width, register-file read ports and operand collectors grow with "
                 "f so the extra lanes can be fed. scale_tensor: vector pipes stay, every "
                 "tensor dtype's FMA/clk per tensor core is multiplied by new/old (the HMMA "
                 "initiation interval shrinks or grows accordingly).",
                 RATIO_MODES),
    VariantParam("l2_size", "size", "Total L2 (e.g. '25 MiB'). Banks stay; sets change "
                 "when the set hash allows the new count, else associativity changes, to "
                 "the nearest whole way where the size is not one (the size modelled is "
                 "the description's)."),
    VariantParam("sm_count", "integer", "Number of SMs; the memory system (L2, DRAM) stays."),
    VariantParam("dram_bandwidth", "bandwidth", "Peak DRAM bandwidth (e.g. '4.8 TB/s'), "
                 "reached by scaling the DRAM clock; channels and timings in DRAM clocks "
                 "stay."),
    VariantParam("clock", "frequency", "SM core clock (e.g. '1755 MHz'); interconnect and "
                 "L2 clocks scale by the same factor, the DRAM clock stays."),
    VariantParam("empty_kernel_ns", "number", "What a kernel that does nothing lasts in a "
                 "stream, in ns: the front end's fixed cost per kernel (H100 896, H200 576: "
                 "bench/device/launch_cost.py)."),
    VariantParam("clock_limits", "choice", "'none': every kernel at the core clock, as if "
                 "the SM clock never fell under load (the H100's clock_limits hold tensor "
                 "work at 0.91-0.96 of it and the large GEMMs at the power cap).", ("none",)),
    VariantParam("shared_held", "size", "Shared memory that a block resident on every SM "
                 "holds (e.g. '64 KiB'; `simfront timeline --hold-shared`): kernels find "
                 "it and the 1 KiB the runtime reserves for that block less shared memory "
                 "per SM, one block slot less and, in one sub-partition, the registers of "
                 "its one warp; the L1 is what the largest carve-out leaves, the one the "
                 "holder asks for. Its warp slot is left out."),
    VariantParam("raw", "mapping", "Raw Accel-Sim options (name without '-', value), "
                 "merged over the description's own; validated like the rest."),
)}


def _fail(msg: str, param: str) -> ConfigError:
    return ConfigError(msg, field=param)


def parse_ratio(value: Any) -> Fraction:
    try:
        if isinstance(value, str) and ":" in value:
            t, v = value.split(":", 1)
            r = Fraction(t.strip()) / Fraction(v.strip())
        else:
            r = Fraction(str(value))
    except (ValueError, ZeroDivisionError) as exc:
        raise _fail(f"cannot read {value!r} as a ratio (e.g. 8 or '8:1')",
                    "tensor_vector_ratio") from exc
    if r <= 0:
        raise _fail(f"ratio must be positive, got {value!r}", "tensor_vector_ratio")
    return r


def with_variants(gpu: GPU, **params: Any) -> GPU:
    """A copy of ``gpu`` with the named parameters changed (see ``VARIANT_PARAMS``)."""
    unknown = sorted(set(params) - set(VARIANT_PARAMS))
    if unknown:
        raise _fail(f"unknown variant parameter '{unknown[0]}'; valid: "
                    f"{', '.join(VARIANT_PARAMS)}", unknown[0])
    mode = params.get("ratio_mode", "scale_vector")
    if mode not in RATIO_MODES:
        raise _fail(f"ratio_mode must be one of {', '.join(RATIO_MODES)}, got {mode!r}",
                    "ratio_mode")
    if "ratio_mode" in params and "tensor_vector_ratio" not in params:
        raise _fail("ratio_mode needs tensor_vector_ratio", "ratio_mode")
    out = gpu
    if "sm_count" in params:
        n = params["sm_count"]
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise _fail(f"sm_count must be a positive integer, got {n!r}", "sm_count")
        out = out.replace(sm_count=n)
    if "clock" in params:
        out = _with_clock(out, params["clock"])
    if "dram_bandwidth" in params:
        out = _with_dram_bandwidth(out, params["dram_bandwidth"])
    if "l2_size" in params:
        out = _with_l2_size(out, params["l2_size"])
    if "shared_held" in params:
        out = _with_shared_held(out, params["shared_held"])
    if "clock_limits" in params:
        v = params["clock_limits"]
        if v not in ("none", None, False):
            raise _fail(f"clock_limits can only be 'none', got {v!r}", "clock_limits")
        out = out.replace(clock_limits=None)
    if "empty_kernel_ns" in params:
        v = params["empty_kernel_ns"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise _fail(f"empty_kernel_ns must be a positive number of ns, got {v!r}",
                        "empty_kernel_ns")
        out = out.replace(empty_kernel_ns=float(v))
    if "tensor_vector_ratio" in params:
        target = parse_ratio(params["tensor_vector_ratio"])
        if mode == "scale_vector":
            out = _scale_vector(out, current_ratio(out) / target)
        else:
            out = _scale_tensor(out, target / current_ratio(out))
    if "raw" in params:
        raw = params["raw"]
        if not isinstance(raw, dict):
            raise _fail("raw must be a mapping of Accel-Sim option to value", "raw")
        merged = dict(out.raw)
        merged.update({str(k).lstrip("-"): str(v) for k, v in raw.items()})
        out = out.replace(raw=tuple(sorted(merged.items())))
    suffix = ",".join(f"{k}={_short(v)}" for k, v in sorted(params.items()))
    return out.replace(name=f"{gpu.name}[{suffix}]") if suffix else out


def _short(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{x}" for k, x in sorted(v.items())) + "}"
    return str(v)


def _positive(kind, value: Any, param: str, magnitude):
    """``value`` parsed as a quantity of ``kind``; errors name the variant parameter."""
    try:
        q = kind.parse(value)
    except (ValueError, TypeError) as exc:
        raise _fail(str(exc), param) from exc
    if magnitude(q) <= 0:
        raise _fail(f"{param} must be positive, got {value!r}", param)
    return q


def _with_clock(gpu: GPU, value: Any) -> GPU:
    f = _positive(Frequency, value, "clock", lambda q: q.hz)
    k = Fraction(f.hz, gpu.clocks.core.hz)
    c = gpu.clocks
    return gpu.replace(clocks=dataclasses.replace(
        c, core=f, interconnect=Frequency(round(c.interconnect.hz * k)),
        l2=Frequency(round(c.l2.hz * k))))


#: The registers the shared-memory holder's one warp holds in its sub-partition
#: (simfront/workloads/cuda/shared_hold.cu: 14 a thread as ptxas builds it for sm_90,
#: allocated 256 a warp at a time).
HOLDER_REGISTERS = 512


def _with_shared_held(gpu: GPU, value: Any) -> GPU:
    held = _positive(Size, value, "shared_held", lambda q: q.bytes)
    sm = gpu.sm
    l1 = sm.l1
    left = l1.max_shared_per_sm.bytes - held.bytes - SHMEM_RESERVED
    if left <= SHMEM_RESERVED:
        raise _fail(f"{held} held leaves no shared memory of the SM's "
                    f"{l1.max_shared_per_sm}", "shared_held")
    largest = max(l1.shared_carveouts, key=lambda c: c.bytes)
    l1 = dataclasses.replace(l1, max_shared_per_sm=Size(left), shared_carveouts=(largest,),
                             max_shared_per_block=Size(min(left, l1.max_shared_per_block.bytes)))
    regs = dataclasses.replace(sm.registers, held_on_one=HOLDER_REGISTERS)
    return gpu.replace(sm=dataclasses.replace(sm, l1=l1, registers=regs,
                                              max_blocks=sm.max_blocks - 1))


def _with_dram_bandwidth(gpu: GPU, value: Any) -> GPU:
    bw = _positive(Bandwidth, value, "dram_bandwidth", lambda q: q.bytes_per_s)
    d = gpu.dram
    per_clock = d.bus_width_bits // 8 * d.transfers_per_clock
    return gpu.replace(dram=dataclasses.replace(
        d, clock=Frequency(round(bw.bytes_per_s / per_clock))))


def _with_l2_size(gpu: GPU, value: Any) -> GPU:
    size = _positive(Size, value, "l2_size", lambda q: q.bytes)
    l2 = gpu.l2
    banks = l2.banks(gpu.dram.channels)
    legal = legal_set_counts(l2.set_hash)
    per_way = banks * l2.line.bytes
    sets = Fraction(size.bytes, per_way * l2.assoc)
    if sets.denominator == 1 and legal(int(sets)):
        return gpu.replace(l2=dataclasses.replace(l2, size=size))
    old_sets = l2.sets(gpu.dram.channels)
    assoc = Fraction(size.bytes, per_way * int(old_sets)) if old_sets else Fraction(0)
    if assoc.denominator == 1 and assoc > 0:
        return gpu.replace(l2=dataclasses.replace(l2, size=size, assoc=int(assoc)))
    # A size that is no whole number of ways (the H200's 192 banks make a way 1.5 MiB, so
    # 25 MiB is 16.7 of them) is taken at the nearest whole way: what a part built of these
    # banks could have. The description carries the size modelled.
    ways = round(assoc)
    if ways < 1:
        raise _fail(f"{size} is less than one way of {banks} banks x {int(old_sets)} sets of "
                    f"{l2.line} lines ({Size(per_way * int(old_sets))})", "l2_size")
    return gpu.replace(l2=dataclasses.replace(
        l2, size=Size(ways * per_way * int(old_sets)), assoc=ways))


def _scale_vector(gpu: GPU, f: Fraction) -> GPU:
    sm = gpu.sm
    ws = sm.warp_size
    pipes = sm.pipes
    changes: dict[str, Pipe] = {}
    for name in VECTOR_PIPES:
        p = pipes.get(name)
        total = p.units * p.lanes * f
        if total.denominator != 1 or total == 0:
            raise _fail(f"ratio needs {float(total):g} {name} lanes per sub-partition "
                        f"(x{float(f):g} of {p.units * p.lanes}); pick a ratio that gives "
                        f"whole lanes", "tensor_vector_ratio")
        total_i = int(total)
        lanes = max(d for d in range(1, ws + 1) if ws % d == 0 and total_i % d == 0)
        changes[name] = dataclasses.replace(p, units=total_i // lanes, lanes=lanes)
    new_pipes = dataclasses.replace(pipes, **changes)
    need = max(math.ceil(new_pipes.get(n).units * new_pipes.get(n).lanes / ws)
               for n in VECTOR_PIPES)
    grow = max(1, math.ceil(f))
    regs = sm.registers
    if f > 1:
        regs = dataclasses.replace(regs, read_ports=regs.read_ports * grow,
                                   collector_units=regs.collector_units * grow)
    new_sm = dataclasses.replace(sm, pipes=new_pipes, registers=regs,
                                 issue_width=max(sm.issue_width, need))
    return gpu.replace(sm=new_sm)


def _scale_tensor(gpu: GPU, g: Fraction) -> GPU:
    rates = gpu.sm.tensor.fma_per_clk
    new = {}
    for d in TENSOR_DTYPES:
        v = rates.get(d) * g
        if v.denominator != 1:
            raise _fail(f"ratio needs {float(v):g} {d} FMA/clk per tensor core; pick a "
                        f"ratio that gives whole numbers", "tensor_vector_ratio")
        new[d] = int(v)
    tensor = dataclasses.replace(gpu.sm.tensor, fma_per_clk=TensorRates(**new))
    return gpu.replace(sm=dataclasses.replace(gpu.sm, tensor=tensor))

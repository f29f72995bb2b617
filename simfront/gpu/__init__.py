"""gpu stage: typed, simulator-neutral GPU descriptions (the H100 and its variants),
derived peaks, and the description's own physical checks. Writing a description in a
simulator's own format (Accel-Sim's config files: simfront.sim.accelsim.config) and the
rules a simulator adds belong to that simulator's backend folder.

Library API (what the other stages call)::

    from simfront.gpu import load_gpu, with_variants, validate, derived, config_hash
    gpu = with_variants(load_gpu("h100"), tensor_vector_ratio=8, ratio_mode="scale_tensor")
    validate(gpu)
"""

from __future__ import annotations

from simfront.core.errors import ConfigError
from simfront.gpu.derived import Derived, derived, format_derived
from simfront.gpu.gpu import GPU, ClockLimits, Clocks, Interconnect, TensorClock
from simfront.gpu.hashing import config_hash
from simfront.gpu.memory import DRAM, L2, DRAMTiming
from simfront.gpu.presets import h100, load_gpu, preset_names
from simfront.gpu.sm import (PIPES, SM, TENSOR_DTYPES, VECTOR_PIPES, L1Shared, Pipe, Pipes,
                             RegisterFile, TensorPipe, TensorRates)
from simfront.gpu.units import Bandwidth, Frequency, Size
from simfront.gpu.validate import validate
from simfront.gpu.variants import RATIO_MODES, VARIANT_PARAMS, with_variants

__all__ = [
    "GPU", "SM", "Pipe", "Pipes", "TensorPipe", "TensorRates", "RegisterFile", "L1Shared",
    "L2", "DRAM", "DRAMTiming", "Clocks", "ClockLimits", "TensorClock", "Interconnect",
    "Size", "Frequency", "Bandwidth",
    "PIPES", "VECTOR_PIPES", "TENSOR_DTYPES", "ConfigError", "h100", "load_gpu",
    "preset_names", "with_variants", "VARIANT_PARAMS", "RATIO_MODES", "derived", "Derived",
    "format_derived", "config_hash", "validate",
]

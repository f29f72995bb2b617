"""gpu stage: typed GPU descriptions (the H100 and its variants), derived peaks,
validation, and Accel-Sim 1.x configuration writers/readers.

Library API (what the other stages call)::

    from simfront.gpu import load_gpu, with_variants, validate, derived, config_hash
    gpu = with_variants(load_gpu("h100"), tensor_vector_ratio=8, ratio_mode="scale_tensor")
    validate(gpu, accelsim=True)
    write_accelsim_config(gpu, "out/cfg")
"""

from __future__ import annotations

from simfront.errors import ConfigError
from simfront.gpu.accelsim import (accelsim_options, read_accelsim_config,
                                   write_accelsim_config)
from simfront.gpu.derived import Derived, derived, format_derived
from simfront.gpu.gpu import GPU, Clocks, Interconnect
from simfront.gpu.hashing import config_hash
from simfront.gpu.memory import DRAM, L2, DRAMTiming
from simfront.gpu.presets import h100, load_gpu, preset_names
from simfront.gpu.sm import (PIPES, SM, TENSOR_DTYPES, VECTOR_PIPES, L1Shared, Pipe, Pipes,
                             RegisterFile, TensorPipe, TensorRates)
from simfront.gpu.units import Bandwidth, Frequency, Size
from simfront.gpu.validate import validate, validate_accelsim_options
from simfront.gpu.variants import RATIO_MODES, VARIANT_PARAMS, with_variants

__all__ = [
    "GPU", "SM", "Pipe", "Pipes", "TensorPipe", "TensorRates", "RegisterFile", "L1Shared",
    "L2", "DRAM", "DRAMTiming", "Clocks", "Interconnect", "Size", "Frequency", "Bandwidth",
    "PIPES", "VECTOR_PIPES", "TENSOR_DTYPES", "ConfigError", "h100", "load_gpu",
    "preset_names", "with_variants", "VARIANT_PARAMS", "RATIO_MODES", "derived", "Derived",
    "format_derived", "config_hash", "validate", "validate_accelsim_options",
    "write_accelsim_config", "read_accelsim_config", "accelsim_options",
]

"""The per-kernel record: the one table every backend fills and every analysis reads.

A record is a flat dict; its columns are listed here with units, so the HDF5 files, the
pandas frames and the docs agree. A backend may leave a column out when it does not know the
value (it becomes NaN); it may add columns with the prefixes in ``OPEN_PREFIXES``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # "str", "int", "float", "bool"
    unit: str
    doc: str


COLUMNS: tuple[Column, ...] = (
    # identity
    Column("job_id", "str", "", "content-addressed id of the job that produced the record"),
    Column("backend", "str", "", "backend name: 'model' or 'accelsim'"),
    Column("backend_version", "str", "", "backend version string"),
    Column("config", "str", "", "GPU description name (preset or variant)"),
    Column("config_hash", "str", "", "SHA-256 of the GPU description"),
    Column("workload", "str", "", "trace set name in the store"),
    Column("trace_hash", "str", "", "SHA-256 of the kernel's trace content"),
    Column("kernel_uid", "int", "", "launch order within the job, from 1"),
    Column("kernel_id", "int", "", "the tracer's kernel id (the N of kernel-N.traceg)"),
    Column("kernel_name", "str", "", "mangled kernel name"),
    Column("grid", "str", "", "grid dimensions 'x,y,z'"),
    Column("block", "str", "", "block dimensions 'x,y,z'"),
    Column("complete", "bool", "", "the simulator finished this kernel"),
    Column("requested_backend", "str", "",
           "the backend the sweep asked for, where another one stood in (fallback)"),
    Column("fallback_reason", "str", "", "why the requested backend has no record here"),
    Column("launch_count", "int", "launches",
           "launches of the captured window the record stands for: a deduplicated capture's "
           "multiplicity.txt count (1 otherwise); step totals weight by it"),
    Column("same_launch_as", "float", "",
           "kernel_id of the identical launch that was run for this one (split sweeps)"),
    # time
    Column("cycles", "float", "cycles", "kernel duration in core clock cycles"),
    Column("time_us", "float", "us", "kernel duration at the config's core clock"),
    Column("instructions", "float", "warp instructions", "warp instructions executed"),
    Column("thread_instructions", "float", "thread instructions", "thread instructions executed"),
    Column("ipc", "float", "warp instructions/cycle", "whole-GPU issue rate"),
    Column("occupancy", "float", "fraction", "achieved warps per SM over the maximum"),
    Column("bound", "str", "", "the limiter the backend names for the kernel"),
    # caches and memory
    Column("l1_hit_rate", "float", "fraction", "L1 data cache hit rate (sectors)"),
    Column("l2_hit_rate", "float", "fraction", "L2 hit rate (sectors)"),
    Column("l1_accesses", "float", "accesses", "L1 data cache accesses"),
    Column("l2_accesses", "float", "accesses", "L2 accesses"),
    Column("dram_read_bytes", "float", "bytes", "DRAM bytes read"),
    Column("dram_write_bytes", "float", "bytes", "DRAM bytes written"),
    Column("dram_util", "float", "fraction", "DRAM bandwidth used over peak during the kernel"),
    # simulation cost
    Column("sim_wall_s", "float", "s", "wall time the backend took for the kernel"),
)

#: Families of columns whose members depend on the backend or config.
OPEN_PREFIXES: dict[str, str] = {
    "pipe_busy_": "fraction of cycles a pipe (tensor, fp32, fp16, int, sfu, lsu, ...) is busy",
    "stall_": "share of cycles (model) or counter value (accelsim) attributed to a stall reason",
    "l1d_": "Accel-Sim L1D counters, by access type and outcome",
    "l1i_": "Accel-Sim L1I counters",
    "l1c_": "Accel-Sim L1C counters",
    "l1t_": "Accel-Sim L1T counters",
    "l2_": "L2 counters, by access type and outcome",
    "icnt_": "interconnect figures",
    "sim_": "simulation cost figures",
    "accelsim_": "other Accel-Sim/GPGPU-Sim figures under their printed names, lower case "
                 "(docs/stats.md: which are per kernel, differenced, or as printed)",
}

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}


def is_known_column(name: str) -> bool:
    return name in BY_NAME or any(name.startswith(p) for p in OPEN_PREFIXES)

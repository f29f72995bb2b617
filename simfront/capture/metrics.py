"""The ncu metric set of `simfront profile`, documented.

``CORE`` is exactly the set of the shared reference profiles (``h100/ncu/*.ncu.csv``), 97
fully qualified metric names: every counter with its ``.avg/.max/.min/.sum`` rollups and
the throughputs as ``.pct_of_peak_sustained_elapsed`` (or ``_active``) of each rollup. ncu
2025.3 refuses a throughput named without its rollup and ratio, so names are spelled out.
``PIPES`` adds the instruction counts of the remaining pipes of the shared vocabulary
(fp16, fp64, control and uniform datapath), so each of the model's pipes has a measured
count. ``launch__*`` and ``device__attribute_*`` columns come with every raw-page row
without being asked for.
"""

from __future__ import annotations

from simfront.core.errors import InputError

#: metric (base name) -> what it is used for
CORE: dict[str, str] = {
    "gpu__time_duration": "kernel duration (ns)",
    "gpc__cycles_elapsed": "elapsed cycles",
    "sm__cycles_active": "cycles with at least one warp resident per SM",
    "sm__inst_executed": "warp instructions executed",
    "sm__inst_executed_pipe_tensor": "warp instructions on the tensor pipe",
    "sm__inst_executed_pipe_fma": "warp instructions on the FMA (fp32) pipe",
    "sm__inst_executed_pipe_alu": "warp instructions on the ALU (int/logic) pipe",
    "sm__inst_executed_pipe_xu": "warp instructions on the XU (SFU) pipe",
    "sm__inst_executed_pipe_lsu": "warp instructions on the load/store pipe",
    "sm__pipe_tensor_cycles_active": "tensor pipe busy, % of peak",
    "sm__pipe_fma_cycles_active": "FMA pipe busy, % of peak",
    "sm__pipe_alu_cycles_active": "ALU pipe busy, % of peak",
    "sm__ops_path_tensor_src_bf16_dst_fp32": "bf16 tensor-core operations",
    "sm__sass_thread_inst_executed_op_ffma_pred_on": "thread-level FFMA",
    "sm__sass_thread_inst_executed_op_fadd_pred_on": "thread-level FADD",
    "sm__sass_thread_inst_executed_op_fmul_pred_on": "thread-level FMUL",
    "sm__sass_thread_inst_executed_op_hfma_pred_on": "thread-level HFMA",
    "sm__throughput": "SM speed-of-light %",
    "gpu__compute_memory_throughput": "memory speed-of-light %",
    "dram__bytes_read": "DRAM bytes read",
    "dram__bytes_write": "DRAM bytes written",
    "dram__throughput": "DRAM throughput, % of peak",
    "l1tex__t_sector_hit_rate": "L1 hit rate %",
    "lts__t_sector_hit_rate": "L2 hit rate %",
    "sm__warps_active": "achieved occupancy %",
    "sm__maximum_warps_avg_per_active_cycle": "theoretical warps per SM",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy %",
    "smsp__maximum_warps_avg_per_active_cycle": "theoretical warps per SM sub-partition",
}

PIPES: dict[str, str] = {
    "sm__inst_executed_pipe_fp16": "warp instructions on the fp16 pipe",
    "sm__inst_executed_pipe_fp64": "warp instructions on the fp64 pipe",
    "sm__inst_executed_pipe_cbu": "warp instructions on the control/branch pipe",
    "sm__inst_executed_pipe_uniform": "warp instructions on the uniform datapath",
}

_ROLLUPS = ("avg", "max", "min", "sum")
#: base metrics that are ratios: named with their ratio suffix after each rollup
_RATIO = {
    "dram__throughput": "pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput": "pct_of_peak_sustained_elapsed",
    "sm__throughput": "pct_of_peak_sustained_elapsed",
    "sm__pipe_alu_cycles_active": "pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active": "pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active": "pct_of_peak_sustained_active",
    "sm__warps_active": "pct_of_peak_sustained_active",
}
#: metrics that are named as they are (already a single value)
_PLAIN = {"l1tex__t_sector_hit_rate": "l1tex__t_sector_hit_rate.pct",
          "lts__t_sector_hit_rate": "lts__t_sector_hit_rate.pct",
          "sm__maximum_warps_avg_per_active_cycle": "sm__maximum_warps_avg_per_active_cycle",
          "sm__maximum_warps_per_active_cycle_pct": "sm__maximum_warps_per_active_cycle_pct",
          "smsp__maximum_warps_avg_per_active_cycle":
              "smsp__maximum_warps_avg_per_active_cycle"}


def qualified(base: str) -> list[str]:
    """The fully qualified names ncu is asked for, for one base metric."""
    if base in _PLAIN:
        return [_PLAIN[base]]
    if base in _RATIO:
        return [f"{base}.{r}.{_RATIO[base]}" for r in _ROLLUPS]
    return [f"{base}.{r}" for r in _ROLLUPS]


#: Few enough counters for one replay pass, so ncu can afford every launch of a model-size
#: step (thousands of launches): time, cycles, DRAM bytes, L2 hit rate, instructions.
TIME: tuple[str, ...] = ("gpu__time_duration.sum", "gpc__cycles_elapsed.max",
                         "gpc__cycles_elapsed.avg.per_second", "dram__bytes_read.sum",
                         "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
                         "sm__inst_executed.sum")

#: What the SM clock a kernel ran at, and why, needs beyond ``TIME``: the cycles SMs were
#: active (mean and busiest, against the elapsed cycles: how many SMs the kernel kept busy)
#: and its tensor and FMA pipes' busy shares (the power it draws per active SM).
CLOCK: tuple[str, ...] = (*TIME, "sm__cycles_active.avg", "sm__cycles_active.max",
                          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                          "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active")

METRIC_SETS: dict[str, tuple[str, ...]] = {
    "time": TIME,
    "clock": CLOCK,
    "core": tuple(q for b in CORE for q in qualified(b)),
    "full": tuple(q for b in (*CORE, *PIPES) for q in qualified(b)),
}


def metric_list(name: str = "full") -> tuple[str, ...]:
    try:
        return METRIC_SETS[name]
    except KeyError:
        raise InputError(f"unknown metric set '{name}' (known: {', '.join(METRIC_SETS)})",
                         field="metrics") from None

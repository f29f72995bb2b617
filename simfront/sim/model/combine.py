"""From a KernelRun to the per-kernel record: kernel cycles, stall shares and the limiter.

    active  = max(SM 0's issue-model time x work scale, whole-GPU DRAM bytes / DRAM bytes
                  per clock, whole-GPU L2 sectors x sector / L2 bytes per clock)
    cycles  = launch overhead + active + a split reduction's finishing walk (``finish``)

Stall shares are shares of the kernel's cycles: ``stall_launch`` is the launch overhead,
the others split the active part as SM 0's sub-partitions spent it (only sub-partitions
that ever held a warp count: one warp per SM leaves three idle by construction, which says
nothing about the kernel). Where a whole-GPU bandwidth bound exceeds SM 0's time, the excess
is charged to that bandwidth.
"""

from __future__ import annotations

from simfront.sim.model.decode import PIPE_INDEX
from simfront.sim.model.issue import REASONS
from simfront.sim.model.params import ModelParams
from simfront.sim.model.simulate import KernelRun

#: Stall columns of the record (``stall_<name>``), shares of the kernel's cycles.
STALL_COLUMNS = ("launch", "idle", "dependency", "memory_latency", "dram_bandwidth",
                 "l2_bandwidth", "pipe_throughput", "lsu_throughput", "sync", "instruction_fetch",
                 "selected")


def launch_cycles(gpu, params: ModelParams, cold: bool = False) -> float:
    """The fixed cycles of a kernel on ``gpu``. ``cold`` (the kernel starts with an empty
    L2, as ncu profiles it): the GPU's ``ncu_fixed_cycles`` where its description has
    them. Otherwise, and in a step (``warm``): the fitted ``launch.cycles`` (ncu's, on the
    H100) plus what the GPU's front end takes beyond (or short of) the H100's in a stream:
    ncu times an empty kernel alone at 2.24 us on the H100 and 1.50 on the H200, a stream at
    0.90 and 0.58, and a step's what-ifs see the stream's difference."""
    if cold and gpu.ncu_fixed_cycles is not None:
        return float(gpu.ncu_fixed_cycles)
    own = gpu.empty_kernel_ns
    if own is None:
        return float(params.launch.cycles)
    extra = (own - params.launch.empty_kernel_ref_ns) * 1e-9 * gpu.clocks.core.hz
    return max(0.0, float(params.launch.cycles) + extra)


def combine(run: KernelRun, gpu, params: ModelParams) -> dict:
    sm = gpu.sm
    sector = gpu.l2.sector.bytes
    t = run.prep.totals
    dram_read = float(t[4] * sector)
    dram_write = float(t[5] * sector)
    t_dram, t_l2 = run.t_dram, run.t_l2
    # The work scale (a sampled trace's census over its traced blocks' share) stretches
    # SM 0's time as a whole; busy and occupancy are ratios within the simulated run.
    t_sim = float(run.t_sm)
    t_sm = t_sim * run.prep.work_scale
    active = max(t_sm, t_dram, t_l2, 1.0)
    launch_c = launch_cycles(gpu, params, cold=not run.prep.warm_l2)
    walk = run.prep.finish_walk_steps * params.grid.last_block_step_cycles
    cycles = launch_c + active + walk
    clock = gpu.clocks.core.hz

    # Stall shares of SM 0's used sub-partitions, scaled into the active part.
    st = run.stall.sum(axis=0).astype(float)
    total_sp = st.sum()
    shares = {name: 0.0 for name in STALL_COLUMNS}
    if total_sp > 0:
        scale = (t_sm / active) * (active / cycles)
        for i, name in enumerate(REASONS):
            shares[name] = st[i] / total_sp * scale
    excess = (active - t_sm) / cycles
    if excess > 0:
        shares["dram_bandwidth" if t_dram >= t_l2 else "l2_bandwidth"] += excess
    shares["launch"] = launch_c / cycles
    # the walk waits on one L2 round trip after another
    shares["memory_latency"] += walk / cycles

    busy = {pipe: run.busy_share(gpu, pipe) for pipe in PIPE_INDEX if pipe != "other"}

    # A whole-GPU bandwidth that sets the time is the limiter, even where SM 0's own stalls
    # (a store path draining into it, say) take a larger share of the time than its excess.
    if max(t_dram, t_l2) > t_sm:
        bound = "dram" if t_dram >= t_l2 else "l2"
    else:
        bound = _bound(shares, busy)
    occ = run.warp_cycles / max(t_sim, 1.0) / sm.max_warps
    rec = {
        "cycles": cycles,
        "time_us": cycles / clock * 1e6,
        "instructions": run.prep.instructions,
        "thread_instructions": run.prep.thread_instructions,
        "ipc": run.prep.instructions / cycles,
        "occupancy": min(1.0, occ),
        "bound": bound,
        "l1_hit_rate": float(t[1] / t[0]) if t[0] else float("nan"),
        "l2_hit_rate": float(t[3] / t[2]) if t[2] else float("nan"),
        "l1_accesses": float(t[0]),
        "l2_accesses": float(t[2]),
        "dram_read_bytes": dram_read,
        "dram_write_bytes": dram_write,
        "dram_util": (dram_read + dram_write) / (gpu.dram.bandwidth.bytes_per_s * cycles / clock),
    }
    for pipe, v in busy.items():
        rec[f"pipe_busy_{pipe}"] = v
    for name in STALL_COLUMNS:
        rec[f"stall_{name}"] = shares[name]
    rec.update({
        "sim_active_cycles": active,
        "sim_sm_cycles": t_sm,
        "sim_dram_bound_cycles": t_dram,
        "sim_l2_bound_cycles": t_l2,
        "sim_launch_cycles": launch_c,
        "sim_finish_walk_cycles": walk,
        "sim_blocks_per_sm": run.occ.blocks_per_sm,
        "sim_occupancy_limiter": run.occ.limiter,
        "sim_theoretical_occupancy": run.occ.warps_per_sm / sm.max_warps,
        "sim_regs": run.prep.launch.regs,
        "sim_shmem": run.prep.launch.shmem,
        "sim_launch_source": run.prep.launch.source,
        "sim_timed_blocks": run.timed_blocks,
        "sim_timed_instructions": run.timed_instructions,
        "sim_flops": run.prep.flops,
        "sim_sample_scale": run.prep.sample_scale,
        "sim_work_scale": run.prep.work_scale,
        "sim_traced_work_share": run.prep.traced_work_share,
        "sim_persistent": run.prep.persistent,
        "sim_schedule": run.prep.schedule,
        # "warm": the L2 started as the step's previous kernel left it (carry.py)
        "sim_l2_start": "warm" if run.prep.warm_l2 else "cold",
        "sim_l2_carried_sectors": float(t[6]),
    })
    return rec


def _bound(shares: dict[str, float], busy: dict[str, float]) -> str:
    """The limiter: the largest of launch overhead, latency (dependencies and memory
    latency), DRAM bandwidth, L2 bandwidth, a pipe's throughput (named by the busiest pipe),
    synchronisation, issue, and idle (tail/imbalance)."""
    busiest = max(busy, key=lambda p: busy[p]) if busy else "lsu"
    groups = {
        "launch": shares["launch"],
        "latency": shares["dependency"] + shares["memory_latency"],
        "dram": shares["dram_bandwidth"],
        "l2": shares["l2_bandwidth"],
        busiest: shares["pipe_throughput"] + (shares["lsu_throughput"] if busiest == "lsu"
                                               else 0.0),
        "lsu": shares["lsu_throughput"] + (shares["pipe_throughput"] if busiest == "lsu"
                                           else 0.0),
        "sync": shares["sync"],
        "fetch": shares["instruction_fetch"],
        "issue": shares["selected"],
        "tail": shares["idle"],
    }
    return max(groups, key=lambda k: groups[k])

"""The model's own constants: what is not a property of the GPU but of how the model
approximates it, grouped by the part they describe. Each says the measurement that set it;
the ones called calibrated were fitted on the ``mamba1_scan_step`` H100 records only
(``bench/bench_model.py --fit``), so that ``mamba2_lm_partial`` stays held out.

A setting is named ``group.field`` (``l2.dirty_share``): ``ModelParams.with_`` and a
backend job's ``options["params"]`` take such names.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class LaunchParams:
    #: Cycles from launch to the first block and from the last block's end to the kernel's
    #: end, as ncu's gpc__cycles_elapsed.max counts them (launch, block distribution, drain,
    #: memory flush). Calibrated: tiny kernels take ~4,500 elapsed cycles of which ~700 are
    #: SM-active.
    cycles: float = 3800.0
    #: The GPU ``cycles`` was fitted on: what an empty kernel lasts there in a stream (the
    #: H100's ``empty_kernel_ns``). A GPU whose description says otherwise takes the
    #: difference, in its core clocks, on every kernel (``combine.launch_cycles``): the
    #: H200's front end is 0.32 us quicker, which every sub-2-us kernel of the paper steps
    #: shows (0.22 us median; bench/device/launch_cost.py).
    empty_kernel_ref_ns: float = 896.0
    #: Clocks between a block slot freeing and the next block's first issue.
    block_start_cycles: int = 50


@dataclass(frozen=True)
class IssueParams:
    #: Clocks from the last warp's arrival at a barrier to the warps' next issue.
    barrier_latency: int = 20
    #: Clocks from a compare's issue to the issue of an instruction its predicate guards
    #: (``@P0 FMUL``), or of a branch or an LDGSTS that reads it; SEL and FSEL read it
    #: at the compare's own latency. Measured on the H100 by chains of one warp
    #: (bench/device/dep_latency.cu): FSETP then ``@P FMUL`` 18.1 clocks a link, ISETP then
    #: ``@P IMAD`` 18.1, less the FMUL's and IMAD's 4.1; FSETP then FSEL 8.1 (4 + 4).
    predicate_guard_latency: int = 14
    #: Clocks after a MUFU's issue that it reads its source register: an instruction that
    #: overwrites that register waits till then (the write after read the short scoreboard
    #: guards). From ncu's per-instruction samples of ``_chunk_scan_fwd`` on the fit step
    #: ``mamba2_lm-paper`` (bench/data/device/ssd_source/): the FMULs that overwrite the
    #: source of the MUFU.EX2 just before them wait 12.1 short-scoreboard clocks per issue
    #: (109 samples over 9 issues, four of them); ptxas renames the registers of a
    #: one-warp chain, so dep_latency.cu cannot make that hazard.
    sfu_source_read: int = 12
    #: Load-to-use of a constant-cache hit, in L1 hit latencies.
    const_latency_l1: float = 1.0
    #: Instruction cache line (log2 bytes) and the lines a miss prefetches after it.
    icache_line_shift: int = 7
    icache_prefetch_lines: int = 16
    #: Instruction-cache miss latency in DRAM load-to-use latencies: the code of a kernel
    #: is not in any cache after ncu's flush; calibrated.
    icache_miss_dram_share: float = 0.5
    #: An SM whose blocks repeat (a sampled trace's) runs them in windows of at least
    #: ``steady_waves`` waves; once the windows it ran, its first two left out, give the
    #: clocks of the windows left with a standard error of at most ``steady_tolerance`` of
    #: the kernel's clocks, those windows are added at the sample's means, not run
    #: (``issue.run_sm``). Set by bench/bench_steady.py against runs of every block.
    #: ``steady_waves`` 0 runs every block.
    steady_waves: int = 4
    steady_tolerance: float = 0.001


@dataclass(frozen=True)
class L1Params:
    #: The shared-memory carve-out the driver picks, as a multiple of what the resident
    #: blocks hold (their shared memory and the 1 KB each the runtime reserves, kernels
    #: without shared memory too): the smallest carve-out of at least this. ncu's
    #: ``launch__shared_mem_config_size`` over the shipped sets' launches: 2 picks the
    #: driver's carve-out for 74% of them; a 2,048-block copy runs with 32 KB carved out,
    #: an L1 of 224 KB, not 256 (``occupancy.l1_bytes``).
    carveout_headroom: float = 2.0
    #: An SM's L1 takes at most this many sectors a clock from the L2 (its miss path): 16-
    #: byte lanes and lines read whole, on 32 SMs where the L2 has room (load_shapes.cu,
    #: fitted by bench/bench_mem.py --fit).
    miss_sectors_per_clk: float = 1.99
    #: The fewest clocks a global load instruction holds the SM's L1, whatever it reads
    #: (a whole line, bf16 lanes, two lines of a sector: 3.6-4.2 clocks each on 32 SMs,
    #: load_shapes.cu; bench/bench_mem.py --fit).
    load_instr_clk: float = 3.95
    #: An alternative, off: judge the L1 reuse of lines only one block reads on its SM, as
    #: private reuse does the L2's (by the warp that touched the line last), rather than
    #: of lines one warp reads. It takes the LM-head softmax's logits to ncu's 2.7 reads
    #: but slows the tiny sets' cutlass GEMMs (bench/RESULTS.md, *private rows*).
    crowding_by_block: bool = False


@dataclass(frozen=True)
class L2Params:
    #: Share of the L2's capacity that still holds dirty data when a kernel ends: the rest
    #: of what the kernel wrote went to DRAM while it ran (``carry.limit_dirty``). Fitted on
    #: the ``mamba2_lm-130m`` H100 records' DRAM writes only (bench/bench_model.py
    #: --fit-dirty).
    dirty_share: float = 0.3
    #: The share of the L2 a warp's reuse of lines only its block touches finds
    #: (``cache._private_reuse``): on the H100 a kernel whose resident blocks re-read
    #: private rows keeps half of them at ~40 MB of its 52 MB (the H200 at 47 of 63), at
    #: 132, 64 or 32 SMs alike. Fitted on the H100 runs of bench/device/mem_rows.cu's rows
    #: (bench/bench_mem.py --fit); the H200's held out. The kernel's writes count in that
    #: reuse distance (its L2 traffic per read): on the H100, rows whose last pass writes
    #: them out keep half their re-reads at 29.3 MB, not 39.8 (mem_rows.cu's ``rowsw``,
    #: held out of the fit).
    private_capacity: float = 0.79
    #: The L2's input port (crossbar to L2) takes the whole GPU's store slots at this share
    #: of the L2's bandwidth (69 slots a clock on the H100 against the model's 160 sectors:
    #: five shapes of store on 132 SMs agree to 1%): a bound on the kernel beside the
    #: L2's and the DRAM's (``simulate.memory_bounds``), not a share each SM holds: shared
    #: out per SM it slowed kernels that store at their blocks' end past ncu's time
    #: (bench/RESULTS.md, *The shapes of a store*).
    write_share: float = 0.43
    #: The L2's read side, whole GPU, as shares of the model's L2 bandwidth in sectors a
    #: clock (160 on the H100), for ``LDG`` loads (what was measured; not LDGSTS or TMA):
    #: sectors (120 a clock: loads of whole lines or of two sectors a line on 132 SMs)
    #: and requests, a line each (68 a clock: loads of one sector a line, which take 1.75
    #: sectors' time there); bounds on the kernel (``simulate.memory_bounds``) like
    #: ``write_share``. Fitted on load_shapes.cu (bench/bench_mem.py --fit).
    read_share: float = 0.75
    read_request_share: float = 0.43


@dataclass(frozen=True)
class DramParams:
    #: DRAM load-to-use beyond the description's L2 hit latency plus DRAM access latency,
    #: in nanoseconds (cold TLBs after ncu's cache flush, the memory controller's queues,
    #: the crossbar); calibrated.
    extra_latency: float = 250.0
    #: DRAM queueing under the kernel's own load, in nanoseconds: load-to-use grows by this
    #: times load / (1 - load) (``simulate.dram_load_latency``), the load being the share of
    #: the sustainable DRAM bandwidth the kernel keeps busy. Fitted on the pointer chase of
    #: bench/device/mem_rows.cu on the H100 (ncu-timed, loads 0.3-0.9, the wait over the
    #: lightest launch's: bench/bench_mem.py --fit).
    queue_latency: float = 62.0
    #: A byte written loads the DRAM for the reads' wait this many times a byte read (the
    #: write-to-read turnarounds). Fitted, with a store's cost to the next block's loads on
    #: (``stores.load_ns``), on the fit step's logits cast on 132/96/64/32 SMs
    #: (bench/bench_fewer_sms.py --fit); the pointer chase with 1 or 2 lines written per
    #: step, whose wait over its lightest launch leaves that cost out, gives 3.3
    #: (bench/bench_mem.py --fit).
    queue_write_weight: float = 1.0
    #: The load the wait is capped at: above it the bandwidth bound (the issue loop's DRAM
    #: share) holds a kernel back, and a queue term would count that wait twice. Chosen.
    queue_max_load: float = 0.8
    #: Kernels whose load at the unloaded latency is below this run the issue loop once:
    #: their wait is under 16 ns, and each further run costs what the first does. Chosen.
    queue_min_load: float = 0.2
    #: Share of the DRAM peak a kernel can sustain (row switches, refresh).
    efficiency: float = 0.9
    #: What a byte written costs the DRAM beyond its transfer while the kernel also reads,
    #: in picoseconds: the bus's turns from reads to writes and back (``simulate.dram_time``).
    #: A turn takes as long in time on the H100's HBM3 as on the H200's HBM3e, so a faster
    #: DRAM loses more of its peak to it. Fitted on the H100's streams of
    #: bench/device/dram_mix.cu, write shares 0-0.67 (bench/bench_dram_mix.py --fit: 0.059);
    #: the H200's held out (its own fit: 0.067).
    turn_ps_per_byte: float = 0.059


@dataclass(frozen=True)
class StoreParams:
    #: An SM's store path, in sector slots a clock: a store or reduction holds the SM's
    #: memory path for its slots (per line it writes, its sectors, at least
    #: ``min_sectors``) at this rate, and at least ``instr_clk``; the SM's loads wait
    #: behind it. Measured on the H100 in green contexts of 32 SMs, where the L2's input
    #: port has room (bench/device/store_shapes.cu: 12 shapes of store, fitted by
    #: bench/bench_mem.py).
    sectors_per_clk: float = 0.97
    #: The fewest sector slots a written line takes, in the SM's store path and the L2's
    #: input port: one or two sectors of a line go in the time of two.
    min_sectors: int = 2
    #: The fewest clocks a store instruction holds the SM's store path, whatever it writes
    #: (bf16 lanes, one sector, a masked quarter of a warp: 3.3-4.7 clocks each).
    instr_clk: float = 4.2
    #: What each global store a block's warp issued after its last global load adds to the
    #: first load of the warp that takes its slot next, in ns: an SM's stores still
    #: draining hold back the next block's loads (a warp's own stores in a loop do not
    #: hold its own later loads back). The pointer chase measured a store's cost on the
    #: H100: one line written per step makes the next load wait 185 ns longer, two lines
    #: 302 (bench/bench_mem.py); least squares per store, 157.
    load_ns: float = 157.0
    #: What an SM's stores cost its DRAM loads, whichever warp issued them, in ns: a load
    #: waits this times u / (1 - u) longer, u the SM's store path busy share (its store
    #: slots over ``sectors_per_clk`` times its clocks, at most 0.8), found with the time it
    #: makes (``simulate.time_prepared``). bench/device/rw_split.cu: the same reads 1.22x
    #: slower on 32 SMs of the H200 beside stores from their own warp or another. Least
    #: RMS log error on the H200's dram_mix 1:1 streams with one load a warp, 1-8 blocks an
    #: SM on 32 and 64 SMs (bench/bench_dram_mix.py --fit-wait: 0.156 without, 0.098 at 70).
    load_wait_ns: float = 70.0


@dataclass(frozen=True)
class GridParams:
    #: Kernel-name prefixes of persistent grids, whose blocks are workers that take tiles:
    #: cuBLAS's sm90 GEMMs and cuDNN's sm90 flash attention (forward and backward) launch at
    #: most one block per SM (grid 132 on the H100) whatever the problem size; the trace
    #: tells how they hand out tiles (``tiles``). cuDNN's were seen as such on the fit step
    #: ``hybrid_lm-paper`` (green contexts: 1.26-1.27 / 1.78-1.79 / 3.34-3.38x their time
    #: on 96 / 64 / 32 SMs, where blocks of a grid of 132 would take 2 / 3 / 5 waves).
    persistent_kernels: tuple[str, ...] = ("nvjet_sm90_",
                                           "cudnn_generated_fort_native_sdpa_sm90_flash_")
    #: Clocks a step of a split reduction's finishing walk (``finish.walk_steps``):
    #: the last block of a column to count in on its semaphore reads the column's partials
    #: one dependent L2 round trip a step, after the grid's other blocks are done. Measured
    #: on the H200 by bench/device/split_tail.cu (PyTorch's idiom and its SASS's walk, four
    #: scalar loads a step): 446 clocks a step from 4 to 49 steps (bench/RESULTS.md, *A
    #: split reduction's last block*); the H100's L2 round trip is the H200's (*An L2 hit's
    #: latency, line by line*).
    last_block_step_cycles: float = 446.0


@dataclass(frozen=True)
class ModelParams:
    launch: LaunchParams = field(default_factory=LaunchParams)
    issue: IssueParams = field(default_factory=IssueParams)
    l1: L1Params = field(default_factory=L1Params)
    l2: L2Params = field(default_factory=L2Params)
    dram: DramParams = field(default_factory=DramParams)
    stores: StoreParams = field(default_factory=StoreParams)
    grid: GridParams = field(default_factory=GridParams)

    def with_(self, **changes: Any) -> "ModelParams":
        """These settings changed, each named ``group.field`` (``l2.dirty_share``)."""
        groups: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            group, _, key = name.partition(".")
            sub = getattr(self, group, None) if group in _GROUPS else None
            if sub is None or key not in {f.name for f in fields(sub)}:
                raise KeyError(f"ModelParams: no setting {name!r}; the settings are "
                               f"{', '.join(self.as_dict())}")
            groups.setdefault(group, {})[key] = value
        return replace(self, **{g: replace(getattr(self, g), **kv) for g, kv in groups.items()})

    def as_dict(self) -> dict[str, Any]:
        """Every setting by its ``group.field`` name."""
        return {f"{g}.{f.name}": getattr(getattr(self, g), f.name)
                for g in _GROUPS for f in fields(getattr(self, g))}


_GROUPS = tuple(f.name for f in dataclasses.fields(ModelParams))

DEFAULT_PARAMS = ModelParams()

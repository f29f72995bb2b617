"""The model's own constants: what is not a property of the GPU but of how the model
approximates it. Each says where its value comes from; the calibrated ones were fitted on
the ``mamba1_scan_step`` H100 records only (``bench/bench_model.py --fit``), so that
``mamba2_lm_partial`` stays held out; ``l2_dirty_share`` on ``mamba2_lm-130m``'s DRAM writes
only (``--fit-dirty``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ModelParams:
    #: Cycles from launch to the first block and from the last block's end to the kernel's
    #: end, as ncu's gpc__cycles_elapsed.max counts them (launch, block distribution, drain,
    #: memory flush). Calibrated: tiny kernels take ~4,500 elapsed cycles of which ~700 are
    #: SM-active.
    launch_cycles: float = 3800.0
    #: DRAM load-to-use beyond the description's L2 hit latency plus DRAM access latency,
    #: in nanoseconds (cold TLBs after ncu's cache flush, the memory controller's queues,
    #: the crossbar); calibrated.
    dram_extra_latency: float = 250.0
    #: Clocks between a block slot freeing and the next block's first issue.
    block_start_cycles: int = 50
    #: Clocks from the last warp's arrival at a barrier to the warps' next issue.
    barrier_latency: int = 20
    #: Load-to-use of a constant-cache hit, in L1 hit latencies.
    const_latency_l1: float = 1.0
    #: Instruction cache line (log2 bytes) and the lines a miss prefetches after it.
    icache_line_shift: int = 7
    icache_prefetch_lines: int = 16
    #: Instruction-cache miss latency in DRAM load-to-use latencies: the code of a kernel
    #: is not in any cache after ncu's flush; calibrated.
    icache_miss_dram_share: float = 0.5
    #: Share of the DRAM peak a kernel can sustain (row switches, refresh, read/write turns).
    dram_efficiency: float = 0.9
    #: Share of the L2's capacity that still holds dirty data when a kernel ends: the rest
    #: of what the kernel wrote went to DRAM while it ran (``carry.limit_dirty``). Fitted on
    #: the ``mamba2_lm-130m`` H100 records' DRAM writes only (bench/bench_model.py).
    l2_dirty_share: float = 0.3
    #: Judge a warp's reuse of lines only it touches at the reuse distance the resident
    #: warps make (``cache._private_reuse``). Off by default: it brings the LM-head
    #: softmax's DRAM reads to ncu's, but makes its response to fewer SMs wrong (docs/model.md,
    #: *Method*, step 2), and the what-ifs are what the model is for.
    private_reuse: bool = False
    #: Judge a warp's L1 reuse of lines only it reads on its SM at the lines the SM's
    #: resident warps touch meanwhile (``cache.mark_l1_owners``). Unlike
    #: ``private_reuse`` it does not move with the SM count (an SM's resident warps do not).
    l1_crowding: bool = True
    #: The L1 takes a cycle per 128-byte line a global access touches (``cache``):
    #: uncoalesced lanes cost a line each, not a quarter of one. Off by default: it brings
    #: the paper sets' scattered copies nearer ncu, but slows the cutlass GEMMs of the tiny
    #: sets, which the model already times too slow (bench/RESULTS.md, *the L1 under
    #: resident warps*).
    l1_line_cycles: bool = False
    #: Extrapolate a sampled trace's DRAM reads by what its blocks share along each grid
    #: dimension it spans in part (``sharing``): the heads of a Triton SSD kernel re-read
    #: the same B and C, which scaling by block count counts once per head. Needs a trace
    #: whose blocks span two values of a dimension (box sampling); a no-op otherwise.
    sample_sharing: bool = True
    #: Kernel-name prefixes of persistent grids with a dynamic tile scheduler: cuBLAS's
    #: sm90 GEMMs launch one block per SM (grid 132 on the H100) whatever the problem size.
    persistent_kernels: tuple[str, ...] = ("nvjet_sm90_",)

    def with_(self, **changes) -> "ModelParams":
        return replace(self, **changes)


DEFAULT_PARAMS = ModelParams()

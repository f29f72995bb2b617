"""The ModelParams settings that take the model back to an earlier version, for the
benchmark sections made with that version or comparing against it: with them pinned, a
later model version does not change what those sections show (bench_model.py's sections,
bench_mem.py's tables). Plain dicts, for ``ModelParams.with_(**...)`` and variant lists.
"""

from __future__ import annotations

#: model-1.11's persistent GEMMs and clock: every persistent grid dynamic, every kernel at
#: the core clock (model-1.12 reads static schedules from the trace and follows the
#: description's clock_limits)
M111 = dict(static_tiles=False, kernel_clocks=False)

#: model-1.10's L1: the smallest carve-out holding the blocks' own shared memory, all
#: 256 KB for kernels without (model-1.11 takes the driver's carve-out)
M110_L1 = dict(l1_carveout_headroom=0.0, **M111)

#: model-1.9's load path (sectors at the L1's banks' rate, the L2 shared out per SM up to
#: it, no read-side bound, no floor), with model-1.10's L1
M19_LOADS = dict(l1_line_cycles=False, l2_sm_sectors_per_clk=0.0, l2_read_share=0.0,
                 l2_read_request_share=0.0, load_instr_clk=0.0, **M110_L1)

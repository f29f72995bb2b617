"""An acquire's L1 invalidate waits for the warp's atomic to land: Triton's `atomic_add`
(acq_rel) is `MEMBAR.ALL.GPU; ERRBAR; ATOMG; CCTL.IVALL`, and on the H200 the warps of
`_chunk_state_bwd_db` wait at the `CCTL.IVALL` (ncu's source counters,
bench/data/device/ssd_pc_hd128/)."""

from __future__ import annotations

import pytest

from simfront.core.ncu import read_source_pages
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model import simulate_kernel
from simfront.sim.model.decode import K_FENCE, K_PREFETCH, build_optable
from simfront.sim.model.validation import pair_launches, read_ncu

SOURCE = REPO_ROOT / "bench" / "data" / "device" / "ssd_pc_hd128" / "source.csv.xz"
D512 = REPO_ROOT / "traces" / "h200-ho-m2-d512"


def test_an_l1_invalidate_is_a_fence_and_a_line_prefetch_is_not():
    t = build_optable(["CCTL.IVALL", "CCTL.E.PF2", "MEMBAR.ALL.GPU"], load_gpu("h200"))
    assert t.kind.tolist() == [K_FENCE, K_PREFETCH, K_FENCE]


def test_the_h200s_warps_wait_at_the_invalidate_after_their_atomic():
    page = read_source_pages(SOURCE)["_chunk_state_bwd_db_kernel"]
    col = page["Warp Stall Sampling (All Samples)"]
    samples = {src.split()[0]: n for src, n in zip(page.Source, col)
               if src.startswith(("CCTL", "ATOMG", "ERRBAR"))}
    total = col.sum()
    # the wait is the invalidate's (on the long scoreboard), not the atomic's issue
    assert samples["CCTL.IVALL"] / total > 0.05
    assert samples["CCTL.IVALL"] > 5 * samples["ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU"]


def test_the_atomic_kernel_of_a_held_out_step_reads_near_ncu():
    pairs, _ = pair_launches(D512, read_ncu(D512 / "ncu.csv"))
    p = next(p for p in pairs if p.kernel.kernel_id == 245468)
    assert p.row["short_name"] == "_chunk_state_bwd_db_kernel"
    rec = simulate_kernel(p.kernel, "h200")
    # 0.60 of ncu's cycles when the invalidate waited for nothing
    assert rec["cycles"] / float(p.row["cycles"]) == pytest.approx(0.81, abs=0.08)

"""The waits the trace does not name: a compare's predicate, read as a guard or as a SEL's
operand, and a MUFU's source read late. The chains' clocks are the H100's
(bench/device/dep_latency.cu, shipped in bench/data/device/dep_latency/); the exp2 pattern
is the one ptxas makes of Triton's ``tl.exp`` in the shipped SSD kernels."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from simfront.core.paths import REPO_ROOT, repo_dir
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.traces.reader import KernelTrace

sys.path.insert(0, str(REPO_ROOT / "bench"))
bench = pytest.importorskip("bench_dep_latency")


@pytest.mark.parametrize("chain", sorted(set(bench.CHAINS) - bench.UNMODELLED))
def test_a_chain_through_a_predicate_takes_the_h100s_clocks(chain, tmp_path, h100):
    """A guard is read 14 clocks after its compare, a SEL's predicate at the compare's
    latency: each chain's clocks a body within 10% of the H100's."""
    got = bench.model_clocks_per_body(tmp_path / chain, bench.CHAINS[chain], h100)
    assert got == pytest.approx(bench.measured()[chain], rel=0.10)


def test_an_unguarded_row_does_not_wait_for_the_compare(tmp_path, h100):
    """The same FSETP and FMUL with every lane on: the trace shows no guard, and the FMUL
    waits for its register alone (what the H100's chain looks like traced)."""
    body = ["ffffffff 0 FSETP.GEU.AND 1 R11 0 -126", "ffffffff 1 R11 FMUL 1 R11 0 0"]
    got = bench.model_clocks_per_body(tmp_path / "plain", body, h100)
    assert got < 0.5 * bench.measured()["fsetp_guard"]


def test_a_write_over_a_mufu_source_waits_for_its_read(tmp_path, h100):
    """FMUL R84 after MUFU.EX2 RZ, R84 (ptxas's order in _chunk_scan_fwd, the result
    dropped so that the MUFUs do not wait for each other): the FMUL waits
    ``issue.sfu_source_read`` clocks for the MUFU to read R84, and the next MUFU for the
    FMUL; writing another register, the MUFUs go at the SFU's rate."""
    war = ["ffffffff 1 R255 MUFU.EX2 1 R84 0 0", "ffffffff 1 R84 FMUL 1 R80 0 0"]
    free = ["ffffffff 1 R255 MUFU.EX2 1 R84 0 0", "ffffffff 1 R85 FMUL 1 R80 0 0"]
    hold = DEFAULT_PARAMS.issue.sfu_source_read
    assert bench.model_clocks_per_body(tmp_path / "war", war, h100) >= hold
    assert bench.model_clocks_per_body(tmp_path / "free", free, h100) < hold


SSD = ("mamba2_lm-tiny", "kernel-96275.traceg.xz")


def test_the_exp2_underflow_multiplies_of_the_ssd_kernels_are_guarded(h100):
    """In a shipped _chunk_scan_fwd launch the ``@!P FMUL x, x, 0.5`` of ptxas's exp2 (right
    after ``FSETP.GEU x, -126``; its lanes off where x does not underflow) reads as
    guarded, and the kernel is slower for the compare's wait: with the guard read at the
    compare's own latency it is faster."""
    from simfront.sim.model.api import _prepared_kernel

    path = repo_dir("traces") / SSD[0] / SSD[1]
    if not path.exists():
        pytest.skip(f"{path} is not shipped")
    k = KernelTrace(path)
    assert k.header.name.startswith("_chunk_scan_fwd")
    prep = _prepared_kernel(k, h100, None, DEFAULT_PARAMS)
    cols, _, _ = prep.sm0_rows()
    names = np.array(prep.table.opcodes)[cols["op"]]
    c = np.flatnonzero(np.char.startswith(names[:-1].astype(str), "FSETP.GEU"))
    m = c + 1
    x = cols["src"][c, 0]
    exp_fmul = m[(names[m] == "FMUL") & (cols["dst"][m, 0] == x) & (cols["src"][m, 0] == x)]
    assert exp_fmul.size
    # a warp all of whose lanes underflow runs the multiply unguarded-looking: rare
    assert cols["guard"][exp_fmul].mean() > 0.9
    base = simulate_kernel(k, h100, cache=False)["sim_sm_cycles"]
    quick = simulate_kernel(k, h100, cache=False, params=DEFAULT_PARAMS.with_(
        **{"issue.predicate_guard_latency": 4}))["sim_sm_cycles"]
    assert base > quick

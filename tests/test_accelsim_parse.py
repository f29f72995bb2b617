"""The GPGPU-Sim/Accel-Sim stdout parser, on the real Accel-Sim outputs in shared/data."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import pytest

from simfront.sim.accelsim import parse as acs

from conftest import ACCELSIM_DATA, SCAN_STEP

BASELINE = ACCELSIM_DATA / "selective_scan_fwd" / "baseline" / "accelsim.out.txt"
CRASH_VEC = ACCELSIM_DATA / "selective_scan_fwd" / "vector_2x" / "attempt1_crash.out.txt"
TWO_CRASH = ACCELSIM_DATA / "two_kernels_fwd_then_bwd_crash.out.txt"
MULTI = Path(__file__).parent / "data" / "accelsim_two_kernels_ampere.out.xz"


@pytest.fixture(scope="module")
def baseline(shared_data):
    parsed = acs.parse_file(BASELINE)
    return parsed, acs.kernel_records(parsed)


def test_baseline_headline_numbers(baseline):
    parsed, recs = baseline
    assert parsed.ok and parsed.exited
    assert len(recs) == 1
    r = recs[0]
    # The measured facts: 56,068 cycles, 11,368,448 instructions, IPC 202.76.
    assert r["complete"] is True
    assert r["cycles"] == 56068
    # GPGPU-Sim's gpu_sim_insn counts thread instructions; the schema keeps warp
    # instructions in `instructions` and the printed figure in `thread_instructions`.
    assert r["thread_instructions"] == 11368448
    assert r["accelsim_gpu_sim_insn"] == 11368448
    assert r["accelsim_gpu_ipc"] == pytest.approx(202.76, abs=0.005)
    assert r["instructions"] == r["accelsim_gpgpu_n_tot_w_icount"]
    assert r["ipc"] == pytest.approx(r["instructions"] / r["cycles"])
    assert r["kernel_uid"] == 1 and r["kernel_id"] == 35636
    assert r["kernel_name"].startswith("_Z25selective_scan_fwd_kernel")
    assert r["grid"] == "1,128,1" and r["block"] == "32,1,1"
    assert r["sim_wall_s"] == 79
    assert parsed.n_unknown == 0, parsed.unknown.most_common(5)


def test_baseline_stall_line_exactly_as_printed(baseline):
    _, (r,) = baseline
    line = next(ln for ln in BASELINE.read_text().splitlines() if ln.startswith("Stall:"))
    printed = dict(p.split(":") for p in line.split())
    assert {"Stall", "W0_Idle", "W0_Scoreboard", "W1", "W32"} <= set(printed)
    assert len(printed) == 35
    for name, value in printed.items():
        assert r["stall_" + name.lower()] == int(value), name


def test_baseline_cache_tables_exactly_as_printed(baseline):
    _, (r,) = baseline
    text = BASELINE.read_text()
    l1 = re.findall(r"Total_core_cache_stats_breakdown\[(\w+)\]\[(\w+)\] = (\d+)", text)
    l2 = re.findall(r"L2_cache_stats_breakdown\[(\w+)\]\[(\w+)\] = (\d+)", text)
    assert len(l1) >= 11 * 6 and len(l2) >= 11 * 6
    prefix = {"INST_ACC_R": "l1i_", "CONST_ACC_R": "l1c_", "TEXTURE_ACC_R": "l1t_"}
    for acc, outcome, value in l1:
        col = prefix.get(acc, "l1d_") + f"{acc}_{outcome}".lower()
        assert r[col] == int(value), col
    for acc, outcome, value in l2:
        assert r[f"l2_{acc}_{outcome}".lower()] == int(value)
    outcomes = {o for _, o, _ in l1}
    assert {"HIT", "HIT_RESERVED", "MISS", "RESERVATION_FAIL", "SECTOR_MISS", "MSHR_HIT"} <= outcomes
    # the per-cache totals and the figures derived from them
    for cache in ("L1D", "L1I", "L1C", "L1T", "L2"):
        m = re.search(rf"{cache}_total_cache_accesses = (\d+)", text)
        assert r[f"{cache.lower()}_total_accesses"] == int(m.group(1))
    l2_acc = int(re.search(r"L2_total_cache_accesses = (\d+)", text).group(1))
    l2_miss = int(re.search(r"L2_total_cache_misses = (\d+)", text).group(1))
    assert r["l2_accesses"] == l2_acc
    assert r["l2_hit_rate"] == pytest.approx(1 - l2_miss / l2_acc)


def test_baseline_dram_interconnect_and_rate(baseline):
    parsed, (r,) = baseline
    text = BASELINE.read_text()
    n_rd = sum(int(x) for x in re.findall(r"\bn_rd=(\d+)", text))
    atom = (int(parsed.options["gpgpu_dram_buswidth"]) * int(parsed.options["gpgpu_dram_burst_length"]))
    assert r["dram_read_bytes"] == n_rd * atom
    # every DRAM read is a 32-byte L2 sector fill here: bytes agree with the L2 sector misses
    assert r["dram_read_bytes"] == 32 * (r["l2_global_acc_r_miss"] + r["l2_global_acc_r_sector_miss"])
    util = sum(int(x) for x in re.findall(r"util_bw = (\d+)", text))
    cmd = sum(int(x) for x in re.findall(r"\bn_cmd=(\d+)", text))
    assert r["dram_util"] == pytest.approx(util / cmd)
    assert 0 < r["accelsim_dram_efficiency"] <= 1
    assert r["icnt_req_network_injected_packets_num"] == 145664
    assert r["l2_bw_gbps"] == pytest.approx(94.1095)
    assert r["sim_rate_inst_per_s"] == 143904
    assert r["time_us"] == pytest.approx(56068 / 1132.0)


def test_vector_2x_crash_is_a_failure_quoting_the_assertion(shared_data):
    parsed = acs.parse_file(CRASH_VEC)
    recs = acs.kernel_records(parsed)
    assert not parsed.ok and parsed.failure_kind == "assertion"
    assert "Assertion `reg_id < regs.size()' failed" in parsed.failure
    assert "register_set::get_ready" in parsed.failure
    assert not any(r["complete"] for r in recs)  # partial output is never a result
    assert [r["kernel_uid"] for r in recs] == [1]


def test_two_kernels_crash_keeps_kernel_one(shared_data):
    parsed = acs.parse_file(TWO_CRASH)
    recs = acs.kernel_records(parsed)
    assert not parsed.ok
    assert "REDG" in parsed.failure and "undefined instruction" in parsed.failure
    k1, k2 = recs
    assert k1["complete"] is True and k1["cycles"] == 56068
    assert k1["thread_instructions"] == 11368448
    assert k2["complete"] is False and "cycles" not in k2
    assert k2["kernel_id"] == 35643 and k2["kernel_name"].startswith("_Z25selective_scan_bwd")


def test_cut_output_is_never_a_result(shared_data):
    text = BASELINE.read_text()
    cut = text[: text.index("L2_total_cache_accesses")]  # killed mid-statistics
    parsed = acs.parse_log(cut)
    assert not parsed.ok and parsed.failure_kind == "truncated"
    assert not parsed.blocks
    assert not any(r["complete"] for r in acs.kernel_records(parsed))


def test_deadlock_message_is_a_failure(shared_data):
    text = BASELINE.read_text()
    head = text[: text.index("kernel_name = ")]
    log = head + ("\n\nGPGPU-Sim uArch: ERROR ** deadlock detected: last writeback core 3 @ "
                  "gpu_sim_cycle 1200 (+ gpu_tot_sim_cycle 0) (98800 cycles ago)\n"
                  "GPGPU-Sim uArch: DEADLOCK  shader cores no longer committing instructions\n")
    parsed = acs.parse_log(log)
    assert parsed.failure_kind == "deadlock"
    assert "deadlock detected: last writeback core 3" in parsed.failure


def test_unknown_lines_are_counted(shared_data):
    text = BASELINE.read_text().replace("gpu_stall_icnt2sh    = 0",
                                        "gpu_stall_icnt2sh    = 0\nsomething new: 42 widgets")
    parsed = acs.parse_log(text)
    assert parsed.n_unknown == 1
    assert "something new: # widgets" in parsed.unknown


def test_compressed_log_parses_the_same(shared_data, tmp_path):
    xz = tmp_path / "out.txt.xz"
    xz.write_bytes(lzma.compress(BASELINE.read_bytes(), preset=1))
    a = acs.kernel_records(acs.parse_file(xz))
    b = acs.kernel_records(acs.parse_file(BASELINE))
    assert a == b or all(
        (x == y) or (x != x and y != y) for k in a[0] for x, y in [(a[0][k], b[0][k])])


@pytest.mark.skipif(not MULTI.exists(), reason="multi-kernel fixture not present")
def test_multi_kernel_cumulative_counters_are_differenced():
    """A real two-kernel run that finished (tests/data/README.md says how it was made)."""
    parsed = acs.parse_file(MULTI)
    recs = acs.kernel_records(parsed)
    assert parsed.ok and len(parsed.blocks) == 2
    assert all(r["complete"] for r in recs)
    last = parsed.blocks[-1].values
    # gpu_sim_cycle / gpu_sim_insn are per kernel; gpu_tot_* and the shader counters are
    # cumulative: per-kernel figures must add up to the run totals...
    assert sum(r["cycles"] for r in recs) == last["gpu_tot_sim_cycle"]
    assert sum(r["thread_instructions"] for r in recs) == last["gpu_tot_sim_insn"]
    assert sum(r["instructions"] for r in recs) == last["gpgpu_n_tot_w_icount"]
    # ...and each kernel's differenced warp-instruction count is the number of instructions
    # in its own trace file (an independent count, from the traces that were simulated).
    if SCAN_STEP.is_dir():
        from simfront.sim.accelsim.isa_compat import scan_opcodes

        for r, f in zip(recs, ("kernel-35636.traceg.xz", "kernel-35643.traceg.xz")):
            assert r["instructions"] == sum(scan_opcodes(SCAN_STEP / f).values())
    # cache tables (cumulative per stream) difference to the kernel's own accesses
    for col in ("l2_global_acc_r_hit", "l1d_global_acc_r_miss", "l2_total_accesses"):
        key = next(k for k in last if acs._column_for(k) == col)
        assert sum(r[col] for r in recs) == last[key]
    assert recs[1]["cycles"] != recs[0]["cycles"]
    assert all(r["l2_accesses"] > 0 for r in recs)


def test_cycle_limit_cut_off_kernel_is_not_a_result(shared_data):
    text = BASELINE.read_text()
    at = text.index("GPGPU-Sim: *** simulation thread exiting ***")
    log = (text[:at] + "GPGPU-Sim: ** break due to reaching the maximum cycles (or "
           "instructions) **\n" + text[at:])
    parsed = acs.parse_log(log)
    assert parsed.failure_kind == "limit" and "maximum cycles" in parsed.failure
    (r,) = acs.kernel_records(parsed)
    assert r["complete"] is False and "cycles" not in r

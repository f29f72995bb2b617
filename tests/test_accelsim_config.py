"""Accel-Sim 1.x files: every preset written and parsed back to the same description, the
public H100 config read into a description, and the written files' structure."""

import pytest

from simfront.gpu import h100, load_gpu, preset_names, with_variants
from simfront.sim.accelsim.checks import accelsim_warnings, validate_accelsim_options
from simfront.sim.accelsim.config import (GPGPUSIM_CONFIG, ICNT_CONFIG, PIPELINE_STAGES,
                                          TRACE_CONFIG, accelsim_options, read_accelsim_config,
                                          read_options, sub_core_model, write_accelsim_config)


@pytest.mark.parametrize("name", preset_names())
def test_round_trip_every_preset(name, tmp_path):
    gpu = load_gpu(name)
    paths = write_accelsim_config(gpu, tmp_path)
    assert {p.name for p in paths.values()} == {GPGPUSIM_CONFIG, TRACE_CONFIG, ICNT_CONFIG}
    assert read_accelsim_config(tmp_path) == gpu


def test_round_trip_with_raw_options(tmp_path):
    gpu = with_variants(h100(), raw={"gpgpu_scheduler": "gto",
                                     "trace_opcode_latency_initiation_sfu": "23,8"})
    write_accelsim_config(gpu, tmp_path)
    assert read_accelsim_config(tmp_path) == gpu
    opts, raw, _ = read_options(tmp_path)
    # The raw values come last, so the simulator uses them.
    assert raw == {"gpgpu_scheduler": "gto", "trace_opcode_latency_initiation_sfu": "23,8"}
    assert "gpgpu_scheduler" in opts  # the derived value stays, overridden afterwards
    text = (tmp_path / GPGPUSIM_CONFIG).read_text()
    assert text.rindex("-gpgpu_scheduler gto") > text.index("-gpgpu_scheduler lrr")


def test_written_values_follow_the_description(tmp_path):
    gpu = h100()
    opts = accelsim_options(gpu)
    assert opts["gpgpu_n_clusters"] == "132" and opts["gpgpu_n_mem"] == "80"
    # 80 channels: IPOLY partition hashing is illegal, the writer picks linear.
    assert opts["gpgpu_memory_partition_indexing"] == "0"
    assert opts["gpgpu_clock_domains"] == "1980:1980:1980:2619"
    assert opts["gpgpu_cache:dl2"].startswith("S:64:128:40,")
    assert opts["trace_opcode_latency_initiation_sp"] == "4,1"       # 32 lanes: 1 clk
    assert opts["trace_opcode_latency_initiation_sfu"] == "17,8"     # 4 lanes: 8 clk
    # the tensor unit at the peak (2048 FMA / 512), not mma.sync's 2/3 of it: lowered
    # warpgroup MMAs are what Accel-Sim runs on it
    assert opts["trace_opcode_latency_initiation_spec_op_3"] == "24,4"
    tv8 = accelsim_options(load_gpu("h100-tv8"))
    assert tv8["trace_opcode_latency_initiation_spec_op_3"] == "24,8"


def test_vec2x_leaves_the_sub_core_model(tmp_path):
    """In the sub-core model extra units per scheduler never execute (see validate.py),
    so a 2x-vector GPU is written with shared issue slots and dual issue."""
    gpu = load_gpu("h100-vec2x")
    assert not sub_core_model(gpu) and sub_core_model(h100())
    opts = accelsim_options(gpu)
    w = dict(zip(PIPELINE_STAGES, map(int, opts["gpgpu_pipeline_widths"].split(","))))
    assert opts["gpgpu_sub_core_model"] == "0"
    assert int(opts["gpgpu_num_sp_units"]) == 8 == w["OC_EX_SP"]
    assert opts["gpgpu_max_insn_issue_per_warp"] == "2"
    assert accelsim_warnings(opts) == []


def test_public_h100_config_reads_into_a_description(public_accelsim_configs):
    """The public work-in-progress config, read (not copied) as a description: it models
    1.09 TB/s of DRAM (850 MHz) and 1/8 of the H100's tensor rate."""
    d = public_accelsim_configs / "selective_scan_fwd" / "baseline"
    opts, _, _ = read_options(d)
    validate_accelsim_options(opts)  # it ran (with indexing 0)
    g = read_accelsim_config(d)
    assert g.sm_count == 132 and g.dram.channels == 80
    assert g.l2.size.bytes == 50 << 20
    assert g.clocks.core.mhz_value == 1132
    assert g.dram.bandwidth.tb_per_s == pytest.approx(1.088, rel=1e-3)


def test_icnt_file_counts_nodes(tmp_path):
    write_accelsim_config(load_gpu("h100-66sm"), tmp_path)
    text = (tmp_path / ICNT_CONFIG).read_text()
    assert "k = 226;" in text  # 66 SMs + 160 memory sub-partitions

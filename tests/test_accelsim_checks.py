"""One test per Accel-Sim rule (simfront.sim.accelsim.checks, and the description as
written for Accel-Sim), built from the real Accel-Sim failures in the shared data's
accelsim/ folder (its README) and the GPGPU-Sim assertions behind them. Skipped without that
folder: the public configs are third-party and not shipped."""

import dataclasses

import pytest

from simfront.core.errors import ConfigError
from simfront.gpu import h100, load_gpu, validate, with_variants
from simfront.gpu.trace_pipes import pipes_used
from simfront.sim.accelsim.checks import accelsim_warnings, validate_accelsim_options
from simfront.sim.accelsim.config import read_options, validate_for_accelsim


@pytest.fixture(scope="module")
def scan_fwd(public_accelsim_configs):
    return public_accelsim_configs / "selective_scan_fwd"


@pytest.fixture(scope="module")
def public_opts(scan_fwd):
    opts, _, _ = read_options(scan_fwd / "baseline")
    validate_accelsim_options(opts)  # the configuration that ran
    return opts


def _replace(obj, path, value):
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _replace(getattr(obj, head), rest, value)})


# Rule 1: IPOLY partition hashing needs 16, 32 or 64 channels x sub-partitions.
def test_ipoly_with_80_channels_rejected(public_opts, scan_fwd):
    """The stock public H100 config (indexing 2, 80 channels) asserted at start-up."""
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options({**public_opts, "gpgpu_memory_partition_indexing": "2"})
    assert exc.value.field == "gpgpu_memory_partition_indexing"
    assert "16, 32 or 64" in str(exc.value) and "80" in str(exc.value)
    with pytest.raises(ConfigError):
        validate_for_accelsim(_replace(h100(), "dram.partition_indexing", "ipoly"))
    # Legal: 16 channels x 2 sub-partitions = 32 banks.
    small = _replace(_replace(h100(), "dram.stacks", 1), "dram.partition_indexing", "ipoly")
    small = with_variants(small, l2_size="10 MiB")
    validate_for_accelsim(small)


# Rule 2: more units of a kind than its OC_EX pipeline width.
def test_units_over_oc_ex_width_rejected(public_opts, scan_fwd):
    crash = (scan_fwd / "vector_2x" / "attempt1_crash.out.txt").read_text()
    assert "register_set::get_ready" in crash and "reg_id < regs.size()" in crash
    attempt1 = {**public_opts, "gpgpu_num_sp_units": "8", "gpgpu_num_sfu_units": "8"}
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options(attempt1)
    assert exc.value.field == "gpgpu_num_sp_units" and "OC_EX_SP" in str(exc.value)
    with pytest.raises(ConfigError):
        validate_for_accelsim(with_variants(h100(), raw={"gpgpu_num_sp_units": 8}))


# Rule 3: ID_OC width must equal the scheduler count in the sub-core model.
def test_id_oc_width_not_scheduler_count_rejected(public_opts):
    attempt2 = {**public_opts, "gpgpu_num_sp_units": "8", "gpgpu_num_sfu_units": "8",
                "gpgpu_pipeline_widths": "8,4,4,8,4,8,4,4,8,4,16,4,4"}
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options(attempt2)
    assert "ID_OC_SP" in str(exc.value) and "scheduler" in str(exc.value)


def test_working_vector_2x_passes_but_is_flagged(scan_fwd):
    """The variant that ran widened only OC_EX; it is legal, but its extra units are never
    fed in the sub-core model, which is why its cycles could not move."""
    opts, _, _ = read_options(scan_fwd / "vector_2x")
    validate_accelsim_options(opts)
    warnings = accelsim_warnings(opts)
    assert any("gpgpu_num_sp_units 8" in w and "never execute" in w for w in warnings)


# Rule 4: set counts the chosen hash needs.
def test_l2_sets_must_suit_the_hash(public_opts):
    with pytest.raises(ConfigError) as exc:
        validate_for_accelsim(_replace(h100(), "l2.assoc", 20))  # 128 sets: not IPOLY-legal
    assert exc.value.field == "l2.assoc" and "16, 32 or 64" in str(exc.value)
    linear = _replace(h100(), "l2.set_hash", "linear")
    validate_for_accelsim(linear)
    with pytest.raises(ConfigError):
        validate_for_accelsim(_replace(linear, "l2.assoc", 53))  # 50 MiB / (160 x 128 B x 53): not whole
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options({**public_opts,
                                   "gpgpu_cache:dl2": "S:48:128:40,L:B:m:L:P,A:192:4,32:0,32"})
    assert exc.value.field == "gpgpu_cache:dl2"
    with pytest.raises(ConfigError):
        validate_accelsim_options({**public_opts,
                                   "gpgpu_cache:dl2": "S:48:128:40,L:B:m:L:L,A:192:4,32:0,32"})


# Rule 6: shared memory over the carve-out (the description's half: test_gpu_validate.py).
def test_shmem_carveout_over_unified_l1_rejected(public_opts):
    with pytest.raises(ConfigError) as exc:   # public config: 128 KB unified
        validate_accelsim_options({**public_opts, "gpgpu_shmem_option": "0,8,16,32,64,228"})
    assert exc.value.field == "gpgpu_shmem_option"


# Rule 7: non-positive sizes and clocks (the description's half: test_gpu_validate.py).
def test_non_positive_accelsim_clock_rejected(public_opts):
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options({**public_opts, "gpgpu_clock_domains": "0:1132:1132:850"})
    assert exc.value.field == "gpgpu_clock_domains"


def test_fp16_must_share_the_sp_units_for_accelsim():
    g = _replace(h100(), "sm.pipes.fp16.lanes", 16)
    validate(g)  # the description itself is fine; only Accel-Sim cannot run it
    with pytest.raises(ConfigError) as exc:
        validate_for_accelsim(g)
    assert exc.value.field == "sm.pipes.fp16"


def test_all_presets_pass_with_the_sample_trace_pipes(repo_root):
    used = pipes_used(repo_root / "traces" / "mamba1_selective_scan")
    assert {"fp32", "int", "sfu", "lsu", "cbu", "uniform"} <= used
    for name in ("h100", "h100-vec2x", "h100-tv8", "h100-tv32", "h100-l2-25mb", "h100-66sm"):
        validate_for_accelsim(load_gpu(name), pipes_used=used)


# Found running our own presets through Accel-Sim 1.x (docs/gpu-configs.md): without the
# PTX-mode latency options the SP pipeline is 1 stage deep and a 4-cycle trace latency
# segfaults in pipelined_simd_unit::cycle; without an instruction-cache string GPGPU-Sim's
# default does not parse and cache_config::init aborts.
def test_pipeline_shallower_than_trace_latency_rejected(public_opts):
    no_ptx = {k: v for k, v in public_opts.items() if not k.startswith("ptx_opcode")}
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options(no_ptx)
    assert exc.value.field == "trace_opcode_latency_initiation_sp"
    assert "ptx_opcode_latency_fp" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        validate_for_accelsim(with_variants(h100(), raw={"ptx_opcode_latency_fp": "4,2,4,4,20"}))
    assert exc.value.field == "trace_opcode_latency_initiation_sp"


def test_missing_or_unparsable_cache_strings_rejected(public_opts):
    no_il1 = {k: v for k, v in public_opts.items() if k != "gpgpu_cache:il1"}
    with pytest.raises(ConfigError) as exc:
        validate_accelsim_options(no_il1)
    assert exc.value.field == "gpgpu_cache:il1"
    with pytest.raises(ConfigError) as exc:   # GPGPU-Sim's own default string
        validate_accelsim_options({**public_opts, "gpgpu_cache:il1": "4:256:4,L:R:f:N,A:2:32,4"})
    assert "does not parse" in str(exc.value)

"""Variants by value: each parameter changes what it says and keeps the rest consistent."""

import pytest

from simfront.core.errors import ConfigError
from simfront.gpu import (VARIANT_PARAMS, config_hash, derived, h100, load_gpu, validate,
                          with_variants)
from simfront.gpu.sm import VECTOR_PIPES


def test_variant_params_are_documented():
    assert set(VARIANT_PARAMS) == {"tensor_vector_ratio", "ratio_mode", "l2_size", "sm_count",
                                   "dram_bandwidth", "clock", "empty_kernel_ns", "clock_limits",
                                   "shared_held", "raw"}
    assert all(len(p.doc) > 20 for p in VARIANT_PARAMS.values())
    assert VARIANT_PARAMS["ratio_mode"].choices == ("scale_vector", "scale_tensor")


def test_scale_tensor_keeps_vector_side():
    base = h100()
    g = with_variants(base, tensor_vector_ratio=8, ratio_mode="scale_tensor")
    assert g.sm.pipes == base.sm.pipes and g.sm.issue_width == base.sm.issue_width
    assert g.sm.tensor.fma_per_clk.bf16 == 256
    assert g.sm.tensor.initiation("bf16") == 2 * base.sm.tensor.initiation("bf16")
    validate(g)


def test_scale_vector_keeps_issue_and_ports_consistent():
    base = h100()
    g = with_variants(base, tensor_vector_ratio="8:1", ratio_mode="scale_vector")
    assert g.sm.tensor == base.sm.tensor
    for name in VECTOR_PIPES:
        old, new = base.sm.pipes.get(name), g.sm.pipes.get(name)
        assert new.units * new.lanes == 2 * old.units * old.lanes
        assert g.sm.warp_size % new.lanes == 0
    # FP32 already takes a warp per clock per scheduler: doubling it needs dual issue and
    # twice the operand bandwidth.
    assert g.sm.issue_width == 2
    assert g.sm.registers.read_ports == 2 * base.sm.registers.read_ports
    assert g.sm.registers.collector_units == 2 * base.sm.registers.collector_units
    validate(g)


def test_l2_size_changes_sets_when_legal_else_ways():
    g = with_variants(h100(), l2_size="25 MiB")
    assert g.l2.assoc == 40 and g.l2.sets(g.dram.channels) == 32
    g40 = with_variants(h100(), l2_size="40 MiB")  # 25.6 sets: keep 64 sets, 32 ways
    assert g40.l2.sets(g40.dram.channels) == 64 and g40.l2.assoc == 32
    # 33 MiB is 26.4 ways of 1.25 MiB: the nearest whole way, and the description says so
    g33 = with_variants(h100(), l2_size="33 MiB")
    assert (g33.l2.assoc, g33.l2.size.bytes) == (26, 26 * 5 << 18)
    validate(g33)
    # the H200's 192 banks make a way 1.5 MiB: 25 MiB is 17 of them, 25.5 MiB
    g25 = with_variants(load_gpu("h200"), l2_size="25 MiB")
    assert (g25.l2.assoc, g25.l2.size.bytes) == (17, 17 * 3 << 19)
    with pytest.raises(ConfigError) as exc:
        with_variants(h100(), l2_size="512 KiB")  # under one way
    assert exc.value.field == "l2_size"


def test_other_params():
    g = with_variants(h100(), sm_count=66, dram_bandwidth="4.8 TB/s", clock="1755 MHz")
    assert g.sm_count == 66
    assert derived(g).dram_bandwidth.tb_per_s == pytest.approx(4.8, rel=1e-6)
    assert g.clocks.core.mhz_value == 1755 and g.clocks.l2.mhz_value == 1755
    assert g.dram.clock != h100().dram.clock
    r = with_variants(h100(), raw={"gpgpu_scheduler": "gto"})
    assert r.raw_options == {"gpgpu_scheduler": "gto"}


@pytest.mark.parametrize("params,field", [
    ({"tensor_vector_ratio": 0}, "tensor_vector_ratio"),
    ({"tensor_vector_ratio": 8, "ratio_mode": "both"}, "ratio_mode"),
    ({"sm_count": -1}, "sm_count"),
    ({"clock": "0 MHz"}, "clock"),
    ({"warp_size": 64}, "warp_size"),
    ({"tensor_vector_ratio": 0.3, "ratio_mode": "scale_tensor"}, "tensor_vector_ratio"),
    ({"tensor_vector_ratio": 6}, "tensor_vector_ratio"),
])
def test_bad_variants(params, field):
    with pytest.raises(ConfigError) as exc:
        with_variants(h100(), **params)
    assert exc.value.field == field


def test_config_hash_identity():
    a = h100()
    assert config_hash(a) == config_hash(load_gpu("h100"))
    assert config_hash(a) == config_hash(a.replace(name="renamed"))
    hashes = {config_hash(load_gpu(n)) for n in ("h100", "h100-tv8", "h100-vec2x",
                                                  "h100-l2-25mb", "h100-66sm")}
    assert len(hashes) == 5


def test_clock_limits_go_with_none_and_nothing_else():
    base = h100()
    assert base.clock_limits is not None
    g = with_variants(base, clock_limits="none")
    assert g.clock_limits is None and config_hash(g) != config_hash(base)
    validate(g)
    # the limits are shares of the core clock: an sm_count or clock variant keeps them
    assert with_variants(base, sm_count=64, clock="1.5 GHz").clock_limits == base.clock_limits
    with pytest.raises(ConfigError) as e:
        with_variants(base, clock_limits="off")
    assert e.value.field == "clock_limits"

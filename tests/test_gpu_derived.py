"""Derived peaks against the published H100 SXM5 figures, and the tensor:vector ratio."""

from fractions import Fraction

import pytest

from simfront.gpu import derived, h100, load_gpu, with_variants
from simfront.gpu.units import Frequency


def test_h100_ratio_is_16_to_1():
    d = derived(h100())
    # 4 tensor cores x 512 bf16 FMA against 128 FP32 lanes, per SM per clock (issue 3).
    assert d.tensor_vector_ratio == Fraction(16)
    assert d.ratio_text == "16:1"
    assert d.tensor_flop_per_clk_sm["bf16"] == 2 * 4 * 512
    assert d.vector_flop_per_clk_sm == {"fp32": 256, "fp16x2": 512}
    assert d.sfu_ops_per_clk_sm == 16


@pytest.mark.parametrize("name,ratio", [("h100-tv8", 8), ("h100-vec2x", 8), ("h100-tv32", 32),
                                        ("h100-tv4", 4), ("h100-vechalf", 32)])
def test_preset_ratios(name, ratio):
    assert derived(load_gpu(name)).tensor_vector_ratio == ratio


def test_peaks_match_the_data_sheet():
    """NVIDIA's H100 SXM5 figures: FP32 66.9, FP64 33.5 (vector) at the 1.98 GHz boost;
    dense BF16/FP16 989.4, TF32 494.7, FP8/INT8 1978.9 tensor TFLOPS quoted at 1.83 GHz;
    HBM3 3.35 TB/s."""
    g = h100()
    d = derived(g)
    assert d.vector_tflops["fp32"] == pytest.approx(66.9, rel=2e-3)
    assert d.vector_tflops["fp16x2"] == pytest.approx(133.8, rel=2e-3)
    assert d.fp64_flop_per_clk_sm * 132 * 1.98e9 / 1e12 == pytest.approx(33.5, rel=3e-3)
    at_183 = derived(with_variants(g, clock=Frequency.mhz(1830)))
    for dtype, tflops in (("bf16", 989.4), ("fp16", 989.4), ("tf32", 494.7),
                          ("fp8", 1978.9), ("int8", 1978.9)):
        assert at_183.tensor_tflops[dtype] == pytest.approx(tflops, rel=2e-3)
    assert d.dram_bandwidth.tb_per_s == pytest.approx(3.35, rel=2e-3)


def test_l2_geometry_is_whole():
    d = derived(h100())
    assert d.l2_banks == 160 and d.l2_sets_per_bank == 64

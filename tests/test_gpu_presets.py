"""The H100 description against the real H100's own report of itself (ncu's
device__attribute_* columns and the SM clock it ran at), and preset loading."""

import dataclasses
import textwrap

import pandas as pd
import pytest

from simfront.core.errors import ConfigError
from simfront.gpu import GPU, h100, load_gpu, preset_names, validate
from simfront.gpu.units import Size
from simfront.sim.backend import check_gpu

from conftest import NCU_DIR

NCU_FILES = ("mamba2_lm_2x768_L2048_B4.ncu.csv.xz", "mamba1_lm_2x768_L2048_B4.ncu.csv.xz")


@pytest.fixture(scope="module")
def ncu():
    frames = [pd.read_csv(NCU_DIR / f, skiprows=[1], thousands=",",
                          low_memory=False) for f in NCU_FILES]
    return pd.concat(frames, ignore_index=True)


def test_h100_matches_ncu_device_attributes(ncu):
    row = ncu.iloc[0]
    g = h100()
    assert g.sm_count == int(row["device__attribute_multiprocessor_count"])
    assert g.sm.sub_partitions == int(row["device__attribute_num_schedulers_per_multiprocessor"])
    assert g.sm.max_warps == int(row["device__attribute_max_warps_per_multiprocessor"])
    assert g.sm.max_blocks == int(row["device__attribute_max_blocks_per_multiprocessor"])
    assert g.sm.issue_width == int(row["device__attribute_max_ipc_per_scheduler"])
    assert g.sm.registers.registers == int(row["device__attribute_max_registers_per_multiprocessor"])
    assert g.sm.l1.max_shared_per_sm.bytes == int(
        row["device__attribute_max_shared_memory_per_multiprocessor"])
    assert g.sm.l1.max_shared_per_block.bytes == int(
        row["device__attribute_max_shared_memory_per_block_optin"])
    assert g.l2.size.bytes == int(row["device__attribute_l2_cache_size"])
    # One L2 slice per DRAM channel: ncu counts 80 slices, the bus is 5120 bits.
    assert g.dram.channels == int(row["device__attribute_l2s_count"])
    assert g.dram.bus_width_bits == int(row["device__attribute_fb_bus_width"])
    assert g.dram.clock.hz == int(row["device__attribute_memory_clock_rate"]) * 1000
    assert g.clocks.core.hz == int(row["device__attribute_max_gpu_frequency_khz"]) * 1000


def test_modelled_core_clock_is_the_clock_the_h100_ran_at(ncu):
    """ncu ran with --clock-control none: cycles / duration is the real SM clock. The
    preset models the clock non-GEMM kernels (the Mamba scan and elementwise work) ran at."""
    mhz = ncu["gpc__cycles_elapsed.avg"].astype(float) / ncu["gpu__time_duration.sum"] * 1e3
    tensor = ncu["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] > 20
    median_other = mhz[~tensor].median()
    assert abs(median_other - h100().clocks.core.mhz_value) / median_other < 0.02
    # Tensor-heavy GEMMs throttle well below it (documented in docs/gpu-configs.md).
    assert mhz[tensor].median() < 0.9 * h100().clocks.core.mhz_value


def test_yaml_preset_equals_factory():
    assert load_gpu("h100") == h100()


def test_every_preset_loads_and_validates():
    names = preset_names()
    for required in ("h100", "h200", "h100-vec2x", "h100-tv8", "h100-tv32", "h100-l2-25mb",
                     "h100-66sm"):
        assert required in names
    for name in names:
        gpu = load_gpu(name)
        assert gpu.name == name
        validate(gpu)
        check_gpu(gpu)  # and every built-in backend, Accel-Sim included, takes it


def test_h200_is_the_h100_silicon_with_its_own_memory_and_front_end():
    """As the H200 machine reported it (bench/data/device/gpu_h200.csv; the L2 size the
    driver gave, 62914560 B); its clock limits its own (test below)."""
    import pandas as pd

    from simfront.core.paths import REPO_ROOT

    g, base = load_gpu("h200"), h100()
    smi = pd.read_csv(REPO_ROOT / "bench" / "data" / "device" / "gpu_h200.csv",
                      skipinitialspace=True).iloc[0]
    assert "H200" in smi["name"]
    assert g.sm_count == base.sm_count == 132 and g.sm == base.sm
    assert g.clocks.core.mhz_value == int(smi["clocks.max.sm [MHz]"].split()[0])
    assert g.dram.capacity.bytes == int(smi["memory.total [MiB]"].split()[0]) << 20
    assert g.l2.size.bytes == 62914560
    assert g.dram.bandwidth.bytes_per_s == pytest.approx(4.8e12)
    assert g.clock_limits != base.clock_limits
    assert g.empty_kernel_ns < base.empty_kernel_ns


@pytest.mark.parametrize("name,data", [("h100", "clock_steps"), ("h200", "clock_steps_h200")])
def test_clock_limits_are_those_fitted_on_the_gpus_own_step(name, data):
    """Each description's clock_limits are what bench/bench_clock.py fits on ncu's clocks of
    the Mamba2 paper step measured on that GPU (bench/data/device/<data>/), and the H100 sets'
    H200 condition carries the H200's."""
    import sys

    from simfront.core.paths import REPO_ROOT

    sys.path.insert(0, str(REPO_ROOT / "bench"))
    import bench_clock

    fit = bench_clock.fit_limits(bench_clock.step_clocks(bench_clock.DATA / data,
                                                         ("mamba2_lm",)))
    cl = load_gpu(name).clock_limits
    assert {t.sms: t.share for t in cl.tensor} == fit["tensor"]
    assert (cl.power_share, cl.power_exponent) == (fit["power_share"], fit["power_exponent"])
    if name == "h200":
        assert load_gpu("h100-as-h200").clock_limits == cl


def test_load_by_path(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("base: h100\nsm_count: 100\nl2:\n  assoc: 20\n")
    g = load_gpu(f)
    assert g.sm_count == 100 and g.l2.assoc == 20 and g.name == "mine"
    assert g.l2.sets(g.dram.channels) == 128


def test_unknown_preset_lists_valid_names():
    with pytest.raises(ConfigError) as exc:
        load_gpu("h200-imaginary")
    assert "h100-tv8" in str(exc.value) and "h100" in str(exc.value)


def test_bad_yaml_field_names_file_line_and_field(tmp_path):
    f = tmp_path / "typo.yaml"
    f.write_text(textwrap.dedent("""\
        base: h100
        sm:
          pipes:
            fp32:
              unitz: 2
        """))
    with pytest.raises(ConfigError) as exc:
        load_gpu(f)
    e = exc.value
    assert e.path == f and e.line == 5 and e.field == "sm.pipes.fp32.unitz"
    assert "units" in str(e)  # lists the valid fields


def test_bad_yaml_value_type_names_line(tmp_path):
    f = tmp_path / "bad.yaml"
    full = h100().to_dict()
    import yaml
    text = yaml.safe_dump(full, sort_keys=False).replace("size: 50 MiB", "size: fifty")
    f.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_gpu(f)
    assert exc.value.field == "l2.size"
    assert text.splitlines()[exc.value.line - 1].strip() == "size: fifty"


def test_bad_variant_in_yaml_names_line(tmp_path):
    f = tmp_path / "v.yaml"
    f.write_text("base: h100\nvariants:\n  tensor_vector_ratio: 8\n  ratio_mode: sideways\n")
    with pytest.raises(ConfigError) as exc:
        load_gpu(f)
    assert exc.value.line == 4 and exc.value.field == "variants.ratio_mode"


def test_description_is_frozen_and_typed():
    g = h100()
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.sm_count = 1  # type: ignore[misc]
    assert isinstance(g.l2.size, Size)
    assert GPU.from_dict(g.to_dict()) == g

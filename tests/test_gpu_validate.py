"""The description's own rules (simfront.gpu.validate): what no consumer of a description
can mean, whatever simulator runs it. Accel-Sim's own rules: test_accelsim_checks.py."""

import dataclasses

import pytest

from simfront.core.errors import ConfigError
from simfront.gpu import h100, validate
from simfront.gpu.trace_pipes import pipes_used
from simfront.gpu.units import Frequency, Size


def _replace(obj, path, value):
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _replace(getattr(obj, head), rest, value)})


def test_l2_sets_must_suit_the_hash():
    with pytest.raises(ConfigError) as exc:
        validate(_replace(h100(), "l2.assoc", 20))  # 128 sets: not IPOLY-legal
    assert exc.value.field == "l2.assoc" and "16, 32 or 64" in str(exc.value)
    linear = _replace(h100(), "l2.set_hash", "linear")
    validate(linear)
    with pytest.raises(ConfigError):
        validate(_replace(linear, "l2.assoc", 53))  # 50 MiB / (160 x 128 B x 53): not whole


def test_accelsim_only_rules_are_not_the_descriptions():
    # FP16 on its own units is a GPU one can describe; only Accel-Sim 1.x cannot run it
    from simfront.sim.accelsim.config import validate_for_accelsim

    gpu = _replace(h100(), "sm.pipes.fp16.lanes", 16)
    validate(gpu)   # the description's own rules accept it
    with pytest.raises(ConfigError):
        validate_for_accelsim(gpu)


def test_zero_units_of_a_used_pipe_rejected(repo_root):
    used = pipes_used(repo_root / "traces" / "mamba1_selective_scan", ["kernel-35636.traceg.xz"])
    assert {"fp32", "sfu", "int"} <= used
    no_sfu = _replace(h100(), "sm.pipes.sfu.units", 0)
    validate(no_sfu, pipes_used={"fp32"})       # fine if the trace needs no SFU
    with pytest.raises(ConfigError) as exc:
        validate(no_sfu, pipes_used=used)
    assert exc.value.field == "sm.pipes.sfu.units"
    no_tensor = _replace(h100(), "sm.tensor.units", 0)
    with pytest.raises(ConfigError) as exc:
        validate(no_tensor, pipes_used={"tensor"})
    assert exc.value.field == "sm.tensor.units"


def test_shared_memory_over_carveout_rejected():
    with pytest.raises(ConfigError) as exc:
        validate(_replace(h100(), "sm.l1.max_shared_per_sm", Size.kib(240)))
    assert exc.value.field == "sm.l1.max_shared_per_sm"
    with pytest.raises(ConfigError) as exc:
        validate(_replace(h100(), "sm.l1.max_shared_per_block", Size.kib(229)))
    assert exc.value.field == "sm.l1.max_shared_per_block"
    with pytest.raises(ConfigError) as exc:
        validate(_replace(h100(), "sm.l1.size", Size.kib(192)))
    assert exc.value.field == "sm.l1.shared_carveouts"


@pytest.mark.parametrize("path,value", [
    ("clocks.core", Frequency(0)), ("dram.clock", Frequency(0)), ("l2.size", Size(0)),
    ("sm_count", 0), ("sm.l1.line", Size(0)), ("sm.registers.registers", -1)])
def test_non_positive_sizes_and_clocks_rejected(path, value):
    with pytest.raises(ConfigError) as exc:
        validate(_replace(h100(), path, value))
    assert exc.value.field == path


def test_mma_sync_share_is_a_share_of_the_peak_and_stays_exact():
    from fractions import Fraction

    from simfront.gpu import GPU

    for bad in (0, Fraction(3, 2)):
        with pytest.raises(ConfigError) as exc:
            validate(_replace(h100(), "sm.tensor.mma_sync_share", bad))
        assert exc.value.field == "sm.tensor.mma_sync_share"
    # written as "2/3", read back as the same fraction (a float would not round-trip)
    data = h100().to_dict()
    assert data["sm"]["tensor"]["mma_sync_share"] == "2/3"
    assert GPU.from_dict(data).sm.tensor.mma_sync_share == Fraction(2, 3)
    data["sm"]["tensor"]["mma_sync_share"] = "two thirds"
    with pytest.raises(ConfigError) as exc:
        GPU.from_dict(data)
    assert exc.value.field == "sm.tensor.mma_sync_share"

"""The model's constants, grouped by the part they describe (issue 31): settings are named
``group.field`` wherever they are overridden, and a name that is not one fails naming it."""

from __future__ import annotations

import pytest

from simfront.core.paths import repo_dir
from simfront.gpu import load_gpu
from simfront.sim.model.params import DEFAULT_PARAMS


def test_a_setting_is_named_by_its_group_and_field():
    p = DEFAULT_PARAMS.with_(**{"l2.dirty_share": 0.2, "dram.queue_latency": 0.0})
    assert p.l2.dirty_share == 0.2 and p.dram.queue_latency == 0.0
    assert p.l2.private_capacity == DEFAULT_PARAMS.l2.private_capacity
    assert DEFAULT_PARAMS.l2.dirty_share == 0.3  # the defaults are left alone
    names = DEFAULT_PARAMS.as_dict()
    assert names["launch.cycles"] == DEFAULT_PARAMS.launch.cycles
    assert {n.split(".")[0] for n in names} == {"launch", "issue", "l1", "l2", "dram",
                                                 "stores", "grid"}


@pytest.mark.parametrize("name", ["l2_dirty_share", "l2.nope", "cache.dirty_share"])
def test_an_unknown_setting_fails_naming_it(name):
    with pytest.raises(KeyError, match=name.replace(".", r"\.")) as err:
        DEFAULT_PARAMS.with_(**{name: 1.0})
    assert "l2.dirty_share" in str(err.value)  # and says what the settings are


def test_a_job_with_an_unknown_setting_is_not_run(tmp_path):
    from simfront.sim.backend import SimJob
    from simfront.sim.model.backend import ModelBackend

    trace = repo_dir("traces") / "mamba1_torch_elementwise"
    ok = ModelBackend().run(SimJob("a", trace, load_gpu("h100"), tmp_path / "a",
                                   options={"params": {"launch.cycles": 0.0}}))
    base = ModelBackend().run(SimJob("b", trace, load_gpu("h100"), tmp_path / "b"))
    assert ok.ok and ok.provenance["params"]["launch.cycles"] == 0.0
    for r0, r1 in zip(base.records, ok.records):
        assert r1["cycles"] == pytest.approx(r0["cycles"] - r0["sim_launch_cycles"])
    bad = ModelBackend().run(SimJob("c", trace, load_gpu("h100"), tmp_path / "c",
                                    options={"params": {"l2_dirty_share": 0.1}}))
    assert not bad.ok and "l2_dirty_share" in bad.reason and not bad.records

"""A per-configuration ncu profile laid over every launch of a step (simfront.stats.ncu_configs),
on the shipped 130M Mamba2 capture and its H100 profile (88 configurations, 2068 launches)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simfront.analysis.studies import characterize_ncu
from simfront.core.errors import InputError
from simfront.core.launches import read_sidecar, window_launches
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import repo_dir
from simfront.stats.ncu_configs import (MATCH_CONFIG, MATCH_GRID, census_work, config_key,
                                        expand, expand_trace_set, find_config_profile)

SET = repo_dir("traces") / "mamba2_lm-130m"


@pytest.fixture(scope="module")
def parts():
    ncu = read_ncu_csv(find_config_profile(SET))
    launches = window_launches(read_sidecar(SET / "launches.jsonl"))
    return ncu, launches, census_work(SET)


def test_every_launch_of_the_window_gets_a_record(parts):
    ncu, launches, work = parts
    e = expand(ncu, launches, work)
    assert len(e.frame) == len(launches) == 2068
    assert not e.unmatched
    assert list(e.frame["trace_order"]) == [x.order for x in launches]
    # each record ncu took is the profile of exactly one launch: the first of its configuration
    prof = e.frame[e.frame["ncu_profiled"]]
    assert prof["ncu_row"].is_unique
    first_of = {}
    for x in launches:
        # ncu's launch configuration includes the shared memory
        first_of.setdefault((config_key(x), x.shmem), x.order)
    assert set(prof["trace_order"]) <= set(first_of.values())
    assert (e.frame.loc[e.frame["ncu_profiled"], "ncu_match"] == MATCH_CONFIG).all()


def test_a_launch_is_scaled_to_its_own_work(parts):
    ncu, launches, work = parts
    plain = expand(ncu, launches, None).frame
    scaled = expand(ncu, launches, work).frame
    # the 130M step's persistent GEMM configuration whose launches differ most in census
    moved = scaled[(scaled["ncu_work_scale"] - 1).abs() > 0.5]
    assert len(moved), "the step has launches of one configuration with other work"
    i = moved.index[0]
    rep = scaled.loc[(scaled["ncu_row"] == scaled.loc[i, "ncu_row"]) & scaled["ncu_profiled"]]
    ratio = work[scaled.loc[i, "file"]] / work[rep["file"].iloc[0]]
    assert scaled.loc[i, "ncu_work_scale"] == pytest.approx(ratio)
    for col in ("duration_s", "cycles", "dram_bytes"):
        assert scaled.loc[i, col] == pytest.approx(plain.loc[i, col] * ratio)
    # rates stay: time and bytes grew together
    assert scaled.loc[i, "dram_util"] == plain.loc[i, "dram_util"]
    # the profiled launch itself is never scaled
    assert (scaled.loc[scaled["ncu_profiled"], "ncu_work_scale"] == 1).all()


def test_another_block_falls_back_to_the_same_function_and_grid(parts):
    ncu, launches, _ = parts
    x = next(x for x in launches if x.key.startswith("_chunk_scan_fwd"))
    other = replace(x, block=(x.block[0] * 2, 1, 1))
    e = expand(ncu, [x, other], None)
    assert list(e.frame["ncu_match"]) == [MATCH_CONFIG, MATCH_GRID]
    assert e.frame["ncu_row"].nunique() == 1
    assert "nearest grid" in e.summary()


def test_an_unprofiled_function_is_named_not_guessed(parts):
    ncu, launches, _ = parts
    ghost = replace(launches[0], name="_Z12never_ranv", order=1)
    e = expand(ncu, [launches[0], ghost], None)
    assert len(e.frame) == 1
    assert e.unmatched and "never_ran" in e.unmatched[0]


def test_characterize_reads_a_trace_set_profiled_per_configuration():
    (ch,) = characterize_ncu([SET])
    e = expand_trace_set(SET)
    assert ch.launches == 2068
    assert ch.step_time_s == pytest.approx(float(e.frame["duration_s"].sum()))
    assert np.isclose(ch.categories["share"].sum(), 1.0)
    # 24 layers of Mamba2 mixers: the SSD kernels are there, every launch of them
    assert ch.categories.loc["ssm", "launches"] == sum(
        1 for x in window_launches(read_sidecar(SET / "launches.jsonl"))
        if x.key.startswith(("_chunk", "_bmm", "_state_passing")))


def test_a_set_without_a_profile_says_so(tmp_path):
    with pytest.raises(InputError, match="per-configuration"):
        expand_trace_set(tmp_path)

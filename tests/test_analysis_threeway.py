"""The three-way table (issue 13 item 5): model vs Accel-Sim vs H100 per kernel and per step,
at the baseline and under what-ifs, and the disagreements between the two simulators.

`tests/data/threeway_smoke.h5` is a real sweep (README there): the launch-API smoke capture
through the model and Accel-Sim 1.x at h100 and three what-ifs. Hardware pairing is checked
on the shipped selective-scan launches against the H100 ncu records of the same step
(`bench/data/h100_ncu/`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simfront.analysis.threeway import _pair_hardware, kernel_table, three_way
from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.stats.h5store import read_records

FIXTURE = REPO_ROOT / "tests" / "data" / "threeway_smoke.h5"
# The fixture's hashes are of the descriptions of the day it ran (2026-11-22); the h100's
# hash moves whenever the description does (model-1.3's pipe facts moved it), so the base
# is found by the name the sweep gave its baseline point.
BASE_CONFIG = "h100[sm_count=132,tensor_vector_ratio=16]"
BASE = str(read_records(FIXTURE).set_index("config").config_hash[BASE_CONFIG].iloc[0])


@pytest.fixture(scope="module")
def records():
    return read_records(FIXTURE)


def _asked(r):
    if "requested_backend" not in r:
        return r["backend"]
    req = r["requested_backend"].fillna("").astype(str)
    return req.where(req != "", r["backend"])


def test_fixture_is_a_whole_two_backend_sweep(records):
    r = records[records.complete.astype(bool)]
    assert set(_asked(r)) == {"model", "accelsim"}
    assert r.config_hash.nunique() == 4 and BASE in set(r.config_hash)
    # every launch of the 7 at every config, from each backend asked for
    assert (r.groupby([_asked(r), "config_hash"]).kernel_id.nunique() == 7).all()


def test_kernel_table_has_both_simulators_per_launch(records):
    k = kernel_table(records)
    assert len(k) == 4 * 7
    assert k.model_cycles.notna().all() and k.accelsim_cycles.notna().all()
    assert (k.stand_in == (k.accelsim_made_by != "accelsim")).all()


def test_ratios_are_step_sums_of_the_records(records):
    t = three_way(records, base_config_hash=BASE)
    assert len(t.whatifs) == 3 and t.base_config
    r = records[records.complete.astype(bool)].assign(asked=_asked)
    own = r[r.backend == r.asked]   # Accel-Sim's own records only: stand-ins never count
    ok_ids = None
    for (b, c), g in own.groupby(["asked", "config_hash"]):
        ids = set(g.kernel_id)
        ok_ids = ids if ok_ids is None else ok_ids & ids
    for row in t.whatifs.itertuples():
        for b in ("model", "accelsim"):
            def step(chash):
                g = own[(own.asked == b) & (own.config_hash == chash)
                        & own.kernel_id.isin(ok_ids)]
                return g.cycles.sum()
            assert getattr(row, f"{b}_ratio") == pytest.approx(step(row.config_hash) / step(BASE))
        assert row.kernels == len(ok_ids)


def test_disagreement_follows_the_tolerance(records):
    loose = three_way(records, base_config_hash=BASE, tol=10.0)
    assert not loose.disagreements and not loose.whatifs.disagree.any()
    strict = three_way(records, base_config_hash=BASE, tol=0.0)
    differ = (strict.whatifs.model_ratio != strict.whatifs.accelsim_ratio)
    assert (strict.whatifs.disagree == differ).all()
    assert len(strict.disagreements) == int(differ.sum())
    for line, row in zip(strict.disagreements, strict.whatifs[differ].itertuples()):
        assert row.config in line and f"{row.model_ratio:.3f}x" in line


def test_a_stand_in_is_kept_out_of_the_ratios(records):
    # mark Accel-Sim's record of one launch at the baseline as made by the model instead
    r = records.copy()
    acc = (r.backend == "accelsim") & (r.config_hash == BASE) & r.complete.astype(bool)
    i = r[acc].index[0]
    r.loc[i, "requested_backend"], r.loc[i, "backend"] = "accelsim", "model"
    t0, t1 = three_way(records, base_config_hash=BASE), three_way(r, base_config_hash=BASE)
    assert (t1.whatifs.kernels == t0.whatifs.kernels - 1).all()
    base_row = t1.steps[t1.steps.baseline].iloc[0]
    assert base_row.stand_ins == 1 and base_row.common == 6


def test_one_backend_alone_is_refused(records):
    with pytest.raises(InputError) as exc:
        three_way(records[records.backend == "model"])
    assert "'accelsim'" in str(exc.value) and "model" in str(exc.value)


def test_hardware_pairs_launch_by_launch(repo_root):
    """The model's records of the two shipped selective-scan launches against the ncu
    records of the whole step they were captured from: each pairs with its own kernel."""
    from simfront.sim.backend import SimJob, get_backend

    import tempfile
    with tempfile.TemporaryDirectory() as d:
        res = get_backend("model").run(SimJob("t", repo_root / "traces" / "mamba1_selective_scan",
                                              load_gpu("h100"), __import__("pathlib").Path(d)))
    base = pd.DataFrame(res.records).sort_values("kernel_id").reset_index(drop=True)
    hw = read_ncu_csv(repo_root / "bench" / "data" / "h100_ncu" / "mamba1_scan_step.ncu.csv.xz")
    got = _pair_hardware(base, hw)
    assert got.notna().all()
    for name, cycles in zip(base.kernel_name, got):
        short = "selective_scan_fwd" if "fwd" in name else "selective_scan_bwd"
        cand = hw[hw.kernel_name.str.contains(short)]
        assert cycles in set(cand.cycles.astype(float))
    assert np.isnan(_pair_hardware(base, hw.iloc[:3]).to_numpy()).all()  # none of these


def test_cli_writes_tables_and_report(tmp_path, records):
    from simfront.cli import cli

    res = CliRunner().invoke(cli, ["analyze", "threeway", str(FIXTURE), "--tol", "0",
                                   "--base", BASE_CONFIG, "--out", str(tmp_path)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    t = three_way(records, base_config_hash=BASE, tol=0.0)
    assert res.output.count("disagree:") == len(t.disagreements)
    for name in ("kernels", "steps", "whatifs"):
        assert (tmp_path / f"threeway_{name}.csv").is_file()
    md = (tmp_path / "threeway.md").read_text()
    assert "Model vs Accel-Sim vs H100" in md and (tmp_path / "threeway.html").is_file()


def test_ratios_weight_launches_a_kernel_stands_for(records):
    r = records.copy()
    r["launch_count"] = np.where(r.kernel_id == 3, 50, 1)   # shared_sum stands for 50
    t1, t0 = three_way(r, base_config_hash=BASE), three_way(records, base_config_hash=BASE)
    own = r[r.complete.astype(bool)]
    for row in t1.whatifs.itertuples():
        for b in ("model", "accelsim"):
            def step(chash):
                g = own[(own.backend == b) & (own.config_hash == chash)]
                return (g.cycles * g.launch_count).sum()
            assert getattr(row, f"{b}_ratio") == pytest.approx(step(row.config_hash) / step(BASE))
    # shared_sum is where the two disagree most on 32:1, so weighting it moves the ratio
    assert not np.allclose(t1.whatifs.accelsim_ratio, t0.whatifs.accelsim_ratio)

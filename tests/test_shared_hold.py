"""Occupancy what-ifs: the shared-memory hold (simfront.workloads.shared_hold), the GPU's
``shared_held`` variant that stands for it, and the model against the hold runs shipped in
traces/<set>/hold/ (measured with bench/device/shared_hold.sh on an H200 and an H100)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from simfront.analysis.occupancy import compare, hold_labels
from simfront.analysis.whatif import condition
from simfront.core.errors import ConfigError, InputError
from simfront.core.paths import REPO_ROOT
from simfront.core.timeline import store_beside
from simfront.gpu import load_gpu
from simfront.gpu.hashing import config_hash
from simfront.gpu.validate import validate
from simfront.gpu.variants import HOLDER_REGISTERS, with_variants
from simfront.sim.model.occupancy import Launch, occupancy
from simfront.workloads.shared_hold import PTX, fits, parse_kib

TRACES = REPO_ROOT / "traces"
CHECKS = {"h200": TRACES / "provenance" / "h200-shared-hold-check.jsonl",
          "h100": TRACES / "provenance" / "h100-shared-hold-check.jsonl"}
FWD = "_chunk_scan_fwd_kernel"
#: the hybrid's chunk-scan forward as launched (launches.jsonl: 168 registers, 35,840 B)
HYBRID_FWD = Launch((8, 16, 48), (64, 1, 1), 168, 35840)


@pytest.fixture(scope="module")
def own_cache(tmp_path_factory):
    old = os.environ.get("SIMFRONT_CACHE")
    os.environ["SIMFRONT_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("SIMFRONT_CACHE")
    else:
        os.environ["SIMFRONT_CACHE"] = old


def test_hold_sizes_parse_and_bad_ones_name_the_option():
    assert parse_kib("64, 117k,8KiB") == [64, 117, 8]
    for bad in ("64,x", "0"):
        with pytest.raises(ConfigError) as e:
            parse_kib(bad)
        assert e.value.field == "--hold-shared"


@pytest.mark.parametrize("gpu", sorted(CHECKS))
def test_the_model_fits_the_blocks_the_probe_found_held(gpu):
    # every case of the hold's check on the device: the probe's blocks per SM, held and
    # not, are what fits() and the model's occupancy on the shared_held variant give
    base = load_gpu(gpu)
    cases = [json.loads(line) for line in CHECKS[gpu].read_text().splitlines()]
    assert {c["held_kib"] for c in cases} >= {0, 64, 117}
    for c in cases:
        assert c["min_on_sm"] == c["max_on_sm"]
        seen = c["max_on_sm"]
        assert fits(base.sm.l1.max_shared_per_sm.bytes, c["block_shared"],
                    c["held_kib"] << 10) == seen
        g = with_variants(base, shared_held=f"{c['held_kib']} KiB") if c["held_kib"] else base
        probe = Launch((8 * base.sm_count, 1, 1), (64, 1, 1), 32, c["block_shared"])
        assert occupancy(probe, g).blocks_per_sm == seen


def test_the_variant_is_valid_and_leaves_every_other_description_as_it_was():
    g = load_gpu("h200")
    assert "held_on_one" not in g.to_dict()["sm"]["registers"]
    h = with_variants(g, shared_held="64 KiB")
    validate(h)
    assert h.sm.l1.max_shared_per_sm.bytes == g.sm.l1.max_shared_per_sm.bytes - 65536 - 1024
    assert h.sm.l1.shared_carveouts == (max(g.sm.l1.shared_carveouts, key=lambda c: c.bytes),)
    assert h.sm.max_blocks == g.sm.max_blocks - 1
    assert h.sm.registers.held_on_one == HOLDER_REGISTERS
    assert config_hash(h) != config_hash(g)
    assert condition("h200-shmem64k", "h200").model_gpu().sm == h.sm
    with pytest.raises(ConfigError) as e:
        with_variants(g, shared_held="227 KiB")
    assert e.value.field == "shared_held"


def test_the_holders_registers_cost_the_hybrid_forward_a_block_as_on_the_h200():
    # 168 registers a thread fill a sub-partition with three warps exactly; the holder's
    # warp takes 512 of one, so one warp, one 2-warp block, fewer fit even at a 1 KiB hold
    g = load_gpu("h200")
    assert occupancy(HYBRID_FWD, g).blocks_per_sm == 6
    assert occupancy(HYBRID_FWD, with_variants(g, shared_held="1 KiB")).blocks_per_sm == 5
    assert occupancy(HYBRID_FWD, with_variants(g, shared_held="64 KiB")).blocks_per_sm == 4


@pytest.fixture(scope="module")
def hybrid_fwd(own_cache):
    return compare(TRACES / "h200-ho-hybrid", kernels=(FWD,))


def test_held_kernels_slow_down_on_hardware_and_in_the_model(hybrid_fwd):
    rows = hybrid_fwd.rows.set_index("held_kib")
    assert list(rows.index) == [1, 64, 117]
    assert list(rows.blocks) == ["6->5", "6->4", "6->3"]
    # fewer blocks an SM, slower, on both sides (the hardware: the set's shipped run)
    assert 1.05 < rows.hw_ratio.iloc[0] < rows.hw_ratio.iloc[1] < rows.hw_ratio.iloc[2]
    assert 1.0 < rows.model_ratio.iloc[0] < rows.model_ratio.iloc[1] < rows.model_ratio.iloc[2]
    # the holders read the SM clock while the kernel ran
    assert rows.hw_clock_ghz.between(1.5, 2.0).all()
    # with one L1TEX data path for shared memory, cp.async's writes and the L1 (model-1.20)
    # the model's response holds within 11% (model-1.19 read it 13% and 23% too steep);
    # on the H200's own L2 bandwidth (192 banks) 5.0, 5.3 and 9.9%, the deepest hold
    # steepest (bench/RESULTS.md, *Occupancy on hardware: shared memory held*)
    assert (rows.error.abs() < 11).all()


def test_a_kernel_the_run_tiled_otherwise_is_left_out(own_cache):
    f = compare(TRACES / "ho-m2-d1024", kernels=("_chunk_cumsum_bwd_kernel",))
    assert f.retuned == ("_chunk_cumsum_bwd_kernel",) and f.rows.empty


def test_a_set_without_a_hold_run_is_an_error_naming_the_folder(tmp_path):
    with pytest.raises(InputError) as e:
        hold_labels(tmp_path)
    assert "hold" in str(e.value)


def test_a_hold_runs_timelines_are_stored_in_the_sets_hold_folder(tmp_path):
    src = TRACES / "h200-ho-hybrid" / "hold"
    run = tmp_path / "run"
    run.mkdir()
    import lzma

    (run / "timeline-shmem64k.csv").write_bytes(lzma.decompress(
        (src / "h200-shmem64k.csv.xz").read_bytes()))
    shutil.copy(src / "h200-shmem64k.json", run / "timeline-shmem64k.json")
    csv, js = store_beside(run, "shmem64k", tmp_path / "set", folder="hold")
    assert csv == tmp_path / "set" / "hold" / "h200-shmem64k.csv.xz" and js.is_file()
    with pytest.raises(InputError):
        store_beside(run, "shmem64k", tmp_path / "set", folder="hold")


def test_the_shipped_ptx_is_built_from_the_shipped_source():
    first = PTX.read_text().splitlines()[0]
    src = PTX.with_suffix(".cu").read_bytes()
    assert first == f"// from shared_hold.cu sha256 {hashlib.sha256(src).hexdigest()}"
    text = PTX.read_text()
    for entry in ("simfront_hold(", "simfront_hold_wait(", "simfront_hold_release("):
        assert f".entry {entry}" in text


def test_analyze_occupancy_prints_the_rows_and_names_a_set_without_a_hold(own_cache):
    from click.testing import CliRunner

    from simfront.cli import cli

    r = CliRunner().invoke(cli, ["analyze", "occupancy", str(TRACES / "h200-ho-hybrid"),
                                 "--kernel", FWD, "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output[r.output.index("{"):])["h200-ho-hybrid"]["rows"]
    assert sorted(x["held_kib"] for x in rows) == [1, 64, 117]
    r = CliRunner().invoke(cli, ["analyze", "occupancy", str(TRACES / "ho-m1")])
    assert isinstance(r.exception, InputError) and "hold" in str(r.exception)

"""Launch deduplication on real captures: which launches a key merges, the sidecar's repeat
and compact records, multiplicity files, and the step sums that must count every launch.

The shipped sets were captured without deduplication (tracer 1.1, no parameter hash), so
their records key on the launch configuration alone; the CTA census in their headers (warp
instructions over every block of the launch) shows where that is not enough."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from simfront.core.errors import InputError, TraceFormatError
from simfront.core.launches import (dedup_groups, dedup_key, multiplicity, outside_counts,
                                       read_sidecar, traced_launches, window_launches)
from simfront.core.paths import REPO_ROOT
from simfront.traces.dedup import deduplicate_set
from simfront.traces.multiplicity import MULTIPLICITY, read_multiplicity
from simfront.traces.reader import KernelTrace, TraceSet

TRACES = REPO_ROOT / "traces"


def _census_by_group(name: str) -> list[tuple[str, list[int]]]:
    d = TRACES / name
    w = window_launches(read_sidecar(d))
    out = []
    for g in dedup_groups(w):
        if len(g) > 1:
            out.append((w[g[0]].key, [KernelTrace(d / w[i].file).header.census_warp_instructions
                                      for i in g]))
    return out


@pytest.fixture(scope="module")
def mamba2_paper_groups():
    return _census_by_group("mamba2_lm-paper")


def test_the_two_layers_ssd_kernels_merge_and_do_the_same_work(mamba2_paper_groups):
    """Each SSD Triton kernel runs once per layer for each of its uses: the 2-layer step's
    launches of it come in pairs (layer 0, layer 1) that execute the same number of warp
    instructions, so tracing one of each pair loses nothing. One configuration can hold two
    uses that differ (_chunk_state_fwd_kernel in the forward pass and again in the backward,
    another Triton specialisation under the same name): the tracer keys on the function
    handle and the parameter bytes, which tell them apart; the name cannot."""
    ssd = [(k, c) for k, c in mamba2_paper_groups
           if any(s in k for s in ("_chunk_scan", "_chunk_state", "_state_passing", "_bmm"))]
    assert len(ssd) >= 5, [k for k, _ in mamba2_paper_groups]
    for key, census in ssd:
        assert None not in census, key
        for v in set(census):
            assert census.count(v) % 2 == 0, (key, census)       # once per layer
    assert any(len(set(c)) > 1 for k, c in ssd if k == "_chunk_state_fwd_kernel")


def test_configuration_alone_merges_launches_that_differ(mamba2_paper_groups):
    """Why the key needs the parameter bytes: the optimizer's multi_tensor_apply launches
    share grid and block but walk tensor lists of different sizes (their parameter struct
    holds the sizes), and do different work."""
    differing = {k for k, c in mamba2_paper_groups
                 if None not in c and max(c) > 1.01 * min(c)}
    assert "multi_tensor_apply_kernel" in differing


def test_repeats_are_near_identical_for_gemms():
    """cuBLAS's nvjet GEMMs of the same shape in the Mamba1 step: the census of repeats
    agrees to 0.2% (persistent tile schedulers), so merging them is within the 1% budget."""
    groups = _census_by_group("mamba1_lm-paper")
    gemm = [c for k, c in groups if k.startswith("nvjet") and None not in c]
    assert gemm
    for c in gemm:
        assert max(c) <= 1.002 * min(c), c


def _dedup_sidecar(src: Path, dst: Path) -> list[dict]:
    """The records a deduplicating tracer writes for the launches of ``src``'s sidecar:
    the first launch of each configuration group traced, the rest repeats, and launches
    outside the window as counts per name."""
    recs = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    seen: dict[tuple, int] = {}
    lines = []
    for r in recs:
        key = (r["name"], tuple(r["grid"]), tuple(r["block"]), r.get("shmem_dynamic"))
        if r.get("traced") and key in seen:
            lines.append({"kernel_id": r["kernel_id"], "same_as": seen[key],
                          "params_hash": "%016x" % (hash(key) & (2**64 - 1))})
        else:
            if r.get("traced"):
                seen[key] = r["kernel_id"]
            lines.append(r)
    lines += [{"outside_window": True, "name": "_Z3fooPf", "count": 1234},
              {"outside_window": True, "name": "_Z3barv", "count": 5}]
    dst.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return recs


def test_repeat_records_read_back_as_every_launch_of_the_window(tmp_path):
    src = TRACES / "mamba2_lm-paper" / "launches.jsonl"
    _dedup_sidecar(src, tmp_path / "launches.jsonl")
    full = window_launches(read_sidecar(src))
    dd = window_launches(read_sidecar(tmp_path))
    assert len(dd) == len(full) == 232
    assert [(x.name, x.grid, x.block, x.kernel_id) for x in dd] == \
        [(x.name, x.grid, x.block, x.kernel_id) for x in full]
    repeats = [x for x in dd if x.same_as is not None]
    assert repeats and all(not x.traced and x.file for x in repeats)
    traced = traced_launches(dd)
    mult = multiplicity(dd)
    assert len(mult) == len(traced) == len(dedup_groups(full))
    assert sum(mult.values()) == 232
    # the representative's own file stands for its repeats
    rep = {x.kernel_id: x.file for x in traced}
    assert all(x.file == rep[x.same_as] for x in repeats)
    assert outside_counts(tmp_path) == {"_Z3fooPf": 1234, "_Z3barv": 5}


def test_compact_records_are_smaller_than_full_ones(tmp_path):
    src = TRACES / "mamba2_lm-paper" / "launches.jsonl"
    _dedup_sidecar(src, tmp_path / "launches.jsonl")
    # the repeats (about half the window here, 22 of 24 layers at 130M) cost ~80 bytes each
    assert (tmp_path / "launches.jsonl").stat().st_size < 0.75 * src.stat().st_size


def test_a_repeat_of_an_unknown_launch_names_the_line(tmp_path):
    src = TRACES / "mamba2_lm-tiny" / "launches.jsonl"
    lines = src.read_text().splitlines()
    lines.insert(3, json.dumps({"kernel_id": 10**9, "same_as": 10**9 - 1}))
    (tmp_path / "launches.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"launches.jsonl.*4|line 4"):
        read_sidecar(tmp_path)


def test_dedup_key_separates_what_the_tracer_separates():
    w = window_launches(read_sidecar(TRACES / "mamba2_lm-paper"))
    a = w[0]
    from dataclasses import replace
    assert dedup_key(a) == dedup_key(replace(a, order=5, kernel_id=99, stream=7))
    assert dedup_key(a) != dedup_key(replace(a, grid=(a.grid[0] + 1, *a.grid[1:])))
    assert dedup_key(a) != dedup_key(replace(a, shmem_dynamic=(a.shmem_dynamic or 0) + 16))
    assert dedup_key(replace(a, params_hash="1")) != dedup_key(replace(a, params_hash="2"))


# --------------------------------------------------------------------------- trace sets


def _dedup_set(src: Path, dst: Path) -> tuple[dict[str, int], int]:
    """A deduplicated copy of a real set: launches with the same name, grid, block and
    instruction count merged into the first; returns the multiplicity and the launch count."""
    mult = deduplicate_set(src, dst, lambda k: (k.header.name, k.header.grid, k.header.block,
                                                 k.instruction_count()))
    return mult, len(TraceSet(src))


SSD = ("_chunk_", "_state_passing", "_bmm")


@pytest.fixture(scope="module")
def ssd_sets(tmp_path_factory):
    """The tiny Mamba2 step's SSD launches as a set of their own (every launch), and its
    deduplicated copy: small enough for the model and the statistics in seconds."""
    root = tmp_path_factory.mktemp("ssd")
    src = TRACES / "mamba2_lm-tiny"
    full = root / "full"
    full.mkdir()
    keep = [r.file for r in TraceSet(src).kernel_refs
            if any(x in KernelTrace(src / r.file).header.name for x in SSD)]
    for f in keep:
        shutil.copy2(src / f, full / f)
    (full / "kernelslist.g").write_text("".join(f + "\n" for f in keep))
    mult, n = _dedup_set(full, root / "dedup")
    return full, root / "dedup", mult, n


def test_a_deduplicated_set_counts_every_launch(ssd_sets):
    full, dd, mult, n = ssd_sets
    ts = TraceSet(dd)
    assert len(ts) < n == len(TraceSet(full)) and ts.launches == n
    assert read_multiplicity(dd) == mult
    assert any(ts.count(f) > 1 for f in mult)


def test_bad_multiplicity_files_name_file_and_line(tmp_path, ssd_sets):
    shutil.copytree(ssd_sets[1], tmp_path / "s")
    p = tmp_path / "s" / MULTIPLICITY
    good = p.read_text().splitlines()
    p.write_text("\n".join(good[:2] + ["kernel-1.traceg.xz two"] + good[2:]) + "\n")
    with pytest.raises(TraceFormatError, match="line 3"):
        read_multiplicity(tmp_path / "s")
    p.write_text("\n".join(good + ["kernel-999999.traceg.xz 2"]) + "\n")
    with pytest.raises(TraceFormatError, match="kernelslist.g does not list"):
        TraceSet(tmp_path / "s")


def test_model_step_sums_count_repeats(tmp_path, ssd_sets):
    """The model run on the deduplicated set gives each distinct launch one record with its
    count; the step's instructions, cycles and DRAM bytes weighted by it equal the full
    set's (merged launches execute the same instructions)."""
    from simfront.gpu import load_gpu
    from simfront.sim.backend import SimJob
    from simfront.sim.model.backend import ModelBackend
    from simfront.stats.launches import step_total

    gpu = load_gpu("h100")
    runs = {}
    for tag, d in (("full", ssd_sets[0]), ("dedup", ssd_sets[1])):
        res = ModelBackend().run(SimJob(tag, d, gpu, tmp_path / f"out_{tag}"))
        assert res.ok, res.reason
        runs[tag] = pd.DataFrame(res.records)
    full, dd = runs["full"], runs["dedup"]
    assert len(dd) < len(full) and set(full["launch_count"]) == {1}
    assert dd["launch_count"].sum() == len(full)
    assert step_total(dd, "instructions") == pytest.approx(full["instructions"].sum(), rel=1e-12)
    # cycles and DRAM bytes: a repeat on other addresses may hit the caches differently
    assert step_total(dd, "cycles") == pytest.approx(full["cycles"].sum(), rel=0.02)
    assert dd["cycles"].sum() < 0.98 * full["cycles"].sum()       # unweighted would be short


def test_instruction_mix_bound_counts_repeats(ssd_sets):
    """The analytic tensor:vector bound from a deduplicated set's instruction mix: FLOPs
    weighted by each kernel's count give the full set's step."""
    from simfront.analysis.bound import analytic_bound, mix_from_traces

    full = mix_from_traces(ssd_sets[0], footprint=False)
    dd = mix_from_traces(ssd_sets[1], footprint=False)
    assert len(dd) < len(full) and dd["launch_count"].sum() == len(full)
    a = analytic_bound(full, [16.0, 4.0], 1e15)
    b = analytic_bound(dd, [16.0, 4.0], 1e15)
    assert b.balance_ratio == pytest.approx(a.balance_ratio, rel=1e-9)
    assert list(b.step["time_s"]) == pytest.approx(list(a.step["time_s"]), rel=1e-9)


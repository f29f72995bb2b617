"""The shipped H100 microbenchmark traces (bench/data/ubench/, from bench/device/ubench.cu)
hold the kernels as designed: the chains' instruction mix and dependency distance, and a
census that covers the whole grid. The benchmark's analytic bounds rest on both."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from simfront.traces.reader import TraceSet

SET = Path(__file__).resolve().parents[1] / "bench" / "data" / "ubench" / "ubench-h100"

pytestmark = pytest.mark.skipif(not (SET / "kernelslist.g").is_file(),
                                reason=f"no shipped microbenchmark traces in {SET}")


def launches() -> list[tuple[dict, object]]:
    with open(SET / "ubench_launches.csv", newline="") as f:
        table = list(csv.DictReader(f))
    return list(zip(table, TraceSet(SET).kernels()))


def first_warp(kernel):
    return next(iter(kernel.iter_blocks())).warps[0].instructions


def dependency_distances(instructions, opcode: str) -> Counter:
    """For each `opcode` instruction that reads the register it writes: how many `opcode`
    instructions back that register was last written."""
    seq = [i for i in instructions if i.opcode == opcode]
    last: dict[str, int] = {}
    dist: Counter = Counter()
    for n, ins in enumerate(seq):
        d = ins.dst[0]
        if d in ins.src and d in last:
            dist[n - last[d]] += 1
        last[d] = n
    return dist


@pytest.mark.parametrize("ilp", [1, 2, 4, 8])
def test_ffma_chains_have_the_designed_mix_and_distance(ilp):
    rows = [(r, k) for r, k in launches() if r["op"] == "ffma" and int(r["ilp"]) == ilp]
    assert len(rows) == 4  # 1, 4, 16, 64 warps per SM
    for r, k in rows:
        ins = first_warp(k)
        ops = Counter(i.opcode for i in ins)
        per_thread = int(r["iters"]) * int(r["ops_per_iter"])
        assert ops["FFMA"] == per_thread, (r["label"], ops.most_common(5))
        # nothing else is more than the loop's few percent
        assert ops["FFMA"] / len(ins) > 0.9, (r["label"], ops.most_common(5))
        dist = dependency_distances(ins, "FFMA")
        # every FFMA but each chain's first depends on the one ILP FFMAs before it
        assert dist == Counter({ilp: per_thread - ilp}), (r["label"], dist.most_common(3))


def test_hmma_chains_accumulate_in_place():
    for r, k in launches():
        if r["op"] != "hmma":
            continue
        ins = first_warp(k)
        mma = [i for i in ins if i.opcode.startswith("HMMA.16816.F32.BF16")]
        assert len(mma) == int(r["iters"]) * int(r["ops_per_iter"]), r["label"]
        assert all(i.dst[0] == i.src[-1] for i in mma), r["label"]  # D = A*B + D
        assert len({i.dst[0] for i in mma}) == int(r["ilp"]), r["label"]


def test_sampled_launches_census_covers_the_grid():
    for r, k in launches():
        h = k.header
        traced, total = h.sampled_blocks
        assert (traced, total) == (2, int(r["grid"])), r["label"]
        census = h.census_warp_instructions
        traced_insts = k.instruction_count()
        # identical blocks: the census is the traced blocks' count times total / traced
        assert census == pytest.approx(traced_insts * total / traced, rel=0.002), r["label"]

"""The shipped H100 microbenchmark traces (bench/data/ubench/, from bench/device/ubench.cu)
hold the kernels as designed: the chains' instruction mix and dependency distance, and a
census that covers the whole grid. The benchmark's analytic bounds rest on both."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import pytest

from simfront.traces.reader import TraceSet

SET = Path(__file__).resolve().parents[1] / "bench" / "data" / "ubench" / "ubench-h100"

pytestmark = pytest.mark.skipif(not (SET / "kernelslist.g").is_file(),
                                reason=f"no shipped microbenchmark traces in {SET}")


def launches() -> list[tuple[dict, object]]:
    with open(SET / "ubench_launches.csv", newline="") as f:
        table = list(csv.DictReader(f))
    return list(zip(table, TraceSet(SET).kernels()))


@dataclass
class Warp:
    """The first traced warp of a launch in columns: opcode names, destination register
    codes, source register codes (-1 past the count). Every warp runs the same code."""
    opcodes: list[str]
    dst: np.ndarray
    src: np.ndarray


def first_warp(kernel) -> Warp:
    ops, dst, src = [], [], []
    for chunk in kernel.iter_chunks():
        rows = np.flatnonzero((chunk.tb == 0) & (chunk.warp == 0))
        ops += [chunk.opcodes[o] for o in chunk.op[rows]]
        dst.append(chunk.dst[rows, 0])
        src.append(chunk.src[rows])
        if rows.size and rows[-1] < len(chunk) - 1 and (chunk.tb[rows[-1]:] > 0).any():
            break  # block 0 is done
    return Warp(ops, np.concatenate(dst), np.concatenate(src))


def dependency_distances(warp: Warp, opcode: str) -> Counter:
    """For each `opcode` instruction that reads a register an earlier one wrote: how many
    `opcode` instructions back the nearest such write was (ptxas may rename a chain's
    register at the loop's back edge, so the chain is followed through registers)."""
    idx = [i for i, o in enumerate(warp.opcodes) if o == opcode]
    last: dict[int, int] = {}
    dist: Counter = Counter()
    for n, i in enumerate(idx):
        deps = [last[r] for r in warp.src[i].tolist() if r in last]
        if deps:
            dist[n - max(deps)] += 1
        last[int(warp.dst[i])] = n
    return dist


@pytest.mark.parametrize("ilp", [1, 2, 4, 8])
def test_ffma_chains_have_the_designed_mix_and_distance(ilp):
    rows = [(r, k) for r, k in launches() if r["op"] == "ffma" and int(r["ilp"]) == ilp]
    assert len(rows) == 4  # 1, 4, 16, 64 warps per SM
    for r, k in rows:
        ins = first_warp(k)
        ops = Counter(ins.opcodes)
        per_thread = int(r["iters"]) * int(r["ops_per_iter"])
        assert ops["FFMA"] == per_thread, (r["label"], ops.most_common(5))
        # nothing else is more than the loop's few percent
        assert ops["FFMA"] / len(ins.opcodes) > 0.9, (r["label"], ops.most_common(5))
        dist = dependency_distances(ins, "FFMA")
        # every FFMA but each chain's first depends on the one ILP FFMAs before it
        assert dist == Counter({ilp: per_thread - ilp}), (r["label"], dist.most_common(3))


def test_hmma_chains_accumulate_in_place():
    for r, k in launches():
        if r["op"] != "hmma":
            continue
        w = first_warp(k)
        mma = [i for i, o in enumerate(w.opcodes) if o == "HMMA.16816.F32.BF16"]
        assert len(mma) == int(r["iters"]) * int(r["ops_per_iter"]), r["label"]
        # D = A*B + D: the accumulator is the last source; ILP accumulators in all
        assert all(w.dst[i] in w.src[i].tolist() for i in mma), r["label"]
        assert len({int(w.dst[i]) for i in mma}) == int(r["ilp"]), r["label"]
        assert dependency_distances(w, "HMMA.16816.F32.BF16") == Counter(
            {int(r["ilp"]): len(mma) - int(r["ilp"])}), r["label"]


def test_sampled_launches_census_covers_the_grid():
    # every operation and shape once (ILP 8 chains, mixes, empty launches): reading all
    # 95 files adds nothing but time
    for r, k in launches():
        if r["ilp"] not in ("8",) and not r["op"].startswith(("mix", "empty")):
            continue
        h = k.header
        traced, total = h.sampled_blocks
        assert (traced, total) == (2, int(r["grid"])), r["label"]
        census = h.census_warp_instructions
        traced_insts = k.instruction_count()
        # identical blocks: the census is the traced blocks' count times total / traced
        assert census == pytest.approx(traced_insts * total / traced, rel=0.002), r["label"]

"""Where the SSD kernels' warps wait, instruction by instruction, on hardware and in the model;
and how much an L2 hit's latency varies with the line.

The fit step `mamba2_lm-hd128`'s SSD kernels on an H200 (`bench/data/device/ssd_pc_hd128/`:
ncu's source page and a trace of the same binaries, `bash bench/device/ssd_pc.sh`): the
share of warp time at each instruction as ncu samples it and as the model's warps spend it
(`simfront.sim.model.waits`), summed by opcode family. And the pointer chase and load groups
of `bash bench/device/l2_spread.sh h200` (`bench/data/device/l2_spread/`).

    python bench/bench_ssd_waits.py [--no-write]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.core.ncu import read_source_pages
from simfront.core.paths import REPO_ROOT
from simfront.sim.model.waits import against_ncu, by_family, pc_waits
from simfront.traces.reader import TraceSet

DATA = REPO_ROOT / "bench" / "data" / "device"
PC_DATA = DATA / "ssd_pc_hd128"
SPREAD = DATA / "l2_spread" / "l2_spread_h200.csv.xz"
BARRIER = DATA / "barrier_spread"
WAITS_SECTION = "## Where the SSD kernels' warps wait, instruction by instruction (bench/bench_ssd_waits.py)"
SPREAD_SECTION = "## An L2 hit's latency, line by line (bench/bench_ssd_waits.py)"
#: families listed per kernel: the most under- and over-waited by the model
SHOWN = 5
#: the waits the reading names: wgmma's wait, block barriers, fences; the model's instead
NAMED = ("WARPGROUP", "BAR", "FENCE", "HGMMA", "DEPBAR")


def _families(fam: pd.DataFrame) -> str:
    return ", ".join(f"{f} {r.share_hw:.1%} / {r.share_model:.1%}" for f, r in fam.iterrows())


def kernel_rows() -> tuple[list[str], list[str], pd.DataFrame]:
    """Per kernel the families where the hardware's warps wait most beyond the model's, and
    the other way; the kernels whose profile and trace are not one binary; and per kernel
    the shares at the waits the reading names (hardware, model)."""
    source = read_source_pages(PC_DATA / "source.csv.xz")
    out, skipped, named = [], [], {}
    for k in TraceSet(PC_DATA / "trace").kernels():
        name = k.header.name
        if name not in source or name in named or any(name in s for s in skipped):
            continue
        try:
            joined = against_ncu(pc_waits(k, "h200"), source[name])
        except ValueError as e:
            skipped.append(f"`{name}` ({e})")
            continue
        fam = by_family(joined)
        named[name] = fam.reindex(list(NAMED)).fillna(0.0).stack()
        out.append(f"| {name.removesuffix('_kernel')} | {_families(fam.head(SHOWN))} | "
                   f"{_families(fam.tail(SHOWN).iloc[::-1])} |")
    return out, skipped, pd.DataFrame(named).T


def waits_section() -> str:
    rows, skipped, named = kernel_rows()

    def span(fam: str, col: str) -> str:
        v = named[(fam, col)]
        return f"{v.min():.1%}-{v.max():.1%}"

    lines = [
        WAITS_SECTION, "",
        "The fit step `mamba2_lm-hd128` on an H200 (`bash bench/device/ssd_pc.sh "
        "mamba2_lm-hd128`, `bench/data/device/ssd_pc_hd128/`): ncu's warp samples per SASS "
        "instruction and a trace of the same binaries, the two ablated kernels pinned to the "
        "set's ablation tiling. Per kernel's first launch, the share of warp time at each "
        "instruction (a warp's clocks with it next; ncu: its samples there) summed by opcode "
        "family, hardware / model (`simfront.sim.model.waits`, the model on `h200` at the "
        "unloaded DRAM latency). Written by `python bench/bench_ssd_waits.py`.", "",
        "| kernel | the hardware waits longer (hw / model) | the model waits longer (hw / model) |",
        "|---|---|---|", *rows, ""]
    if skipped:
        lines += ["Left out: " + "; ".join(skipped) + ".", ""]
    lines += [
        f"Reading: in the {len(named)} kernels the hardware's warps spend "
        f"{span('WARPGROUP', 'share_hw')} of their time at `WARPGROUP.DEPBAR` (waiting for "
        f"their warpgroup MMAs; the model's {span('WARPGROUP', 'share_model')}), "
        f"{span('BAR', 'share_hw')} at block barriers (model {span('BAR', 'share_model')}; "
        "ncu also puts a barrier's samples on the instruction after `BAR`) and "
        f"{span('FENCE', 'share_hw')} at fences (model {span('FENCE', 'share_model')}); the "
        f"model's warps wait instead at the `HGMMA`s themselves ({span('HGMMA', 'share_model')}"
        f" against {span('HGMMA', 'share_hw')}: the tensor pipe busy) and at cp.async's "
        f"`DEPBAR` ({span('DEPBAR', 'share_model')} against {span('DEPBAR', 'share_hw')}; ncu "
        "puts that wait on the instruction after it), and on the vector work (`FMUL`, "
        "`PRMT`, `SEL`, `STS`). So the model's warps move in step through the barriers, "
        "where the hardware's drift apart and wait for each other; an L2 hit's spread in "
        "latency (the next section) is one way they drift. No model change rests on this "
        "yet.", ""]
    return "\n".join(lines)


def chase_line(path) -> tuple[str, float, float]:
    """One GPU's pointer chase: a table row, and its slow share and clocks over the fast."""
    d = pd.read_csv(path)
    c = d[d.kind == "chase"].clocks
    slow = c > 400
    per_sm = d[d.kind == "chase"].groupby("sm").clocks.apply(lambda x: float((x > 400).mean()))
    q = c.quantile([0.01, 0.5, 0.9, 0.99]).round(0).astype(int).tolist()
    gpu = path.name.removeprefix("l2_spread_").removesuffix(".csv.xz").upper()
    extra = c[slow].mean() - c[~slow].mean()
    return (f"| {gpu} | {len(c):,} | {' / '.join(map(str, q))} | {c.mean():.0f} | "
            f"{1 - slow.mean():.0%} at {c[~slow].mean():.0f} | {slow.mean():.0%} at "
            f"{c[slow].mean():.0f} (+{extra:.0f}) | {per_sm.min():.0%}-{per_sm.max():.0%} |",
            float(slow.mean()), float(extra))


def spread_section() -> str:
    files = sorted(SPREAD.parent.glob("l2_spread_*.csv.xz"))
    chases = [chase_line(f) for f in files]
    d = pd.read_csv(SPREAD)
    g = d[d.kind == "group"].groupby("k").clocks.agg(["mean", "median"])
    one = float(g.loc[1, "median"])
    rows = [f"| {k} | {r['median']:.0f} | {r['median'] - one:+.0f} |" for k, r in g.iterrows()]
    return "\n".join([
        SPREAD_SECTION, "",
        "`bash bench/device/l2_spread.sh TAG 16 4096` (2026-11-27, an H200 and an H100; "
        "`bench/data/device/l2_spread/`, `bench/device/l2_spread.cu`): a random pointer chase "
        "over 65,536 L2-resident lines from 16 SMs, each hop timed with clock64 (the clock "
        "reads and a shared-memory store included). Written by "
        "`python bench/bench_ssd_waits.py`.", "",
        "| GPU | hops | clocks at 1 / 50 / 90 / 99% | mean | fast hops | slow hops | "
        "slow share by SM |", "|---|---|---|---|---|---|---|", *(c[0] for c in chases), "",
        "Two modes on both GPUs, the slow share differing by SM (each SM walks its own "
        "stretch of the same random cycle), so it is not the line alone. The model times "
        "every L2 hit at the description's `l2.hit_latency` (200 clocks on `h100` and "
        "`h200`), below both modes; a longer one alone was tried on the fit steps and not "
        "kept (docs/history.md, *Tried and not kept*).", "",
        "A group of K independent loads from one thread, then one use of them all (each "
        "line number is read first, so a group is two dependent loads deep), H200, median "
        "clocks and over K = 1:", "",
        "| K | median clocks | over K = 1 |", "|---|---|---|", *rows, "",
        "One load alone takes longer than two (not explained; the SASS is in the data); "
        f"from 2 to 8 loads a group costs {g.loc[8, 'median'] - g.loc[2, 'median']:.0f} "
        "clocks more, beyond 8 about "
        f"{(g.loc[32, 'median'] - g.loc[8, 'median']) / 24:.0f} clocks a load. The model "
        "uses none of this table.", "", *barrier_lines()])


def barrier_lines() -> list[str]:
    """A block's 32 warps at a barrier after K L2 hits each (bench/device/barrier_spread.cu):
    the spread of their arrivals and a warp's mean wait for the last, median over the
    rounds, on 8 SMs and on all 132."""
    runs = {n: pd.read_csv(BARRIER / f"barrier_spread_h200_n{n}.csv") for n in (8, 132)}
    med = {n: d.groupby("k")[["spread", "mean_wait"]].median() for n, d in runs.items()}
    rows = [f"| {k} | {med[8].loc[k, 'spread']:.0f} / {med[8].loc[k, 'mean_wait']:.0f} | "
            f"{med[132].loc[k, 'spread']:.0f} / {med[132].loc[k, 'mean_wait']:.0f} |"
            for k in med[8].index]
    waits = pd.concat([m["mean_wait"] for m in med.values()])
    return [
        "A block's warps at a barrier (`bash bench/device/barrier_spread.sh h200`, "
        "2026-11-29; `bench/data/device/barrier_spread/`): one block of 32 warps on each of "
        "8 or 132 SMs, every warp reading K random L2-resident lines (a line a warp "
        "instruction, their numbers read first), then the clock, then `__syncthreads()`, 63 "
        "rounds. Clocks from the first warp's arrival to the last's, and a warp's mean wait "
        "for the last, median over blocks and rounds:", "",
        "| K | 8 SMs: spread / mean wait | 132 SMs |", "|---|---|---|", *rows, "",
        f"A warp waits {waits.min():.0f}-{waits.max():.0f} clocks at each barrier for the "
        "block's last one, whatever the K: about the slow mode's extra (one of 32 warps "
        "meeting a slow line is all but certain). The model times every L2 hit at one "
        "latency, so its warps arrive apart only by their order of issue: the log-softmax "
        "forward's barrier after each row's maximum, where the H200's warps wait and the "
        "model's do not (*The loss kernels' rows on fewer SMs*), is most likely this "
        "wait.", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    waits, spread = waits_section(), spread_section()
    print(waits)
    print(spread)
    if not args.no_write:
        update_section(WAITS_SECTION, waits, topic="Clocks and tile schedules")
        update_section(SPREAD_SECTION, spread, topic="Microbenchmarks")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

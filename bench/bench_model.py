"""Benchmark of the built-in timing model (issue 5): accuracy against H100 hardware and speed
against Accel-Sim.

Accuracy: every launch of the shared trace sets ``mamba1_scan_step`` and
``mamba2_lm_partial`` is paired with its ncu record of the same step
(``bench/data/h100_ncu/*.ncu.csv.xz``) by alignment on name, grid and block (the ncu files
hold the Triton/cuBLAS launches the 2024 tracer missed), modelled with registers and shared
memory taken from ncu's launch record, and compared with ``gpc__cycles_elapsed.max``.
The model's calibrated constants (``simfront/sim/model/params.py``) were fitted on
``mamba1_scan_step`` only; ``mamba2_lm_partial`` is held out. ``--fit`` reruns that fit.
Further (trace, ncu) pairs under the repository's ``traces/`` (a directory holding
``kernelslist.g`` and an ``ncu.csv`` or ``*.ncu.csv[.xz]``, as `simfront profile` stores
them) are included as they appear, all of them held out.

Speed: the model's wall time for the sample selective_scan_fwd (kernel-35636), numba
compilation excluded (one warm-up run first), against Accel-Sim's own reported simulation
time for the same kernel (``../shared/data/accelsim/selective_scan_fwd/baseline``).

Run: ``python bench/bench_model.py [--fit]``; updates its section of bench/RESULTS.md.
``--l1``: only the L1 comparison of model-1.5 (model-1.4's L1, the crowding of resident
warps, and the line-cycle option), its own section.
``--sharing``: only the sampled sets with and without model-1.6's extrapolation of the
lines a sampled trace's blocks share, its own section.
``--memory``: every set under model-1.6's memory side, with model-1.7's private reuse, with
its loaded DRAM latency too, and with the L1 crowding judged by block (an option), its own
section.
``--writes``: the paper-size sets with model-1.8's writes in a private reuse distance or
without, and the LM-head softmax's what-ifs against the hardware's, its own section.
``--stores``: every set with ncu records with stores at the L1's rate (model-1.8), through
model-1.9's store path, and with a store's wait on the next load too (an option), and the
LM-head softmax's what-ifs with each, its own section.
``--persistent``: only the persistent-GEMM what-if (the cuBLAS sm90 GEMMs of a paper-size
step on 96/64/32 SMs against the shipped green-context timelines), its own section.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import time
from pathlib import Path

from model_versions import M19_LOADS, M110_L1, M111  # bench/model_versions.py, beside this script
from results_md import update_section  # bench/results_md.py, beside this script

import numpy as np
import pandas as pd

from simfront.core.errors import TraceFormatError
from simfront.core.paths import REPO_ROOT, repo_dir, shared_dir
from simfront.gpu import load_gpu
from simfront.sim.model.api import timed_record
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import prepare_kernel
from simfront.sim.model.validation import pair_launches, read_ncu
from simfront.stats.matching import mape, pearson

SECTION = "## Timing model (bench/bench_model.py)"
TRAIN = "mamba1_scan_step"
#: The set ``l2_dirty_share`` is fitted on (its DRAM writes; ``--fit-dirty``).
TRAIN_DIRTY = "mamba2_lm-130m"


def hardware_sets() -> list[tuple[str, Path, Path]]:
    sets = []
    traces = shared_dir() / "data" / "h100" / "traces"
    ncu_dir = REPO_ROOT / "bench" / "data" / "h100_ncu"
    for name in ("mamba1_scan_step", "mamba2_lm_partial"):
        sets.append((name, traces / name, ncu_dir / f"{name}.ncu.csv.xz"))
    extra = repo_dir("traces")
    if extra.is_dir():
        for d in sorted(p for p in extra.iterdir() if (p / "kernelslist.g").is_file()):
            ncu = sorted(d.glob("*ncu.csv*"))  # ncu.csv (captures) or NAME.ncu.csv[.xz]
            if ncu:
                sets.append((d.name, d, ncu[0]))
    return sets


def prepare_set(trace_dir: Path, ncu_path: Path, gpu):
    ncu = read_ncu(ncu_path)
    pairs, unpaired = pair_launches(trace_dir, ncu)
    preps, skipped = [], []
    for p in pairs:
        try:
            preps.append((p, prepare_kernel(p.kernel, gpu, p.launch)))
        except TraceFormatError as exc:
            skipped.append(f"{p.kernel.path.name} ({str(exc).split(': ')[-1]})")
    return ncu, preps, unpaired, skipped


def model_cycles(preps, gpu, params) -> pd.DataFrame:
    rows = []
    for p, prep in preps:
        rec = timed_record(prep, gpu, params)
        rows.append({"kernel": p.kernel.path.name.split(".")[0],
                     "name": str(p.row["short_name"])[:34], "grid": p.row["grid"],
                     "block": p.row["block"], "ncu_cycles": float(p.row["cycles"]),
                     "model_cycles": rec["cycles"], "bound": rec["bound"],
                     "model_l2_hit": rec["l2_hit_rate"], "ncu_l2_hit": p.row.get("l2_hit_rate"),
                     "model_dram_MB": rec["dram_read_bytes"] / 1e6,
                     "ncu_dram_MB": float(p.row.get("dram_read_bytes", np.nan)) / 1e6,
                     "model_write_MB": rec["dram_write_bytes"] / 1e6,
                     "ncu_write_MB": float(p.row.get("dram_write_bytes", np.nan)) / 1e6})
    df = pd.DataFrame(rows)
    df["error"] = (df.model_cycles - df.ncu_cycles) / df.ncu_cycles
    return df


def fit(preps, gpu):
    """Grid search of the calibrated constants on one set (MAPE); returns (mape, params)."""
    best = None
    for de, share, pf in itertools.product((100, 150, 200, 250, 300), (0.25, 0.5, 0.75, 1.0),
                                           (8, 16, 32)):
        p = DEFAULT_PARAMS.with_(dram_extra_latency=float(de), icache_miss_dram_share=share,
                                 icache_prefetch_lines=pf, launch_cycles=0.0)
        df = model_cycles(preps, gpu, p)
        for launch in np.arange(2500, 4600, 50):
            m = mape(df.ncu_cycles, df.model_cycles + launch)
            if best is None or m < best[0]:
                best = (m, p.with_(launch_cycles=float(launch)))
    return best


def fit_dirty_share(preps, gpu) -> list[tuple[float, float, float]]:
    """The L2's dirty share at a kernel's end against ncu's DRAM writes: (share, summed
    |model - ncu| MB, summed model MB) for each share tried; the trace pass is what moves."""
    hw = np.array([float(p.row["dram_write_bytes"]) for p, _ in preps]) / 1e6
    out = []
    for share in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.6, 1.0):
        params = DEFAULT_PARAMS.with_(l2_dirty_share=share)
        m = np.array([prepare_kernel(p.kernel, gpu, p.launch, params).totals[5]
                      for p, _ in preps]) * gpu.l2.sector.bytes / 1e6
        out.append((share, float(np.abs(m - hw).sum()), float(m.sum())))
    return out


def retained_dirty(preps, gpu, at_least_mb: float = 20.0) -> np.ndarray:
    """What the H100 still held dirty at each kernel's end, in MB: the sectors the model's
    trace pass dirtied (all written back: dirty share 0) less what ncu counts as written,
    over the launches that dirty at least ``at_least_mb``. The dirty share's form rests on
    this being about the same whatever the kernel writes."""
    params = DEFAULT_PARAMS.with_(l2_dirty_share=0.0)
    out = []
    for p, _ in preps:
        dirtied = prepare_kernel(p.kernel, gpu, p.launch, params).totals[5] * \
            gpu.l2.sector.bytes / 1e6
        if dirtied >= at_least_mb:
            out.append(dirtied - float(p.row["dram_write_bytes"]) / 1e6)
    return np.array(out)


def ncu_writes(preps) -> float:
    return sum(float(p.row["dram_write_bytes"]) for p, _ in preps) / 1e6


def speed(gpu, repeats: int = 5) -> dict:
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    ts = TraceSet(shared_dir() / "data" / "h100" / "traces" / "mamba1_scan_step")
    out = {}
    for kid in ("kernel-35636", "kernel-35643"):
        k = ts.kernel(kid)
        simulate_kernel(k, gpu, cache=False)  # warm-up: loads numba's cached machine code
        walls, reads, cpus = [], [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            rec = simulate_kernel(k, gpu, cache=False)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            t0 = time.perf_counter()
            for _chunk in k.iter_chunks():
                pass
            reads.append(time.perf_counter() - t0)
        out[kid] = {"wall_s": float(np.median(walls)), "read_s": float(np.median(reads)),
                    "best_s": float(np.min(walls)), "cpu_s": float(np.median(cpus)),
                    "instructions": rec["instructions"]}
    log = (shared_dir() / "data" / "accelsim" / "selective_scan_fwd" / "baseline"
           / "accelsim.out.txt")
    m = (re.search(r"gpgpu_simulation_time = .*\((\d+) sec\)", log.read_text())
         if log.is_file() else None)
    # 81 s is the wall time the data README states; the log's own figure is preferred.
    out["accelsim_s"] = float(m.group(1)) if m else 81.0
    return out


def update_results(text: str) -> None:
    update_section(SECTION, text)


PERSISTENT_SECTION = "## Timing model: persistent GEMMs on fewer SMs (bench/bench_model.py --persistent)"
PERSISTENT_SET = "mamba2_lm-paper"


def persistent_gemms() -> list[str]:
    """The cuBLAS sm90 GEMMs of a paper-size step on 96/64/32 SMs: model ratio (time at N
    SMs over time at 132) before the persistent-grid rule (``persistent_kernels`` empty,
    ceil(B/S) blocks one after another) and after, against the H100's
    green-context timelines shipped beside the trace set (held out: nothing was fitted)."""
    from simfront.core.categories import short_name
    from simfront.analysis.whatif import pair_timeline, read_condition
    from simfront.gpu.variants import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.stats.matching import launch_key
    from simfront.traces.reader import TraceSet

    tdir = repo_dir("traces") / PERSISTENT_SET
    kernels = list(TraceSet(tdir).kernels())
    keys = [launch_key(k.header.name, k.header.grid, k.header.block) for k in kernels]
    base_hw = read_condition(tdir, "h100-all")
    pairing = pair_timeline(keys, base_hw)
    gemms = [(i, j) for i, j in pairing.exact if kernels[i].header.name.startswith("nvjet_sm90_")]
    h100 = load_gpu("h100")
    old = DEFAULT_PARAMS.with_(persistent_kernels=())
    rows = []
    base = {}
    for i, _ in gemms:
        for tag, p in (("before", old), ("after", DEFAULT_PARAMS)):
            base[i, tag] = simulate_kernel(kernels[i], h100, params=p)["time_us"]
    for sms in (96, 64, 32):
        hw = read_condition(tdir, f"h100-sms{sms}")
        g = with_variants(h100, sm_count=sms)
        for i, j in gemms:
            r = {"sms": sms, "kernel": short_name(kernels[i].header.name),
                 "hw": float(hw.duration_s.iloc[j] / base_hw.duration_s.iloc[j]),
                 "hw_s": float(base_hw.duration_s.iloc[j])}
            for tag, p in (("before", old), ("after", DEFAULT_PARAMS)):
                r[tag] = simulate_kernel(kernels[i], g, params=p)["time_us"] / base[i, tag]
            rows.append(r)
        print(f"persistent GEMMs at {sms} SMs done", flush=True)
    df = pd.DataFrame(rows)
    lines = [PERSISTENT_SECTION, "",
             f"- {time.strftime('%Y-%m-%d', time.gmtime())}, CPU machine. `{PERSISTENT_SET}`'s "
             f"{len(gemms)} cuBLAS sm90 GEMM launches (`nvjet_sm90_*`, persistent, grid <= 132) "
             "paired with the H100 green-context timelines beside the set (`whatif/`); ratio = "
             "kernel time at N SMs over the time on all 132. Model before: ceil(B/S) blocks one "
             "after another; after: the grid's work over its resident workers "
             "(docs/model.md, *Persistent grids*). Nothing fitted: held out.", "",
             "| SMs | hardware ratio (time-weighted) | model before | model after | "
             "per-launch MAPE before | after |", "|---|---|---|---|---|---|"]
    for sms, d in df.groupby("sms", sort=False):
        w = d.hw_s / d.hw_s.sum()
        lines.append(f"| {sms} | {(w * d.hw).sum():.3f} | {(w * d.before).sum():.3f} | "
                     f"{(w * d.after).sum():.3f} | {mape(d.hw, d.before):.1%} | "
                     f"{mape(d.hw, d.after):.1%} |")
    lines.append("")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return lines


L1_SECTION = "## Timing model: the L1 under resident warps (model-1.5, bench/bench_model.py --l1)"

#: What ``--l1`` compares: model-1.4's L1, model-1.5's default, and the line-cycle option.
_M19_REST = {k: v for k, v in M19_LOADS.items() if k != "l1_line_cycles"}
L1_VARIANTS = (("model-1.4 L1", dict(l1_crowding=False, l1_line_cycles=False, **_M19_REST)),
               ("crowding (model-1.5)", dict(l1_crowding=True, l1_line_cycles=False,
                                             **_M19_REST)),
               ("crowding + line cycles", dict(l1_crowding=True, l1_line_cycles=True,
                                               **_M19_REST)))


def variant_rows(preps_of, gpu, variants=L1_VARIANTS) -> list[dict]:
    """Per set and variant: MAPE, summed cycles over ncu's, the mean |L1 hit rate - ncu's|
    (``l1tex__t_sector_hit_rate``) and the summed DRAM reads over ncu's, the trace pass rerun
    for each variant."""
    rows = []
    for name, pairs in preps_of:
        for label, kw in variants:
            params = DEFAULT_PARAMS.with_(**kw)
            m, n, l1m, l1n = [], [], [], []
            dm, dn = 0.0, 0.0
            per_launch = []
            for p in pairs:
                try:
                    prep = prepare_kernel(p.kernel, gpu, p.launch, params)
                except TraceFormatError:  # the partial set's last file ends mid-kernel
                    continue
                rec = timed_record(prep, gpu, params)
                m.append(rec["cycles"])
                n.append(float(p.row["cycles"]))
                hw = p.row.get("l1_hit_rate")
                if hw is not None and hw == hw and rec["l1_hit_rate"] == rec["l1_hit_rate"]:
                    l1m.append(rec["l1_hit_rate"])
                    l1n.append(float(hw))
                hd = p.row.get("dram_read_bytes")
                if hd is not None and hd == hd:
                    dm += float(rec["dram_read_bytes"])
                    dn += float(hd)
                per_launch.append((str(p.row["short_name"]), rec["cycles"], float(p.row["cycles"]),
                                   float(rec["dram_read_bytes"]), float(hd or 0.0)))
            m, n = np.array(m), np.array(n)
            rows.append({"set": name, "variant": label, "launches": len(m),
                         "mape": mape(n, m), "sum": float(m.sum() / n.sum()),
                         "l1_err": float(np.mean(np.abs(np.array(l1m) - np.array(l1n)))),
                         "dram": dm / dn if dn else float("nan"), "per_launch": per_launch})
    return rows


SHARING_SECTION = ("## Timing model: what a sampled trace's blocks share (model-1.6, "
                   "bench/bench_model.py --sharing)")
SHARING_VARIANTS = (("block-count scaling (model-1.5)", dict(sample_sharing=False, **M19_LOADS)),
                    ("shared lines (model-1.6)", dict(sample_sharing=True, **M19_LOADS)))


def _paired_sets(keep=lambda name: True) -> list:
    """(name, launch pairs) of the sets with ncu records: pairs only, since each variant
    runs its own trace pass."""
    return [(name, pair_launches(tdir, read_ncu(npath))[0])
            for name, tdir, npath in hardware_sets()
            if tdir.is_dir() and npath.is_file() and not name.endswith("-dedup") and keep(name)]


def _variant_table(section: str, what: str, rows: list[dict], labels: list[str],
                   third: tuple[str, str, str]) -> list[str]:
    """A section comparing model variants per set: MAPE, summed cycles over ncu's, and a
    third figure (``third``: its column title, its row key, its format)."""
    title, key, fmt = third
    lines = [section, "",
             f"- {time.strftime('%Y-%m-%d', time.gmtime())}, CPU machine, cold L2, against ncu "
             "as in *Timing model* above. Per set, for " + "; ".join(f"*{lb}*" for lb in labels)
             + f": MAPE of cycles, summed model cycles over ncu's, {what}.", "",
             "| trace set | launches | " + " | ".join(f"MAPE {lb}" for lb in labels) + " | "
             + " | ".join(f"sum {lb}" for lb in labels) + " | "
             + " | ".join(f"{title} {lb}" for lb in labels) + " |",
             "|---|---|" + "---|" * (3 * len(labels))]
    for name in dict.fromkeys(r["set"] for r in rows):
        rs = [r for r in rows if r["set"] == name]
        lines.append(f"| {name} | {rs[0]['launches']} | "
                     + " | ".join(f"{r['mape']:.2%}" for r in rs) + " | "
                     + " | ".join(f"{r['sum']:.3f}" for r in rs) + " | "
                     + " | ".join(format(r[key], fmt) for r in rs) + " |")
    return lines


def sharing_section(gpu) -> list[str]:
    """The sampled sets with the DRAM reads of shared lines extrapolated or not."""
    sampled = ("-paper", "-box", "-130m", "-tiny")
    rows = variant_rows(_paired_sets(lambda name: name.endswith(sampled)), gpu, SHARING_VARIANTS)
    what = ("and the summed DRAM read bytes over ncu's (`dram__bytes_read.sum`; docs/model.md, "
            "*Method* step 2, *what sampled blocks share*). The `-box` sets are the paper "
            "steps traced with `--sample box:8` (tracer 1.3, `bash "
            "bench/device/capture_scale.sh \"m2pb m1pb\" 500`); the others with `first:8` "
            "(`-paper`, `-130m`) or `first:32` (`-tiny`). Nothing fitted")
    return (_variant_table(SHARING_SECTION, what, rows, [lb for lb, _ in SHARING_VARIANTS],
                           ("DRAM reads / ncu", "dram", ".2f"))
            + ["", "Per kernel (launches summed; *error*: mean |model cycles / ncu's - 1|), "
               "model-1.5 -> model-1.6:", "",
               "| trace set | kernel | launches | DRAM reads / ncu | error |", "|---|---|---|---|---|"]
            + _kernel_rows(rows, SHARING_KERNELS) + SHARING_READING)


#: The kernels the sharing is about: the Triton SSD kernels (heads share B and C), Mamba1's
#: selective scan (channels share B and C) and the layer norm (rows share its weights).
SHARING_KERNELS = ("_chunk_state_fwd", "_chunk_scan_fwd", "_bmm_chunk_fwd",
                   "_chunk_scan_bwd_dstates", "_chunk_scan_bwd_dcb", "_chunk_scan_bwd_ddAcs",
                   "_chunk_scan_chunk_state_bwd_dx", "_chunk_state_bwd_db", "selective_scan_fwd",
                   "selective_scan_bwd", "_layer_norm_fwd")


def _kernel_rows(rows: list[dict], kernels: tuple[str, ...], pick=(0, 1)) -> list[str]:
    """Per set and kernel name prefix, two variants (``pick``: their places in the variant
    list) side by side: the summed DRAM reads over ncu's and the mean cycle error."""
    out = []
    for name in dict.fromkeys(r["set"] for r in rows):
        per = [r["per_launch"] for r in rows if r["set"] == name]
        a, b = per[pick[0]], per[pick[1]]
        for k in kernels:
            ia = [i for i, x in enumerate(a) if x[0].startswith(k)]
            if not ia or not name.endswith(("-box", "-paper", "-130m")):
                continue

            def agg(pl):
                hw = sum(pl[i][4] for i in ia)
                return (sum(pl[i][3] for i in ia) / hw if hw else float("nan"),
                        float(np.mean([abs(pl[i][1] / pl[i][2] - 1) for i in ia])))
            (da, ea), (db, eb) = agg(a), agg(b)
            out.append(f"| {name} | `{k}` | {len(ia)} | {da:.2f} -> {db:.2f} | "
                       f"{ea:.1%} -> {eb:.1%} |")
    return out


#: What the sharing tables say (their numbers are in the tables and docs/model.md).
SHARING_READING = ["", "Reading: on the box-sampled Mamba2 step the SSD kernels' DRAM reads come from 1.5-7.6x ncu's to 1.0-1.5x and their cycle errors from 13-74% to 3.5-15% (all but `_chunk_scan_bwd_dcb`, below), and the set's MAPE from 16.6% to 14.2%; its SM-count what-ifs then met issue 12's targets (model-1.7's, in *What-ifs against hardware* above, miss them by 2-5 points through the softmax: *private rows and loaded DRAM latency*; model-1.8, counting the softmax's output in its rows' reuse distance, misses them by 0.1-2.6 points (at 32 SMs the most): *the others' output in a private reuse distance*). The first:8 sets (one head traced) show no sharing along the heads and keep their SSD over-reads: recapturing with `--sample box:8` is what the fix needs. Mamba1's selective scan (channels share B and C; the backward's REDG adds them into shared lines) reads ncu's bytes within 1% on both captures (its traces are the same blocks either way). Two kernels get worse: the selective scan's backward, timed within 9% only because it read 10x ncu's bytes, is 23% fast reading the right ones; and the layer norm's forward, whose weights every row reads, reads exactly ncu's bytes and is 11-12% fast (its DRAM-bound time is short: not found yet). That is why `mamba2_lm-130m` and `mamba2_lm-paper` are 0.4 and 0.1 points worse. `_chunk_scan_bwd_dcb` stays 3x over: its traced x-tiles share 99% of their lines, which the model reads as one tile's neighbours (group size unknown) and does not extrapolate (docs/model.md)."]


MEMORY_SECTION = ("## Timing model: private rows and loaded DRAM latency (model-1.7, "
                  "bench/bench_model.py --memory)")
#: Without model-1.8's writes in a private reuse distance (``--writes``) and model-1.9's
#: store path (``--stores``), to keep what the section compares: model-1.7's two changes.
_M17 = dict(private_reuse_counts_writes=False, store_sectors_per_clk=0.0, **M19_LOADS)
MEMORY_VARIANTS = (("model-1.6", dict(private_reuse=False, dram_queue_latency=0.0, **M19_LOADS)),
                   ("+ private reuse", dict(dram_queue_latency=0.0, **_M17)),
                   ("+ loaded latency (model-1.7)", _M17),
                   ("+ L1 by block (option)", dict(l1_crowding_by_block=True, **_M17)))
#: The kernels the two changes are about: the LM-head softmax (private rows), the casts and
#: the layer norm's backward (latency under their own DRAM traffic), and the streams and
#: the optimizer, which must not move.
MEMORY_KERNELS = ("cunn_SoftMaxForward", "cunn_SoftMaxBackward", "unrolled_elementwise",
                  "_layer_norm_bwd", "selective_scan_bwd", "vectorized_elementwise",
                  "multi_tensor_apply")


def memory_section(gpu) -> list[str]:
    """Every set with ncu records under model-1.6's memory side, with private reuse, with
    the loaded DRAM latency as well (model-1.7), and with the L1 crowding judged by block
    (an option)."""
    rows = variant_rows(_paired_sets(), gpu, MEMORY_VARIANTS)
    what = ("and the summed DRAM read bytes over ncu's. The constants come from the memory "
            "microbenchmarks (*Memory microbenchmarks* above), none from these sets")
    return (_variant_table(MEMORY_SECTION, what, rows, [lb for lb, _ in MEMORY_VARIANTS],
                           ("DRAM reads / ncu", "dram", ".2f"))
            + ["", "Per kernel (launches summed; *error*: mean |model cycles / ncu's - 1|), "
               "model-1.6 -> model-1.7:", "",
               "| trace set | kernel | launches | DRAM reads / ncu | error |",
               "|---|---|---|---|---|"]
            + _kernel_rows(rows, MEMORY_KERNELS, pick=(0, 2)) + MEMORY_READING)


#: What the memory tables say (their numbers are in the tables and docs/model.md).
MEMORY_READING = ["", "Reading: private reuse takes the LM-head softmax from 0.36 and 0.69 of ncu's DRAM reads to 0.86 and 0.96 (forward, backward) and its cycle errors from 48% and 29% to 12% and 10%; the loaded latency takes the casts whose threads load one element after another (`unrolled_elementwise`, 11-12% -> 6%), the layer norm's backward (18-19% -> 6%) and the optimizer (`multi_tensor_apply`, 14-15% -> 9%), while the streaming kernels, DRAM-bound with every load in flight, do not move. Summed cycles of the paper steps go from 0.83-0.85 of ncu's to 0.93-0.96 and `mamba2_lm-130m`'s MAPE from 17.5% to 16.7%; the tiny sets and the fit set move by at most 0.07 points. Two kernels get worse: Mamba1's selective-scan backward now reads 1.19x ncu's bytes (its blocks' private lines are judged too; its time is unchanged, still 23% fast, see *What the L2 takes in per clock*), and `_chunk_state_fwd` of the box-sampled Mamba2 step, whose reads the sampled extrapolation leaves at 1.36x ncu's, waits for a load it does not make (3.5% -> 18.5%). The L1 option (*+ L1 by block*) would take the softmax the rest of the way (its logits read 2.9 times, ncu 2.74) and the paper steps' sums to 0.96-0.99, but costs three tiny sets 0.3-0.5 points (their cutlass GEMMs): off (docs/model.md). The what-ifs under model-1.7 are in *What-ifs against hardware* above; the SM-count ones of the Mamba2 steps are 2-5 points worse, through the softmax's response to fewer SMs (docs/model.md, *Inter-kernel L2*); model-1.8 takes that back at 96 SMs and on the H200 (*the others' output in a private reuse distance*)."]


WRITES_SECTION = ("## Timing model: the others' output in a private reuse distance "
                  "(model-1.8, bench/bench_model.py --writes)")
#: Without model-1.9's store path (``--stores``), to keep what the section compares.
_M18 = dict(store_sectors_per_clk=0.0, **M19_LOADS)
WRITES_VARIANTS = (("writes not counted", dict(private_reuse_counts_writes=False, **_M18)),
                   ("counted (model-1.8)", _M18))
#: The sets private reuse matters in (the tiny sets' rows fit the L2 either way).
WRITES_SETS = ("-paper", "-paper-box", "-130m")
#: The hardware what-ifs the softmax's ratio is held against (traces/SET/whatif/).
WRITES_CONDITIONS = (("h100-sms96", dict(sm_count=96)), ("h100-sms64", dict(sm_count=64)),
                     ("h100-sms32", dict(sm_count=32)), ("h200-all", None))


def softmax_whatifs(set_dir, gpu, variants) -> list[str]:
    """The LM-head softmax's launches of one set: the model's time on each what-if GPU over
    its time on the H100, per variant, against the hardware's (the what-if timelines)."""
    from simfront.analysis import whatif as W
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    trace = W.trace_launches(set_dir)

    def paired(label):  # each launch's time in a timeline, by trace launch
        tl, _ = W.read_timeline(set_dir, label)
        return tl.time_us.to_numpy()[W.pair_timeline(trace, tl).tl.to_numpy()]

    base = paired("h100-all")
    conds = {c: (with_variants(gpu, **kw) if kw else load_gpu("h100-as-h200"), paired(c))
             for c, kw in WRITES_CONDITIONS}
    out = []
    for i in trace.index[trace.short_name.str.startswith("cunn_SoftMax")]:
        kernel = TraceSet(set_dir).kernel(trace.file[i].split(".")[0])
        params = [DEFAULT_PARAMS.with_(**kw) for _, kw in variants]
        at_base = [simulate_kernel(kernel, gpu, params=p, cache=False)["cycles"] for p in params]
        cells = []
        for g, hw in conds.values():
            model = [simulate_kernel(kernel, g, params=p, cache=False)["cycles"] / b
                     for p, b in zip(params, at_base)]
            cells.append(" / ".join(f"{m:.2f}" for m in model) + f" ({hw[i] / base[i]:.2f})")
        out.append(f"| {set_dir.name} | {trace.short_name[i]} | " + " | ".join(cells) + " |")
    return out


def softmax_table(gpu, variants, intro: str) -> list[str]:
    """The softmax's what-ifs of every box-sampled paper step with hardware what-ifs, one
    cell per condition: each variant's ratio and the hardware's in brackets."""
    lines = ["", intro + ", and in brackets the hardware's (`traces/SET/whatif/`, CUPTI):", "",
             "| trace set | kernel | 96 SMs | 64 SMs | 32 SMs | H200 |", "|---|---|---|---|---|---|"]
    for name, tdir, npath in hardware_sets():
        if name.endswith("-paper-box") and (tdir / "whatif").is_dir():
            lines += softmax_whatifs(tdir, gpu, variants)
    return lines


def writes_section(gpu) -> list[str]:
    """The paper-size sets with the kernel's writes counted in a private reuse distance or
    not, and the LM-head softmax's what-ifs against the hardware's."""
    rows = variant_rows(_paired_sets(lambda name: name.endswith(WRITES_SETS)), gpu,
                        WRITES_VARIANTS)
    what = ("and the summed DRAM read bytes over ncu's. Both count a warp's wait in the "
            "sectors it asked for (model-1.8; model-1.7 counted its L2 accesses, which the "
            "L1's hits on the edge lines of a softmax's slices shortened by a quarter). "
            "Nothing fitted: the rule's check is the rows whose last pass writes (*Memory "
            "microbenchmarks* above)")
    lines = _variant_table(WRITES_SECTION, what, rows, [lb for lb, _ in WRITES_VARIANTS],
                           ("DRAM reads / ncu", "dram", ".2f"))
    lines += ["", "Per kernel (launches summed; *error*: mean |model cycles / ncu's - 1|), "
              "not counted -> counted:", "", "| trace set | kernel | launches | "
              "DRAM reads / ncu | error |", "|---|---|---|---|---|"]
    lines += _kernel_rows(rows, ("cunn_SoftMaxForward", "cunn_SoftMaxBackward"))
    lines += softmax_table(gpu, WRITES_VARIANTS, "The LM-head softmax's what-ifs: the model's "
                           "time on the condition over its time on the H100 (cold L2, as ncu "
                           "times a kernel), writes not counted / counted")
    return lines + WRITES_READING


#: What the tables say (their numbers are in the tables and docs/model.md).
WRITES_READING = ["", "Reading: counting the others' output moves one kernel against ncu, the LM-head softmax's forward (error 8.5% -> 6.0%, 12% under model-1.7's L2-access clock; its logits read 2.60 times, ncu 2.74); the sets move by at most 0.04 points of MAPE and their sums up by 0.003. What it is for is the softmax's what-ifs: on 96 SMs the forward goes from 0.72x its H100 time to 0.96x (the H100 1.00x), on the H200 from 0.61x to 0.70x (0.72x), and the steps' SM-count and H200 errors in *What-ifs against hardware* above with them. Two misses are left, both of kernels slower on fewer SMs than the model makes them: the forward on 64 and 32 SMs (0.73-0.76x and 1.04x against 0.85x and 1.24x) and the backward (1.00x and 1.12x against 1.08x and 1.23x on 96 and 64 SMs). *The model on the rows kernel's own traces* (Memory microbenchmarks) finds where: the model times rows that only read within 0.88-0.98 of ncu on 132, 64 and 32 SMs alike, but rows whose last pass writes at 0.68-0.86, worst on 64 SMs, where the issue loop lets a warp's loads go past its stores (the chase measured about 150-185 ns a store costs the warp's next load); adding that wait (`store_load_ns`, an option) takes them only to 0.71-0.86, so the writes cost the H100 more than it: an SM's store path is suspected, not yet measured alone."]


STORES_SECTION = "## Timing model: an SM's stores (model-1.9, bench/bench_model.py --stores)"
STORES_VARIANTS = (("model-1.8", dict(store_sectors_per_clk=0.0, **M19_LOADS)),
                   ("model-1.9", M19_LOADS),
                   ("+ store-to-load wait", dict(store_load_ns=157.0, **M19_LOADS)))


def _path_section(gpu, section: str, variants, what: str, path: str, change: str,
                  kernels: tuple[str, ...]) -> list[str]:
    """A model change's section: every set with ncu records under each variant, then the
    kernels it moves, the first two variants side by side."""
    rows = variant_rows(_paired_sets(), gpu, variants)
    lines = _variant_table(section, what, rows, [lb for lb, _ in variants],
                           ("DRAM reads / ncu", "dram", ".2f"))
    lines += ["", f"Per kernel where {path} moves the error most (launches summed; "
              f"*error*: mean |model cycles / ncu's - 1|), {change}:", "",
              "| trace set | kernel | launches | DRAM reads / ncu | error |",
              "|---|---|---|---|---|"]
    return lines + _kernel_rows(rows, kernels)


def stores_section(gpu) -> list[str]:
    """Every set with ncu records with stores at the L1's rate (model-1.8), through an SM's
    store path and the L2's input port (model-1.9), and with a store's wait on the warp's
    next load as well (an option); and the LM-head softmax's what-ifs with each."""
    what = ("and the summed DRAM read bytes over ncu's. The store path's constants come "
            "from `bench/device/store_shapes.cu` (*Memory microbenchmarks*, *The shapes of "
            "a store*), `store_load_ns` (157) from the pointer chase; none from these sets")
    lines = _path_section(gpu, STORES_SECTION, STORES_VARIANTS, what,
                          "the store path", "model-1.8 -> model-1.9", STORES_KERNELS)
    lines += softmax_table(gpu, STORES_VARIANTS, "The LM-head softmax's what-ifs (as in *the "
                           "others' output in a private reuse distance*), model-1.8 / "
                           "model-1.9 / with the store-to-load wait")
    return lines + STORES_READING


#: The kernels whose error the store path moves most (bench/RESULTS.md, *an SM's stores*).
STORES_KERNELS = ("_chunk_state_fwd", "_bmm_chunk_fwd", "selective_scan_bwd",
                  "cunn_SoftMaxForward", "elementwise_kernel")


STORES_READING = ["", "Reading: the store path and the port (model-1.9) move the paper steps toward ncu (`mamba1_lm-paper-box` 11.39% -> 10.60%, `mamba2_lm-paper-box` 13.05% -> 12.33%, `mamba2_lm-paper` 16.31% -> 15.77%) and the selective scan's backward with them (23.5% -> 20.6% fast); they leave the tiny sets and the fit set within 0.15 points (`mamba1_scan_step` 3.78% -> 3.93%, `graphmamba-tiny` 7.51% -> 7.56%) and cost the SSD kernels whose blocks end storing 16-byte lanes 1-3 points (`_chunk_state_fwd`, `_bmm_chunk_fwd`, already 17-65% off ncu for other reasons). On fewer SMs they take the softmax forward's 64-SM ratio from 0.73-0.76x to 0.77-0.81x (hardware 0.85x) and its 32-SM one from 1.04x to 1.29x (1.24x); its backward does not move (1.13x and 1.95x against 1.23x and 1.82x). The store-to-load wait on top, still an option, takes the forward's 64-SM ratio to 0.83-0.86x and the backward's to 1.26x, but costs the fit set and the tiny sets up to 1.7 points (`graphmamba-tiny` 7.56% -> 9.28%, `mamba2_lm_partial` 5.23% -> 6.91%; `hybrid_lm-tiny` alone unchanged) and helps only `mamba2_lm-paper-box`: off (docs/model.md)."]


def l1_section(gpu) -> list[str]:
    rows = variant_rows(_paired_sets(), gpu)
    what = ("and the mean |L1 hit rate - ncu's `l1tex__t_sector_hit_rate`| (docs/model.md, "
            "*Method* step 2). Nothing fitted")
    return _variant_table(L1_SECTION, what, rows, [lb for lb, _ in L1_VARIANTS],
                          ("L1 hit error", "l1_err", ".3f")) + L1_READING


#: The reading of the table (its numbers are in the table and docs/model.md).
L1_READING = ['', "What the three columns say: *crowding* (a warp's L1 reuse of a line only it reads on its SM, judged at the lines the SM's resident warps touch meanwhile) moves the L1 hit rates toward ncu's on every set and is on since model-1.5. Its gain is in the transposing `direct_copy_kernel`s of the Mamba2 sets (`mamba2_lm-paper`: ten 2,048-block launches at 0.44x of ncu's cycles, L1 hit rate 0.70 against ncu's 0.15); its one loss is `mambavision-tiny`'s cutlass `Kernel` GEMMs, which lose L1 hits they did not have on the H100 either but were already timed too slow. *Line cycles* (the L1 serves a 128-byte line a cycle) is what those copies need as well, but it slows the tiny sets' cutlass GEMMs further, so it stays an option (docs/model.md, *Method* step 2). The what-if tables above (*What-ifs against hardware*) were rerun with model-1.5: within 0.2 points of model-1.4 everywhere."]


LOADS_SECTION = "## Timing model: an SM's loads (model-1.10, bench/bench_model.py --loads)"
LOADS_VARIANTS = (("model-1.9", M19_LOADS), ("model-1.10", M110_L1))
#: The kernels whose error the load path moves most (bench/RESULTS.md, *an SM's loads*).
LOADS_KERNELS = ("elementwise_kernel", "CatArrayBatchedCopy", "conv_depthwise2d_forward",
                 "selective_scan_bwd", "reduce_kernel", "Kernel2")


def loads_section(gpu) -> list[str]:
    """Every set with ncu records with model-1.9's load path and model-1.10's (a line a
    clock in the L1, an SM's miss path, the L2's read side, a floor per load)."""
    what = ("and the summed DRAM read bytes over ncu's. The load path's constants come from "
            "`bench/device/load_shapes.cu` (*Memory microbenchmarks*, *The shapes of a "
            "load*); none from these sets")
    return _path_section(gpu, LOADS_SECTION, LOADS_VARIANTS, what, "the load path",
                         "model-1.9 -> model-1.10", LOADS_KERNELS) + LOADS_READING


LOADS_READING = ["", "Reading: model-1.10's load path (a line a clock in the L1, at most 1.99 sectors a clock from the L2 per SM, the L2's read side, for `LDG` loads, as a bound on the kernel, 3.95 clocks at least per load; all from `bench/device/load_shapes.cu`) moves every paper set toward ncu: `mamba1_lm-paper-box` 10.60% -> 9.81% (summed cycles 0.942 -> 0.959), `mamba2_lm-paper-box` 12.33% -> 11.07% (0.962 -> 0.973), `mamba2_lm-paper` 15.77% -> 14.34%, `mamba2_lm-130m` 16.70% -> 13.62% (0.991 -> 1.047). The gain is the transposing `direct_copy` `elementwise_kernel`s (every lane's bf16 in its own line: 18.7% -> 9.4% off on the Mamba2 box set), the `CatArrayBatchedCopy` copies and the selective scan's backward (20.6% -> 11.2%). The cost is the tiny sets' cutlass `Kernel2` GEMMs, already 44-60% too slow, now 54-62% (their generic loads fall in 8 lines for 8 sectors): `mamba2_lm-tiny` 10.10% -> 10.42%, `hybrid_lm-tiny` 8.32% -> 8.53%, `mamba1_lm-tiny` 8.68% -> 8.91%, `graphmamba-tiny` 7.56% -> 7.65%, the fit set 3.93% -> 3.98%. The line rate is measured (a line a clock, hit or miss), so what those GEMMs miss is elsewhere: not found yet (docs/model.md, *Method* step 2). What the per-SM cap changes shows on fewer SMs (*What-ifs against hardware*); at 132 SMs each SM's share of the L2 is already below it."]


CARVEOUT_SECTION = ("## Timing model: the L1 beside shared memory (model-1.11, "
                    "bench/bench_model.py --carveout)")
CARVEOUT_VARIANTS = (("model-1.10", M110_L1), ("model-1.11", M111))
#: The kernels whose error the carve-out moves most (bench/RESULTS.md, *the L1 beside shared
#: memory*).
CARVEOUT_KERNELS = ("elementwise_kernel", "CatArrayBatchedCopy", "reduce_kernel",
                    "unrolled_elementwise_kernel", "Kernel2", "Kernel")


def carveout_section(gpu) -> list[str]:
    """Every set with ncu records with model-1.10's L1 (the whole 256 KB for kernels without
    shared memory) and model-1.11's (the carve-out the driver picks: twice what the resident
    blocks hold, the runtime's 1 KB a block included)."""
    what = ("and the summed DRAM read bytes over ncu's. The rule is read off ncu's "
            "`launch__shared_mem_config_size` (the driver's carve-out, 74% of the shipped "
            "launches; tests/test_model_l1_carveout.py), not fitted on these times")
    return _path_section(gpu, CARVEOUT_SECTION, CARVEOUT_VARIANTS, what,
                         "the carve-out", "model-1.10 -> model-1.11",
                         CARVEOUT_KERNELS) + CARVEOUT_READING


CARVEOUT_READING = ["", "Reading: with the driver's carve-out (model-1.11) the L1 of a kernel without shared memory is 192-248 KB, not 256, and the transposing `direct_copy` `elementwise_kernel`s keep about what the H100 keeps (the 2,048-block one: L1 hit rate 0.17 against ncu's 0.15, 0.36 before; its misses load the L2's read side, which bounds it): their error goes 9.4% -> 7.5% on the Mamba2 box set and 13.5% -> 10.3% on `mamba2_lm-130m`, and the paper sets' MAPE from 11.07% to 10.81% (`mamba2_lm-paper-box`), 14.34% to 14.17% (`mamba2_lm-paper`), 13.62% to 12.78% (`mamba2_lm-130m`). The tiny sets lose 0.05-0.2 points (`mamba2_lm-tiny` 10.42% -> 10.62%, `hybrid_lm-tiny` 8.53% -> 8.67%, `mamba1_lm-tiny` 8.91% -> 8.96%), all of it the cutlass `Kernel2` GEMMs, already 55-60% too slow and now 56-66%: the miss of their own found under model-1.10, not found yet. On 64 SMs the Mamba2 box step's per-launch ratio MAPE goes 8.4% -> 8.0% (warm; *What-ifs against hardware*)."]


CLOCK_SECTION = ("## Timing model: static tile schedules and kernel clocks (model-1.12, "
                 "bench/bench_model.py --clock)")
CLOCK_VARIANTS = (("model-1.11", M111), ("model-1.12", dict()),
                  ("static schedules alone", dict(kernel_clocks=False)))
#: The kernels model-1.12 moves: the persistent GEMMs (schedule, clock) and the SSD kernels
#: (clock alone)
CLOCK_KERNELS = ("nvjet_sm90_tst_192x128", "nvjet_sm90_tst_192x192", "nvjet_sm90_tst_160x256",
                 "nvjet_sm90_tst_96x128", "_chunk_scan_fwd", "_chunk_state_fwd")


def clock_section(gpu) -> list[str]:
    """Every set with ncu records with model-1.11 (persistent grids all dynamic, every kernel
    at the core clock), with the static schedules alone, and model-1.12 (the schedules and
    each kernel timed at its clock)."""
    what = ("and the summed DRAM read bytes over ncu's. ncu counts cycles at the clock each "
            "kernel ran at, so the clock moves cycles only through what a lower clock leaves "
            "of the memory latencies; the limits are fitted on ncu's clocks of the Mamba2 "
            "paper step on 132/96/64/32 SMs (*The SM clock in a step*), not on these cycles")
    return _path_section(gpu, CLOCK_SECTION, CLOCK_VARIANTS, what,
                         "the schedules and clocks", "model-1.11 -> model-1.12",
                         CLOCK_KERNELS) + CLOCK_READING


CLOCK_READING = ["", "Reading: both halves of model-1.12 move every paper set toward ncu and no set away: `mamba2_lm-paper-box` 10.81% -> 9.89%, `mamba1_lm-paper-box` 9.78% -> 9.15%, `mamba2_lm-paper` 14.17% -> 12.80%, `mamba2_lm-130m` 12.78% -> 11.71%, the tiny sets 0-0.2 points. The static schedules alone do most of it on the Mamba1 sets and for the grids of a tile a block (`nvjet_sm90_tst_96x128`, grid 96: 50% -> 24% off, its census-scaled work gone); the clocks do the rest, nearly all of it in the SSD kernels, whose DRAM and L2 waits are fewer of their cycles at 1.83 GHz than at 1.98 (`_chunk_scan_fwd` on `mamba2_lm-130m-box` 8.5% -> 4.8%). The GEMMs' cycles hardly move (compute-bound: a clock changes their time, not their cycles). Their clocks show in time: the what-ifs (*What-ifs against hardware*) and the steps' H100 time against the timelines."]


#: The sections a flag rebuilds alone: flag -> (section title, lines from the H100 description).
SECTIONS = {"--l1": (L1_SECTION, l1_section), "--sharing": (SHARING_SECTION, sharing_section),
            "--stores": (STORES_SECTION, stores_section),
            "--loads": (LOADS_SECTION, loads_section),
            "--carveout": (CARVEOUT_SECTION, carveout_section),
            "--clock": (CLOCK_SECTION, clock_section),
            "--writes": (WRITES_SECTION, writes_section),
            "--memory": (MEMORY_SECTION, memory_section)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for flag, (section, build) in SECTIONS.items():
        if flag in argv:
            update_section(section, "\n".join(build(load_gpu("h100"))))
            return 0
    if "--persistent" in argv:
        text = "\n".join(persistent_gemms())
        update_section(PERSISTENT_SECTION, text)
        return 0
    gpu = load_gpu("h100")
    pd.set_option("display.width", 200)
    lines = [SECTION, "",
             f"- {time.strftime('%Y-%m-%d', time.gmtime())}, CPU machine; model "
             f"`simfront.sim.model` against ncu `gpc__cycles_elapsed.max` of the same launches "
             "(H100 SXM, ~1.98 GHz). Registers/shared memory from ncu's launch record.",
             "- Calibrated constants (launch overhead, DRAM extra latency, instruction-cache "
             f"miss cost and prefetch depth) fitted on `{TRAIN}` only, the L2's dirty share "
             f"at a kernel's end (model-1.4) on `{TRAIN_DIRTY}`'s DRAM writes only "
             "(`--fit-dirty`: 0.3-0.35 best, 0.3 taken); the other sets are held out. The "
             "L2 share private rows find and the loaded DRAM latency (model-1.7) and an "
             "SM's store path (model-1.9) on the memory microbenchmarks "
             "(`bench/bench_mem.py`), for which every set is held out.",
             ""]
    summary = []
    all_frames = []
    for name, tdir, npath in hardware_sets():
        if not tdir.is_dir() or not npath.is_file():
            print(f"{name}: missing ({tdir} / {npath})")
            continue
        ncu, preps, unpaired, skipped = prepare_set(tdir, npath, gpu)
        if "--fit" in argv and name == TRAIN:
            m, p = fit(preps, gpu)
            print(f"fit on {name}: MAPE {m:.4f} with {p}")
        if "--fit-dirty" in argv and (name == TRAIN_DIRTY or name.endswith("-paper")):
            kept = retained_dirty(preps, gpu)
            if len(kept):
                q = np.percentile(kept, [10, 50, 90])
                print(f"{name}: still dirty at the kernel's end (model's dirtied - ncu's "
                      f"writes), {len(kept)} launches dirtying >= 20 MB: 10/50/90% "
                      f"{q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f} MB")
        if "--fit-dirty" in argv and name == TRAIN_DIRTY:
            for share, err, tot in fit_dirty_share(preps, gpu):
                print(f"l2_dirty_share {share}: |model - ncu| DRAM writes {err:.1f} MB, "
                      f"model {tot:.1f} MB, ncu {ncu_writes(preps):.1f} MB")
        df = model_cycles(preps, gpu, DEFAULT_PARAMS)
        df.insert(0, "set", name)
        all_frames.append(df)
        print(f"== {name}: {len(preps)} launches compared")
        print(df.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        role = ("fit" if name == TRAIN else
                "fit (l2_dirty_share)" if name == TRAIN_DIRTY else "held out")
        summary.append((name, role, len(df), len(ncu), mape(df.ncu_cycles, df.model_cycles),
                        pearson(df.model_cycles, df.ncu_cycles),
                        float(np.median(np.abs(df.error))), float(np.max(np.abs(df.error))),
                        float(df.model_cycles.sum() / df.ncu_cycles.sum()),
                        unpaired, skipped))
    lines += ["| trace set | role | launches compared | ncu rows | MAPE | Pearson r | "
              "median abs err | max abs err | summed model / ncu |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, role, n, nn, m, r, med, mx, step, unpaired, skipped in summary:
        lines.append(f"| {name} | {role} | {n} | {nn} | {m:.1%} | {r:.4f} | {med:.1%} | "
                     f"{mx:.1%} | {step:.3f} |")
    if all_frames:
        allf = pd.concat(all_frames)
        lines.append(f"| all | | {len(allf)} | | {mape(allf.ncu_cycles, allf.model_cycles):.1%}"
                     f" | {pearson(allf.model_cycles, allf.ncu_cycles):.4f} | | | |")
    lines.append("")
    if all_frames:
        d = allf.dropna(subset=["ncu_l2_hit"])
        big = allf[allf.ncu_dram_MB > 1.0]
        big_ratio = big.model_dram_MB / big.ncu_dram_MB
        lines.append(
            f"- Memory side, all compared launches: DRAM bytes read, model / ncu, "
            f"{(allf.model_dram_MB.sum() / allf.ncu_dram_MB.sum()):.3f} in total "
            f"({len(big)} launches reading over 1 MB: per-launch ratio median "
            f"{np.median(big_ratio):.3f}, within 0.8-1.25 for "
            f"{np.mean(big_ratio.between(0.8, 1.25)):.0%}); "
            f"DRAM bytes written, model / ncu, "
            f"{(allf.model_write_MB.sum() / allf.ncu_write_MB.sum()):.3f} in total; "
            f"L2 hit rate mean |model - ncu| {np.mean(np.abs(d.model_l2_hit - d.ncu_l2_hit)):.2f} "
            "(the gap is in small kernels, where ncu's L2 hit rate is ~0.98 even after its cache "
            "flush; probably traffic the model does not simulate, such as instruction and "
            "constant fetches, or lines ncu does not invalidate).")
        lines.append("- Limiter the model names: " + ", ".join(
            f"{b} {c}" for b, c in allf.bound.value_counts().items()) + ".")
    for name, role, n, nn, m, r, med, mx, step, unpaired, skipped in summary:
        if unpaired:
            # a partial profile (the 130M step's first 47 launches) leaves hundreds unpaired
            shown = ", ".join(unpaired[:12]) + (f" and {len(unpaired) - 12} more"
                                                 if len(unpaired) > 12 else "")
            lines.append(f"- {name}: {len(unpaired)} trace launches with no ncu record of the "
                         f"same name, grid and block (the two runs chose other launch shapes, "
                         f"or the profile covers part of the step): {shown}.")
        if skipped:
            lines.append(f"- {name}: not modelled (unreadable trace): {', '.join(skipped)}.")
    sp = speed(gpu)
    fwd = sp["kernel-35636"]
    ratio = sp["accelsim_s"] / fwd["wall_s"]
    model_only = max(fwd["wall_s"] - fwd["read_s"], 1e-6)
    print(f"speed: selective_scan_fwd {fwd['wall_s']:.3f} s (trace reading {fwd['read_s']:.3f} s)"
          f" vs Accel-Sim {sp['accelsim_s']:.0f} s -> {ratio:.0f}x, "
          f"{sp['accelsim_s'] / model_only:.0f}x without trace reading")
    bwd = sp["kernel-35643"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cpu_ratio = sp["accelsim_s"] / fwd["cpu_s"]
    lines += ["",
              f"- Speed, numba compilation excluded (one warm-up run, then 5 runs): "
              f"selective_scan_fwd (kernel-35636, {fwd['instructions']:,.0f} warp instructions) "
              f"takes {fwd['cpu_s'] * 1e3:.0f} ms of CPU time against Accel-Sim's "
              f"{sp['accelsim_s']:.0f} s (its own `gpgpu_simulation_time`) = "
              f"**{cpu_ratio:,.0f}x**. Wall time on this shared 2-core box (load average "
              f"{load:.1f} during the run): median {fwd['wall_s'] * 1e3:.0f} ms = {ratio:,.0f}x, "
              f"best {fwd['best_s'] * 1e3:.0f} ms = {sp['accelsim_s'] / fwd['best_s']:,.0f}x. "
              f"Of the wall time, {fwd['read_s'] * 1e3:.0f} ms are the trace reader (xz "
              f"decompression and parsing, `simfront.traces`), {model_only * 1e3:.0f} ms the "
              f"model. selective_scan_bwd (kernel-35643, {bwd['instructions']:,.0f}): "
              f"{bwd['cpu_s'] * 1e3:.0f} ms CPU ({bwd['instructions'] / bwd['cpu_s'] / 1e6:.2f} M "
              "warp instructions/s, trace reading included; Accel-Sim 1.x runs it only with "
              "`--isa-compat`, which rewrites its REDG: the tiny Mamba-1 step's took up to "
              "133 s wall in experiments/accelsim_steps).",
              ""]
    lines += sensitivity(gpu)
    update_results("\n".join(lines))
    return 0


VARIANTS = (("2x vector (ratio 8)", {"tensor_vector_ratio": 8}),
            ("0.5x vector (ratio 32)", {"tensor_vector_ratio": 32}),
            ("L2 25 MiB", {"l2_size": "25 MiB"}), ("L2 1.25 MiB", {"l2_size": "1.25 MiB"}),
            ("66 SMs", {"sm_count": 66}), ("DRAM 6.7 TB/s", {"dram_bandwidth": "6.7 TB/s"}),
            ("DRAM 1.675 TB/s", {"dram_bandwidth": "1.675 TB/s"}),
            ("clock 990 MHz", {"clock": "990 MHz"}), ("clock 2970 MHz", {"clock": "2970 MHz"}))


def sensitivity(gpu) -> list[str]:
    """Kernel time under each variant parameter, relative to the H100, for three kernels
    with different limiters."""
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    traces = shared_dir() / "data" / "h100" / "traces"
    kernels = (("selective_scan_fwd", traces / "mamba1_scan_step", "kernel-35636"),
               ("conv_depthwise2d_fwd", traces / "mamba2_lm_partial", "kernel-25249"),
               ("elementwise 12570 blocks", traces / "mamba2_lm_partial", "kernel-25254"))
    head = "| variant | " + " | ".join(k[0] for k in kernels) + " |"
    rows = [head, "|---|" + "---|" * len(kernels)]
    base = {}
    for label, d, kid in kernels:
        base[label] = simulate_kernel(TraceSet(d).kernel(kid), gpu)
    rows.append("| H100 (time, limiter) | " + " | ".join(
        f"{base[k[0]]['time_us']:.1f} us, {base[k[0]]['bound']}" for k in kernels) + " |")
    for vlabel, params in VARIANTS:
        g = with_variants(gpu, **params)
        cells = []
        for label, d, kid in kernels:
            r = simulate_kernel(TraceSet(d).kernel(kid), g)
            cells.append(f"{r['time_us'] / base[label]['time_us']:.2f}x")
        rows.append(f"| {vlabel} | " + " | ".join(cells) + " |")
    print("\n".join(rows))
    return ["- Sensitivity: kernel time under each variant over the H100's (model, ncu launch "
            "facts not used here):", ""] + rows + [""]


if __name__ == "__main__":
    sys.exit(main())

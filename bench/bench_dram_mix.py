"""What DRAM bandwidth the H100 and the H200 sustain with reads and writes mixed: streams of
bench/device/dram_mix.cu (data in bench/data/device/dram_mix/), against the bytes each SM
keeps in flight, on the whole GPU and in green contexts of fewer SMs, and the built-in model
on the same streams (synthetic traces of the microbenchmark's kernel).

    python bench/bench_dram_mix.py [--no-write] [--no-model]
"""

from __future__ import annotations

import argparse
import lzma
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.params import DEFAULT_PARAMS

DATA = REPO_ROOT / "bench" / "data" / "device" / "dram_mix"
SECTION = "## Reads and writes mixed: what the DRAM sustains (bench/bench_dram_mix.py)"
#: run tag -> the GPU description it measures (its peak is the shares' denominator)
RUNS = {"h100": "h100", "h200": "h200"}


def read_mix(tag: str) -> pd.DataFrame:
    """One GPU's runs: every (reads, writes, blocks a SM, float4s in flight a stream) with its
    bandwidth in GB/s, its write share and its in-flight bytes a SM."""
    d = pd.read_csv(DATA / f"dram_mix_{tag}.csv")
    d["gbps"] = d.read_gbps + d.write_gbps
    d["write_share"] = d.w / (d.r + d.w)
    return d


def whole_gpu_runs(tag: str) -> list[pd.DataFrame]:
    """Every run of the streams on the whole GPU (``dram_mix_TAG.csv`` and any earlier
    ``dram_mix_TAG_runN.csv``)."""
    stems = [f"dram_mix_{tag}"] + sorted(p.stem for p in DATA.glob(f"dram_mix_{tag}_run*.csv"))
    return [read_mix(stem.removeprefix("dram_mix_")) for stem in stems]


def sustained_shares(runs: "pd.DataFrame | list[pd.DataFrame]", peak_gbps: float) -> pd.DataFrame:
    """The best share of ``peak_gbps`` each read:write mix reaches over the shapes run: what
    a stream with that write share sustains once enough bytes are in flight; over several
    runs their mean, and ``spread`` the largest minus the smallest."""
    if isinstance(runs, pd.DataFrame):
        runs = [runs]
    each = [d.groupby(["r", "w"], as_index=False).agg(gbps=("gbps", "max"),
                                                      write_share=("write_share", "first"))
            for d in runs]
    best = pd.concat(each).groupby(["r", "w"], as_index=False).agg(
        gbps=("gbps", "mean"), lo=("gbps", "min"), hi=("gbps", "max"),
        write_share=("write_share", "first"))
    best["share"] = best.gbps / peak_gbps
    best["spread"] = (best.hi - best.lo) / peak_gbps
    return best.drop(columns=["lo", "hi"]).sort_values("write_share").reset_index(drop=True)


def turn_fit(best: pd.DataFrame, peak_bytes_per_s: float) -> tuple[float, float]:
    """The DRAM's cost of turning its bus, from one GPU's sustained mixes (``best``, of
    ``sustained_shares``): least squares of a byte's time over the mixes that read, as
    ``1 / (peak x share) + k x turned``, where a byte's turned share is its write share, at
    most twice its read share (``simulate.dram_time``). Returns (the share a stream that
    only reads sustains, k in picoseconds a byte written)."""
    reads = best[best.r > 0]
    w = reads.write_share.to_numpy(float)
    turned = np.minimum(w, 2.0 * (1.0 - w))
    per_byte = 1.0 / (reads.gbps.to_numpy(float) * 1e9)
    a, k = np.linalg.lstsq(np.vstack([np.ones_like(w), turned]).T, per_byte, rcond=None)[0]
    return float(1.0 / (a * peak_bytes_per_s)), float(k * 1e12)


def turned_shares(best: pd.DataFrame, peak_bytes_per_s: float, reads_share: float,
                  turn_ps: float) -> pd.Series:
    """The shares of the peak ``turn_fit``'s line gives each mix of ``best``."""
    w = best.write_share.to_numpy(float)
    turned = np.where(best.r > 0, np.minimum(w, 2.0 * (1.0 - w)), 0.0)
    per_byte = 1.0 / (peak_bytes_per_s * reads_share) + turned * turn_ps * 1e-12
    return pd.Series(1.0 / (per_byte * peak_bytes_per_s), index=best.index)


def reads_in_flight_needed(d: pd.DataFrame, best: pd.DataFrame, r: int = 1, w: int = 1,
                           within: float = 0.05) -> float:
    """The fewest KiB of reads a SM keeps in flight at which the r:w mix comes within
    ``within`` of its best bandwidth."""
    one = d[(d.r == r) & (d.w == w)]
    top = float(best[(best.r == r) & (best.w == w)].gbps.iloc[0])
    return float(one[one.gbps >= (1 - within) * top].inflight_kib_per_sm.min())


def streaming_kernels(set_dir, min_us: float = 100.0, min_share: float = 0.6) -> pd.DataFrame:
    """The long DRAM-bound launches of a captured step's ncu profile: name, write share and
    the share of the DRAM peak ncu saw (``dram__throughput``)."""
    n = read_ncu_csv(set_dir / "ncu.csv")
    out = []
    for _, r in n.iterrows():
        moved = r["dram__bytes_read.sum"] + r["dram__bytes_write.sum"]
        if r["gpu__time_duration.sum"] >= min_us * 1e-6 and moved > 0 and \
                r["dram__throughput.avg.pct_of_peak_sustained_elapsed"] >= min_share:
            out.append({"kernel": re.search(r"(\w+)\s*[<(]", r["Kernel Name"]).group(1),
                        "write_share": r["dram__bytes_write.sum"] / moved,
                        "share": r["dram__throughput.avg.pct_of_peak_sustained_elapsed"]})
    return pd.DataFrame(out, columns=["kernel", "write_share", "share"])


#: where the synthetic streams' buffers lie (any addresses the model's caches see as distinct)
SRC, DST, GIB = 0x7F0000000000, 0x7E0000000000, 1 << 30


def mix_trace(path: Path, r: int, w: int, ilp: int, grid: int, stream_bytes: int = 256 << 20,
              traced: int = 8) -> Path:
    """A trace of dram_mix.cu's ``mix<R, W, ILP>`` on ``grid`` blocks of 256 threads, its
    first ``traced`` blocks written out (the rest counted in the census): each warp loads
    ILP float4s of each of R streams, adds them, stores the sums to W streams, and strides
    by the grid until each stream has moved ``stream_bytes`` (four times the H200's L2: a
    steady stream, not the kernel's 1 GiB)."""
    per_iter = grid * 256 * ilp * 16
    iters = max(1, math.ceil(stream_bytes / per_iter))
    body: list[tuple[str, int, int, int]] = []  # (row text, stream kind, stream, ilp index)
    loads = [(k, j, 8 + 4 * (k * ilp + j)) for k in range(r) for j in range(ilp)]
    body += [(f"1 R{d} LDG.E.128.CONSTANT 1 R2 16 1 {{}} 16 0", 0, k, j) for k, j, d in loads]
    body += [(f"1 R{200 + 4 * j + c} FADD 2 R{200 + 4 * j + c} R{d + c} 0 0", -1, 0, 0)
             for k, j, d in loads for c in range(4)]
    body += [(f"0 STG.E.128 2 R4 R{200 + 4 * j} 16 1 {{}} 16 0", 1, k, j)
             for k in range(w) for j in range(ilp)]
    body += [("1 R2 IADD3 2 R2 R255 0 0", -1, 0, 0), ("0 ISETP.GE.AND 1 R2 0 0", -1, 0, 0),
             ("0 BRA 0 0 256", -1, 0, 0)]
    per_warp = iters * len(body) + 2
    out = [f"-kernel name = _Z3mixILi{r}ELi{w}ELi{ilp}EEvPK6float4PS0_m", "-kernel id = 1",
           f"-grid dim = ({grid},1,1)", "-block dim = (256,1,1)", "-shmem = 0",
           "-nregs = 32", "-binary version = 90", "-cuda stream id = 0",
           "-shmem base_addr = 0x00007f6d00000000",
           "-local mem base_addr = 0x00007f6c11000000", "-nvbit version = 1.7.7.1",
           "-accelsim tracer version = 5", "-simfront tracer = simfront-tracer 1.3",
           "-launch api = cuLaunchKernel", "-cuda graph = 0",
           f"-tb sampling = stride 1 max {traced} traced {min(traced, grid)} of {grid}",
           f"-tb census = {grid * 8 * per_warp} warp instructions", ""]
    for b in range(min(traced, grid)):
        out += ["#BEGIN_TB", "", f"thread block = {b},0,0", ""]
        for wp in range(8):
            out += [f"warp = {wp}", f"insts = {per_warp}", "0000 ffffffff 1 R2 S2R 0 0 0"]
            for it in range(iters):
                for n, (text, kind, k, j) in enumerate(body):
                    if kind >= 0:
                        idx = it * grid * 256 * ilp + b * 256 * ilp + j * 256 + wp * 32
                        base = (SRC if kind == 0 else DST) + k * GIB
                        text = text.format(f"0x{base + 16 * idx:x}")
                    out.append(f"{0x100 + 16 * n:04x} ffffffff {text}")
            out += [f"{0x100 + 16 * len(body):04x} ffffffff 0 EXIT 0 0 0", ""]
        out += ["#END_TB", ""]
    with lzma.open(path, "wt") as f:
        f.write("\n".join(out) + "\n")
    return path


def model_on_mix(hw: pd.DataFrame, gpu, folder: Path, params=None) -> pd.DataFrame:
    """The model's bandwidth on each measured stream (``hw``: rows of ``read_mix``, one SM
    count) over the hardware's."""
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import KernelTrace

    out = []
    for h in hw.itertuples():
        g = gpu if h.sms == gpu.sm_count else with_variants(gpu, sm_count=int(h.sms))
        grid = int(h.sms * h.blocks_per_sm)
        path = folder / f"mix_{h.r}_{h.w}_{h.ilp}_{grid}.traceg.xz"
        if not path.is_file():
            mix_trace(path, int(h.r), int(h.w), int(h.ilp), grid)
        rec = simulate_kernel(KernelTrace(path), g, params=params or DEFAULT_PARAMS,
                              cache=False)
        iters = math.ceil((256 << 20) / (grid * 256 * h.ilp * 16))
        moved = (h.r + h.w) * iters * grid * 256 * h.ilp * 16
        gbps = moved / (rec["cycles"] / (rec["sim_clock_mhz"] * 1e6)) / 1e9
        out.append({"sms": h.sms, "r": h.r, "w": h.w, "blocks_per_sm": h.blocks_per_sm,
                    "ilp": h.ilp, "hw_gbps": h.gbps, "model_gbps": gbps})
    t = pd.DataFrame(out)
    t["ratio"] = t.model_gbps / t.hw_gbps
    return t


def warp_waits(hw: pd.DataFrame, sms: int, lines: int) -> dict[int, float]:
    """Reads alone on ``sms`` SMs with ``lines`` 128-byte lines in flight a SM: the time a
    line takes (Little's law: lines in flight over lines a second), by float4 loads in
    flight a warp."""
    t = hw[(hw.sms == sms) & (hw.r == 1) & (hw.w == 0)]
    t = t[t.blocks_per_sm * t.ilp * 32 == lines]
    return {int(i): lines * 128 / (g / sms) for i, g in sorted(zip(t.ilp, t.gbps))}


def fewer_sms_lines(tag: str, with_model: bool) -> list[str]:
    """The streams on fewer SMs (green contexts) and the model's bandwidth on them."""
    runs = [read_mix(tag)] + [read_mix(f"{tag}_sms{n}") for n in (96, 64, 32)
                              if (DATA / f"dram_mix_{tag}_sms{n}.csv").is_file()]
    if len(runs) == 1:
        return []
    gpu = load_gpu(RUNS[tag])
    peak = gpu.dram.bandwidth.bytes_per_s / 1e9
    hw = pd.concat(runs, ignore_index=True)
    lines = ["", f"### The streams on fewer SMs ({tag.upper()}, green contexts)", "",
             f"`bash bench/device/dram_mix.sh {tag} 96 64 32`: the same streams in green "
             "contexts of 96, 64 and 32 SMs (the L2 and the DRAM whole), timed by the host "
             "clock. Reads alone, share of the peak by blocks a SM x float4s in flight a "
             "stream:", ""]
    reads = hw[(hw.r == 1) & (hw.w == 0)]
    shapes = sorted(set(zip(reads.blocks_per_sm, reads.ilp)))
    lines += ["| SMs | " + " | ".join(f"{b}x{i}" for b, i in shapes) + " |",
              "|" + "---|" * (len(shapes) + 1)]
    for n, g in reads.groupby("sms", sort=False):
        by = {(b, i): v / peak for b, i, v in zip(g.blocks_per_sm, g.ilp, g.gbps)}
        lines.append(f"| {n} | " + " | ".join(f"{by[k]:.2f}" if k in by else "" for k in shapes)
                     + " |")
    if not with_model:
        return lines
    keep = hw[hw.sms.isin([gpu.sm_count, 64, 32]) & (((hw.r == 1) & (hw.w == 0))
                                                     | ((hw.r == 1) & (hw.w == 1)))]
    with tempfile.TemporaryDirectory() as tmp:
        t = model_on_mix(keep, gpu, Path(tmp))
    lines += ["", "The model on the same streams (synthetic traces of the kernel, "
              "`bench_dram_mix.mix_trace`: 8 blocks traced, each stream 256 MiB), its "
              "bandwidth over the hardware's:", "",
              "| SMs | mix | " + " | ".join(f"{b}x{i}" for b, i in shapes) + " | within 10% |",
              "|" + "---|" * (len(shapes) + 3)]
    for (n, r, w), g in t.groupby(["sms", "r", "w"], sort=False):
        by = {(b, i): v for b, i, v in zip(g.blocks_per_sm, g.ilp, g.ratio)}
        ok = int((abs(g.ratio - 1) <= 0.10).sum())
        lines.append(f"| {n} | {r}:{w} | " + " | ".join(
            f"{by[k]:.2f}" if k in by else "" for k in shapes) + f" | {ok} / {len(g)} |")
    few = t[(t.blocks_per_sm == 1) & (t.ilp >= 2)]
    many = t[(t.blocks_per_sm == 8) & (t.ilp == 1)]
    lines += ["", f"- Within 10% on {int((abs(t.ratio - 1) <= 0.10).sum())} of {len(t)} "
              f"streams. One block a SM with 2-8 loads in flight a warp: the model at "
              f"{few.ratio.min():.2f}-{few.ratio.max():.2f} of the hardware's bandwidth; "
              f"eight blocks a SM with one load a warp: {many.ratio.min():.2f}-"
              f"{many.ratio.max():.2f}. The hardware's warp waits longer the more wide loads "
              "it has out to the DRAM, whatever the SM's load (at 32 SMs, 128 lines in "
              "flight a SM: " + ", ".join(f"{k} load{'s' if k > 1 else ''} a warp {v:.0f} ns"
                                         for k, v in warp_waits(hw, 32, 128).items())
              + "). The model's warp waits for its loads about as long however many it has "
              "out, so it reads the streams of few warps with several loads each as too fast; "
              "many warps with a load or two each it reads closely: what it misses is a warp's "
              "own queue of wide loads (docs/history.md, *Tried and not kept*: a warp's DRAM "
              "loads held apart)."]
    mixed = t[(t.sms == gpu.sm_count) & (t.r == 1) & (t.w == 1) & (t.blocks_per_sm >= 2)]
    best = sustained_shares(whole_gpu_runs(tag), peak)
    one = float(best[(best.r == 1) & (best.w == 1)].share.iloc[0])
    lines.append(f"- Mixed 1:1 on all {gpu.sm_count} SMs with two blocks a SM or more, where "
                 f"the DRAM binds: the model at {mixed.ratio.min():.2f}-"
                 f"{mixed.ratio.max():.2f} of the hardware's bandwidth, as its "
                 f"{DEFAULT_PARAMS.dram.efficiency} of the peak stands to the {one:.3f} the "
                 f"{tag.upper()} sustains.")
    return lines


#: the stores' wait values ``fit_store_wait`` tries, ns
STORE_WAITS = (0.0, 70.0, 100.0, 130.0, 160.0, 190.0)


def fit_store_wait(waits=STORE_WAITS) -> str:
    """``stores.load_wait_ns``: the least RMS log error of the model's bandwidth over the
    H200's on its 1:1 streams with one load in flight a warp, on 32 and 64 SMs (green
    contexts), where an SM's stores, not the DRAM, slow its loads."""
    import numpy as np

    hw = pd.concat([read_mix("h200_sms32"), read_mix("h200_sms64")], ignore_index=True)
    keep = hw[(hw.r == 1) & (hw.w == 1) & (hw.ilp == 1)]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for ns in waits:
            t = model_on_mix(keep, load_gpu("h200"), Path(tmp),
                             DEFAULT_PARAMS.with_(**{"stores.load_wait_ns": ns}))
            out.append((float(np.sqrt((np.log(t.ratio) ** 2).mean())), ns))
    best = min(out)
    return ("stores.load_wait_ns: " + ", ".join(f"{ns:.0f} ns RMS log {e:.4f}" for e, ns in out)
            + f"; best {best[1]:.0f}")


def turn_lines(bests: dict) -> list[str]:
    """The turn cost fitted on the H100's mixes, the H200's held out."""
    b100, g100, _ = bests["h100"]
    b200, g200, _ = bests["h200"]
    e100, k100 = turn_fit(b100, g100.dram.bandwidth.bytes_per_s)
    e200, k200 = turn_fit(b200, g200.dram.bandwidth.bytes_per_s)
    # the H200 predicted with its own read-only share and the H100's turn cost
    pred = turned_shares(b200, g200.dram.bandwidth.bytes_per_s, e200, k100)
    err = (pred / b200.share - 1).abs()
    mixed = b200[(b200.r > 0) & (b200.w > 0)]
    return ["**The turns' cost** (`python bench/bench_dram_mix.py --fit`): a byte's time "
            "over the mixes that read, least squares of 1 / (peak x share) + k x (the write "
            "share, at most twice the read share). The H100's mixes (the fit): streams that "
            f"only read {e100:.3f} of the peak, k = {k100:.3f} ps a byte written. Held out, "
            f"the H200's mixes with its own read-only share ({e200:.3f}) and the H100's k: "
            f"within {float(err[mixed.index].max()) * 100:.1f}% of each measured mixed share "
            f"(its own fit: k = {k200:.3f}). A turn takes the same time on both, so the H200 "
            "loses more of its peak to it. The model adds "
            f"`dram.turn_ps_per_byte` ({DEFAULT_PARAMS.dram.turn_ps_per_byte}) a byte "
            "written to its DRAM bound (`simulate.dram_time`)."]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    ap.add_argument("--no-model", action="store_true",
                    help="leave out the model on the streams (minutes of one core)")
    ap.add_argument("--fit", action="store_true",
                    help="print the bus turns' cost fitted on the H100's mixes and stop")
    ap.add_argument("--fit-wait", action="store_true",
                    help="print the stores' wait on an SM's loads fitted on the H200's 1:1 "
                         "streams on 32 and 64 SMs and stop (minutes of one core)")
    args = ap.parse_args()
    if args.fit_wait:
        print(fit_store_wait())
        return
    if args.fit:
        gpu = load_gpu("h100")
        best = sustained_shares(whole_gpu_runs("h100"), gpu.dram.bandwidth.bytes_per_s / 1e9)
        e, k = turn_fit(best, gpu.dram.bandwidth.bytes_per_s)
        print(f"h100: reads alone {e:.3f} of the peak; a byte written {k:.3f} ps")
        return
    lines = [SECTION, "",
             "`bash bench/device/dram_mix.sh TAG` (2026-11-27; one call each, on an NVIDIA "
             "H100 80GB HBM3 and an NVIDIA H200, driver 580.159.04): every thread streams R "
             "reads and W "
             "writes of 1 GiB buffers, 1-8 float4s of each stream in flight, 1-8 blocks of 256 "
             "threads a SM, five launches timed together (CUDA events, median of 5). Share: "
             "bytes moved a second over the description's peak; the best over the shapes is "
             "what a stream with that write share sustains. The model's DRAM bound takes "
             f"{DEFAULT_PARAMS.dram.efficiency} of the peak (`dram.efficiency`) for every "
             "stream.", ""]
    bests = {}
    for tag, preset in RUNS.items():
        gpu = load_gpu(preset)
        peak = gpu.dram.bandwidth.bytes_per_s / 1e9
        bests[tag] = (sustained_shares(whole_gpu_runs(tag), peak), gpu, peak)
    mixes = list(bests["h100"][0][["r", "w"]].itertuples(index=False, name=None))
    head = ("| GPU (peak), runs | " + " | ".join(f"{r}:{w}" for r, w in mixes)
            + " | largest spread between runs |")
    lines += [head, "|" + "---|" * (len(mixes) + 2)]
    lines.append("| write share | " + " | ".join(
        f"{w / (r + w):.2f}" for r, w in mixes) + " | |")
    for tag, (best, gpu, peak) in bests.items():
        by = {(r, w): s for r, w, s in zip(best.r, best.w, best.share)}
        lines.append(f"| {tag.upper()} ({peak / 1e3:.2f} TB/s), {len(whole_gpu_runs(tag))} | "
                     + " | ".join(f"{by[m]:.3f}" for m in mixes)
                     + f" | {best.spread.max():.3f} |")
    need = {tag: reads_in_flight_needed(read_mix(tag), b) for tag, (b, _, _) in bests.items()}
    lines += ["", "Bytes in flight: the 1:1 mix's share by float4s in flight a stream (columns) "
              "and blocks a SM (rows). The 1:1 stream comes within 5% of its best share with "
              + " and ".join(f"{v:.0f} KiB of reads in flight a SM on the {k.upper()}"
                             for k, v in need.items()) + ".", ""]
    for tag, (best, gpu, peak) in bests.items():
        d = read_mix(tag)
        one = d[(d.r == 1) & (d.w == 1)]
        t = one.pivot_table(index="blocks_per_sm", columns="ilp", values="gbps") / peak
        lines += [f"| {tag.upper()}, blocks a SM | "
                  + " | ".join(f"{c} in flight" for c in t.columns) + " |",
                  "|" + "---|" * (len(t.columns) + 1)]
        for b, row in t.iterrows():
            lines.append(f"| {b} | " + " | ".join("" if pd.isna(v) else f"{v:.2f}" for v in row)
                         + " |")
        lines.append("")
    h100, h200 = bests["h100"][0], bests["h200"][0]
    one = lambda b: float(b[(b.r == 1) & (b.w == 1)].share.iloc[0])  # noqa: E731
    reads = lambda b: float(b[(b.r == 1) & (b.w == 0)].share.iloc[0])  # noqa: E731
    lo, hi = min(reads(h100), reads(h200)), max(h100.share.max(), h200.share.max())
    lines += [f"- A stream that only reads or only writes sustains {lo:.2f}-{hi:.2f} of the "
              "peak on both GPUs; mixed 1:1 "
              f"the H100 keeps {one(h100):.3f}, the H200's HBM3e {one(h200):.3f}: each turn of "
              "the bus costs about as long in time on both, and the H200 moves more bytes in it."]
    step = REPO_ROOT / "traces" / "h200-ho-m2-d1024"
    if (step / "ncu.csv").is_file():
        k = streaming_kernels(step)
        soft = k[k.kernel.str.startswith("cunn_SoftMax")]
        rest = k[~k.kernel.str.startswith("cunn_SoftMax")]
        lines.append(
            "- On the H200 the LM head's softmax streams below these shares (held-out step "
            "h200-ho-m2-d1024, ncu: " + "; ".join(
                f"{r.kernel} {r.share:.2f} of the peak at write share {r.write_share:.2f}"
                for r in soft.itertuples()) + "), where the step's other long streams reach "
            + ", ".join(f"{r.share:.2f} at {r.write_share:.2f}" for r in rest.itertuples())
            + ": what is left of the softmax's miss is its own, not the DRAM's.")
    lines += ["", *turn_lines(bests)]
    lines += fewer_sms_lines("h200", not args.no_model)
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        update_section(SECTION, body, topic="Microbenchmarks")


if __name__ == "__main__":
    main()

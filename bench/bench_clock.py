"""What the H100 does on fewer SMs that the model's cycles do not show (issue 12): the SM clock
under the power cap, how the persistent cuBLAS GEMMs spread their tiles, and how fast an
SM's L1 looks up the transposing copy's lines. Reads the data two device calls left:

- ``bench/data/device/dvfs/`` (``bash bench/device/dvfs.sh h100``): operations looped for a
  second on the whole GPU and in green contexts of 96, 64 and 32 SMs, the SM clock and board
  power sampled by ``nvidia-smi``; and ncu (``--clock-control none``) on the LM head's two
  backward GEMMs there, with every SM's active cycles summed and their maximum.
- ``bench/data/device/copy_l1/`` (``bash bench/device/copy_l1.sh``): the paper steps'
  transposing copy under ncu on 132, 96, 64 and 32 SMs, with its L1 tag lookups.

Run: ``python bench/bench_clock.py``; updates its section of bench/RESULTS.md.
"""

from __future__ import annotations

import lzma
import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from results_md import update_section  # noqa: E402  (bench/results_md.py)

from simfront.stats.ncu import read_ncu_csv  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "device"
TRACES = Path(__file__).resolve().parents[1] / "traces"
#: The box-sampled paper steps, whose nvjet launches each trace 8 CTAs (2 clusters x 4).
BOX_SETS = ("mamba2_lm-paper-box", "mamba1_lm-paper-box")
SECTION = "## Clocks and tile schedules on fewer SMs (bench/bench_clock.py)"
BASE_SMS = 132
# The LM head's backward GEMMs of the paper steps (4 x 2048 tokens, d_model 768, vocabulary
# 50280) and their output tiles: grad_input 8192 x 768 in 192x128 tiles, grad_weight
# 50280 x 768 in 192x192 tiles.
GEMM_TILES = {"192x128": math.ceil(8192 / 192) * math.ceil(768 / 128),
              "192x192": math.ceil(50280 / 192) * math.ceil(768 / 192)}


def static_waves(tiles: int, grid: int, sms: int) -> tuple[float, float]:
    """A static tile schedule (CTA c takes tiles c, c + grid, ...) whose one-CTA-an-SM grid
    runs in waves of ``sms``: the busiest SM's tiles and the mean per SM. A CTA of the next
    wave goes to the SM that frees first, the one whose CTA had fewest tiles."""
    per_cta = [len(range(c, tiles, grid)) for c in range(grid)]
    load = sorted(per_cta[:sms])
    for k in sorted(per_cta[sms:], reverse=True):
        load[0] += k
        load.sort()
    return float(max(load)), tiles / min(sms, grid)


def whole_tiles(tiles: int, sms: int) -> float:
    """A dynamic scheduler that hands out whole tiles: rounds of ``sms`` tiles."""
    return float(math.ceil(tiles / sms))


def nvjet_atomics(trace_dir: Path) -> dict[str, tuple[str, int]]:
    """Per nvjet launch of a trace set: its kernel name and how many global atomics
    (``ATOMG``, ``RED.E``) its traced CTAs ran: a dynamic tile scheduler takes its tiles
    through one; a static one (tile += grid) needs none."""
    out = {}
    for f in sorted(trace_dir.glob("kernel-*.traceg.xz")):
        with lzma.open(f, "rt") as fh:
            name = fh.readline().split("=", 1)[1].strip()
            if not name.startswith("nvjet_"):
                continue
            n = sum(1 for ln in fh if " ATOMG" in ln or " RED.E" in ln)
        out[f.name] = (name, n)
    return out


def hw_ratios(trace_dir: Path, labels: list[str]) -> dict[str, list[str]]:
    """Per trace file: the hardware's time under each condition over the whole GPU's, for
    launches both timelines pair exactly (the timelines only: no model run)."""
    from simfront.analysis.whatif import BASE, EXACT, pair_timeline, read_timeline, trace_launches

    trace = trace_launches(trace_dir)
    base_tl, _ = read_timeline(trace_dir, BASE)
    base = pair_timeline(trace, base_tl)
    out: dict[str, list[str]] = {}
    for label in labels:
        tl, _ = read_timeline(trace_dir, label)
        cond = pair_timeline(trace, tl)
        for i, f in enumerate(trace.file):
            if base.match.iat[i] == EXACT and cond.match.iat[i] == EXACT:
                r = tl.time_us.iat[cond.tl.iat[i]] / base_tl.time_us.iat[base.tl.iat[i]]
                out.setdefault(f, []).append(f"{r:.2f}")
    return out


def scheduler_table() -> list[str]:
    from simfront.analysis.whatif import available_conditions

    rows = ["| set | GEMM | launches | global atomics a launch | 96 / 64 / 32 SMs, hardware "
            "time ratio |", "|---|---|---|---|---|"]
    for s in BOX_SETS:
        d = TRACES / s
        if not d.is_dir():
            continue
        atom = nvjet_atomics(d)
        ratios = hw_ratios(d, [c for c in ("h100-sms96", "h100-sms64", "h100-sms32")
                               if c in available_conditions(d)])
        by_name: dict[str, list] = {}
        for f, (name, n) in atom.items():
            by_name.setdefault(name, []).append((n, " / ".join(ratios.get(f, []))))
        for name, xs in sorted(by_name.items(), key=lambda kv: (kv[1][0][0] > 0, kv[0])):
            rows.append(f"| {s} | `{name[15:60]}` | {len(xs)} | "
                        f"{', '.join(str(n) for n, _ in xs)} | {'; '.join(r for _, r in xs)} |")
    return rows


def clock_table(dvfs: pd.DataFrame) -> list[str]:
    rows = ["| op | " + " | ".join(f"{n} SMs" for n in sorted(dvfs.sms.unique(), reverse=True))
            + " |", "|---" * (1 + dvfs.sms.nunique()) + "|"]
    for op, g in dvfs.groupby("op", sort=False):
        g = g.set_index("sms").sort_index(ascending=False)
        cells = [f"{r.ms_per_call:.3f} ms, {r.clock_mhz:.0f} MHz, {r.power_w:.0f} W"
                 + (", capped" if r.power_cap_share >= 0.5 else "") for r in g.itertuples()]
        rows.append(f"| {op} | " + " | ".join(cells) + " |")
    return rows


def schedule_table(ncu: pd.DataFrame) -> tuple[list[str], dict]:
    ncu = ncu.assign(tile=ncu["Kernel Name"].str.extract(r"tst_(\d+x\d+)_")[0],
                     sms=ncu["launch__sm_count"])
    g = ncu.groupby(["tile", "sms"]).agg(
        name=("Kernel Name", "first"), cycles=("gpc__cycles_elapsed.max", "median"),
        smmax=("sm__cycles_active.max", "median"), smsum=("sm__cycles_active.sum", "median"),
        s=("gpu__time_duration.sum", "median"), grid=("launch__grid_size", "first"))
    rows = ["| GEMM (tiles) | SMs | clock (ncu) | cycles / 132 SMs' | static waves | whole tiles "
            "| busiest SM / mean, measured | static waves |", "|---|---|---|---|---|---|---|---|"]
    fit = {}
    for tile, t in GEMM_TILES.items():
        base = g.loc[(tile, BASE_SMS)]
        b_static, _ = static_waves(t, int(base.grid), BASE_SMS)
        for sms in sorted(g.loc[tile].index, reverse=True):
            r = g.loc[(tile, sms)]
            s_max, s_mean = static_waves(t, int(r.grid), sms)
            imb = r.smmax / (r.smsum / sms)
            ratio = r.cycles / base.cycles
            fit[(tile, sms)] = (ratio, s_max / b_static, imb, s_max / s_mean)
            rows.append(f"| `{r['name'][:44]}` ({t}) | {sms} | {r.cycles / r.s / 1e9:.3f} GHz "
                        f"| {ratio:.2f} | {s_max / b_static:.2f} "
                        f"| {whole_tiles(t, sms) / whole_tiles(t, BASE_SMS):.2f} "
                        f"| {imb:.3f} | {s_max / s_mean:.3f} |")
    return rows, fit


def copy_table(ncu: pd.DataFrame, tags: pd.DataFrame) -> list[str]:
    ncu = ncu[ncu["launch__grid_size"] == 28672]
    lookups = tags[tags["launch__grid_size"] == 28672].groupby("launch__sm_count")[
        "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum"].median()
    rows = ["| SMs | us (ncu) | SM active cycles | lines looked up per SM | lines a clock "
            "| L1 sector hits | misses + hits / 2, a clock |", "|---|---|---|---|---|---|---|"]
    for sms, g in ncu.groupby("launch__sm_count", sort=False):
        active = g["sm__cycles_active.avg"].median()
        lines = lookups[sms] / sms   # a tag lookup a line: each lane reads its own
        hit = (g["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"]
               / g["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]).median()
        rows.append(f"| {sms} | {g['gpu__time_duration.sum'].median() * 1e6:.1f} "
                    f"| {active:,.0f} | {lines:,.0f} | {lines / active:.2f} | {hit:.0%} "
                    f"| {lines * (1 - hit / 2) / active:.2f} |")
    return rows


def main() -> int:
    dvfs = pd.read_csv(DATA / "dvfs" / "dvfs.csv")
    gemm = read_ncu_csv(DATA / "dvfs" / "lmhead_ncu.csv")
    copy = read_ncu_csv(DATA / "copy_l1" / "ncu.csv")
    tags = read_ncu_csv(DATA / "copy_l1" / "ncu_tags.csv")
    sched, _ = schedule_table(gemm)
    body = [SECTION, "",
            "`python bench/bench_clock.py`, from two H100 calls of 2026-11-24 (`bash bench/device/"
            "dvfs.sh h100`, 94 s; `bash bench/device/copy_l1.sh`, 30 s; data in "
            "`bench/data/device/dvfs/` and `bench/data/device/copy_l1/`). Nothing device-wide "
            "was set: the clocks were read (nvidia-smi, every 20 ms, the median over the last "
            "three quarters of each second-long loop; power limit 700 W, max clock 1980 MHz).",
            "", "**The SM clock by operation and SM count** (a loop of back-to-back calls; "
            "*capped*: the software power cap active in most samples). `gemm8k`: a bf16 "
            "8192^3 matmul; `lmhead_dx`, `lmhead_dw`: the LM head's backward GEMMs of the paper "
            "steps (8192 x 50280 @ 50280 x 768, 50280 x 8192 @ 8192 x 768); `copy`: 1 GiB "
            "bf16; `ssd_fwd`: mamba_ssm's chunked scan forward at the paper size (its loop is "
            "bound by the host's launches, so its times are not the kernels').", ""]
    body += clock_table(dvfs)
    body += ["", "**How the LM head's GEMMs spread their tiles on fewer SMs** (ncu, "
             "`--clock-control none`, three launches each, medians; both grids are 132 CTAs "
             "in clusters of 2 on every SM count). *cycles / 132 SMs'*: "
             "`gpc__cycles_elapsed.max` over the whole GPU's; *static waves*: a static tile "
             "schedule (CTA c takes tiles c, c + 132, ...) whose CTAs run one an SM, in waves; "
             "*whole tiles*: a dynamic scheduler handing out whole tiles; *busiest SM / mean*: "
             "`sm__cycles_active.max` over `sm__cycles_active.sum` / SMs.", ""]
    body += sched
    body += ["", "**Which nvjet GEMMs take their tiles through an atomic** (the box-sampled "
             "paper steps' traces: `ATOMG` or `RED.E` in their 8 traced CTAs; hardware time "
             "ratios from their what-if timelines, *What-ifs against hardware*).", ""]
    body += scheduler_table()
    body += ["", "**The transposing copy's L1 on fewer SMs** (`direct_copy` "
             "`elementwise_kernel`, 28672 blocks, each lane's bf16 in its own line; ncu, "
             "medians of two launches; lookups: "
             "`l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld`, one a line).", ""]
    body += copy_table(copy, tags)
    body += ["", *READING]
    text = "\n".join(body) + "\n"
    print(text)
    update_section(SECTION, text)
    return 0


READING = [
    "Reading:",
    "- **The clock follows the power, and the power the SMs at work.** Back-to-back tensor "
    "GEMMs hold the 700 W cap on the whole GPU and run at 1350-1425 MHz; on 96 SMs at "
    "1650-1860, on 64 at 1965, on 32 at 1980 (uncapped). The copy and the other memory-bound "
    "work run at 1980 MHz on every SM count. ncu, which runs one kernel at a time, saw the "
    "same GEMMs at 1.53-1.55 GHz on 132 SMs, 1.76-1.81 on 96, 1.84-1.86 on 64 and 1.995 on 32; "
    "the paper steps' ncu profiles show 1.55-1.56 GHz for these GEMMs, 1.67-1.80 for the "
    "smaller ones, 1.80-1.83 for the Triton SSD kernels (tensor pipe 4-20% busy) and "
    "1.94-1.99 for everything without tensor work. The model counts cycles at one clock "
    "(1980 MHz: docs/gpu-configs.md, *The clock*), so its SM-count what-if of a GEMM is a "
    "cycle ratio, where the hardware's time ratio is the cycle ratio times the clocks' "
    "(0.85 at 96 SMs, 0.82 at 64 and 0.77 at 32 for the 192x128 GEMM under ncu).",
    "- **Two tile schedulers, told apart by the trace.** The persistent `coop` GEMMs "
    "(grid 132) whose traced CTAs run no global atomic, the `192x128_64x5_1x2` family, take "
    "1.67-1.89x their whole-GPU time on 96 SMs in both steps; those whose scheduler warp "
    "takes tiles with `ATOMG.E.ADD` take 1.26-1.59x. The first follow a static schedule "
    "(CTA c takes tiles c, c + 132, ...) whose CTAs run one an SM, in waves: the 192x128 "
    "GEMM's cycles 2.02 / 2.47 / 4.74 against 2.00 / 2.50 / 4.50, and its busiest SM over "
    "the mean 1.50 / 1.25 / 1.13 against 1.49 / 1.24 / 1.12. The 192x192 GEMM (12 atomics) "
    "follows neither that (2.00 / 2.75 / 4.75) nor whole tiles handed out one at a time "
    "(1.38 / 2.12 / 4.12): 1.52 / 2.22 / 4.52, the busiest SM 1.10 over the mean on 96 and "
    "64 SMs, its mean per-tile cycles the whole GPU's on every SM count. So the 96-SM "
    "GEMMs that *How many blocks a cluster launch holds* left open are the static family: "
    "twice the cycles at 1.18x the clock, 1.73x the time in the Mamba2 step. The model "
    "treats every `nvjet_sm90_` grid as a dynamic scheduler's (`persistent_spread`: 1.375x "
    "at 96 SMs).",
    "- **What the two would do to the what-ifs** (by arithmetic on the compare tables of "
    "*What-ifs against hardware*, model-1.11; no model change made). Static waves for the "
    "`192x128_64x5_1x2` GEMMs alone: the 96-SM step from -3.3% to -0.3% (Mamba2 box) and "
    "-3.0% to -0.1% (Mamba1 box), the 64-SM per-launch MAPE from 8.05% to 8.35% and 8.11% "
    "to 8.21%, the 32-SM steps from -0.5% to +0.5% and +2.0% to +2.8%. With the clock of "
    "the kernels whose tensor pipe ncu finds at least 90% busy, taken from the ncu clocks "
    "above by the SMs the kernel keeps busy: 96 SMs -1.5% and -1.3%, 64-SM MAPE 8.24% and "
    "8.14%, 32 SMs -2.5% and 0.0%. The clock for every kernel with tensor work makes every "
    "SM count worse (the SSD kernels' what-ifs, already below the hardware's, fall further), "
    "so ncu's isolated clocks do not carry over to a step's kernels as they are; their "
    "clocks in the step were not measured, and a clock model needs them. Next: the "
    "static schedule in the model "
    "(a persistent grid with no global atomic in its traced CTAs), and the step's clocks "
    "on fewer SMs.",
    "- **An SM's L1 looks up more than a line a clock when the lines hit.** The copy keeps "
    "its time on 96 and 64 SMs (101-105 us against 106 on 132): its blocks 64 apart read "
    "the same lines, so on fewer SMs more of an SM's lookups hit its L1 (11% of sectors on "
    "132 SMs, 31% on 64, 40% on 32), and the SM then looks up 1.14 lines a clock on 64 SMs "
    "and 1.23 on 32, where the model (`l1_line_cycles`, from `load_shapes.cu`'s lines that "
    "miss) takes one. A miss a clock and a hit half a clock fits both (0.96 and 0.99 a "
    "clock). The model's L1 sees none of these hits (the trace's 8 blocks read one "
    "channel), so its copy takes 1.22x on 64 SMs against the hardware's 1.00x: four "
    "launches, 0.4 points of the 64-SM Mamba2 MAPE.",
]


if __name__ == "__main__":
    sys.exit(main())

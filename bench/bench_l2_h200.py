"""The H200's L2: what it moves a clock against the H100's, and an L2 hit's latency under
the whole GPU's L2 load.

The same microbenchmarks on both GPUs (``bash bench/device/load_shapes.sh TAG``, ``bash
bench/device/l2_ports.sh TAG``, whole GPU; ncu's sectors over ``gpc__cycles_elapsed.max``),
the memory system ncu reports for each, and the model's descriptions beside them. Then
``bash bench/device/l2_loaded.sh h200``: a pointer chase on each of N SMs, one block an SM,
while S warps of each block stream L2 hits (16-byte ``ld.global.cg`` of whole lines; mode
rw: a store every fourth pass), the whole GPU's L2 sectors a clock from the blocks' own
counts over the chase's clocks; and ncu's L2 sectors a clock of the paper step's log-softmax
forward on 32 and 64 SMs (bench/RESULTS.md, *The loss kernels' rows on fewer SMs*).

    python bench/bench_l2_h200.py [--no-write]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from results_md import publish  # noqa: E402  (bench/results_md.py)

from simfront.core.ncu import read_ncu_csv  # noqa: E402
from simfront.gpu import load_gpu  # noqa: E402
from simfront.gpu.derived import derived  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "bench" / "data" / "device"
SECTION = "## The H200's L2: what it moves a clock, and a hit's latency under load (bench/bench_l2_h200.py)"
TOPIC = "Microbenchmarks"
#: load_shapes.cu's shapes by template index (bench/device/load_shapes.cu): what one warp
#: instruction reads, lines x sectors
SHAPES = {2: "w16 (4 x 4)", 8: "scat (32 x 1)", 11: "scat16x2 (16 x 2)", 12: "scat8x4 (8 x 4)"}
#: l2_ports.cu's launches that move a kind into lines the L2 holds (every other launch is a
#: first touch): load, store, red
#: (its loads of one lane a line are held by the SMs on both GPUs, not by the L2)
PORTS = {1: ("load, one lane a line", "lts__t_sectors_op_read.sum"),
         3: ("store", "lts__t_sectors_op_write.sum"),
         5: ("red (REDG.ADD.F32)", "lts__t_sectors_op_red.sum")}
ATTRS = ("device__attribute_fb_bus_width", "device__attribute_l2_cache_size",
         "device__attribute_memory_clock_rate")


def per_clock(gpu: str) -> dict[str, float]:
    """Sectors the whole L2 takes a clock (ncu's over ``gpc__cycles_elapsed.max``), per
    kernel, on ``gpu`` (h100, h200), and read requests a clock for ``scat``."""
    shapes = read_ncu_csv(DEVICE / "load_shapes" / f"load_shapes_{gpu}_ncu.csv")
    out = {}
    for i, name in SHAPES.items():
        r = shapes.iloc[i]
        out[f"load {name}"] = r["lts__t_sectors_op_read.sum"] / r["gpc__cycles_elapsed.max"]
    r = shapes.iloc[8]
    out["load scat (32 x 1), requests"] = (r["lts__t_requests_op_read.sum"]
                                           / r["gpc__cycles_elapsed.max"])
    ports = l2_ports(gpu)
    for i, (name, col) in PORTS.items():
        out[name] = ports.iloc[i][col] / ports.iloc[i]["gpc__cycles_elapsed.max"]
    return out


def l2_ports(gpu: str) -> pd.DataFrame:
    """l2_ports.cu's whole-GPU ncu records: the H100's were kept as a plain table, the
    H200's as ncu's raw page."""
    path = DEVICE / "l2_ports" / f"l2_ports_{gpu}_ncu.csv"
    return read_ncu_csv(path) if path.read_text().startswith("==") else pd.read_csv(path)


def memory_facts(gpu: str) -> dict[str, float]:
    """What ncu reports of the GPU's memory system (any of the load_shapes records)."""
    r = read_ncu_csv(DEVICE / "load_shapes" / f"load_shapes_{gpu}_ncu.csv").iloc[0]
    return {a: float(r[a]) for a in ATTRS}


def chase() -> pd.DataFrame:
    """l2_loaded's launches: per (mode, n, s) the median over blocks of each block's median
    hop, and the whole GPU's L2 sectors a clock (each block's loads and stores over its
    chase's clocks, summed)."""
    d = pd.read_csv(DEVICE / "l2_loaded" / "l2_loaded_h200.csv")
    d["sectors"] = (d.streamed_bytes + d.stored_bytes) / 32 / d.chase_clocks
    return d.groupby(["mode", "n", "s"]).agg(hop=("median_hop", "median"),
                                             sectors=("sectors", "sum")).reset_index()


def softmax_rates() -> dict[int, float]:
    """ncu's L2 sectors a clock (reads and writes from the SMs) of the log-softmax forward
    on a green context of n SMs (each file's last launch: the set-up call comes first)."""
    out = {}
    for n in (32, 64):
        r = read_ncu_csv(DEVICE / "l2_loaded" / f"l2_loaded_h200_softmax_sms{n}_ncu.csv").iloc[-1]
        out[n] = ((r["lts__t_sectors_srcunit_tex_op_read.sum"]
                   + r["lts__t_sectors_srcunit_tex_op_write.sum"])
                  / r["gpc__cycles_elapsed.max"])
    return out


def hop_at(c: pd.DataFrame, n: int, sectors: float, mode: str = "rw") -> float:
    """The chase's median hop on n SMs at a whole-GPU load of ``sectors`` a clock,
    interpolated between the launches of that n and mode."""
    k = c[(c["mode"] == mode) & (c["n"] == n)].sort_values("sectors")
    return float(np.interp(sectors, k["sectors"], k["hop"]))


def section() -> str:
    h100, h200 = per_clock("h100"), per_clock("h200")
    f100, f200 = memory_facts("h100"), memory_facts("h200")
    g100, g200 = load_gpu("h100"), load_gpu("h200")
    bw100, bw200 = derived(g100).l2_bandwidth.bytes_per_s, derived(g200).l2_bandwidth.bytes_per_s
    ratios = [h200[k] / h100[k] for k in h100 if k != PORTS[1][0]]
    out = [SECTION, "", __doc__.split("\n\n")[1].replace("\n", " ").replace("``", "`"), "",
           "| kernel | H100, a clock | H200, a clock | H200 / H100 |", "|---|---|---|---|"]
    out += [f"| {k} | {h100[k]:.1f} | {h200[k]:.1f} | {h200[k] / h100[k]:.3f} |" for k in h100]
    out += ["", "| | H100 | H200 | H200 / H100 |", "|---|---|---|---|",
            f"| ncu: memory bus, bits | {f100[ATTRS[0]]:.0f} | {f200[ATTRS[0]]:.0f} | "
            f"{f200[ATTRS[0]] / f100[ATTRS[0]]:.3f} |",
            f"| ncu: L2, MiB | {f100[ATTRS[1]] / 2**20:.0f} | {f200[ATTRS[1]] / 2**20:.0f} | "
            f"{f200[ATTRS[1]] / f100[ATTRS[1]]:.3f} |",
            f"| the descriptions: L2 banks | {g100.l2.banks(g100.dram.channels)} | "
            f"{g200.l2.banks(g200.dram.channels)} | {bw200 / bw100:.3f} |"]
    c = chase()
    sm = softmax_rates()
    out += ["", "An L2 hit under load, the H200 (l2_loaded, mode read): the chase's median hop "
            "in clocks, and the whole GPU's L2 sectors a clock, by SMs (N) and streaming warps "
            "an SM (S).", "",
            "| N | " + " | ".join(f"S = {s}" for s in sorted(c.s.unique())) + " |",
            "|---|" + "---|" * c.s.nunique()]
    rd = c[c["mode"] == "read"]
    for n in sorted(rd.n.unique()):
        k = rd[rd.n == n].set_index("s")
        out.append(f"| {n} | " + " | ".join(
            f"{k.loc[s, 'hop']:.0f} ({k.loc[s, 'sectors']:.0f})" for s in k.index) + " |")
    out += ["", *reading(h100, h200, ratios, bw200 / bw100, c, sm)]
    return "\n".join(out) + "\n"


def reading(h100, h200, ratios, model_ratio, c: pd.DataFrame, sm: dict[int, float]) -> list[str]:
    """What the tables say, in their own numbers."""
    idle = c[c.s == 0].hop.median()
    top = c.groupby("n").sectors.max()
    sat = top[top.index >= 64]
    rw64 = c[(c["mode"] == "rw") & (c.n == 64)]
    at64 = hop_at(c, 64, sm[64])
    at32 = hop_at(c, 32, sm[32])
    full = c[(c["mode"] == "read") & (c.n == 132) & (c.s == 31)].hop.iloc[0]
    near = rw64[rw64.sectors <= 0.8 * sat.min()].sort_values("sectors").iloc[-1]
    busy_sm = c[(c["mode"] == "read") & (c.s == 31) & (c.n <= 32)]
    busy, busy_max = busy_sm.hop.min(), busy_sm.hop.max()
    sm_rate = (busy_sm.sectors * 32 / busy_sm.n).median()
    return [
        "Reading:",
        f"- **The H200's L2 moves {min(ratios):.2f}-{max(ratios):.2f}x the H100's sectors a "
        "clock** on every kernel that fills it: whole-line and scattered loads, stores and "
        "reductions alike (l2_ports' load of one lane a line is held by the SMs on both). The H200 "
        "has the sixth memory stack the H100 SXM leaves off, and the L2 slices that come "
        "with its controllers: ncu reports a wider bus and a 20% larger L2. The description "
        "`h200` takes six stacks, so its L2 has 192 banks where `h100` has 160 "
        f"({model_ratio:.2f}x the L2 bandwidth, and so its read side, store port and "
        "request rate).",
        f"- **An L2 hit waits as long unloaded on any SM count** ({idle:.0f} clocks a hop, "
        "the clock reads included) and hardly longer until the L2 is near full: on 64 SMs "
        f"at {near.sectors:.0f} sectors a clock (read and written) a hop takes "
        f"{near.hop:.0f}. The whole GPU's L2 tops out at {sat.min():.0f}-{sat.max():.0f} "
        "sectors a clock (64-132 SMs, 16-byte loads of whole lines), where the hop grows "
        f"with the requests queued: {full:.0f} clocks on 132 SMs with every warp streaming. "
        f"An SM near its own limit waits longer too: {busy:.0f}-{busy_max:.0f} clocks with "
        f"31 warps streaming on 8-32 SMs ({sm_rate:.0f} bytes a clock each), where the L2 "
        "has room.",
        f"- **The loss kernels' miss is not the L2's queue**: the log-softmax forward moves "
        f"{sm[64]:.0f} sectors a clock through the L2 on 64 SMs ({sm[32]:.0f} on 32; ncu), "
        f"where the chase's hop is {at64:.0f} clocks ({at32:.0f} on 32 SMs at its rate), "
        f"{at64 / idle - 1:.0%} over an idle L2's. So the forward's longer waits on 64 SMs "
        "(*The loss kernels' rows on fewer SMs*) do not come from its L2 hits queueing.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    publish(SECTION, section(), write=not args.no_write, topic=TOPIC)


if __name__ == "__main__":
    main()

"""What the SSD kernels' copies read: ncu per SASS instruction against the traced lanes.

`bash bench/device/ssd_source.sh` ran ncu's SourceCounters over one launch of each of five
SSD kernels of the Mamba2 paper step (a fit set's step) on the H100
(`bench/data/device/ssd_source/source.csv.xz`). For each kernel: its `LDGSTS` copies as ncu
counts them (executed, L2 sectors asked for) and as the box-sampled trace
`traces/mamba2_lm-paper-box` has them (every traced lane's sectors, scaled to the grid by
the census), with and without the copies the model reads as prefetches past the loop's
end (`simfront.sim.model.prefetch`).

    python bench/bench_ssd_source.py [--no-write]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.core.ncu import read_source_pages
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.decode import K_ASYNC_COPY
from simfront.sim.model.simulate import _kinds, _zero_fill_flags
from simfront.traces.reader import TraceSet

SOURCE = REPO_ROOT / "bench" / "data" / "device" / "ssd_source" / "source.csv.xz"
TRACES = REPO_ROOT / "traces" / "mamba2_lm-paper-box"
SECTION = "## What the SSD kernels' copies read (bench/bench_ssd_source.py)"


def ncu_sections(path=SOURCE) -> dict[str, pd.DataFrame]:
    """ncu's source page per kernel (the first launch of each name)."""
    return read_source_pages(path)


def ncu_copies(df: pd.DataFrame) -> tuple[float, float]:
    """ncu: LDGSTS instructions executed and the L2 sectors they asked for."""
    src = df["Source"].astype(str)
    m = df[src.str.contains("LDGSTS")]
    return (float(pd.to_numeric(m["Instructions Executed"]).sum()),
            float(pd.to_numeric(m["L2 Theoretical Sectors Global"]).sum()))


def trace_copies(kernel, gpu) -> tuple[float, float, float]:
    """The trace: LDGSTS rows, their sectors (every lane), and their sectors without the
    prefetches that read nothing; scaled to the grid by the census."""
    flags = _zero_fill_flags(kernel, gpu, kernel.header.warps_per_block)
    rows = sectors = kept = 0.0
    j = 0
    n_instr = 0
    for chunk in kernel.iter_chunks():
        n_instr += len(chunk)
        idx = np.nonzero(_kinds(chunk, gpu) == K_ASYNC_COPY)[0]
        for i in idx:
            a = chunk.addrs[chunk.addr_off[i]:chunk.addr_off[i + 1]].astype(np.int64)
            w = int(chunk.mem_width[i])
            n = len(np.unique(np.concatenate([a >> 5, (a + w - 1) >> 5]))) if a.size else 0
            rows += 1
            sectors += n
            if not (j < flags.shape[0] and flags[j]):
                kept += n
            j += 1
    h = kernel.header
    scale = (h.census_warp_instructions / n_instr) if h.census_warp_instructions else 1.0
    return rows * scale, sectors * scale, kept * scale


def table() -> pd.DataFrame:
    gpu = load_gpu("h100")
    ts = TraceSet(TRACES)
    firsts = {}
    for ref in ts.kernel_refs:
        k = ts.kernel(ref.stem)
        firsts.setdefault(k.header.name, k)
    rows = []
    for name, df in ncu_sections().items():
        if name not in firsts:
            continue
        ex, l2 = ncu_copies(df)
        t_rows, t_all, t_kept = trace_copies(firsts[name], gpu)
        rows.append({"kernel": name, "ncu_copies": ex, "ncu_sectors": l2,
                     "trace_copies": t_rows, "all_lanes": t_all / l2,
                     "without_prefetches": t_kept / l2})
    return pd.DataFrame(rows)


def render(t: pd.DataFrame) -> str:
    out = [SECTION, "",
           "2026-11-26, `bash bench/device/ssd_source.sh` on the H100 (one device call, 125 s: "
           "ncu `--section SourceCounters --page source --print-source sass`, one launch of "
           "each kernel of the Mamba2 paper step's window; "
           "`bench/data/device/ssd_source/`), against `traces/mamba2_lm-paper-box` (the same "
           "step, box-sampled). Copies: `LDGSTS` instructions; sectors: the L2 sectors they "
           "ask for (ncu's *L2 Theoretical Sectors Global*); the trace's are every traced "
           "lane's 32-byte sectors, scaled to the grid by the census.", "",
           "| kernel | copies: ncu | trace | copy sectors over ncu's: every traced lane | "
           "without the prefetches past the loop's end |", "|---|---|---|---|---|"]
    for r in t.itertuples():
        out.append(f"| `{r.kernel}` | {r.ncu_copies:,.0f} | {r.trace_copies:,.0f} | "
                   f"{r.all_lanes:.2f} | {r.without_prefetches:.2f} |")
    out += ["", "Reading: a copy the loop issues for an iteration past its end executes (ncu "
            "counts it) but asks for no sector; the trace lists its lanes' addresses all the "
            "same. Leaving out the copies no later wait of their warp reaches brings the "
            "trace's copy sectors to ncu's within what the box sample's short causal blocks "
            "leave (the census scales their memory by their instructions)."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    text = render(table())
    print(text)
    if not args.no_write:
        update_section(SECTION, text, topic="The held-out corpus")


if __name__ == "__main__":
    main()

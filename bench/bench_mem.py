"""Memory microbenchmarks (issue 12): the two memory facts model-1.7 takes from the H100,
measured where kernels of the paper steps meet them, and the model constants fitted on them.

``bench/device/mem_rows.cu`` (run by ``bench/device/mem_rows.sh``; CSVs shipped in
``bench/data/device/mem_rows/``):

- *rows*: every block re-reads a private row three times; ncu's DRAM bytes say how many of
  the re-reads missed, against the resident rows' total size W, on the whole GPU and in
  green contexts of 96/64/32 SMs, and on the H200. The share of the L2 that such reuse
  finds is ``ModelParams.l2_private_capacity``: fitted here on the H100's rows at every SM
  count (least squares of the miss share the model's survival rule, ``cache.survives``,
  gives at W against the measured one); the H200's rows are held out.
- *chase*: warps follow random chains of dependent full-line loads through 2 GB; the time per
  step (ncu's duration / steps) is the DRAM load-to-use under the load those warps make.
  ``ModelParams.dram_queue_latency`` (``simulate.dram_load_latency``) is fitted here on the
  steps whose load lies in the range the model uses (0.3 to ``dram_queue_max_load``),
  above the model's unloaded DRAM latency.

``bench/device/l2_ports.cu`` (``bench/device/l2_ports.sh``; ``bench/data/device/l2_ports/``):
what the H100's L2 takes in per clock, loads that hit it, stores, reductions, and reductions
that many blocks aim at the same lines, against the model's one L2 bandwidth. Measured, not
yet a model constant.

Run: ``python bench/bench_mem.py [--fit]``; updates its section of bench/RESULTS.md
(``--fit`` also prints the fitted constants beside the ones in ``ModelParams``).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

import numpy as np
import pandas as pd

from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.cache import survival_probability
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.sim.model.simulate import bandwidths, l2_side_rates, memory_latencies

SECTION = "## Memory microbenchmarks: the L2 that private rows find, and loaded DRAM latency (bench/bench_mem.py)"
DATA = REPO_ROOT / "bench" / "data" / "device" / "mem_rows"
ROW_COLS = ["kind", "sms", "per_sm", "resident", "row_bytes", "w_mb", "grid", "ms", "gbps"]
CHASE_COLS = ["kind", "sms", "warps_per_sm", "ilp", "steps", "ms", "ns_per_step", "gbps",
              "writes"]
PASSES = 3


def read_ncu(path: Path) -> pd.DataFrame:
    """ncu's ``--csv --page raw`` output as saved by mem_rows.sh: the program's own lines and
    ncu's notes mixed in (lines that are not quoted CSV), a units row, numbers with
    thousands separators; or the same already cleaned."""
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("ID,"):
        return pd.read_csv(path)
    body = [ln for ln in lines if ln.startswith('"')]
    t = pd.read_csv(io.StringIO("\n".join(body)), skiprows=[1], dtype=str)
    for c in t.columns:
        if "__" in c:
            t[c] = pd.to_numeric(t[c].str.replace(",", ""), errors="coerce")
    return t


def read_run(stem: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's rows and chase tables, each launch beside its ncu record (same order)."""
    raw = pd.read_csv(DATA / f"{stem}.csv", header=None, names=range(9))
    ncu = read_ncu(DATA / f"{stem}_ncu.csv") if (DATA / f"{stem}_ncu.csv").is_file() else None
    out = []
    for kind, cols in (("rows", ROW_COLS), ("chase", CHASE_COLS)):
        t = raw[raw[0].astype(str).str.startswith(kind)].iloc[:, :len(cols)]
        t = t.reset_index(drop=True)
        t.columns = cols
        for c in cols[1:]:
            t[c] = pd.to_numeric(t[c])
        if "writes" in t:
            t["writes"] = t.writes.fillna(0).astype(int)
        if ncu is not None:
            n = ncu[ncu["Kernel Name"].str.startswith(kind)].reset_index(drop=True)
            if len(n) != len(t):
                raise ValueError(f"{stem}: {len(t)} {kind} launches, {len(n)} ncu records")
            t["dram_read"] = n["dram__bytes_read.sum"].to_numpy(float)
            t["dram_write"] = n["dram__bytes_write.sum"].to_numpy(float)
            t["ncu_ns"] = n["gpu__time_duration.sum"].to_numpy(float)
        out.append(t)
    rows, chase = out
    if "dram_read" in rows:
        # reads of each row: 1 when every re-read hit the L2, PASSES when none did
        rows["reads"] = rows.dram_read / (rows.grid * rows.row_bytes)
        rows["miss"] = (rows.reads - 1) / (PASSES - 1)
    return rows, chase


def reads_only(name: str) -> bool:
    """A run of the rows that only read (the fit set of ``l2_private_capacity``), not of the
    rows whose last pass writes (``_rowsw``) nor of the chase alone (``_writes``)."""
    return "_rowsw" not in name and not name.endswith("_writes")


def runs() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Every shipped run, by file stem (``mem_rows_h100``, ``mem_rows_h100_sms64``, ...)."""
    return {p.stem: read_run(p.stem) for p in sorted(DATA.glob("mem_rows_h*.csv"))
            if not p.stem.endswith(("_ncu", "_gpu"))}


def model_miss(w_bytes: np.ndarray, l2_bytes: float, share: float, gpu) -> np.ndarray:
    """The share of re-reads the model's survival rule misses when W bytes of private rows
    pass between two reads of a line (``cache._private_reuse``: Poisson set occupancy, the
    L2 seen at ``share`` of its size)."""
    l2 = gpu.l2
    ways = l2.assoc
    sets = l2_bytes / (l2.line.bytes * ways)
    between = np.asarray(w_bytes, float) / l2.line.bytes / share
    return np.array([1.0 - survival_probability(b, sets, ways) for b in between])


def knee(rows: pd.DataFrame) -> float:
    """W, in MB, at which half the re-reads miss (2 blocks per SM where a run has both)."""
    g = rows[rows.per_sm == rows.per_sm.max()].sort_values("w_mb")
    return float(np.interp(0.5, g.miss.to_numpy(float), g.w_mb.to_numpy(float)))


def model_knee(l2_bytes: float, share: float, gpu) -> float:
    """W, in MB, at which the model misses half the re-reads."""
    w = np.arange(8, 128, 0.25)
    return float(np.interp(0.5, model_miss(w * 2**20, l2_bytes, share, gpu), w))


def fit_capacity(rows: pd.DataFrame, l2_bytes: float, gpu) -> float:
    grid = np.arange(0.50, 1.0001, 0.005)
    w = rows.w_mb.to_numpy(float) * 2**20
    err = [np.sum((model_miss(w, l2_bytes, s, gpu) - rows.miss.to_numpy(float)) ** 2)
           for s in grid]
    return float(grid[int(np.argmin(err))])


def chase_load(chase: pd.DataFrame, gpu) -> pd.DataFrame:
    """Each chase launch's DRAM load (share of the model's sustainable bandwidth) and
    ncu-timed latency per step."""
    bw = gpu.dram.bandwidth.bytes_per_s * DEFAULT_PARAMS.dram.efficiency
    c = chase.copy()
    c["ns"] = c.ncu_ns / c.steps
    c["load"] = c.dram_read / (c.ncu_ns * 1e-9) / bw
    c["wload"] = c.dram_write / (c.ncu_ns * 1e-9) / bw
    # The wait the load adds: the step's time over the lightest launch's with as many
    # writes per step (4 warps per SM, one chain), which holds what a store costs the
    # warp's next load whatever the load (~150 ns a store, not modelled: see RESULTS).
    light = c[(c.warps_per_sm == c.warps_per_sm.min()) & (c.ilp == 1)]
    c["queue_ns"] = c.ns - c.writes.map(dict(zip(light.writes, light.ns)))
    return c


def fit_store_load(c: pd.DataFrame) -> float:
    """``store_load_ns``: least squares, through the origin, of what the lightest chase
    launches (4 warps per SM, one chain) wait per step longer with 1 or 2 lines written
    per step than without, per line written."""
    light = c[(c.warps_per_sm == c.warps_per_sm.min()) & (c.ilp == 1)].sort_values("writes")
    extra = light.ns.to_numpy(float) - float(light.ns.iloc[0])
    n = light.writes.to_numpy(float)
    return float(np.dot(n, extra) / np.dot(n, n))


def fit_queue(c: pd.DataFrame, max_load: float) -> float:
    """``dram_queue_latency``: least squares of the wait over load / (1 - load), on the
    chase without writes at loads from 0.3 to just above the cap."""
    m = c[(c.writes == 0) & (c.load >= 0.3) & (c.load <= max_load + 0.1)]
    x = (m.load / (1 - m.load)).to_numpy(float)
    return float(np.dot(x, m.queue_ns.to_numpy(float)) / np.dot(x, x))


def queue_model(c: pd.DataFrame, q: float, weight: float, max_load: float) -> np.ndarray:
    r = np.minimum(c.load + weight * c.wload, max_load)
    return q * r / (1 - r)


def fit_write_weight(c: pd.DataFrame, q: float, max_load: float) -> float:
    """``dram_queue_write_weight``: the weight of a byte written in the load that best
    gives the chase-with-writes' wait (least squares, on launches whose reads and writes
    load the DRAM 0.2 to 0.75: above, the wait is the bandwidth bound's, capped)."""
    m = c[(c.writes > 0) & (c.load + c.wload >= 0.2) & (c.load + c.wload <= 0.75)]
    grid = np.arange(1.0, 4.01, 0.1)
    err = [float(np.sum((queue_model(m, q, w, max_load) - m.queue_ns) ** 2)) for w in grid]
    return float(grid[int(np.argmin(err))])


PORTS = REPO_ROOT / "bench" / "data" / "device" / "l2_ports"


#: The rowsw kernel's bytes moved per byte read: three passes read the row, the last also
#: writes it (``cache.global_bytes``' ratio, which the model counts in a reuse distance).
ROWSW_TRAFFIC = 4 / 3


def rows_with_writes_table(all_runs, gpu, share: float) -> list[str]:
    """The rows whose last pass also writes the row out (``rowsw``), against the rows that
    only read: where half the re-reads miss, and where the model's do when it counts the
    writes in the reuse distance (``ModelParams.private_reuse_counts_writes``)."""
    pairs = (("mem_rows_h100", "mem_rows_h100_rowsw0", "all SMs"),
             ("mem_rows_h100_sms64", "mem_rows_h100_rowsw64", "64 SMs"))
    if not all(a in all_runs and b in all_runs for a, b, _ in pairs):
        return []

    ws = [16, 20, 24, 28, 32, 36, 40, 44]
    lines = ["", "### Private rows whose last pass writes them out (a softmax's)", "",
             "`ONLY=\"rw0 rw64\" bash bench/device/mem_rows.sh h100` (one H100 call, 25 s): the "
             "rows as above, 2 blocks per SM, the third pass also writing each row to an "
             "output as large as the input. Miss share of the re-reads against W (the rows "
             "read):", "",
             "| run | " + " | ".join(f"{w} MB" for w in ws) + " | half miss at |",
             "|---|" + "---|" * (len(ws) + 1)]
    for a, b, label in pairs:
        for key, what in ((a, "reads only"), (b, "last pass writes")):
            r = all_runs[key][0]
            g = r[r.per_sm == 2]
            vals = {int(round(w)): m for w, m in zip(g.w_mb, g.miss)}
            lines.append(f"| {label}, {what} | " + " | ".join(
                f"{vals[w]:.2f}" if w in vals else "" for w in ws) + f" | {knee(r):.1f} MB |")
    l2b = gpu.l2.size.bytes
    for label, scale in (("model, reads only", 1.0), ("model, last pass writes", ROWSW_TRAFFIC)):
        m = model_miss(np.array(ws, float) * 2**20, l2b, share / scale, gpu)
        lines.append(f"| {label} | " + " | ".join(f"{v:.2f}" for v in m)
                     + f" | {model_knee(l2b, share / scale, gpu):.1f} MB |")
    k0, k1 = knee(all_runs[pairs[0][0]][0]), knee(all_runs[pairs[0][1]][0])
    k64 = knee(all_runs[pairs[1][1]][0])
    km = model_knee(l2b, share / ROWSW_TRAFFIC, gpu)
    lines += ["",
              f"- The writes move the knee from {k0:.1f} to {k1:.1f} MB ({k1 / k0:.2f}): what "
              "counting the other rows' output in the reuse distance gives (a third of the "
              "rows are in their writing pass at any time, so W x 4/3 passes through the L2 "
              "between two reads of a line). Since model-1.8 the model counts it so "
              "(`private_reuse_counts_writes`: a warp's wait, in the sectors it asked for, "
              "times the resident warps and the kernel's bytes moved per byte read): its knee "
              f"for these rows is {km:.1f} MB against {k1:.1f} (all SMs) and {k64:.1f} (64 SMs) "
              "measured, held out of every fit. Before, a row read in a pass without writes "
              "did not see the others' output, and the LM-head softmax's rows fitted the L2 "
              "on 96 SMs, where the H100 keeps re-reading them (docs/model.md, *Inter-kernel "
              "L2*)."]
    return lines


TRACES = DATA / "traces"
#: (trace set, the run whose ncu records time its launches, SMs) of the traced rows.
TRACED = (("rows_sms0", "mem_rows_h100", 0), ("rows_sms64", "mem_rows_h100_sms64", 64),
          ("rows_sms32", "mem_rows_h100_sms32", 32), ("rowsw_sms0", "mem_rows_h100_rowsw0", 0),
          ("rowsw_sms64", "mem_rows_h100_rowsw64", 64))
#: the same traces timed against the H200's ncu records of the same launches (the kernel and
#: its launches are the GPU's own: only the timing differs)
TRACED_H200 = (("rows_sms0", "mem_rows_h200", 0), ("rows_sms64", "mem_rows_h200_sms64", 64),
               ("rowsw_sms0", "mem_rows_h200_rowsw0", 0),
               ("rowsw_sms64", "mem_rows_h200_rowsw64", 64))


def model_on_traces(all_runs, gpu, params=DEFAULT_PARAMS, keep=lambda w_mb: True,
                    kinds=("rows", "rowsw"), traced=TRACED) -> pd.DataFrame:
    """The model on the traced rows launches (``traces/``, 8 blocks each; ``kinds``: rows,
    rows whose last pass writes) against the ncu records of the same launches: time and
    reads of each row, one line per launch."""
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    out = []
    for name, run, sms in traced:
        if name.split("_")[0] not in kinds or not (TRACES / name).is_dir() \
                or run not in all_runs:
            continue
        hw = all_runs[run][0]
        hw = hw[hw.per_sm == 2].reset_index(drop=True)
        g = with_variants(gpu, sm_count=sms) if sms else gpu
        for i, k in enumerate(TraceSet(TRACES / name).kernels()):
            if not keep(float(hw.w_mb[i])):
                continue
            if tuple(k.header.grid)[0] != hw.grid[i]:
                raise ValueError(f"{TRACES / name}: launch {i} has grid {k.header.grid}, "
                                 f"{run} ran {hw.grid[i]}")
            rec = simulate_kernel(k, g, params=params, cache=False)
            out.append({"kind": name.split("_")[0], "sms": sms or gpu.sm_count,
                        "w_mb": float(hw.w_mb[i]), "hw_us": hw.ncu_ns[i] / 1e3,
                        "model_us": rec["cycles"] / gpu.clocks.core.hz * 1e6,
                        "hw_reads": float(hw.reads[i]),
                        "model_reads": rec["dram_read_bytes"] / (hw.grid[i] * hw.row_bytes[i]),
                        "bound": rec["bound"]})
    t = pd.DataFrame(out)
    if len(t):
        t["ratio"] = t.model_us / t.hw_us
    return t


def traces_table(all_runs, gpu, per_store: float) -> list[str]:
    """The model on the rows kernel's traces, and on those whose last pass writes with the
    two store limits (``per_store``: ``store_load_ns`` as the chase fits it)."""
    t = model_on_traces(all_runs, gpu)
    if not len(t):
        return []
    path = float(port_rates("l2_ports_h100_sms32").set_index("kind").per_sm["store"])
    opt = model_on_traces(all_runs, gpu, DEFAULT_PARAMS.with_(**{"stores.load_ns": per_store,
                                                               "stores.sectors_per_clk": path}),
                          kinds=("rowsw",)).assign(kind="rowsw_opt")
    t = pd.concat([t, opt], ignore_index=True)
    lines = ["", "### The model on the rows kernel's own traces", "",
             "`bash bench/device/trace_rows.sh` and `KIND=rowsw bash bench/device/trace_rows.sh` "
             "(two H100 calls; `bench/data/device/mem_rows/traces/`, 8 blocks of each of the "
             "first 8 launches at 2 blocks per SM, in the shapes of the whole GPU and of green "
             "contexts of 64 and 32 SMs): the model's time over ncu's for the same launch, and "
             "the reads of each row (ncu / model).", "",
             "| rows | SMs | " + " | ".join(f"{w:.0f} MB" for w in sorted(set(t.w_mb.round())))
             + " |", "|---|---|" + "---|" * t.w_mb.round().nunique()]
    for (kind, sms), g in t.groupby(["kind", "sms"], sort=False):
        what = {"rows": "reads only", "rowsw": "last pass writes",
                "rowsw_opt": f"last pass writes, `store_load_ns` {per_store:.0f}, "
                             f"`store_sectors_per_clk` {path:.2f}"}[kind]
        lines.append(f"| {what} | {sms} | " + " | ".join(
            f"{r.ratio:.2f} ({r.hw_reads:.2f} / {r.model_reads:.2f})" for r in g.itertuples())
            + " |")
    ro = t[(t.kind == "rows") & (t.w_mb < 30)]
    rw = t[(t.kind == "rowsw") & (t.hw_reads < 1.05)]
    ro_opt = t[(t.kind == "rowsw_opt") & (t.hw_reads < 1.05)]
    lines += ["",
              f"- Rows that only read, while their re-reads hit (W < 30 MB): the model takes "
              f"{ro.ratio.min():.2f}-{ro.ratio.max():.2f} of ncu's time on "
              + ", ".join(str(s) for s in sorted(ro.sms.unique(), reverse=True))
              + " SMs alike: its SM side (issue, L2 hit latency) does not drift with the SM "
              "count. Past the knee it reads more than the H100 (its survival curve is "
              "smoother than the H100's).",
              f"- Rows whose last pass writes, while their re-reads hit: {rw.ratio.min():.2f}-"
              f"{rw.ratio.max():.2f}, worst on 64 SMs. A store costs a warp's next load "
              "about 150-185 ns on the H100 (the chase above); the model's issue loop lets "
              "the load go past it, and it takes stores in at the L1's 4 sectors a clock "
              "where an SM's store path takes about 1.07 (*What the L2 takes in per clock*). "
              "Both measured limits added (`store_load_ns`, `store_sectors_per_clk`: the "
              f"last rows) take these launches to {ro_opt.ratio.min():.2f}-"
              f"{ro_opt.ratio.max():.2f}: on 64 SMs at 8 MB the rows take 138 us with their "
              "output written against 99 without, about 30 bytes of output per SM clock for "
              "the 39 us the writes add, this path's rate, which the model now charges "
              "partly (its loads wait behind the stores, the issue loop keeps issuing). "
              "Both options stay off until the workload sets' what-ifs are rerun with them "
              "(bench/RESULTS.md, *the others' output in a private reuse distance*)."]
    h200 = model_on_traces(all_runs, load_gpu("h200"), keep=lambda w_mb: w_mb < 25,
                           traced=TRACED_H200)
    if len(h200):
        by = {(k, n): g.ratio for (k, n), g in h200.groupby(["kind", "sms"])}
        lines.append(
            "- The same traces against the H200's ncu records of the same launches "
            "(`ONLY=\"rw0 rw64\" bash bench/device/mem_rows.sh h200`, 2026-11-27, and the "
            "whole-GPU and 64-SM runs above), re-reads hitting (W < 25 MB): rows that only "
            "read " + ", ".join(f"{by[('rows', n)].min():.2f}-{by[('rows', n)].max():.2f} on "
                                f"{n} SMs" for n in (132, 64) if ("rows", n) in by)
            + "; rows whose last pass writes " + ", ".join(
                f"{by[('rowsw', n)].min():.2f}-{by[('rowsw', n)].max():.2f} on {n} SMs"
                for n in (132, 64) if ("rowsw", n) in by)
            + ". The store's cost the model leaves out is the H200's too.")
    return lines


def l2_ports_table(gpu) -> list[str]:
    """The L2 port microbenchmark: sectors per clock by kind, and how busy ncu found the
    L2's tags and its crossbar input port."""
    if not (PORTS / "l2_ports_h100_ncu.csv").is_file():
        return []
    rates = port_rates("l2_ports_h100")
    memory_bw = bandwidths(gpu, DEFAULT_PARAMS)["l2"] / gpu.l2.sector.bytes
    lines = ["", "### What the L2 takes in per clock (bench/device/l2_ports.cu)", "",
             "`bash bench/device/l2_ports.sh h100 64 32`, its whole-GPU part (2026-11-24; "
             "`bench/data/device/l2_ports/`): 8 blocks of 256 threads per SM move full lines, "
             "256 per warp, over a target that stays in the L2 (a first-touch launch before "
             "each, profiled apart). *fan-in*: the lines every block adds into. ncu: sectors "
             "by operation over `gpc__cycles_elapsed.max`; *tags* "
             "`lts__t_sectors.avg.pct_of_peak_sustained_elapsed`, *input port* "
             "`lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed`.", "",
             "| kind | target lines | sectors per clock | L2 tags busy | input port busy | "
             "sectors per clock at a full port |", "|---|---|---|---|---|---|"]
    for r in rates.itertuples():
        full = f"{r.rate / r.port * 100:.0f}" if r.kind != "load" else ""
        lines.append(f"| {r.kind} | {int(r.target_lines)} | {r.rate:.1f} | {r.tags:.0f}% | "
                     f"{r.port:.0f}% | {full} |")
    lines += ["",
              f"- The model's one L2 bandwidth is {memory_bw:.0f} sectors per clock for every "
              "kind (banks x port width). The H100's input port fills at about 100 sectors per "
              "clock of stores and 82 of reductions; reductions into the same lines slow "
              "once fewer than ~8,000 lines take them all (4,096: 0.91 of the rate into "
              "distinct lines, 1,024: 0.71, 32: 0.14). Mamba1's selective-scan backward "
              "(50 M reduction sectors into 8,192 lines of dB and dC, and 31 M of writes, in "
              "1.87 M cycles) would keep such a port about half busy; ncu found it 78% busy "
              "(*What limits the kernels the model left furthest off*), so the port alone "
              "does not explain the kernel's time. Not a model constant yet: the model's "
              "time for that kernel (1.43 M cycles) is already above what the port bounds."]
    return lines + ports_by_sms_table(gpu)


def port_rates(stem: str) -> pd.DataFrame:
    """One l2_ports run: per case, the SMs it ran on and its L2 sectors per clock (ncu's
    timed launches, every other record: the first touches are their own launches)."""
    runs = pd.read_csv(PORTS / f"{stem}.csv")
    ncu = pd.read_csv(PORTS / f"{stem}_ncu.csv").iloc[1::2].reset_index(drop=True)
    if len(ncu) != len(runs):
        raise ValueError(f"{PORTS / stem}: {len(runs)} cases, {len(ncu)} timed ncu records")
    sec = (ncu["lts__t_sectors_op_read.sum"] + ncu["lts__t_sectors_op_write.sum"]
           + ncu["lts__t_sectors_op_red.sum"])
    out = runs[["kind", "target_lines"]].copy()
    out["sms"] = runs.blocks // 8
    cycles = ncu["gpc__cycles_elapsed.max"].to_numpy(float)
    out["rate"] = sec.to_numpy(float) / cycles
    out["per_sm"] = out.rate / out.sms
    # warp instructions (one line each) per SM clock: a request rate, against the sectors
    out["requests"] = runs.lines_moved.to_numpy(float) / cycles / out.sms
    out["port"] = ncu["lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed"].to_numpy(float)
    out["tags"] = ncu["lts__t_sectors.avg.pct_of_peak_sustained_elapsed"].to_numpy(float)
    return out


def ports_by_sms_table(gpu) -> list[str]:
    """Loads, stores and reductions into L2-resident lines on 132, 64 and 32 SMs: which
    rates are the L2's and which the SMs'."""
    stems = ["l2_ports_h100", "l2_ports_h100_sms64", "l2_ports_h100_sms32"]
    memory_bw = bandwidths(gpu, DEFAULT_PARAMS)["l2"] / gpu.l2.sector.bytes
    if not all((PORTS / f"{s}_ncu.csv").is_file() for s in stems):
        return []
    t = pd.concat([port_rates(s) for s in stems])
    t = t[t.kind.isin(["load", "store", "store2", "store1", "red"])]
    lines = ["", "`bash bench/device/l2_ports.sh h100 64 32` (one H100 call, 79 s): the same "
             "kernels in green contexts of 64 and 32 SMs (8 blocks per SM they hold; ncu's "
             "times, the host-clocked ones in a green context are not the kernel's; "
             "*storeN*: the same stores from N x 8 lanes, N sectors a line). L2 sectors per "
             "clock, whole GPU and per SM, the warp instructions per SM clock, and the input "
             "port's busy share:", "",
             "| kind | 132 SMs | 64 SMs | 32 SMs |", "|---|---|---|---|"]
    for kind, g in t.groupby("kind", sort=False):
        g = g.sort_values("sms", ascending=False)
        lines.append(f"| {kind} | " + " | ".join(
            f"{r.rate:.1f} ({r.per_sm:.2f} per SM, {r.requests:.3f} requests, port "
            f"{r.port:.0f}%)" for r in g.itertuples())
            + " |")
    st = t[t.kind == "store"].set_index("sms")
    st1 = t[t.kind.isin(["store1", "store2"])]
    rd = t[t.kind == "red"].set_index("sms")
    lines += ["", f"- Stores: {st.per_sm[132]:.2f} sectors per SM clock on 132 SMs, "
              f"{st.per_sm[64]:.2f} on 64 and {st.per_sm[32]:.2f} on 32. Two limits: on the "
              f"whole GPU the L2's input port ({st.port[132]:.0f}% busy), on fewer SMs each "
              f"SM's store path, about {st.per_sm[32]:.2f} sectors ({32 * st.per_sm[32]:.0f} "
              f"bytes) a clock, with the port {st.port[32]:.0f}% busy on 32 SMs. Reductions: "
              f"{rd.per_sm[32]:.2f} a clock per SM there. The model takes stores in at the L1's 4 sectors a clock and the L2's "
              f"{memory_bw:.0f}: neither limit. "
              "The rows whose last pass writes cost the H100 about 30 bytes of output per SM "
              "clock on 64 SMs (*The model on the rows kernel's own traces*), this path's rate.",
              f"- Neither a sector rate nor a request rate: stores of 1 or 2 sectors a line "
              f"go at {st1.requests.mean():.3f} requests per SM clock on every SM count, "
              f"against {st.requests[32]:.3f} for whole lines on 32 and 64 SMs, so a store "
              "carrying fewer sectors costs the SM more time, not less. Measured apart in "
              "twelve shapes since (*The shapes of a store*, below), where a loop of stores "
              "alone goes faster than this kernel's: the model's store path since model-1.9."]
    return lines


STORES = REPO_ROOT / "bench" / "data" / "device" / "store_shapes"
#: The runs of bench/device/store_shapes.sh: (stem, SMs).
STORE_RUNS = (("store_shapes_h100", 132), ("store_shapes_h100_sms64", 64),
              ("store_shapes_h100_sms32", 32))
STORE_TRACES = STORES / "traces"


def shape_run(folder: Path, stem: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A shapes microbenchmark's run: its own rows (``STEM.csv``, the shape columns kept) and
    ncu's records of the same launches (``STEM_ncu.csv``), one per shape, in order."""
    runs = pd.read_csv(folder / f"{stem}.csv")
    ncu = read_ncu_csv(folder / f"{stem}_ncu.csv")
    if len(ncu) != len(runs):
        raise ValueError(f"{folder / stem}: {len(runs)} shapes, {len(ncu)} ncu records")
    return runs[["shape", "lines", "sectors_per_line", "lanes"]].copy(), ncu


def store_shape_rates(stem: str, min_sectors: int) -> pd.DataFrame:
    """One store_shapes run: per shape, its sector slots (``cache.store_slots``), clocks per
    store instruction per SM, and the L2 input port's busy share (ncu)."""
    out, ncu = shape_run(STORES, stem)
    out["sms"] = ncu["launch__sm_count"].to_numpy(int)
    out["slots"] = out.lines * np.maximum(out.sectors_per_line, min_sectors)
    instr = ncu["smsp__inst_executed_op_global_st.sum"].to_numpy(float)
    out["clk"] = out.sms * ncu["gpc__cycles_elapsed.max"].to_numpy(float) / instr
    # a percentage, as the tables print it (read_ncu_csv gives a fraction)
    out["port"] = 100 * ncu["lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed"].to_numpy(float)
    out["l2_sectors"] = ncu["lts__t_sectors_op_write.sum"].to_numpy(float) / instr
    return out


def fit_store_path(few: pd.DataFrame, whole: pd.DataFrame, gpu) -> dict[str, float]:
    """The store path's constants from the shapes: on few SMs (the port has room) the slot
    rate (least squares through the origin on the shapes of 8 slots or more) and the
    floor an instruction takes (the mean of the shapes of 4 slots or fewer); on the whole
    GPU the port, from the shapes that keep it 85% busy or more, in slots a clock at a
    full port, as a share of the model's L2 bandwidth."""
    big = few[few.slots >= 8]
    rate = float((big.slots ** 2).sum() / (big.slots * big.clk).sum())
    floor = float(few[few.slots <= 4].clk.mean())
    full = whole[whole.port >= 85]
    port = float((full.slots * full.sms / full.clk / (full.port / 100)).mean())
    l2_sectors = bandwidths(gpu, DEFAULT_PARAMS)["l2"] / gpu.l2.sector.bytes
    return {"store_sectors_per_clk": rate, "store_instr_clk": floor, "port_slots": port,
            "l2_write_share": port / l2_sectors}


def _repeat_spread(rates_of, stems) -> float:
    """The largest relative difference in clocks per instruction between each run
    (``rates_of(stem)``) and its repeat (``h100`` -> ``h100_repeat`` in the stem)."""
    out = 0.0
    for stem in stems:
        a, b = rates_of(stem), rates_of(stem.replace("h100", "h100_repeat"))
        if list(a["shape"]) != list(b["shape"]):
            raise ValueError(f"{stem} and its repeat hold other shapes")
        out = max(out, float(np.abs(b.clk / a.clk - 1).max()))
    return out


def repeat_spread() -> float:
    """The first store_shapes run against its repeat, every shape on 132 and 32 SMs."""
    return _repeat_spread(lambda stem: store_shape_rates(stem, DEFAULT_PARAMS.stores.min_sectors),
                          ("store_shapes_h100", "store_shapes_h100_sms32"))


def store_path_clk(slots: np.ndarray, sms: np.ndarray, params, gpu) -> np.ndarray:
    """The model's clocks per store instruction where every SM stores all the time: an SM's
    store path (issue.run_sm: its slots at the path's rate, at least the floor) or the
    whole GPU's slots through the L2's input port (simulate.memory_bounds), the longer."""
    port = l2_side_rates(gpu, params)[0] / sms
    return np.maximum(np.maximum(params.stores.instr_clk, slots / params.stores.sectors_per_clk),
                      slots / port)


def store_shapes_table(gpu) -> list[str]:
    """Stores of 12 shapes on 132, 64 and 32 SMs: the H100's clocks per instruction per SM
    against the model's store path."""
    if not all((STORES / f"{s}_ncu.csv").is_file() for s, _ in STORE_RUNS):
        return []
    params = DEFAULT_PARAMS
    t = {sms: store_shape_rates(stem, params.stores.min_sectors) for stem, sms in STORE_RUNS}
    fit = fit_store_path(t[32], t[132], gpu)
    lines = ["", "### The shapes of a store (bench/device/store_shapes.cu)", "",
             "`bash bench/device/store_shapes.sh h100 64 32` (2026-11-24, one H100 call, 19 s; "
             "`bench/data/device/store_shapes/`): 8 blocks of 256 threads per SM store into "
             "a 16 MB target that stays in the L2, one store instruction per iteration (its "
             "SASS: one `STG` a line of the loop), on the whole GPU and in green contexts of "
             "64 and 32 SMs. *lines x sectors*: what one warp instruction writes; *slots*: "
             f"per line its sectors, at least {params.stores.min_sectors} "
             "(`store_min_sectors`). Cells: ncu's clocks per store instruction per SM "
             "(`gpc__cycles_elapsed.max` x SMs / `smsp__inst_executed_op_global_st.sum`), "
             "the model's (the longer of an SM's store path, `store_instr_clk` or slots / "
             "`store_sectors_per_clk`, and the whole GPU's slots through the L2's input "
             "port) and the port's busy share.", "",
             "| shape | lanes | lines x sectors | slots | 132 SMs | 64 SMs | 32 SMs |",
             "|---|---|---|---|---|---|---|"]
    errs = []
    for i, r in t[32].iterrows():
        cells = []
        for sms in (132, 64, 32):
            x = t[sms].iloc[i]
            m = float(store_path_clk(np.array([x.slots], float), np.array([sms], float),
                                     params, gpu)[0])
            errs.append(abs(m / x.clk - 1))
            cells.append(f"{x.clk:.1f} / {m:.1f} ({x.port:.0f}%)")
        lines.append(f"| {r['shape']} | {r.lanes} | {r.lines} x {r.sectors_per_line} | "
                     f"{r.slots} | " + " | ".join(cells) + " |")
    w = t[132].set_index("shape")
    f = t[32].set_index("shape")
    lines += ["",
              f"- Fitted (`python bench/bench_mem.py --fit`): on 32 SMs a slot every "
              f"{1 / fit['store_sectors_per_clk']:.2f} clocks (`store_sectors_per_clk` "
              f"{fit['store_sectors_per_clk']:.2f}; ModelParams {params.stores.sectors_per_clk}), "
              f"at least {fit['store_instr_clk']:.1f} clocks an instruction (`store_instr_clk`; "
              f"{params.stores.instr_clk}); on 132 SMs the port takes {fit['port_slots']:.0f} "
              f"slots a clock at full, {fit['l2_write_share']:.2f} of the model's L2 bandwidth "
              f"(`l2_write_share`; {params.l2.write_share}). The model against the H100 over "
              f"the 36 cells: mean error {np.mean(errs):.1%}, worst {np.max(errs):.0%}.",
              "- A line of one or two sectors takes the time of two, in an SM's path and in the "
              f"port alike: every lane its own line (`scat`, 32 lines of a sector) takes "
              f"{f.clk['scat']:.0f} clocks on 32 SMs and {w.clk['scat']:.0f} on 132, as 64 "
              f"slots would; 16-byte lanes (`w16`, 4 whole lines) {f.clk['w16']:.0f} and "
              f"{w.clk['w16']:.0f}. The port's rate agrees to 1% over the five shapes that "
              "fill it (whole lines, vector lanes, scattered lanes); in sectors it would not "
              "(scattered lanes fill it at half the sectors).",
              "- A store instruction holds the path 3.3-4.7 clocks whatever it writes (bf16 "
              "lanes, one sector, a masked quarter of a warp), so a store of one or two "
              "sectors costs an SM as much as a whole line; the H100 counts 1.5 L2 write "
              "sectors for each sector an SM stores here (`lts__t_sectors_op_write`).",
              "- l2_ports' stores (above) take 5.6 clocks a whole line on 32 SMs where these "
              f"take {f.clk['w4']:.1f}: that kernel picks its operation inside the loop (its "
              "SASS, `bench/data/device/l2_ports/l2_ports_sass.txt`: compares and branches "
              "around every store, the loop not unrolled), so its rates understate the path's; "
              "what in those branches costs the time is not established.",
              f"- Repeated in a later call (`bash bench/device/store_shapes.sh chk 32`, its "
              f"files renamed `store_shapes_h100_repeat*`): every shape's clocks within "
              f"{repeat_spread():.1%} of the first run's, on 132 and 32 SMs.",
              "- The port is a bound on the whole kernel in the model (its stores' slots over "
              "69 a clock), not a share of it each SM holds: shared out per SM it slowed "
              "kernels that store at their blocks' end (`_chunk_state_fwd`, 16-byte lanes: "
              "1.19x ncu's time without the store path, 1.31x with the port shared out per "
              "SM, 1.21x as a bound). That such stores leave the SMs at different times and "
              "do not fill the port is the likely reason, not measured."]
    return lines + store_traces_table(gpu)


def model_on_store_traces(gpu, params=DEFAULT_PARAMS) -> pd.DataFrame:
    """The model on the traced store_shapes launches (``traces/stores_smsN``, 8 blocks of
    each, the grid of N SMs) against ncu's records of the same launches: clocks per store
    instruction per SM, one line per shape and SM count. *store_ratio*: SM 0's time, or on
    the whole GPU the L2 side's bound (its input port) where that is longer, over ncu's."""
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    out = []
    for stem, sms in STORE_RUNS:
        tdir = STORE_TRACES / f"stores_sms{0 if sms == gpu.sm_count else sms}"
        if not tdir.is_dir():
            continue
        hw = store_shape_rates(stem, params.stores.min_sectors)
        g = with_variants(gpu, sm_count=sms) if sms != gpu.sm_count else gpu
        kernels = list(TraceSet(tdir).kernels())
        if len(kernels) != len(hw):
            raise ValueError(f"{tdir}: {len(kernels)} traced launches, {stem} has {len(hw)}")
        for (_, h), k in zip(hw.iterrows(), kernels):
            if tuple(k.header.grid)[0] != 8 * sms:
                raise ValueError(f"{tdir}: {h['shape']} has grid {k.header.grid}, "
                                 f"{stem} ran {8 * sms} blocks")
            rec = simulate_kernel(k, g, params=params, cache=False)
            per_sm = 8 * 8 * 256  # stores per SM: 256 iterations of 8 warps of 8 blocks
            sm_clk = rec["sim_sm_cycles"] * rec["sim_work_scale"] / per_sm
            l2_clk = rec["sim_l2_bound_cycles"] / per_sm
            out.append({"shape": h["shape"], "sms": sms, "slots": h.slots, "hw_clk": h.clk,
                        "model_clk": rec["cycles"] / per_sm, "model_sm_clk": sm_clk,
                        "model_l2_clk": l2_clk, "port": h.port,
                        "store_clk": max(sm_clk, l2_clk) if sms == gpu.sm_count else sm_clk})
    t = pd.DataFrame(out)
    if len(t):
        t["ratio"] = t.model_clk / t.hw_clk
        t["store_ratio"] = t.store_clk / t.hw_clk
    return t


def store_traces_table(gpu) -> list[str]:
    """The model on the store shapes' own traces. (Made at model-1.9 with stores at the
    L1's rate beside each cell: ``git checkout model-1.12``, ``bench/bench_mem.py``.)"""
    on = model_on_store_traces(gpu, DEFAULT_PARAMS)
    if not len(on):
        return []
    lines = ["", "The model on the shapes' own traces (`KIND=stores bash "
             "bench/device/trace_rows.sh`, one H100 call, 43 s: 8 blocks of every launch, "
             "the grid of 132, 64 and 32 SMs traced on the whole GPU; "
             "`bench/data/device/store_shapes/traces/`) over ncu's time: SM 0's time, and on "
             "132 SMs the L2 side's bound (its input port) where that is longer:", "",
             "| shape | 132 SMs | 64 SMs | 32 SMs |", "|---|---|---|---|"]
    for shape, g in on.groupby("shape", sort=False):
        g = g.set_index("sms")
        lines.append(f"| {shape} | " + " | ".join(
            f"{g.store_ratio[s]:.2f}" for s in (132, 64, 32)) + " |")
    err = float(np.abs(on.store_ratio - 1).mean())
    whole = on[on.sms == gpu.sm_count]
    rewrites = 8 * gpu.sm_count * 8 * 256 * 128 / (16 << 20)  # w4: the target's lines, times
    lines += ["", f"- Mean |model / ncu - 1| over the 36 launches: {err:.0%}. "
              f"The whole kernel's time on 132 SMs is another matter ({whole.ratio.min():.2f}-"
              f"{whole.ratio.max():.2f} of ncu's): its 8 traced blocks write lines the other "
              f"1,048 rewrite (the 16 MB target written about {rewrites:.0f} times over by "
              "whole lines), which a sample cannot see, so the model writes each sampled "
              "line back to the DRAM as if the grid's lines were all distinct. The "
              "workloads' kernels write each output once, where this does not arise."]
    return lines


LOADS = REPO_ROOT / "bench" / "data" / "device" / "load_shapes"
LOAD_TRACES = LOADS / "traces" / "loads_sms32"
#: The runs of bench/device/load_shapes.sh: (stem, SMs).
LOAD_RUNS = (("load_shapes_h100", 132), ("load_shapes_h100_sms64", 64),
             ("load_shapes_h100_sms32", 32))


def load_shape_rates(stem: str, sms: int) -> pd.DataFrame:
    """One load_shapes run: per shape, the sectors one instruction reads, clocks per load
    instruction per SM, and the L1's and the L2's hit rates (ncu)."""
    out, ncu = shape_run(LOADS, stem)
    out["sms"] = sms
    out["sectors"] = out.lines * out.sectors_per_line
    instr = ncu["smsp__inst_executed_op_global_ld.sum"].to_numpy(float)
    out["clk"] = sms * ncu["gpc__cycles_elapsed.max"].to_numpy(float) / instr
    out["l1_hit"] = (ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"].to_numpy(float)
                     / ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"].to_numpy(float))
    out["l2_hit"] = ncu["lts__t_sector_op_read_hit_rate.pct"].to_numpy(float)
    return out


def load_repeat_spread() -> float:
    """The load_shapes run against its repeat in a later call, every shape on 132 and 32
    SMs."""
    return _repeat_spread(lambda stem: load_shape_rates(stem, 32 if "sms32" in stem else 132),
                          ("load_shapes_h100", "load_shapes_h100_sms32"))


def fit_load_path(few: pd.DataFrame, whole: pd.DataFrame, gpu) -> dict[str, float]:
    """The load path's constants from the shapes. On few SMs (the L2 has room): an SM's
    sectors a clock from the L2 (least squares through the origin on the shapes that read
    whole lines, 8 sectors or more), the floor an instruction takes (the mean of the shapes
    of 4 sectors or fewer with every lane active) and, reported, its lines a clock on loads
    of one sector a line. On the whole GPU: the L2's read sectors a clock (the shapes of 8 sectors or more
    at two or more a line) and its requests a clock (one sector a line), each as a share of
    the model's L2 bandwidth in sectors."""
    big = few[(few.sectors >= 8) & (few.sectors_per_line == 4)]
    rate = float((big.sectors ** 2).sum() / (big.sectors * big.clk).sum())
    scat = few[(few.sectors_per_line == 1) & (few.lines >= 8)]
    lines = float((scat.lines / scat.clk).mean())
    wide = whole[(whole.sectors >= 8) & (whole.sectors_per_line >= 2)]
    sectors = float((wide.sectors * wide.sms / wide.clk).mean())
    one = whole[(whole.sectors_per_line == 1) & (whole.lines >= 8)]
    requests = float((one.lines * one.sms / one.clk).mean())
    floor = float(few[(few.sectors <= 4) & (few.lanes == 32)].clk.mean())
    l2 = bandwidths(gpu, DEFAULT_PARAMS)["l2"] / gpu.l2.sector.bytes
    return {"l2_sm_sectors_per_clk": rate, "load_instr_clk": floor, "sm_lines_per_clk": lines,
            "read_sectors": sectors, "read_requests": requests,
            "l2_read_share": sectors / l2, "l2_read_request_share": requests / l2}


def load_path_clk(t: pd.DataFrame, params, gpu) -> np.ndarray:
    """The model's clocks per load instruction where every SM loads all the time from the
    L2: the L1's lines (a clock each) but at least ``l1.load_instr_clk``, the SM's share of
    the L2 (``l1.miss_sectors_per_clk`` at most), and the whole GPU's read sectors and
    requests through the L2's read side, the longest."""
    bw = bandwidths(gpu, params)
    sector = gpu.l2.sector.bytes
    banks = gpu.sm.l1.l1_banks
    l1 = t.lines * (gpu.l2.line.bytes // sector) / banks
    share = np.minimum(bw["l2"] / t.sms, bw["l1_sm"]) / sector
    _, rs, rq = l2_side_rates(gpu, params)
    gpu_side = np.maximum(t.sectors * t.sms / rs, t.lines * t.sms / rq)
    sm_side = np.maximum(np.maximum(l1, params.l1.load_instr_clk), t.sectors / share)
    return np.maximum(sm_side, gpu_side).to_numpy(float)


def model_on_load_traces(gpu) -> pd.DataFrame:
    """The model on the traced load_shapes launches of the grid of 32 SMs (8 blocks of
    each): SM 0's clocks per load instruction against ncu's."""
    from simfront.gpu import with_variants
    from simfront.sim.model.api import simulate_kernel
    from simfront.traces.reader import TraceSet

    if not LOAD_TRACES.is_dir():
        return pd.DataFrame()
    hw = load_shape_rates("load_shapes_h100_sms32", 32)
    g = with_variants(gpu, sm_count=32)
    kernels = list(TraceSet(LOAD_TRACES).kernels())
    if len(kernels) != len(hw):
        raise ValueError(f"{LOAD_TRACES}: {len(kernels)} traced launches, {len(hw)} shapes")
    per_sm = 8 * 8 * 256  # loads per SM: 256 iterations of 8 warps of 8 blocks
    out = []
    for (_, h), k in zip(hw.iterrows(), kernels):
        if tuple(k.header.grid)[0] != 8 * 32:
            raise ValueError(f"{LOAD_TRACES}: {h['shape']} has grid {k.header.grid}")
        rec = simulate_kernel(k, g, cache=False)
        clk = rec["sim_sm_cycles"] * rec["sim_work_scale"] / per_sm
        out.append({"shape": h["shape"], "hw_clk": h.clk, "model_clk": clk,
                    "ratio": clk / h.clk})
    return pd.DataFrame(out)


def load_shapes_table(gpu) -> list[str]:
    """Loads of 13 shapes on 132, 64 and 32 SMs: the H100's clocks per instruction per SM
    against the model's load path. (Made at model-1.10 with model-1.9's path beside each
    cell: ``git checkout model-1.12``, ``bench/bench_mem.py``.)"""
    if not all((LOADS / f"{s}_ncu.csv").is_file() for s, _ in LOAD_RUNS):
        return []
    params = DEFAULT_PARAMS
    t = {sms: load_shape_rates(stem, sms) for stem, sms in LOAD_RUNS}
    fit = fit_load_path(t[32], t[132], gpu)
    lines = ["", "### The shapes of a load (bench/device/load_shapes.cu)", "",
             "`bash bench/device/load_shapes.sh h100 64 32` (2026-11-24, one H100 call, 68 s "
             "with the traces below; `bench/data/device/load_shapes/`): 8 blocks of 256 "
             "threads per SM load from a 16 MB target that the L2 holds (ncu counts "
             f"{min(x.l2_hit.min() for x in t.values()):.0%}-100% of the read sectors as "
             "hits), one `LDG.E` per iteration, 8 in flight per warp, at lines that a hash of (warp, iteration) "
             f"picks, so the L1 holds none of them (hit rate at most "
             f"{max(x.l1_hit.max() for x in t.values()):.3f}); on the whole GPU and in green "
             "contexts of 64 and 32 SMs. *lines x sectors*: what one warp instruction reads. "
             "Cells: ncu's clocks per load instruction per SM (`gpc__cycles_elapsed.max` x "
             "SMs / `smsp__inst_executed_op_global_ld.sum`) / the model's load path "
             "(`load_path_clk`: a clock a line in the L1, at most "
             f"{params.l1.miss_sectors_per_clk} sectors a clock from the L2 per SM, and the "
             "whole GPU's read sectors and requests through the L2's read side).", "",
             "| shape | lines x sectors | 132 SMs | 64 SMs | 32 SMs |", "|---|---|---|---|---|"]
    errs = []
    for i, r in t[32].iterrows():
        cells = []
        for sms in (132, 64, 32):
            x = t[sms].iloc[[i]]
            hw = float(x.clk.iloc[0])
            m1 = float(load_path_clk(x, params, gpu)[0])
            if r["shape"] not in ("s1", "s2"):
                errs.append(abs(m1 / hw - 1))
            cells.append(f"{hw:.1f} / {m1:.1f}")
        lines.append(f"| {r['shape']} | {r.lines} x {r.sectors_per_line} | "
                     + " | ".join(cells) + " |")
    f = t[32].set_index("shape")
    h = t[64].set_index("shape")
    walk = load_shape_rates("load_shapes_h100_walk_sms64", 64).set_index("shape")
    traced = model_on_load_traces(gpu)
    lines += ["",
              f"- Fitted (`python bench/bench_mem.py --fit`): on 32 SMs an SM takes "
              f"{fit['l2_sm_sectors_per_clk']:.2f} sectors a clock from the L2 at most "
              f"(`l2_sm_sectors_per_clk`; ModelParams {params.l1.miss_sectors_per_clk}), at "
              f"least {fit['load_instr_clk']:.2f} clocks a load instruction (`load_instr_clk`; "
              f"{params.l1.load_instr_clk}) and "
              f"{fit['sm_lines_per_clk']:.2f} lines a clock on loads of a sector a line (the "
              "model's L1: one); on 132 SMs the L2's read side takes "
              f"{fit['read_sectors']:.0f} sectors a clock ({fit['l2_read_share']:.2f} of the "
              f"model's L2 bandwidth, `l2_read_share`; {params.l2.read_share}) and "
              f"{fit['read_requests']:.0f} requests, a line each "
              f"({fit['l2_read_request_share']:.2f}, `l2_read_request_share`; "
              f"{params.l2.read_request_share}). Over the 33 cells of the shapes with every "
              f"lane active: mean error {np.mean(errs):.0%} (worst {np.max(errs):.0%}).",
              f"- A line a clock, hit or miss: a first run of these kernels "
              f"(`load_shapes_h100_walk*`: a sequential walk over 32 MB through the read-only "
              f"path, `LDG.E.CONSTANT`) brought `scat`'s lines back to the L1 on 64 SMs "
              f"({walk.l1_hit['scat']:.0%} of its sectors hit) and took "
              f"{walk.clk['scat']:.1f} clocks a load, as this run does with none hitting "
              f"({h.clk['scat']:.1f}). So a transposing copy, whose every lane reads its own "
              f"line, costs an SM 32 clocks a load, where model-1.9 took 8.",
              f"- The whole GPU takes {fit['read_requests']:.0f} reads of one sector a line a "
              f"clock and {fit['read_sectors']:.0f} sectors a clock of whole lines (30 lines): "
              "a line of one sector costs the L2's read side 1.75 sectors' time, and whole "
              "lines go at three quarters of the model's L2 bandwidth. Neither of the "
              "crossbar's ports reads full at those rates (`lts__xbar2lts` 21-41% busy, "
              "`lts__lts2xbar` 47-87%, for the scattered shapes): what limits the read side "
              "is not established.",
              "- The model on the shapes' own traces (`KIND=loads bash "
              "bench/device/trace_rows.sh`, in the same call: 8 blocks of each launch in the "
              "grid of 32 SMs, `traces/loads_sms32/`), SM 0's clocks a load over ncu's, "
              "the model: " + ", ".join(
                  f"`{r['shape']}` {r.ratio:.2f}"
                  for _, r in traced[traced['shape'].str.startswith('scat')].iterrows())
              + ". (The other shapes read lines the model takes from the DRAM: 8 sampled "
              "blocks cannot tell that the grid's loads keep 16 MB in the L2.)",
              f"- Repeated in a later call (`bash bench/device/load_shapes.sh chk 32`, its files "
              f"renamed `load_shapes_h100_repeat*`, the program rebuilt after a refactor of "
              f"its host code): every shape's clocks within {load_repeat_spread():.1%} of the "
              "first run's, on 132 and 32 SMs.",
              "- `s1`, `s2` (8 or 16 lanes active) are left out of the errors: the branch "
              "around their load leaves one load in flight per warp (long-scoreboard stalls "
              "74-86% of the warps' time), so they time the latency, not the path."]
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not DATA.is_dir():
        print(f"skip: no microbenchmark data in {DATA}")
        return 0
    h100 = load_gpu("h100")
    h200 = load_gpu("h100-as-h200")
    l2_h100 = h100.l2.size.bytes
    l2_h200 = h200.l2.size.bytes
    all_runs = runs()
    params = DEFAULT_PARAMS
    share = params.l2.private_capacity
    base_ns = memory_latencies(h100, params)["dram"] / h100.clocks.core.hz * 1e9

    h100_rows = pd.concat([r for k, (r, _) in all_runs.items()
                           if k.startswith("mem_rows_h100") and reads_only(k) and "miss" in r
                           and len(r)])
    fitted_share = fit_capacity(h100_rows, l2_h100, h100)
    chase = chase_load(pd.concat([all_runs["mem_rows_h100"][1],
                                  all_runs["mem_rows_h100_writes"][1]]), h100)
    fitted_q = fit_queue(chase, params.dram.queue_max_load)
    fitted_w = fit_write_weight(chase, params.dram.queue_latency, params.dram.queue_max_load)
    per_store = fit_store_load(chase)

    lines = [SECTION, "",
             "- 2026-11-24; `bash bench/device/mem_rows.sh h100 64 32 96` on an H100 80GB HBM3 and "
             "`bash bench/device/mem_rows.sh h200 64` on an H200 (driver 580.159.04, CUDA 13.0; "
             "one device call each, 43 s and 24 s); CSVs in `bench/data/device/mem_rows/` (the "
             "96-SM run's ncu file did not come back: its timings only). Times are ncu's "
             "`gpu__time_duration` for the chase and CUDA-event medians of 5 for the rows' "
             "bandwidth; DRAM bytes are ncu's (`--cache-control all`: each launch starts cold).",
             "",
             "### Private rows: the re-reads that miss, against the resident rows' size W",
             "",
             "Every block owns a row and reads it 3 times (a block reduction between passes); W = "
             "resident blocks x row bytes. Miss share = (DRAM bytes / rows' bytes - 1) / 2.",
             ""]
    keys = [k for k, (r, _) in all_runs.items() if reads_only(k) and "miss" in r and len(r)]
    ws = sorted(set().union(*[set(all_runs[k][0].w_mb.round().astype(int)) for k in keys]))
    ws = [w for w in ws if 24 <= w <= 60]
    head = "| run | blocks/SM | " + " | ".join(f"{w} MB" for w in ws) + " |"
    lines += [head, "|" + "---|" * (len(ws) + 2)]
    for k in keys:
        r = all_runs[k][0]
        for per, g in r.groupby("per_sm", sort=False):
            vals = {int(round(w)): m for w, m in zip(g.w_mb, g.miss)}
            label = k.removeprefix("mem_rows_").replace("_sms", ", ") + (" SMs" if "_sms" in k
                                                                        else ", all SMs")
            lines.append(f"| {label} | {per} | " + " | ".join(
                f"{vals[w]:.2f}" if w in vals else "" for w in ws) + " |")
    for name, gpu, l2b in (("H100", h100, l2_h100), ("H200", h200, l2_h200)):
        m = model_miss(np.array(ws, float) * 2**20, l2b, share, gpu)
        lines.append(f"| model, {name} L2 at {share:.2f} | | " + " | ".join(
            f"{v:.2f}" for v in m) + " |")
    half = {k: knee(all_runs[k][0]) for k in keys}
    lines += ["",
              "- Half the re-reads miss at W = " + ", ".join(
                  f"{v:.1f} MB ({k.removeprefix('mem_rows_')})" for k, v in half.items())
              + f": {half['mem_rows_h100'] / (l2_h100 / 1e6):.2f} of the H100's "
              f"{l2_h100 / 1e6:.1f} MB and {half.get('mem_rows_h200', float('nan')) / (l2_h200 / 1e6):.2f} "
              f"of the H200's {l2_h200 / 1e6:.1f} MB. A green context's fewer SMs do not change it: "
              "the SMs left out take none of the L2 with them, so the knee is a property of the L2, "
              "not of the SMs sharing it.",
              f"- Fitted on the H100's rows (all SM counts): `l2_private_capacity` = "
              f"{fitted_share:.3f} (ModelParams: {share}). Held out, the H200's knee: "
              "measured at "
              f"{half.get('mem_rows_h200', float('nan')):.1f} MB, the model's at "
              f"{model_knee(l2_h200, share, h200):.1f} MB.",
              "",
              "### Loaded DRAM latency: the pointer chase",
              "",
              "Warps per SM x chains per warp (ILP) dependent full-line loads in flight, and 0, 1 "
              "or 2 full lines written per step and chain (`ONLY=w bash bench/device/"
              "mem_rows.sh h100`, a third H100 call, 19 s). Reads and writes in TB/s (ncu); "
              "their loads are over the model's sustainable bandwidth "
              f"({h100.dram.bandwidth.bytes_per_s * params.dram.efficiency / 1e12:.2f} TB/s). "
              "*Wait*: ns per step over the lightest launch's with as many writes (4 warps, one "
              "chain); *model*: `dram_queue_latency` x L / (1 - L), L = read load + "
              "`dram_queue_write_weight` x write load, capped at "
              f"{params.dram.queue_max_load}.",
              "",
              "| writes/step | warps/SM | ILP | ns per step (ncu) | read TB/s | write TB/s | wait ns | model ns |",
              "|---|---|---|---|---|---|---|---|"]
    model = queue_model(chase, params.dram.queue_latency, params.dram.queue_write_weight,
                        params.dram.queue_max_load)
    for (_, c), m in zip(chase.iterrows(), model):
        lines.append(f"| {int(c.writes)} | {int(c.warps_per_sm)} | {int(c.ilp)} | {c.ns:.0f} | "
                     f"{c.dram_read / c.ncu_ns / 1e3:.2f} | {c.dram_write / c.ncu_ns / 1e3:.2f} | "
                     f"{c.queue_ns:.0f} | {m:.0f} |")
    lines += ["",
              f"- Fitted on the reads-only chase at loads 0.3-{params.dram.queue_max_load + 0.1:.1f}: "
              f"`dram_queue_latency` = {fitted_q:.0f} ns (ModelParams: "
              f"{params.dram.queue_latency:.0f}); on the chase with writes at read + write loads of "
              f"0.2-0.75: `dram_queue_write_weight` = {fitted_w:.1f} (ModelParams: "
              f"{params.dram.queue_write_weight}; shallow: RMS error 220 ns at 2, 208 at 3.3, 210 at 4). Below a "
              "load of 0.3 the step time grows with the loads in flight per SM more than with "
              "the DRAM's load (4 to 16 in flight: 443 to 523 ns at loads of 0.05-0.17), which "
              "the model's issue loop times itself; above the cap the bandwidth bound holds a "
              "kernel back, not its latency (256 in flight: 1,513 ns at 0.93).",
              "- A store costs the same warp's next load about 150-185 ns even unloaded (the "
              "lightest launches: 443 ns per step without writes, 628 with one line written "
              f"per step, 745 with two; {per_store:.0f} ns a line, least squares). "
              "`store_load_ns` adds it to a warp's next load in the issue loop; an option, "
              "off (*The model on the rows kernel's own traces* below).",
              "- Event-timed (warm TLBs) the unloaded step is 262 ns where ncu, which flushes "
              "the caches before each launch, times 443: the model's unloaded latency "
              f"({base_ns:.0f} ns, fitted on ncu records) is the cold one."]
    lines += rows_with_writes_table(all_runs, h100, share)
    lines += traces_table(all_runs, h100, per_store)
    lines += l2_ports_table(h100)
    lines += store_shapes_table(h100)
    lines += load_shapes_table(h100)
    body = "\n".join(lines) + "\n"
    print(body)
    if "--fit" in argv:
        print(f"fitted: l2_private_capacity={fitted_share:.3f} dram_queue_latency={fitted_q:.1f} "
              f"dram_queue_write_weight={fitted_w:.1f}")
        if (STORES / "store_shapes_h100_ncu.csv").is_file():
            fit = fit_store_path(store_shape_rates("store_shapes_h100_sms32", params.stores.min_sectors),
                                 store_shape_rates("store_shapes_h100", params.stores.min_sectors), h100)
            print("fitted: " + " ".join(f"{k}={v:.3f}" for k, v in fit.items()))
        if (LOADS / "load_shapes_h100_ncu.csv").is_file():
            fit = fit_load_path(load_shape_rates("load_shapes_h100_sms32", 32),
                                load_shape_rates("load_shapes_h100", 132), h100)
            print("fitted: " + " ".join(f"{k}={v:.3f}" for k, v in fit.items()))
    update_section(SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())

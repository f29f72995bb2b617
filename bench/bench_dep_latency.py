"""Dependent-issue latencies the trace cannot show, the H100 against the model: chains of one
warp through a compare's predicate (read as a guard, as a SEL's operand) and their plain
partners, timed on the GPU by bench/device/dep_latency.cu (data in
bench/data/device/dep_latency/), and the same chains as synthetic one-warp traces through
the model.

    python bench/bench_dep_latency.py [--no-write]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pandas as pd

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.sim.model.api import simulate_kernel
from simfront.sim.model.params import DEFAULT_PARAMS
from simfront.traces.reader import KernelTrace

DATA = REPO_ROOT / "bench" / "data" / "device" / "dep_latency"
MEASURED = DATA / "dep_latency_h100.csv"
SECTION = "## Dependent-issue latencies the trace cannot show (bench/bench_dep_latency.py)"
LINKS = 512  # bodies of the shorter synthetic chain; the longer one has twice as many

#: The chains of dep_latency.cu as trace rows (without their PC). A guarded row is one whose
#: guard turned lanes off (the trace's mask); the H100's chains ran with the guard true,
#: which a trace cannot tell, so the synthetic ones turn one lane off.
CHAINS = {
    "fmul": ["ffffffff 1 R11 FMUL 1 R11 0 0"],
    "imad": ["ffffffff 1 R0 IMAD 1 R0 0 0"],
    "fsetp_guard": ["ffffffff 0 FSETP.GEU.AND 1 R11 0 -126", "7fffffff 1 R11 FMUL 1 R11 0 0"],
    "isetp_guard": ["ffffffff 0 ISETP.GE.AND 1 R0 0 0", "7fffffff 1 R0 IMAD 1 R0 0 0"],
    "fsetp_fsel": ["ffffffff 0 FSETP.GEU.AND 1 R11 0 -126", "ffffffff 1 R11 FSEL 1 R7 0 0"],
    "isetp_sel": ["ffffffff 0 ISETP.GE.AND 1 R0 0 0", "ffffffff 1 R0 SEL 1 R7 0 0"],
    "mufu": ["ffffffff 1 R11 MUFU.EX2 1 R11 0 0"],
    "fadd_fmnmx": ["ffffffff 1 R11 FADD 1 R11 0 0", "ffffffff 1 R11 FMNMX 2 R11 R255 0 0"],
}
#: Chains the model does not claim to reproduce (shown, not tested).
UNMODELLED = {"fadd_fmnmx"}
#: What each chain shows, for the table.
MEANING = {
    "fmul": "FMUL's latency",
    "imad": "IMAD's latency",
    "fsetp_guard": "FSETP, then the FMUL it guards",
    "isetp_guard": "ISETP, then the IMAD it guards",
    "fsetp_fsel": "FSETP, then an FSEL of its predicate",
    "isetp_sel": "ISETP, then a SEL of its predicate",
    "mufu": "MUFU.EX2's latency",
    "fadd_fmnmx": "FADD, then an FMNMX of its result (FMA pipe to ALU and back)",
}


def measured() -> dict[str, float]:
    """The H100's clocks per body of each chain (the fewest of five runs)."""
    with open(MEASURED, newline="") as f:
        return {r["chain"]: float(r["clocks_per_body"]) for r in csv.DictReader(f)}


def chain_trace(path: Path, body: list[str], links: int) -> KernelTrace:
    """One warp of one block running ``body`` ``links`` times, as a loop of 16 copies (the
    microbenchmark's unrolling: its code stays in the instruction cache)."""
    rows = [f"{((n % 16) * len(body) + j) * 16:04x} {row}"
            for n in range(links) for j, row in enumerate(body)]
    rows.append(f"{16 * len(body) * 16:04x} ffffffff 0 EXIT 0 0 0")
    head = ["-kernel name = chain", "-kernel id = 1", "-grid dim = (1,1,1)",
            "-block dim = (32,1,1)", "-shmem = 0", "-nregs = 32", "-binary version = 90",
            "-cuda stream id = 0", "-shmem base_addr = 0x00007f0000000000",
            "-local mem base_addr = 0x00007e0000000000", "-nvbit version = 1.7.7.1",
            "-accelsim tracer version = 5", ""]
    path.write_text("\n".join(head + ["#BEGIN_TB", "", "thread block = 0,0,0", "",
                                      "warp = 0", f"insts = {len(rows)}", *rows, "",
                                      "#END_TB", ""]))
    return KernelTrace(path)


def model_clocks_per_body(stem: Path, body: list[str], gpu,
                          params=DEFAULT_PARAMS) -> float:
    """The model's SM clocks per body: a chain of 2 x LINKS bodies less one of LINKS (the
    kernel's start and its cold instruction cache cancel)."""
    t = [simulate_kernel(chain_trace(stem.with_suffix(f".{n}.traceg"), body, n), gpu,
                         params=params, cache=False)["sim_sm_cycles"]
         for n in (LINKS, 2 * LINKS)]
    return (t[1] - t[0]) / LINKS


def table(work: Path) -> list[tuple[str, float, float]]:
    gpu = load_gpu("h100")
    hw = measured()
    return [(name, hw[name], model_clocks_per_body(work / name, body, gpu))
            for name, body in CHAINS.items()]


def render(rows) -> str:
    gpu = (DATA / "gpu_h100.csv").read_text().splitlines()[1].split(",")
    out = [SECTION, "",
           f"`bash bench/device/dep_latency.sh h100` on {gpu[0].strip()} (driver "
           f"{gpu[1].strip()}; asked for an H200, given this H100; one call of 5 s, "
           "2026-11-27): chains of one warp, each a loop of 16 PTX bodies, "
           "timed with clock64, the fewest clocks of five runs; what ptxas made of them is "
           "`dep_latency_h100.sass.xz` beside the data. The model: the same chains as "
           "synthetic traces of one warp. Written by `python bench/bench_dep_latency.py`.", "",
           "| chain | what a body is | H100 clocks a body | model | model/H100 |",
           "|---|---|---:|---:|---:|"]
    for name, hw, model in rows:
        out.append(f"| `{name}` | {MEANING[name]} | {hw:.1f} | {model:.1f} | "
                   f"{model / hw:.2f} |")
    hw = dict((n, h) for n, h, _ in rows)
    out += ["",
            f"A predicate read as a guard comes {hw['fsetp_guard'] - hw['fmul']:.0f} clocks "
            f"after an FSETP and {hw['isetp_guard'] - hw['imad']:.0f} after an ISETP; read as "
            f"a select's operand, {hw['fsetp_fsel'] - 4:.0f}: the model's "
            "`issue.predicate_guard_latency` (14) and the compare's own latency. In "
            "Triton's exp2 every `@!P FMUL` of the underflow scaling waits the 14 clocks "
            "after its `FSETP.GEU` (docs/model-issue.md, *The issue loop of SM 0*). The "
            "trace names no predicate, so the model takes a row as guarded where its mask "
            "lost lanes; a chain whose guard is true on every lane, as these were on the "
            "GPU, reads unguarded in a trace (the synthetic traces turn one lane off). "
            f"Not modelled: a result crossing between the FMA and ALU pipes "
            f"(`fadd_fmnmx`: {hw['fadd_fmnmx']:.1f} clocks where two FMULs take "
            f"{2 * hw['fmul']:.1f}), which the exp's `FADD`/`FMNMX` pairs also pay.", ""]
    h200 = DATA / "dep_latency_h200.csv"
    if h200.is_file():
        other = pd.read_csv(h200).set_index("chain").clocks_per_body
        worst = max(abs(other[n] - h) for n, h in hw.items())
        name = (DATA / "gpu_h200.csv").read_text().splitlines()[1].split(",")[0].strip()
        out += [f"On an {name} (`bash bench/device/dep_latency.sh h200`, 2026-11-27, "
                f"`dep_latency_h200.csv`) every chain takes the H100's clocks within "
                f"{worst:.3f} a body: the same SM.", ""]
    return "\n".join(out)


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        text = render(table(Path(d)))
    print(text)
    if not args.no_write:
        update_section(SECTION, text, topic="Microbenchmarks")


if __name__ == "__main__":
    main()

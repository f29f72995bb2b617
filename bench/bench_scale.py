"""Answers at scale (issue 15): the model against the H100 on the model-size and
sequence-length trace sets, the seed study's characterization against model size and
sequence length, and the tensor:vector balance along sequence length.

Hardware truth for the 24-layer 130M steps and the 2-layer steps at 512..8192 tokens a
sequence is an ncu profile of one launch per launch configuration
(``ncu-configs.csv.xz`` beside each set; ``simfront.stats.ncu_configs``), laid over every
launch of the window and scaled to each launch's own work (the census of warp
instructions its trace header carries); the paper step at 2048 has a profile of every launch (``ncu.csv``).
The CUPTI kernel time of the unprofiled step (``whatif/h100-all``) is given beside it.

Run: ``python bench/bench_scale.py [--no-balance]``; updates its section of bench/RESULTS.md
and writes its figures to bench/figures/. The balance part reads
``experiments/.sweeps/seqlen_balance/results.h5`` (``simfront sweep run
experiments/seqlen_balance.yaml``) when it is there; ``--no-balance`` keeps the balance
table RESULTS.md holds.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

from results_md import RESULTS, update_section  # bench/results_md.py, beside this script

import numpy as np
import pandas as pd

from simfront.analysis.characterize import characterize
from simfront.analysis.whatif import model_records, model_source_hash
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import REPO_ROOT
from simfront.gpu import load_gpu
from simfront.stats.matching import mape, pearson
from simfront.stats.ncu_configs import expand_trace_set, find_config_profile

SECTION = "## Answers at scale: model size and sequence length (bench/bench_scale.py)"
TRACES = REPO_ROOT / "traces"
FIGURES = REPO_ROOT / "bench" / "figures"

#: (trace set, label, axis value): Mamba2 along sequence length at 8192 tokens a step (2
#: layers, d_model 768), then both LMs along model size (2 layers at d_model 64 and 768, the
#: published 130M at 24 layers)
LENGTH_SETS = (("mamba2_lm-paper-L512", 512), ("mamba2_lm-paper-L1024", 1024),
               ("mamba2_lm-paper", 2048), ("mamba2_lm-paper-L4096", 4096),
               ("mamba2_lm-paper-L8192", 8192))
SIZE_SETS = (("mamba2_lm-tiny", "Mamba2"), ("mamba2_lm-paper", "Mamba2"),
             ("mamba2_lm-130m", "Mamba2"), ("mamba1_lm-tiny", "Mamba1"),
             ("mamba1_lm-paper", "Mamba1"), ("mamba1_lm-130m", "Mamba1"))
#: sets whose hardware truth is a per-configuration profile: the model is compared on them
NEW_SETS = ("mamba2_lm-130m", "mamba2_lm-130m-box", "mamba1_lm-130m", "mamba2_lm-paper-L512",
            "mamba2_lm-paper-L1024", "mamba2_lm-paper-L4096", "mamba2_lm-paper-L8192")


def manifest(trace_dir: Path) -> dict:
    return json.loads((trace_dir / "manifest.json").read_text())


@functools.lru_cache(maxsize=None)
def hardware_frame(trace_dir: Path) -> tuple[pd.DataFrame, str]:
    """The step's per-launch ncu frame and how it was made."""
    full = sorted(trace_dir.glob("ncu.csv*"))
    if full and find_config_profile(trace_dir) is None:
        return read_ncu_csv(full[0]), "ncu, every launch"
    e = expand_trace_set(trace_dir)
    return e.frame, "ncu per configuration: " + e.summary()


def cupti_kernel_ms(trace_dir: Path) -> float | None:
    p = trace_dir / "whatif" / "h100-all.json"
    return json.loads(p.read_text())["kernel_ms"] if p.is_file() else None


def model_against_ncu(name: str, gpu) -> dict:
    d = TRACES / name
    t0 = time.monotonic()
    # ncu flushes the caches before each launch: the model's L2 starts empty too
    recs = model_records(d, gpu, progress=lambda m: print(m, flush=True), l2="cold")
    frame, how = hardware_frame(d)  # shared with characterization_row: read once
    f = frame.assign(model_cycles=frame["file"].map(recs["cycles"]),
                     model_us=frame["file"].map(recs["time_us"]))
    f = f[f["model_cycles"].notna()]
    prof = f[f["ncu_profiled"]]
    cupti = cupti_kernel_ms(d)
    model_ms = float(f["model_us"].sum() / 1e3)
    return {"set": name, "launches": len(frame), "configs": len(prof),
            "mape": mape(prof["cycles"], prof["model_cycles"]),
            "pearson": pearson(prof["cycles"], prof["model_cycles"]),
            "cycles_ratio": float(f["model_cycles"].sum() / f["cycles"].sum()),
            "ncu_ms": float(f["duration_s"].sum() * 1e3), "model_ms": model_ms,
            "cupti_ms": cupti, "model_over_cupti": model_ms / cupti if cupti else None,
            "how": how, "wall_s": time.monotonic() - t0}


def characterization_row(name: str) -> dict:
    d = TRACES / name
    frame, how = hardware_frame(d)
    m = manifest(d)
    cfg = (m.get("workload") or {}).get("config") or {}
    ch = characterize(frame, name, cfg)
    comp = ch.comparison.set_index("figure")["ours"]
    cat = ch.categories["share"]
    return {"set": name, "layer": cfg.get("layer"), "n_layer": cfg.get("n_layer"),
            "d_model": cfg.get("d_model"), "seqlen": cfg.get("seqlen"), "batch": cfg.get("batch"),
            "step_ms": ch.step_time_s * 1e3,
            "dram_util": ch.dram_util_time_weighted,
            "gemm_share": float(cat.get("gemm", 0.0)), "ssm_share": float(cat.get("ssm", 0.0)),
            "mixed_vector_bound": float(comp.get(
                "tensor+vector kernels that are vector-bound (time share)", np.nan)),
            "non_gemm_ai": float(comp.get(
                "non-GEMM arithmetic intensity, time-weighted (FLOP/byte)", np.nan)),
            "top": ", ".join(f"{c} {v:.0%}" for c, v in cat.sort_values(ascending=False)
                             .iloc[:3].items()),
            "how": how.split(":")[0]}


def balance_along_length(h5: Path) -> pd.DataFrame | None:
    from simfront.analysis.studies import balance_per_workload, load_sweep_records

    if not h5.is_file():
        return None
    res = balance_per_workload(load_sweep_records(h5))
    rows = []
    for wl, r in res.items():
        s = r.step["speedup"]
        rows.append({"workload": wl, "seqlen": int(wl.split("_L")[-1].split("/")[0]),
                     "knee": r.knee, "stop_paying": r.stop_paying,
                     "speedup_8": float(s.get(8.0, np.nan)), "speedup_4": float(s.get(4.0, np.nan)),
                     "speedup_32": float(s.get(32.0, np.nan)),
                     "best": float(s.max()), "best_ratio": float(s.idxmax())})
    return pd.DataFrame(rows).sort_values("seqlen")


def plot(chars: pd.DataFrame, bal: pd.DataFrame | None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    FIGURES.mkdir(parents=True, exist_ok=True)
    out = []
    figs = (("dram_util", "DRAM bandwidth use (time-weighted)", 0.575),
            ("gemm_share", "GEMM share of kernel time", 0.60),
            ("ssm_share", "SSM share of kernel time", 0.20),
            ("mixed_vector_bound", "mixed kernels: vector-bound share", 0.905))
    length = chars[chars["set"].isin([s for s, _ in LENGTH_SETS])].sort_values("seqlen")
    fig, axes = plt.subplots(1, 4 + (bal is not None), figsize=(4 * (4 + (bal is not None)), 3.4))
    for ax, (col, title, pub) in zip(axes, figs):
        ax.plot(length["seqlen"], length[col], "o-", label="Mamba2, 2 layers, 8192 tokens/step")
        ax.axhline(pub, ls="--", c="grey", label="seed study")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length")
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, 1)
    axes[0].legend(fontsize=7)
    if bal is not None:
        ax = axes[-1]
        for col, lab in (("speedup_8", "8:1"), ("speedup_4", "4:1"), ("speedup_32", "32:1")):
            ax.plot(bal["seqlen"], bal[col], "o-", label=f"at {lab}")
        ax.axhline(1.0, c="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length")
        ax.set_title("model: kernel-time speedup over 16:1", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    p = FIGURES / "scale_length.png"
    fig.savefig(p, dpi=110)
    out.append(p)
    plt.close(fig)

    size = chars[chars["set"].isin([s for s, _ in SIZE_SETS])].copy()
    size["label"] = size.apply(lambda r: f"{r['layer']} {r['n_layer']}x{r['d_model']}", axis=1)
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (col, title, pub) in zip(axes, figs):
        for layer, g in size.groupby("layer"):
            g = g.sort_values(["n_layer", "d_model"])
            ax.plot(range(len(g)), g[col], "o-", label=layer)
            ax.set_xticks(range(len(g)), [f"{n}x{dm}" for n, dm in zip(g.n_layer, g.d_model)])
        ax.axhline(pub, ls="--", c="grey", label="seed study")
        ax.set_xlabel("layers x d_model")
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, 1)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    p = FIGURES / "scale_size.png"
    fig.savefig(p, dpi=110)
    out.append(p)
    plt.close(fig)
    return out


def _f(v, fmt="{:.3f}") -> str:
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else fmt.format(v)


BALANCE_HEADING = "### The balance answer along sequence length (experiments/seqlen_balance.yaml)"


def kept_balance(results: Path = RESULTS) -> list[str]:
    """The balance subsection RESULTS.md holds now, so that a run without the sweep
    (``--no-balance``) leaves it as the sweep that made it wrote it."""
    text = results.read_text() if results.is_file() else ""
    start = text.find(BALANCE_HEADING)
    if start < 0:
        return []
    ends = [i for i in (text.find("\n## ", start), text.find("\nFigures: ", start)) if i >= 0]
    return [""] + text[start:min(ends) if ends else len(text)].rstrip("\n").split("\n")


def render(acc: list[dict], chars: pd.DataFrame, bal: pd.DataFrame | None,
           figs: list[Path], wall: float) -> str:
    lines = [SECTION, "",
             f"- {time.strftime('%Y-%m-%d')}, CPU machine; model source hash "
             f"`{model_source_hash()[:12]}` at the `h100` description, registers and shared "
             "memory as in `bench_model`. Command: `python bench/bench_scale.py` "
             f"({wall:.0f} s this run; model records from `~/.cache/simfront` where present).",
             "- Hardware: ncu 2025.3.1 on the H100 (`--clock-control none`, core metrics), "
             "one launch per launch configuration of the step's window "
             "(`ncu --filter-mode per-launch-config --launch-count 1`, "
             "`bench/device/capture_suite.py` jobs `pc_*`, 52-102 s a step), laid over every "
             "launch of the window and scaled to each launch's own work (its trace's census; "
             "`simfront.stats.ncu_configs`); `mamba2_lm-paper`, `*-tiny` and "
             "`mamba1_lm-paper`: every launch profiled (`ncu.csv`). CUPTI: the unprofiled step's "
             "kernel time (`whatif/h100-all`, caches warm, no replay).", "",
             "### The model against the H100 on the new sets", "",
             "Per configuration: the launch ncu profiled against the model's record of its "
             "trace (cycles). Step: every launch of the window (model time against the "
             "profile laid over the step, and against CUPTI's kernel time).", "",
             "| set | launches | configurations | per-config MAPE | Pearson | step cycles model/ncu "
             "| ncu ms | model ms | CUPTI ms | model/CUPTI | matched |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in acc:
        lines.append(f"| {a['set']} | {a['launches']} | {a['configs']} | {a['mape']:.1%} | "
                     f"{a['pearson']:.3f} | {a['cycles_ratio']:.3f} | {a['ncu_ms']:.2f} | "
                     f"{a['model_ms']:.2f} | {_f(a['cupti_ms'], '{:.2f}')} | "
                     f"{_f(a['model_over_cupti'])} | {a['how'].split(': ', 1)[-1]} |")
    lines += ["", "### The seed study's figures against model size and sequence length", "",
              "Published: DRAM use 57.5% (time-weighted), GEMM up to 60% and SSM up to 20% of "
              "step time, mixed tensor+vector kernels 89-92% vector-bound "
              "(`simfront.analysis.characterize.PUBLISHED`). Ours, from the H100 profiles "
              "(`simfront analyze characterize`, the per-configuration profiles laid over the "
              "step as above):", "",
              "| set | model | seq x batch | kernel ms (ncu) | DRAM use | GEMM | SSM | mixed "
              "vector-bound | non-GEMM FLOP/B | largest categories | profile |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in chars.iterrows():
        lines.append(f"| {r['set']} | {r['layer']} {r['n_layer']} x {r['d_model']} | "
                     f"{r['seqlen']} x {r['batch']} | {r['step_ms']:.2f} | {r['dram_util']:.1%} | "
                     f"{r['gemm_share']:.1%} | {r['ssm_share']:.1%} | "
                     f"{_f(r['mixed_vector_bound'], '{:.0%}')} | {_f(r['non_gemm_ai'], '{:.2f}')} "
                     f"| {r['top']} | {r['how']} |")
    if bal is None:
        lines += kept_balance()
    else:
        lines += ["", BALANCE_HEADING, "",
                  "Model kernel-time speedup over the H100's 16:1 (the sweep's own records, "
                  "`simfront sweep run experiments/seqlen_balance.yaml`):", "",
                  "| sequence length | knee | speedup at 32:1 | at 8:1 | at 4:1 | best (ratio) "
                  "| stops paying from |", "|---|---|---|---|---|---|---|"]
        for _, r in bal.iterrows():
            lines.append(f"| {r['seqlen']} | {_f(r['knee'], '{:g}')} | {r['speedup_32']:.3f} | "
                         f"{r['speedup_8']:.3f} | {r['speedup_4']:.3f} | {r['best']:.3f} "
                         f"({r['best_ratio']:g}) | {_f(r['stop_paying'], '{:g}')} |")
    lines += ["", "Figures: " + ", ".join(f"`{p.relative_to(REPO_ROOT)}`" for p in figs)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-balance", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md alone")
    args = ap.parse_args()
    t0 = time.monotonic()
    gpu = load_gpu("h100")
    acc = [model_against_ncu(s, gpu) for s in NEW_SETS]
    names = [s for s, _ in LENGTH_SETS] + [s for s, _ in SIZE_SETS if s != "mamba2_lm-paper"]
    chars = pd.DataFrame([characterization_row(s) for s in names])
    bal = None if args.no_balance else balance_along_length(
        REPO_ROOT / "experiments" / ".sweeps" / "seqlen_balance" / "results.h5")
    figs = plot(chars, bal)
    text = render(acc, chars, bal, figs, time.monotonic() - t0)
    print(text)
    if not args.no_write:
        update_section(SECTION, text)


if __name__ == "__main__":
    sys.exit(main())

"""The SSD kernels' vector sensitivity on hardware against the model: each ablated kernel's
time ratio (variant over base, tiling pinned) as the GPU measured it and as the model gives
it, on the held-out sets' shipped ablations; and the hardware's bound on what removing the
kernels' transcendental work gives each step.

    python bench/bench_ablation.py [--no-write]
"""

from __future__ import annotations

import argparse

import numpy as np

from bench_heldout import held_out_sets  # bench/bench_heldout.py, beside this script
from results_md import update_section  # bench/results_md.py, beside this script

from simfront.analysis.ablation import compare, render_markdown, vector_bound
from simfront.core.paths import REPO_ROOT

SECTION = "## SSD vector-work ablation (bench/bench_ablation.py)"
TRACES = REPO_ROOT / "traces"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    shipped = sorted(p.parent.parent.name for p in TRACES.glob("*/ablation/base"))
    held = set(held_out_sets())
    # accuracy on held-out sets only; a fit set's ablation is development data, shown apart
    sets = [s for s in shipped if s in held]
    fit_sets = [s for s in shipped if s not in held]
    fits = [compare(TRACES / s) for s in sets]
    errs = np.concatenate([f.rows.error.to_numpy() for f in fits])
    within = int(np.sum(np.abs(errs) <= 0.05))
    added = np.concatenate([f.rows.added_model_over_hw.to_numpy() for f in fits])
    base = np.concatenate([f.rows.base_model_over_hw.to_numpy() for f in fits])
    added_within = int(np.sum(np.abs(added - 1) <= 0.10))
    bounds = [(s, vector_bound(TRACES / s)) for s in sets]
    lines = [
        SECTION, "",
        "Measured with `bash bench/device/ablate.sh \"ho-m2-d1024 ho-m2-d512\"` and "
        "`\"ho-m2-d512 ho-hybrid\"` (two calls on one warm H100), and `\"h200-ho-m2-d1024\"`, "
        "`\"h200-ho-hybrid\"` (two calls on one warm H200, 226 and 269 s) and "
        "`\"h200-ho-m2-d512\"` (another H200, 2026-11-27, 307 s over two calls; the sets "
        "`h200-*`, whose model runs on the `h200` description), and the fit set "
        "`\"mamba2_lm-hd128\"` (H100, 303 s): per set, the "
        "kernels' autotuned configs read from `TRITON_PRINT_AUTOTUNING`, then for each "
        "variant (`simfront workloads ablate`: `base` pinned, `exp2` a second exp per "
        "element, `noexp` no exp and no min) a CUPTI timeline of the whole step on all SMs "
        "and on 64 (`simfront timeline --sms all,64`) and a trace of the two kernels "
        "(`simfront trace --window kernel:... --sample box:8`). Pinning held the tiling: "
        "the pinned base is within 0.2-1.7% (H100) and 0.0-1.3% (H200) of the autotuned step's kernels. The model runs "
        "each variant's traces with its L2 empty (`simfront.analysis.ablation`).", "",
        render_markdown(fits), "",
        f"Model against hardware: {within} of {len(errs)} ratios within 5%; per set mean "
        "|error| " + ", ".join(f"{f.set_name} {f.mape:.1%} (worst {f.worst:.1%})"
                               for f in fits) + ". "
        f"The time a variant adds or saves, model over hardware, is within 10% for "
        f"{added_within} of {len(added)} (median {np.median(added):.2f}); the model's base "
        f"time of the kernels is {np.min(base):.2f}-{np.max(base):.2f} of the hardware's "
        f"(median {np.median(base):.2f}). A ratio is the added time over the base, so a "
        "model whose base is short reads a right added time as too large a ratio.", "",
        "What removing the exp and min of the two kernels gives each step at most, on "
        "hardware (whole GPU, the step's summed kernel time):", "",
        "| set | the two kernels' share of the step | time saved | step speedup at most |",
        "|---|---|---|---|"]
    lines += [f"| {s} | {b['ablated_share']:.1%} | {b['saved_us']:.0f} us | "
              f"{b['step_speedup']:.4f}x |" for s, b in bounds]
    if fit_sets:
        dev = [compare(TRACES / s) for s in fit_sets]
        lines += ["", "Fit sets' ablations (development data, not accuracy: "
                  + ", ".join(f"`{s}`" for s in fit_sets) + "; `ablate.sh` on an H100):", "",
                  render_markdown(dev)]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        update_section(SECTION, text, topic="The held-out corpus")


if __name__ == "__main__":
    main()

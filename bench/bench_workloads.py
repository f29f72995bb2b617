"""Step times of every workload: on the CPU, the `tiny` presets with the reference kernels
(what CI exercises); with `--device cuda` (the H100), `tiny` and `paper` with mamba_ssm's
kernels, untraced — the baseline that tracing slowdowns are measured against. CAPTURE-NOTES
records 19.3 ms for the Mamba1 paper-size step (2 x 768, batch 4, length 2048).

Median of the steady-state iterations (the first is excluded: Triton compiles and tunes
there). Updates its own section of bench/RESULTS.md (one per device kind).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
from pathlib import Path

from results_md import update_section  # bench/results_md.py, beside this script

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from simfront.workloads import WORKLOADS, build  # noqa: E402
from simfront.workloads.runner import run_workload  # noqa: E402

SECTIONS = {"cpu": "## Workload steps on the CPU, reference kernels (bench/bench_workloads.py)",
            "cuda": "## Workload steps on the GPU, mamba_ssm kernels "
                    "(bench/bench_workloads.py --device cuda)"}


def measure(name: str, preset: str, device: str, iterations: int) -> dict:
    try:
        wl = build(name, preset, device=device)
    except Exception as exc:  # e.g. torch_geometric missing: report, keep going
        return {"workload": name, "preset": preset, "error": f"{type(exc).__name__}: {exc}"}
    s = run_workload(wl, iterations=iterations, window=None)
    steady = s.step_ms[1:] or s.step_ms
    return {"workload": name, "preset": preset, "impl": s.impl, "params": s.params,
            "first_ms": s.step_ms[0], "median_ms": statistics.median(steady),
            "loss_first": s.losses[0], "loss_last": s.losses[-1], "device_name": s.device_name}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--presets", default=None, help="comma list (default: tiny on cpu, "
                    "tiny,paper on cuda)")
    args = ap.parse_args(argv)
    presets = (args.presets or ("tiny" if args.device == "cpu" else "tiny,paper")).split(",")
    rows = []
    for name in WORKLOADS:
        for preset in presets:
            r = measure(name, preset, args.device, args.iterations)
            rows.append(r)
            if "error" in r:
                print(f"{name} {preset}: {r['error']}")
            else:
                print(f"{name} {preset}: {r['params']:,} params, first {r['first_ms']:.1f} ms, "
                      f"median {r['median_ms']:.1f} ms, loss {r['loss_first']:.3f} -> "
                      f"{r['loss_last']:.3f}")
    _update_results(args.device, rows, args.iterations)
    return 0


def _update_results(device: str, rows: list[dict], iterations: int) -> None:
    section = SECTIONS[device]
    where = next((r["device_name"] for r in rows if "device_name" in r), device)
    lines = [section, "",
             f"- {dt.date.today().isoformat()}, {where}, Python {platform.python_version()}; "
             f"{iterations} iterations, median of all but the first; bf16 autocast, AdamW; "
             f"load average {os.getloadavg()[0]:.1f} at the end (a shared box: wall times "
             "move with it).", "",
             "| workload | preset | impl | params | first step ms | steady step ms | loss |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['preset']} | - | - | - | - | {r['error']} |")
        else:
            lines.append(f"| {r['workload']} | {r['preset']} | {r['impl']} | {r['params']:,} | "
                         f"{r['first_ms']:.1f} | {r['median_ms']:.1f} | "
                         f"{r['loss_first']:.3f} -> {r['loss_last']:.3f} |")
    update_section(section, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

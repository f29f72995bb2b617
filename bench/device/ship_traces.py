"""Registers the H100 captures brought back by bench/device/suite.sh into the repository's
trace store (traces/), with their provenance, the window's launch records and, beside the
LM sets, the ncu profile of the same step (matched launch by launch).

    python3 bench/device/ship_traces.py CAPTURE_ROOT [--store traces]

CAPTURE_ROOT holds trace_<label>/ (capture folders of simfront.capture.driver.trace) and
ncu_<label>/ncu.csv. The GPU, driver and CUDA of the capture machine are given here since
this runs on another machine than the capture.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simfront.capture.driver import RunRecord, Step, match_profile, register  # noqa: E402
from simfront.capture.tracers import Sampling, Tracer, Window  # noqa: E402
from simfront.capture.validate import validate_trace_set  # noqa: E402
from simfront.core.launches import read_sidecar, traced_launches  # noqa: E402

# capture label (bench/device/capture_suite.py), workload, preset, the CTA sampling it ran
# with, workload overrides, and the trace set's name in the store
SETS = (("mamba2_tiny", "mamba2_lm", "tiny", Sampling(1, 32), (), "mamba2_lm-tiny"),
        ("mamba1_tiny", "mamba1_lm", "tiny", Sampling(1, 32), (), "mamba1_lm-tiny"),
        ("hybrid_tiny", "hybrid_lm", "tiny", Sampling(), (), "hybrid_lm-tiny"),
        ("mambavision_tiny", "mambavision", "tiny", Sampling(), (), "mambavision-tiny"),
        ("graphmamba_tiny", "graphmamba", "tiny", Sampling(), (), "graphmamba-tiny"),
        ("mamba2_paper", "mamba2_lm", "paper", Sampling(1, 8), (), "mamba2_lm-paper"),
        ("mamba1_paper", "mamba1_lm", "paper", Sampling(1, 8), (), "mamba1_lm-paper"),
        # deduplicated captures (tracer 1.2, SIMFRONT_DEDUP=1): the published 130M size,
        # the paper steps again (dedup against the full sets) and along sequence length
        ("mamba2_130m", "mamba2_lm", "130m", Sampling(1, 8), (), "mamba2_lm-130m"),
        ("mamba1_130m", "mamba1_lm", "130m", Sampling(1, 8), (), "mamba1_lm-130m"),
        ("mamba2_paper_dedup", "mamba2_lm", "paper", Sampling(1, 8), (), "mamba2_lm-paper-dedup"),
        ("mamba1_paper_dedup", "mamba1_lm", "paper", Sampling(1, 8), (), "mamba1_lm-paper-dedup"),
        ("mamba2_paper_L512", "mamba2_lm", "paper", Sampling(1, 8), ("seqlen=512", "batch=16"),
         "mamba2_lm-paper-L512"),
        ("mamba2_paper_L8192", "mamba2_lm", "paper", Sampling(1, 8), ("seqlen=8192", "batch=1"),
         "mamba2_lm-paper-L8192"),
        ("mamba2_paper_L1024", "mamba2_lm", "paper", Sampling(1, 8), ("seqlen=1024", "batch=8"),
         "mamba2_lm-paper-L1024"),
        ("mamba2_paper_L4096", "mamba2_lm", "paper", Sampling(1, 8), ("seqlen=4096", "batch=2"),
         "mamba2_lm-paper-L4096"),
        # the paper steps with box sampling (tracer 1.3): what the SSD kernels' heads share
        ("mamba2_paper_box", "mamba2_lm", "paper", Sampling.parse("box:8"), (),
         "mamba2_lm-paper-box"),
        ("mamba1_paper_box", "mamba1_lm", "paper", Sampling.parse("box:8"), (),
         "mamba1_lm-paper-box"),
        # the 130M Mamba2 step with box sampling and dedup (the first:8 set traces one head)
        ("mamba2_130m_box", "mamba2_lm", "130m", Sampling.parse("box:8"), (),
         "mamba2_lm-130m-box"))
TRACER_SHA256: str | None = None
MACHINE = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cuda": "13.0"}


def ship(cap: Path, name: str, step: Step, sampling: Sampling, store: Path,
         ncu: Path | None) -> None:
    tdir = cap / "trace"
    info = json.loads((cap / "capture.json").read_text())
    rec = RunRecord(**{k: info["run"][k] for k in ("command", "env", "returncode", "wall_s",
                                                     "log")})
    rec.summary = json.loads((cap / "summary.json").read_text())
    # the launches with a trace file of their own (a deduplicated capture's repeats have none)
    side = traced_launches(read_sidecar(tdir / "launches.jsonl"))
    rep = validate_trace_set(tdir, "simfront", sidecar=side)
    assert rep.ok, rep.findings
    so = Path(info["run"]["env"].get("LD_PRELOAD", "simfront_tracer.so"))
    tracer = Tracer("simfront", Path(__file__).resolve().parents[2] / ".carry/bin" / so.name,
                    sha256=TRACER_SHA256)
    out_dir = cap
    if ncu is not None:
        shutil.copy2(ncu, cap / "ncu.csv")
        m = match_profile(cap / "ncu.csv", tdir, cap / "ncu_matched.csv")
        print(name, "vs ncu:", m["summary"])
    dest = register(tdir, step, tracer, Window("iteration"), sampling, rec, rep, store, name,
                    out_dir)
    man = json.loads((Path(dest) / "manifest.json").read_text())
    man.update({k: v for k, v in MACHINE.items() if not man.get(k) or k != "gpu"})
    man["capture_stats"] = info.get("stats")
    (Path(dest) / "manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    # paths of the capture and shipping machines' scratch folders say nothing in the repo
    for meta in ("manifest.json", "capture.json"):
        f = Path(dest) / meta
        if f.exists():
            f.write_text(f.read_text().replace("/tmp/", "$TMPDIR/"))
    print("registered", dest)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--ncu-root", type=Path, action="append", default=[])
    ap.add_argument("--store", type=Path, default=Path("traces"))
    ap.add_argument("--tracer-sha256", help="the tracer's SHA-256 as the capture call printed "
                    "it, when the built tracer stayed on the device machine")
    args = ap.parse_args()
    global TRACER_SHA256
    TRACER_SHA256 = args.tracer_sha256

    def ncu_for(label):
        for r in args.ncu_root:
            p = r / f"ncu_{label}" / "ncu.csv"
            if p.exists():
                return p
        return None

    for label, wl, preset, sampling, overrides, name in SETS:
        cap = args.root / f"trace_{label}"
        if cap.exists():
            ship(cap, name, Step(wl, preset, 2, 1, overrides=overrides), sampling, args.store,
                 ncu_for(label))


if __name__ == "__main__":
    main()

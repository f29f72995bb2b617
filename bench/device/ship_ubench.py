"""Stores what bench/device/ubench.sh brought back from the H100 in bench/data/ubench/: the
traced launches as trace sets with manifests (the trace store's format, validated on the
way in), and beside them the launch table, the ncu records and the event times.

    python3 bench/device/ship_ubench.py RAW [--commit SHA]

RAW is the unpacked ubench/ folder ($OUT/ubench.tar.xz). The sets live under bench/, not
traces/: they are microbenchmarks, not workload steps, and everything that walks traces/
(the model benchmark's held-out sets, the demo) must not count them as such.
"""
from __future__ import annotations

import argparse
import csv
import lzma
import re
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simfront.traces.store import TraceStore  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "ubench"
# (trace folder in RAW, set name, CTA sampling, regex of the launches it ran: ubench.sh)
SETS = (("trace", "ubench-h100", "first:2", ""),
        ("trace-12", "ubench-h100-first12", "first:12", r"^(ffma|hmma)_ilp[18]_w(1|16)$"))


def machine(raw: Path) -> dict:
    gpu = list(csv.DictReader(open(raw / "gpu.csv")))[0]
    gpu = {k.strip(): v.strip() for k, v in gpu.items()}
    ver = (raw / "versions.txt").read_text()
    nvcc = re.search(r"V(\d+\.\d+\.\d+)", ver)
    ncu = re.search(r"Version (\S+)", ver)
    sha = re.search(r"^([0-9a-f]{64})\s", ver, re.M)
    return {"gpu": gpu["name"], "driver": gpu["driver_version"],
            "cuda": nvcc[1].rsplit(".", 1)[0] if nvcc else None,
            "tools": {"tracer": "simfront_tracer.so", "tracer_sha256": sha[1] if sha else None,
                      "nvcc": nvcc[1] if nvcc else None, "ncu": ncu[1] if ncu else None},
            "clocks": {"max_sm": gpu.get("clocks.max.sm [MHz]"),
                       "sm_at_start": gpu.get("clocks.current.sm [MHz]")}}


def write_xz(src: Path, dest: Path) -> None:
    dest.write_bytes(lzma.compress(src.read_bytes()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("raw", type=Path)
    ap.add_argument("--commit", default="", help="the ubench commit that ran on the device")
    args = ap.parse_args()
    raw = args.raw
    table = list(csv.DictReader(open(raw / "launches.csv")))
    store = TraceStore(DATA)
    for folder, name, sampling, regex in SETS:
        src = raw / folder
        if not (src / "kernelslist.g").is_file():
            print(f"{src}: no kernelslist.g, not shipped")
            continue
        fields = {"workload": {"name": "bench/device/ubench.cu",
                               "what": "pipe microbenchmarks: dependent chains of FFMA, HFMA2, "
                                       "IMAD, MUFU, HMMA at ILP 1-8 and 1-64 warps/SM, two-pipe "
                                       "mixes, empty launches (ubench_launches.csv)",
                               "command": f"ubench run {regex}".strip()},
                  **machine(raw), "capture_window": "all", "sampling": sampling,
                  "source": f"bench/device/ubench.sh {args.commit}".strip(),
                  # the run left no clock of its own: the trace list's time stands for it
                  "captured": datetime.fromtimestamp((src / "kernelslist.g").stat().st_mtime,
                                                     timezone.utc).isoformat(timespec="seconds")}
        dest = store.register(src, fields, name, overwrite=True, check_body=False).path
        rows = [r for r in table if not regex or re.search(regex, r["label"])]
        with open(dest / "ubench_launches.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(rows)
        if (src / "launches.jsonl").is_file():
            shutil.copy2(src / "launches.jsonl", dest / "launches.jsonl")
        if folder == "trace":
            write_xz(raw / "ncu.csv", dest / "ncu.csv.xz")
            for extra in ("events.csv", "gpu.csv", "versions.txt"):
                shutil.copy2(raw / extra, dest / extra)
            if (raw / "ubench.sass").is_file() and (raw / "ubench.sass").stat().st_size > 1000:
                write_xz(raw / "ubench.sass", dest / "ubench.sass.xz")
        print("shipped", dest)


if __name__ == "__main__":
    main()

"""Prints the simfront step arguments of a set in traces/corpus.yaml, for the device
scripts: ``WORKLOAD --preset paper -n 2 --window-iteration 1 --set K=V ...``, or for a
user's script ``SCRIPT ARGS...``.

    python3 bench/device/corpus_args.py NAME [--timeline]   (--timeline: no --window-iteration)
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parents[2] / "traces" / "corpus.yaml"


def step_args(name: str, timeline: bool = False) -> list[str]:
    doc = yaml.safe_load(CORPUS.read_text())
    for group in ("held_out", "seen"):
        if name in (doc.get(group) or {}):
            entry = doc[group][name]
            break
    else:
        raise SystemExit(f"{CORPUS}: no set {name!r} under held_out or seen")
    if "script" in entry:
        # a user's own script brackets its window itself (docs/script-step.md)
        return [entry["script"], *entry.get("args", [])]
    args = [entry["workload"], "--preset", entry.get("preset", "paper"), "-n", "2"]
    if not timeline:
        args += ["--window-iteration", "1"]
    for key, value in (entry.get("set") or {}).items():
        args += ["--set", f"{key}={value}"]
    return args


if __name__ == "__main__":
    print(" ".join(step_args(sys.argv[1], "--timeline" in sys.argv[2:])))

"""`make bench`: run every bench/bench_*.py in turn; each prints its figures and updates its own
section of bench/RESULTS.md. A failing benchmark is reported and the others still run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not wanted or p.stem in wanted
                     or p.stem.removeprefix("bench_") in wanted)
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        print(f"== {script.name}: exit {rc} after {time.perf_counter() - t0:.1f} s", flush=True)
        if rc:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

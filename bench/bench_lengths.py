"""PerfMamba's row: the Mamba1 and Mamba2 LM steps along sequence length at a fixed token
count, and along d_state, as the GPU timed them (bench/device/lengths.sh; the timelines
are shipped in bench/data/device/lengths/), beside PerfMamba's published figures.

    python bench/bench_lengths.py [--no-write]
"""

from __future__ import annotations

import argparse

from results_md import update_section  # bench/results_md.py, beside this script

from simfront.analysis.lengths import plot, read_points, render_markdown
from simfront.core.paths import REPO_ROOT

SECTION = "## PerfMamba's row: sequence length and d_state (bench/bench_lengths.py)"
DATA = REPO_ROOT / "bench" / "data" / "device" / "lengths"
FIGURE = REPO_ROOT / "bench" / "figures" / "lengths.png"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print, don't update RESULTS.md")
    args = ap.parse_args()
    points = read_points(sorted(DATA.glob("*/timeline-all.json")))
    text = "\n".join([
        SECTION, "",
        "Measured with `bash bench/device/lengths.sh` (one device call; CUPTI, whole GPU, "
        "each point one process: `simfront timeline WL --preset paper -n 2 --set seqlen=L "
        "--set batch=16384/L [--set d_state=N] --sms all`), read with `simfront analyze "
        "lengths bench/data/device/lengths/*`. The steps are the 2-layer LMs at d_model 768 "
        "(vocabulary 50,280) at 16,384 tokens a step; the GPU the lease gave was an H100 "
        "(80 GB HBM3), not the H200 the issue names. Each point is one timed iteration, so "
        "the wall step carries a few percent of host noise; kernel time does not.", "",
        render_markdown(points), "", f"![lengths](figures/{FIGURE.name})", ""])
    print(text)
    if not args.no_write:
        fig = plot(points)
        fig.savefig(FIGURE, dpi=110, bbox_inches="tight")
        update_section(SECTION, text, topic="Balance answers")


if __name__ == "__main__":
    main()

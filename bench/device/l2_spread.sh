#!/bin/bash
# One device call: bench/device/l2_spread.cu built, its SASS dumped and run (an L2 hit's
# latency line by line, and a lane's group of K loads); the GPU's name beside it.
#   bash bench/device/l2_spread.sh TAG [BLOCKS] [HOPS]   (TAG names the files: h100, h200)
# Writes $OUT/l2_spread_TAG.csv.xz, $OUT/l2_spread_TAG.sass.xz, $OUT/gpu_TAG.csv.
set -euo pipefail
tag=${1:?TAG}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
nvcc -O3 -arch=sm_90 "$here/l2_spread.cu" -o "$work/l2_spread" -lcuda  # green.h
cuobjdump -sass "$work/l2_spread" | xz > "$OUT/l2_spread_$tag.sass.xz"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu_$tag.csv"
"$work/l2_spread" "${2:-16}" "${3:-4096}" > "$work/l2_spread.csv"
xz -k "$work/l2_spread.csv" && cp "$work/l2_spread.csv.xz" "$OUT/l2_spread_$tag.csv.xz"
python3 - "$work/l2_spread.csv" <<'PY'
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
c = d[d.kind == "chase"].clocks
print("chase: n", len(c), "quantiles", c.quantile([.01, .1, .25, .5, .75, .9, .99]).round(0).tolist())
print(d[d.kind == "chase"].groupby("sm").clocks.median().to_dict())
print(d[d.kind == "group"].groupby("k").clocks.describe(percentiles=[.1, .5, .9]).round(0))
PY
cat "$OUT/gpu_$tag.csv"

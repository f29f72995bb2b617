#!/bin/bash
# One device call: bench/device/barrier_spread.cu built, its SASS dumped and run on 8 SMs
# and on every SM (one block of 32 warps each): how far apart a block's warps reach a
# barrier after K L2 hits each, K = 1, 2, 4, 8, 16.
#   bash bench/device/barrier_spread.sh TAG [ROUNDS]
# Writes $OUT/barrier_spread_TAG_nN.csv and $OUT/barrier_spread_TAG_sass.txt.
set -u
TAG=${1:-h200}; ROUNDS=${2:-64}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
build barrier_spread || exit 1
sass barrier_spread $TAG
for n in 8 132; do
  $T/barrier_spread $n $ROUNDS > $OUT/barrier_spread_${TAG}_n$n.csv || exit 1
  python3 - $OUT/barrier_spread_${TAG}_n$n.csv <<'PY'
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
print(sys.argv[1].split("/")[-1])
print(d.groupby("k")[["spread", "mean_wait"]].describe(percentiles=[.5, .9]).round(0).to_string())
PY
done

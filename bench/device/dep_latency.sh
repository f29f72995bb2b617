#!/bin/bash
# One device call: bench/device/dep_latency.cu built, its SASS dumped (what ptxas made of
# each chain) and run; the GPU's name and driver beside it.
#   bash bench/device/dep_latency.sh TAG   (TAG names the files: h100, h200)
# Writes $OUT/dep_latency_TAG.csv, $OUT/dep_latency_TAG.sass, $OUT/gpu_TAG.csv.
set -euo pipefail
tag=${1:?TAG}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
nvcc -O3 -arch=sm_90 "$here/dep_latency.cu" -o "$work/dep_latency"
cuobjdump -sass "$work/dep_latency" > "$OUT/dep_latency_$tag.sass"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu_$tag.csv"
"$work/dep_latency" 4096 > "$OUT/dep_latency_$tag.csv"
cat "$OUT/gpu_$tag.csv" "$OUT/dep_latency_$tag.csv"

#!/bin/bash
# One device call: bench/device/dram_mix.cu built and run (the DRAM bandwidth sustained with
# reads and writes mixed, against the bytes an SM keeps in flight) on the whole GPU and in
# green contexts of each SM count given; the GPU's name beside it.
#   bash bench/device/dram_mix.sh TAG [SMS ...]     (TAG names the files: h100, h200)
# Writes $OUT/dram_mix_TAG.csv (the whole GPU), $OUT/dram_mix_TAG_smsN.csv, $OUT/gpu_TAG.csv.
set -euo pipefail
tag=${1:?TAG}; shift
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
nvcc -O3 -arch=sm_90 "$here/dram_mix.cu" -o "$work/dram_mix" -lcuda
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu_$tag.csv"
"$work/dram_mix" "${REPS:-5}" > "$OUT/dram_mix_$tag.csv"
for sms in "$@"; do
  "$work/dram_mix" "${REPS:-5}" "$sms" > "$OUT/dram_mix_${tag}_sms$sms.csv"
done
cat "$OUT/gpu_$tag.csv"

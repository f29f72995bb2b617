#!/bin/bash
# One device call: bench/device/clusters.cu on the whole GPU and in green contexts.
#   bash bench/device/clusters.sh TAG [SMS ...]     -> $OUT/clusters_TAG.csv
set -eu
D=$(dirname "$0"); T=${TMPDIR:-/tmp}
nvcc -O3 -arch=sm_90 -o $T/clusters $D/clusters.cu -lcuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/clusters_${1}_gpu.txt
$T/clusters "${@:2}" | tee $OUT/clusters_${1}.csv

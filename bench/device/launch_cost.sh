#!/bin/bash
# One device call: what a near-empty kernel costs on this GPU (bench/device/launch_cost.py),
# timed by CUPTI in a stream and by ncu alone.
#   bash bench/device/launch_cost.sh TAG       (TAG: h100, h200)
# Writes $OUT/launch_cost_TAG.csv (CUPTI) and $OUT/launch_cost_TAG_ncu.csv (ncu's raw page).
set -u
TAG=${1:-h100}; T=${TMPDIR:-/tmp}; mkdir -p $OUT
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 bench/device/launch_cost.py $OUT/launch_cost_$TAG.csv 300 || exit 1
# ncu flushes the caches and serialises every launch: the setting model-1.x is fitted in
$NCU --clock-control none --csv --page raw --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max \
  python3 bench/device/launch_cost.py --ncu > $OUT/launch_cost_${TAG}_ncu.csv 2> $T/ncu.err
echo "ncu rc=$?"; tail -3 $T/ncu.err
sed -i "s#$PWD/##g; s#$T/##g" $OUT/launch_cost_${TAG}_ncu.csv

#!/bin/bash
# One device call: bench/device/tlb_chase.cu run (three repeats of each state) and its chase
# kernels under ncu (--clock-control none, caches flushed before each launch as ncu does).
#   bash bench/device/tlb_chase.sh TAG [STEPS]   (TAG names the files: h200)
# Writes $OUT/tlb_chase_TAG.csv and $OUT/tlb_chase_TAG_ncu.csv.
set -u
TAG=${1:-h200}; STEPS=${2:-256}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build_run tlb_chase $TAG $STEPS
ncu_csv $OUT/tlb_chase_${TAG}_ncu.csv --kernel-name regex:chase \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,lts__t_sector_hit_rate.pct \
  $T/tlb_chase $STEPS

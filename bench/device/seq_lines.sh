#!/bin/bash
# One device call: bench/device/seq_lines.cu run (three repeats of each case) and its
# kernels under ncu (--clock-control none, caches flushed before each launch).
#   bash bench/device/seq_lines.sh TAG [ITERS]   (TAG names the files: h200)
# Writes $OUT/seq_lines_TAG.csv, $OUT/seq_lines_TAG_ncu.csv and (ncu without its cache flush)
# $OUT/seq_lines_TAG_ncu_nocache.csv.
set -u
TAG=${1:-h200}; ITERS=${2:-256}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build_run seq_lines $TAG $ITERS
ncu_csv $OUT/seq_lines_${TAG}_ncu.csv --kernel-name regex:lines_walk --cache-control all \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
  $T/seq_lines $ITERS
# the SASS of the walk: which load the compiler chose and what hint it carries
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump)
$CUOBJDUMP -sass $T/seq_lines | grep -E "LDG|Function" | head -20
# the same kernels without ncu's flush, to tell what the flush takes out
ncu_csv $OUT/seq_lines_${TAG}_ncu_nocache.csv --kernel-name regex:lines_walk --cache-control none \
  --metrics gpu__time_duration.sum,sm__cycles_active.max,lts__t_sector_hit_rate.pct,dram__bytes_read.sum \
  $T/seq_lines $ITERS

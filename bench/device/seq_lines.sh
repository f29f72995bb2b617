#!/bin/bash
# One device call: bench/device/seq_lines.cu run (three repeats of each case) and its
# kernels under ncu (--clock-control none, caches flushed before each launch).
#   bash bench/device/seq_lines.sh TAG [ITERS]   (TAG names the files: h200)
# Writes $OUT/seq_lines_TAG.csv, $OUT/seq_lines_TAG_ncu.csv and (ncu without its cache flush)
# $OUT/seq_lines_TAG_ncu_nocache.csv.
set -u
TAG=${1:-h200}; ITERS=${2:-256}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build seq_lines || exit 1
$T/seq_lines $ITERS > $OUT/seq_lines_$TAG.csv || exit 1
cat $OUT/seq_lines_$TAG.csv
$NCU --clock-control none --csv --page raw --kernel-name regex:lines_walk --cache-control all \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
  $T/seq_lines $ITERS > $OUT/seq_lines_${TAG}_ncu.csv 2> $T/ncu.err
echo "ncu rc=$?"; tail -3 $T/ncu.err
sed -i "s#$T/##g" $OUT/seq_lines_${TAG}_ncu.csv
# the SASS of the walk: which load the compiler chose and what hint it carries
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump)
$CUOBJDUMP -sass $T/seq_lines | grep -E "LDG|Function" | head -20
# the same kernels without ncu's flush, to tell what the flush takes out
$NCU --clock-control none --cache-control none --csv --page raw --kernel-name regex:lines_walk \
  --metrics gpu__time_duration.sum,sm__cycles_active.max,lts__t_sector_hit_rate.pct,dram__bytes_read.sum \
  $T/seq_lines $ITERS > $OUT/seq_lines_${TAG}_ncu_nocache.csv 2> $T/ncu.err
echo "ncu (no flush) rc=$?"
sed -i "s#$T/##g" $OUT/seq_lines_${TAG}_ncu_nocache.csv

#!/bin/bash
# One device call: the held-out steps' one-block per-head sums on their own, under ncu with
# caches flushed and without the flush (a few counters, one replay pass), and flushed with
# the held-out profiles' `core` counters (many passes; bench/device/ncu_reduce_rows.py).
#   bash bench/device/ncu_reduce_rows.sh TAG
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum,launch__block_size,launch__grid_size
for cc in all none; do
  timeout 200 $NCU --profile-from-start off --clock-control none --cache-control $cc --csv --page raw \
    --kernel-name regex:reduce_kernel --metrics $M python3 bench/device/ncu_reduce_rows.py \
    > $OUT/ncu_reduce_rows_${TAG}_${cc}.csv 2> $T/ncu.err
  echo "cache-control $cc rc=$? $(grep -c reduce_kernel $OUT/ncu_reduce_rows_${TAG}_${cc}.csv) sums"
done
CORE=$(PYTHONPATH=. python3 -c "from simfront.capture.metrics import METRIC_SETS; print(','.join(METRIC_SETS['core']))")
timeout 300 $NCU --profile-from-start off --clock-control none --cache-control all --csv --page raw \
  --kernel-name regex:reduce_kernel --metrics $M,$CORE python3 bench/device/ncu_reduce_rows.py \
  > $OUT/ncu_reduce_rows_${TAG}_core.csv 2> $T/ncu.err
echo "core rc=$? $(grep -c reduce_kernel $OUT/ncu_reduce_rows_${TAG}_core.csv) sums"
grep -i "pass" $T/ncu.err | head -2

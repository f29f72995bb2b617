#!/bin/bash
# One device call: the held-out steps' one-block per-head sums on their own, under ncu with
# caches flushed and without the flush (a few counters, one replay pass), and flushed with
# the held-out profiles' `core` counters (many passes; bench/device/ncu_reduce_rows.py).
#   bash bench/device/ncu_reduce_rows.sh TAG     writes $OUT/ncu_reduce_rows_TAG_{all,none,core}.csv
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum,launch__block_size,launch__grid_size
CORE=$(PYTHONPATH=. python3 -c "from simfront.capture.metrics import METRIC_SETS; print(','.join(METRIC_SETS['core']))")
for cc in all none core; do
  flush=$cc; metrics=$M
  [ $cc = core ] && flush=all && metrics=$M,$CORE
  ncu_csv $OUT/ncu_reduce_rows_${TAG}_${cc}.csv --profile-from-start off --cache-control $flush \
    --kernel-name regex:reduce_kernel --metrics $metrics python3 bench/device/ncu_reduce_rows.py
done

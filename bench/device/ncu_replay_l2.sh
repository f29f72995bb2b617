#!/bin/bash
# One device call: PyTorch sums of tensors the kernel before wrote, under ncu with caches
# flushed, with one replay pass (a few counters) and with the held-out profiles' counter set
# (`core`, many passes), beside 0 and 8 GB of other tensors (bench/device/ncu_replay_l2.py).
#   bash bench/device/ncu_replay_l2.sh TAG       writes $OUT/ncu_replay_l2_TAG_*.csv
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
ONE=gpu__time_duration.sum,gpc__cycles_elapsed.max,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum
CORE=$(PYTHONPATH=. python3 -c "from simfront.capture.metrics import METRIC_SETS; print(','.join(METRIC_SETS['core']))")
for gb in 0 8; do
  for set in one core; do
    M=$ONE; [ $set = core ] && M=$ONE,$CORE
    ncu_csv $OUT/ncu_replay_l2_${TAG}_${set}_${gb}gb.csv --profile-from-start off \
      --cache-control all --kernel-name regex:'reduce_kernel|elementwise' --metrics $M \
      python3 bench/device/ncu_replay_l2.py $gb
  done
done
$NCU --version | tail -1

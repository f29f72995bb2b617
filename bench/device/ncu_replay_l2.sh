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
    timeout 240 $NCU --profile-from-start off --clock-control none --cache-control all --csv --page raw \
      --kernel-name regex:'reduce_kernel|elementwise' --metrics $M \
      python3 bench/device/ncu_replay_l2.py $gb > $OUT/ncu_replay_l2_${TAG}_${set}_${gb}gb.csv 2> $T/ncu.err
    echo "$set ${gb}GB rc=$? $(grep -c reduce_kernel $OUT/ncu_replay_l2_${TAG}_${set}_${gb}gb.csv) sums"
    grep -i "pass\|error" $T/ncu.err | head -3
  done
done
$NCU --version | tail -1

#!/bin/bash
# The paper step's log-softmax forward and backward on the whole GPU and on green contexts of
# fewer SMs (bench/device/softmax_l2.py): times, then ncu's DRAM bytes and L2 hit rate of one
# call of each on each SM count (the L2 flushed, clocks left alone).
#   bash bench/device/softmax_l2.sh TAG [SMS]     (SMS default "132 96 64 32")
# Writes $OUT/softmax_l2_TAG.json and $OUT/softmax_l2_TAG_smsN_ncu.csv.
set -u
TAG=${1:-h200}; SMS=${2:-"132 96 64 32"}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 bench/device/softmax_l2.py --sms "$(echo $SMS | tr ' ' ,)" -o $OUT/softmax_l2_$TAG.json || exit 1
for n in $SMS; do
  ncu_csv $OUT/softmax_l2_${TAG}_sms${n}_ncu.csv --kernel-name regex:SoftMax \
    --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,launch__grid_size \
    python3 bench/device/softmax_l2.py --once --sms $n
done
# With STALLS=1: where the forward's and backward's warps wait, whole GPU and 64 SMs (ncu's
# warp-state, scheduler, memory and compute sections), into $OUT/softmax_l2_TAG_smsN_stalls.csv
if [ "${STALLS:-0}" = 1 ]; then
  for n in 132 64; do
    ncu_csv $OUT/softmax_l2_${TAG}_sms${n}_stalls.csv --kernel-name regex:SoftMax --launch-skip 1 \
      --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
      --metrics smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,dram__bytes_read.sum \
      python3 bench/device/softmax_l2.py --once --sms $n
  done
fi

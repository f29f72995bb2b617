#!/bin/bash
# The paper step's log-softmax on the first 128 rows of its logits (25.7 MB read, as much
# written: the L2 holds them between calls), on the whole GPU and 64 and 32 SMs of a green
# context, the rows resident in the L2 and, with the L2 emptied before each call, not
# (bench/device/softmax_l2.py --rows 128 [--flush]); then ncu's warp states of the forward
# on 64 SMs with its rows resident (the set-up call leaves them there; ncu's cache control
# off). Beside softmax_l2.sh's 8192 rows: what the forward's waits on 64 SMs are without
# the DRAM.
#   bash bench/device/softmax_resident.sh TAG
# Writes $OUT/softmax_l2_TAG_rows128[_flushed].json and $OUT/softmax_l2_TAG_rows128_sms64_stalls.csv.
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 bench/device/softmax_l2.py --rows 128 --sms 132,64,32 -o $OUT/softmax_l2_${TAG}_rows128.json || exit 1
python3 bench/device/softmax_l2.py --rows 128 --flush --sms 132,64,32 \
  -o $OUT/softmax_l2_${TAG}_rows128_flushed.json || exit 1
ncu_csv $OUT/softmax_l2_${TAG}_rows128_sms64_stalls.csv --kernel-name regex:SoftMaxForward \
  --launch-skip 1 --cache-control none --section WarpStateStats --section SchedulerStats \
  --metrics smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,gpc__cycles_elapsed.max \
  python3 bench/device/softmax_l2.py --once --rows 128 --sms 64

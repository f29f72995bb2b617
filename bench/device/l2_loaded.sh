#!/bin/bash
# One device call: an L2 hit's latency under the whole GPU's L2 load (bench/device/l2_loaded.cu:
# a pointer chase on each of N SMs while S warps of each stream L2 hits), then ncu's L2
# throughput of four of its launches and of the paper step's log-softmax on 32, 64 and 96
# SMs (bench/device/softmax_l2.py), the L2's busy share the model leaves as a bandwidth.
#   bash bench/device/l2_loaded.sh TAG [HOPS]     (TAG names the files: h200)
# Writes $OUT/l2_loaded_TAG.csv, $OUT/l2_loaded_TAG_sass.txt,
# $OUT/l2_loaded_TAG_N_S_MODE_ncu.csv and $OUT/l2_loaded_TAG_softmax_smsN_ncu.csv.
set -u
TAG=${1:-h200}; HOPS=${2:-2048}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
microbench l2_loaded $TAG $HOPS
L2="gpc__cycles_elapsed.max,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_requests_srcunit_tex_op_read.sum,dram__bytes_read.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,launch__grid_size,launch__block_size"
for cfg in "132 31 rw" "64 31 rw" "32 31 rw" "64 31 read"; do
  set -- $cfg
  ncu_csv $OUT/l2_loaded_${TAG}_$1_$2_$3_ncu.csv --kernel-name loaded --metrics $L2 \
    $T/l2_loaded $HOPS $1 $2 $3
done
for n in 96 64 32; do
  ncu_csv $OUT/l2_loaded_${TAG}_softmax_sms${n}_ncu.csv --kernel-name regex:SoftMaxForward \
    --metrics $L2 python3 bench/device/softmax_l2.py --once --sms $n
done

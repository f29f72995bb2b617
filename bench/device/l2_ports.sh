#!/bin/bash
# One device call: bench/device/l2_ports.cu timed (median of 5) and profiled (ncu: the L2's
# sectors by operation, its throughput, cycles) on the GPU the call gets.
#   bash bench/device/l2_ports.sh TAG [SMS ...]   (TAG names the files: h100; SMS: green
#                                                  contexts of that many SMs as well)
# Writes $OUT/l2_ports_TAG[_smsN].csv and $OUT/l2_ports_TAG[_smsN]_ncu.csv.
set -u
TAG=${1:-h100}; shift; T=${TMPDIR:-/tmp}; mkdir -p $OUT
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc); NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
$NVCC -O3 -arch=sm_90 -o $T/l2_ports bench/device/l2_ports.cu -lcuda || exit 1
for sms in 0 "$@"; do
  f=l2_ports_$TAG; [ "$sms" != 0 ] && f=${f}_sms$sms
  $T/l2_ports 5 $sms > $OUT/$f.csv || exit 1
  $NCU --clock-control none --kernel-name lines_op --csv --page raw \
    --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --metrics gpc__cycles_elapsed.max,gpu__time_duration.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,launch__sm_count \
    $T/l2_ports 1 $sms > $OUT/${f}_ncu.csv 2> $T/ncu.err
  echo "$f: ncu rc=$?"; tail -3 $T/ncu.err
  cat $OUT/$f.csv
done

#!/bin/bash
# One device call: bench/device/l2_ports.cu timed (median of 5) and profiled (ncu: the L2's
# sectors by operation, its throughput, cycles) on the GPU the call gets.
#   bash bench/device/l2_ports.sh TAG       (TAG names the files: h100)
# Writes $OUT/l2_ports_TAG.csv and $OUT/l2_ports_TAG_ncu.csv.
set -u
TAG=${1:-h100}; T=${TMPDIR:-/tmp}; mkdir -p $OUT
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc); NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
$NVCC -O3 -arch=sm_90 -o $T/l2_ports bench/device/l2_ports.cu || exit 1
$T/l2_ports 5 > $OUT/l2_ports_$TAG.csv || exit 1
$NCU --clock-control none --kernel-name lines_op --csv --page raw \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
  --metrics gpc__cycles_elapsed.max,gpu__time_duration.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
  $T/l2_ports 1 > $OUT/l2_ports_${TAG}_ncu.csv 2> $T/ncu.err
echo "ncu rc=$?"; tail -3 $T/ncu.err
cat $OUT/l2_ports_$TAG.csv

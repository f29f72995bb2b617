#!/bin/bash
# One device call: bench/device/mem_rows.cu timed (median of 5) and profiled (ncu: DRAM
# bytes, L2 hit rate, cycles) on the GPU the call gets: the whole GPU (rows and chase), then
# the rows in green contexts of each SM count given, and (w) the chase with writes.
#   bash bench/device/mem_rows.sh TAG [SMS|w ...]     (TAG names the files: h100, h200)
#   ONLY=w bash bench/device/mem_rows.sh h100          (the chase with writes alone)
#   ONLY="rw0 rw64" bash bench/device/mem_rows.sh h100 (the rows writing their last pass out,
#                                                       whole GPU and 64 SMs)
# Writes $OUT/mem_rows_TAG[_smsN|_writes].csv and $OUT/mem_rows_TAG[_smsN|_writes]_ncu.csv.
set -u
TAG=${1:-h100}; shift; T=${TMPDIR:-/tmp}; mkdir -p $OUT
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc); NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
$NVCC -O3 -arch=sm_90 -o $T/mem_rows bench/device/mem_rows.cu -lcuda || exit 1
[ -z "${ONLY:-}" ] && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem \
  --format=csv > $OUT/mem_rows_${TAG}_gpu.csv
list="0 $*"; [ -n "${ONLY:-}" ] && list=$ONLY   # ONLY="w": that run alone
for sms in $list; do
  f=mem_rows_$TAG; what=all
  if [ "$sms" = w ]; then f=${f}_writes; what=chasew; sms=0
  elif [ "${sms#rw}" != "$sms" ]; then f=${f}_rowsw${sms#rw}; what=rowsw; sms=${sms#rw}
  elif [ "$sms" != 0 ]; then f=${f}_sms$sms; what=rows; fi
  t0=$(date +%s)
  $T/mem_rows 5 $sms $what > $OUT/$f.csv || exit 1
  $NCU --clock-control none --kernel-name regex:'^(rows|chase)$' --csv --page raw \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,gpc__cycles_elapsed.max,launch__sm_count \
    $T/mem_rows 1 $sms $what > $OUT/${f}_ncu.csv 2> $T/ncu.err
  echo "$f: ncu rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $T/ncu.err
done

#!/bin/bash
# What l2_ports.sh and store_shapes.sh share: one microbenchmark of bench/device/ compiled,
# timed (its own median of REPS=5) and profiled under ncu, on the whole GPU and in green
# contexts of SMS SMs (the program's second argument).
#   bash bench/device/green_ncu.sh PROG "NCU_ARGS" TAG [SMS ...]
# NCU_ARGS: the kernel filter and what to collect. Writes $OUT/PROG_TAG[_smsN].csv (the
# program's rows) and $OUT/PROG_TAG[_smsN]_ncu.csv (ncu's raw page, one launch a record).
set -u
PROG=$1; NCU_ARGS=$2; TAG=${3:-h100}; shift 3; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build $PROG || exit 1
for sms in 0 "$@"; do
  f=${PROG}_$TAG; [ "$sms" != 0 ] && f=${f}_sms$sms
  $T/$PROG 5 $sms > $OUT/$f.csv || exit 1
  # shellcheck disable=SC2086  # NCU_ARGS is a list of ncu's options
  $NCU --clock-control none --csv --page raw $NCU_ARGS $T/$PROG 1 $sms > $OUT/${f}_ncu.csv 2> $T/ncu.err
  echo "$f: ncu rc=$?"; tail -3 $T/ncu.err
  sed -i "s#$T/##g" $OUT/${f}_ncu.csv  # the program's path: this machine's, not the data's
  cat $OUT/$f.csv
done

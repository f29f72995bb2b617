#!/bin/bash
# Where the paper step's log-softmax forward waits, instruction by instruction, on 132 and on
# 64 SMs of a green context (ncu's SourceCounters: per SASS instruction, executions and
# warp-state samples; clocks and caches left alone), beside the model's waits of the same
# binary (simfront.sim.model.waits; PyTorch's precompiled kernel, the trace's own code).
#   bash bench/device/softmax_pc.sh TAG
# Writes $OUT/softmax_pc_TAG_smsN.csv.
set -u
TAG=${1:-h200}; mkdir -p $OUT
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for n in 132 64; do
  $NCU --clock-control none --cache-control none --section SourceCounters --page source \
    --print-source sass --csv --kernel-name regex:SoftMaxForward --launch-skip 1 \
    --launch-count 1 python3 bench/device/softmax_l2.py --once --sms $n \
    > $OUT/softmax_pc_${TAG}_sms$n.csv 2> $OUT/softmax_pc_${TAG}_sms$n.err
  echo "sms $n: ncu rc=$?"; tail -2 $OUT/softmax_pc_${TAG}_sms$n.err
done

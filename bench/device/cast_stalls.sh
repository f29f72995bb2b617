#!/bin/bash
# One device call: where a streaming cast's warps wait on this GPU. For each of
# cast_stalls.py's two casts, on the whole GPU and in a green context of 32 SMs: ncu's
# warp states, occupancy, launch and memory sections (raw page), and for the whole GPU the
# source page (per SASS instruction: executions and warp-state samples).
#   bash bench/device/cast_stalls.sh TAG      Writes $OUT/cast_stalls_TAG/.
set -u
TAG=${1:-h200}; D=$OUT/cast_stalls_$TAG; mkdir -p $D
. "$(dirname "$0")/tools.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $D/gpu.csv
$NCU --version > $D/ncu_version.txt
python3 -c "import torch; print(torch.__version__)" > $D/torch_version.txt
SECTIONS="--section WarpStateStats --section Occupancy --section LaunchStats --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats"
for op in bf16-fp32 fp32-bf16; do
  for sms in 0 32; do
    # shellcheck disable=SC2086  # SECTIONS is a list of ncu's options
    ncu_csv $D/${op}_sms${sms}.csv --profile-from-start off $SECTIONS \
      python3 bench/device/cast_stalls.py $op --sms $sms
  done
  $NCU --clock-control none --profile-from-start off --section SourceCounters \
    --page source --print-source sass --csv python3 bench/device/cast_stalls.py $op \
    > $D/${op}_source.csv 2> $T/ncu.err
  echo "source $op rc=$?"; tail -2 $T/ncu.err
done
ls -l $D

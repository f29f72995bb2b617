#!/bin/bash
# One device call: hardware what-ifs of the shipped steps, timed with CUPTI.
#   [L2SET=MIB] bash bench/device/whatif.sh "mamba2_lm:paper mamba1_lm:paper" SMS [l2]
# SMS: the SM counts (green contexts), e.g. all,96,64,32 on the H100, all on the H200;
# L2SET: also time each step with MIB of the L2 set aside for a pinned buffer.
# Writes $OUT/whatif.tgz: per step DIR/timeline-<condition>.{csv,json}; with "l2", the
# persisting-L2 microbenchmark's CSV too. Runs from the repository root; .carry/wheels holds
# the mamba_ssm wheel (and zstandard).
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/whatif; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $W/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/gpu.csv
cat $W/gpu.csv
for job in $1; do
  wl=${job%%:*}; rest=${job#*:}; preset=${rest%%:*}; sets=""
  [ "$rest" != "$preset" ] && for kv in $(echo ${rest#*:} | tr ';' ' '); do sets="$sets --set $kv"; done
  name=$(echo "$wl-$preset${sets// --set /_}" | tr '=' '-')
  echo "== $name"
  t0=$(date +%s)
  timeout ${TO:-300} python3 -m simfront.workloads.run $wl --preset $preset --iterations 2 $sets \
    --timeline $W/$name --sms "$2" ${L2SET:+--l2-setaside $L2SET} > $W/$name.log 2>&1
  echo "rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warning $W/$name.log | tail -6
done
if [ "${3:-}" = l2 ]; then
  nvcc -O3 -arch=sm_90 bench/device/l2_persist.cu -o $W/l2_persist && \
    $W/l2_persist 24 > $W/l2_persist.csv 2> $W/l2_persist.log
  cat $W/l2_persist.log; cat $W/l2_persist.csv | tr '\n' ' '; echo
fi
tar czf $OUT/whatif.tgz --exclude whatif/pip.txt -C $T whatif
ls -la $OUT

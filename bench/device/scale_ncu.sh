#!/bin/bash
# One device call: ncu over EVERY launch of the model-size steps with the one-pass `time`
# metric set (simfront.capture.metrics.TIME), then CUPTI timelines of the 130M Mamba2
# sequence-length points (fixed 8192 tokens a step; 16384 at batch 1).
#   bash bench/device/scale_ncu.sh ["mamba2_lm:130m mamba1_lm:130m"] [ncu timeout s]
# Carry .carry/wheels (mamba_ssm). Writes $OUT/scale_ncu.tgz.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/scale; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
for job in ${1:-mamba2_lm:130m mamba1_lm:130m}; do
  wl=${job%%:*}; preset=${job#*:}; t0=$(date +%s)
  python3 -c "
import sys
from simfront.capture.driver import Step, profile
r = profile(Step('$wl', '$preset', 2, 1), '$W/ncu_${wl}_$preset', metrics='time', timeout=${2:-200})
print(r.stats)" 2>&1 | grep -v Warn | tail -3
  echo "$job ncu rc=$? $(( $(date +%s) - t0 )) s"
done
for pt in "512 16" "1024 8" "2048 4" "4096 2" "8192 1" "16384 1"; do
  set -- $pt; t0=$(date +%s)
  timeout 120 python3 -m simfront.workloads.run mamba2_lm --preset 130m --iterations 2 \
    --set seqlen=$1 --set batch=$2 --timeline $W/timeline_mamba2_130m_L$1 --sms all,64 \
    > $W/timeline_L$1.log 2>&1
  echo "L$1 B$2 rc=$? $(( $(date +%s) - t0 )) s: $(grep '^all\|^sms' $W/timeline_L$1.log | tr '\n' ' ')"
done
tar czf $OUT/scale_ncu.tgz -C $T scale; ls -la $OUT

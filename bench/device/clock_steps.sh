#!/bin/bash
# One device call: the SM clock of every kernel of a step on fewer SMs. ncu (`--clock-control
# none`, the `clock` metric set: cycles, time, the SMs' active cycles, tensor and FMA pipes)
# profiles the step's windowed iteration on the whole GPU and on each SM count of a green
# context; CUPTI timelines of the same step, in the same call, give each kernel's time in the
# stream, so cycles over stream time is its clock there.
#   bash bench/device/clock_steps.sh ["mamba2_lm:paper mamba1_lm:paper"] [SMS: "all 96 64 32"]
# Carry .carry/wheels (mamba_ssm). Writes $OUT/clock_steps.tgz after every run (what a
# command stopped at its limit leaves is kept): per step ncu_<wl>_<preset>_<sms>.csv,
# timeline-*.csv/json, and the logs.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/clock_steps; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu \
  --format=csv > $W/gpu.csv; cat $W/gpu.csv
pack() { tar czf $OUT/clock_steps.tgz -C $T clock_steps; }
for job in ${1:-mamba2_lm:paper mamba1_lm:paper}; do
  wl=${job%%:*}; preset=${job#*:}; t0=$(date +%s)
  # the timelines first: they also fill Triton's autotuning cache for the ncu runs
  timeout 200 python3 -m simfront.workloads.run $wl --preset $preset --iterations 2 \
    --timeline $W/timeline_${wl}_$preset --sms "$(echo ${2:-all 96 64 32} | tr ' ' ,)" \
    > $W/timeline_${wl}_$preset.log 2>&1
  echo "$job timelines rc=$? $(( $(date +%s) - t0 )) s"; grep '^all\|^sms' $W/timeline_${wl}_$preset.log
  pack
  for sms in ${2:-all 96 64 32}; do
    t0=$(date +%s); n=$sms; [ "$sms" = all ] && n=None
    python3 -c "
from simfront.capture.driver import Step, profile
r = profile(Step('$wl', '$preset', 2, 1, sms=$n), '$W/ncu_${wl}_${preset}_$sms', metrics='clock',
            timeout=${TO:-240})
print(r.stats)" 2>&1 | grep -v Warn | tail -3
    echo "$job sms=$sms ncu $(( $(date +%s) - t0 )) s"
    pack
  done
done
ls -la $OUT

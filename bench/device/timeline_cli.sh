#!/bin/bash
# One device call: `simfront timeline` end to end on the GPU (CUPTI through torch.profiler,
# green contexts), storing beside a copy of a shipped trace set and pairing with it.
#   bash bench/device/timeline_cli.sh [WORKLOAD:PRESET] [SMS]   (default mamba2_lm:tiny all,64)
# Writes $OUT/timeline_cli.tgz: the timelines, the copy's whatif/ folder and the command's
# JSON (per condition: launches, kernel/step ms, how many launches paired exactly, by name
# only (autotuned shape) or by category only (another library kernel)). Runs from the
# repository root; .carry/wheels holds the mamba_ssm wheel, as for whatif.sh.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/timeline_cli; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $W/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
job=${1:-mamba2_lm:tiny}; wl=${job%%:*}; preset=${job#*:}
set_dir=$W/set; mkdir -p $set_dir
cp -r traces/$wl-$preset/. $set_dir/ && rm -rf $set_dir/whatif
t0=$(date +%s)
timeout ${TO:-400} python3 -m simfront timeline $wl --preset $preset --iterations 2 \
  --sms "${2:-all,64}" --out $W/tl --trace-set $set_dir > $W/timeline.json 2> $W/timeline.log
echo "rc=$? $(( $(date +%s) - t0 )) s"; cat $W/timeline.json; grep -v Warning $W/timeline.log | tail -6
rm -f $set_dir/kernel-*
tar czf $OUT/timeline_cli.tgz --exclude timeline_cli/pip.txt -C $T timeline_cli
ls -la $OUT

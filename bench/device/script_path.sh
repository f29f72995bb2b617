#!/bin/bash
# One device call: a user's own training-step script through the documented commands of
# docs/script-step.md (trace with box sampling, ncu paired with the trace, CUPTI timelines
# on green contexts at all/96/64/32 SMs), stored as one set.
#   bash bench/device/script_path.sh SCRIPT NAME [SCRIPT ARGS...]
# Carry: .carry/wheels (mamba_ssm), .carry/deps, .carry/nvbit/core (NVBit's public core, for
# `make tracer`) and the script. Results: $OUT/NAME.tgz (the stored set), $OUT/logs.tgz.
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/sp; rm -rf $W; mkdir -p $W/logs $OUT
SCRIPT=$1; N=$2; shift 2
# .carry/deps: wheels of simfront's own dependencies the device's Python lacks (zstandard)
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl \
  $(ls .carry/deps/*.whl 2>/dev/null) > $W/logs/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
simfront() { python3 -m simfront "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $W/logs/gpu.csv
t0=$(date +%s)
make -s tracer NVBIT_DIR=$R/.carry/nvbit > $W/logs/tracer_build.txt 2>&1 || tail -20 $W/logs/tracer_build.txt
export SIMFRONT_TRACER=$R/simfront/capture/tracer/build/simfront_tracer.so
echo "tracer built in $(( $(date +%s) - t0 )) s"
tm() { local t0=$(date +%s); "$@"; local rc=$?; echo "   rc=$rc $(( $(date +%s) - t0 )) s: ${*:1:2}"; }
S=$W/store/$N
tm simfront trace $SCRIPT "$@" --sample box:8 --out $W/cap --store $W/store --name $N --timeout 270 \
  > $W/logs/trace.txt 2>&1; tail -3 $W/logs/trace.txt
tm simfront profile $SCRIPT "$@" --metrics core --out $W/ncu --trace-dir $S --timeout 230 \
  > $W/logs/profile.txt 2>&1; tail -3 $W/logs/profile.txt
cp $W/ncu/ncu*.csv $S/ 2>/dev/null
tm simfront timeline $SCRIPT "$@" --sms all,96,64,32 -o $W/tl --trace-set $S \
  > $W/logs/timeline.txt 2>&1; tail -8 $W/logs/timeline.txt
[ -d $S ] && tar czf $OUT/$N.tgz -C $W/store $N
tar czf $OUT/logs.tgz -C $W logs $(cd $W && ls -d ncu/*.json ncu/*.log tl 2>/dev/null)
ls -la $OUT

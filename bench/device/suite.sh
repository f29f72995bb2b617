#!/bin/bash
# One device call: tracer smoke cases on smoke_app, then capture_suite.py JOBS.
#   bash bench/device/suite.sh "m2 m1" [budget_s]
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1
R=$PWD; TR=$R/.carry/bin/simfront_tracer.so
T=${TMPDIR:-/tmp}; S=$T/s; mkdir -p $S
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $S/pip.txt 2>&1
export PYTHONPATH=$T/site:$R SUITE_WORK=$T/suite
MF=$(tail -1 bench/device/ncu_metrics.txt)
tm() { local t0=$(date +%s%N); "$@"; local rc=$?; echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"; }
trace() { local name=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name"; mkdir -p $S/$name
  ( cd $S/$name && tm timeout ${TO:-120} env "${envs[@]}" SIMFRONT_TRACE_DIR=$S/$name/trace LD_PRELOAD=$TR NVTX_INJECTION64_PATH=$TR "$@" ) > $S/$name/log.txt 2>&1
  tail -4 $S/$name/log.txt; cat $S/$name/trace/kernelslist.g 2>/dev/null | tr '\n' ' '; echo; }
if [ "${SMOKE:-1}" = 1 ]; then
APP=$R/.carry/bin/smoke_app
TO=40 trace app_profiler SIMFRONT_WINDOW=profiler -- $APP
TO=40 trace app_sample SIMFRONT_WINDOW=profiler SIMFRONT_SAMPLE_STRIDE=2 SIMFRONT_SAMPLE_MAX_CTAS=3 -- $APP
python3 bench/device/check_smoke.py $S 2>&1 | tail -40
fi
timeout ${3:-540} python3 bench/device/capture_suite.py $1 --budget ${2:-500} 2>&1 | grep -v "Warning\|warn(" 
ls $OUT/meta.tar.gz >/dev/null 2>&1 || python3 bench/device/capture_suite.py pack
tar czf $OUT/smoke.tgz -C $T s; ls -la $OUT

#!/bin/bash
# One device call: capture sets of traces/corpus.yaml on the GPU through simfront's own
# commands (trace with box sampling, ncu, CUPTI timelines on green contexts).
#   bash bench/device/heldout.sh "ho-m2-d1024 ho-m1" [STAGES]
# STAGES (default "trace profile timeline"): which of the three to run for each set.
# REQUIRE_GPU=H200 stops before any capture unless the GPU's name holds that string.
# PROFILE=per-config profiles one launch per launch configuration instead of every launch;
# METRICS (default core) is the profile's metric set (full: warp states, sectors, pipes).
# A profile of a set not traced in the same call goes to $OUT/<set>-ncu.tgz.
# Carry: .carry/wheels (mamba_ssm), .carry/deps and .carry/nvbit/core (NVBit's public core: the tracer is
# built there with `make tracer`, never part of the repository).
# Results: $OUT/<set>.tgz (the stored set: traces, launches, ncu, whatif/), $OUT/logs.tgz.
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/ho; mkdir -p $W/logs $OUT
# .carry/deps: wheels of simfront's own dependencies the device's Python lacks (zstandard)
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl \
  $(ls .carry/deps/*.whl 2>/dev/null) > $W/logs/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
simfront() { python3 -m simfront "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $W/logs/gpu.csv
# REQUIRE_GPU=H200: a set named for one GPU is never captured on another the lease gave
if [ -n "${REQUIRE_GPU:-}" ] && ! grep -q "$REQUIRE_GPU" $W/logs/gpu.csv; then
  echo "not a $REQUIRE_GPU: nothing captured"; exit 3; fi
if [ ! -f .carry/bin/simfront_tracer.so ] && [ -d .carry/nvbit/core ]; then
  t0=$(date +%s)
  make -s tracer NVBIT_DIR=$R/.carry/nvbit > $W/logs/tracer_build.txt 2>&1 || tail -20 $W/logs/tracer_build.txt
  mkdir -p .carry/bin && cp simfront/capture/tracer/build/simfront_tracer.so .carry/bin/
  echo "tracer built in $(( $(date +%s) - t0 )) s"
fi
export SIMFRONT_TRACER=$R/.carry/bin/simfront_tracer.so
STAGES=${2:-trace profile timeline}
T0=$(date +%s); BUDGET=${BUDGET:-520}
# a stage starts only while the call has time for it (BUDGET seconds from the start)
left() { [ $(( $(date +%s) - T0 )) -lt $BUDGET ] || { echo "   skipped $1: budget"; return 1; }; }
tm() { local t0=$(date +%s); "$@"; local rc=$?; echo "   rc=$rc $(( $(date +%s) - t0 )) s: ${*:1:2}"; }
has() { case " $STAGES " in *" $1 "*) left $1_$N;; *) return 1;; esac; }
for N in $1; do
  A=$(python3 bench/device/corpus_args.py $N); TA=$(python3 bench/device/corpus_args.py $N --timeline)
  S=$W/store/$N; echo "== $N: $A"
  if has trace; then
    tm simfront trace $A --sample box:8 -o $W/cap_$N --store $W/store --name $N --timeout 300 \
      > $W/logs/trace_$N.txt 2>&1; tail -3 $W/logs/trace_$N.txt
  fi
  if has profile; then
    if [ "${PROFILE:-}" = per-config ]; then PC=--per-config; else PC=; fi
    TD=; [ -d $S ] && TD="--trace-dir $S"
    tm simfront profile $A --metrics ${METRICS:-core} $PC -o $W/ncu_$N $TD --timeout 300 \
      > $W/logs/profile_$N.txt 2>&1; tail -3 $W/logs/profile_$N.txt
    if [ -d $S ]; then cp $W/ncu_$N/ncu*.csv $W/ncu_$N/ncu_matched.csv $S/ 2>/dev/null
    else tar czf $OUT/$N-ncu.tgz -C $W ncu_$N; fi
  fi
  if has timeline; then
    TS=; [ -d $S ] && TS="--trace-set $S"
    tm simfront timeline $TA --sms all,96,64,32 -o $W/tl_$N $TS \
      > $W/logs/timeline_$N.txt 2>&1; tail -3 $W/logs/timeline_$N.txt
  fi
  [ -d $S ] && tar czf $OUT/$N.tgz -C $W/store $N
done
tar czf $OUT/logs.tgz -C $W logs $(cd $W && ls -d ncu_*/*.json ncu_*/*.log tl_* 2>/dev/null)
ls -la $OUT

#!/bin/bash
# One device call: bench/device/ifetch.cu's cold instruction fetches, timed by the blocks
# themselves, then under ncu with caches flushed before each launch (as the held-out
# profiles ran) and without the flush, its SASS's layout, and (with NVBit's public core
# carried in .carry/nvbit/core) the launches traced with simfront's tracer so that the model
# can run them (bench/bench_ifetch.py).
#   [CORE=1] bash bench/device/ifetch.sh TAG   writes $OUT/ifetch_TAG.csv,
#     ifetch_TAG_ncu_{all,none}.csv (CORE=1: and _core.csv, the held-out profiles' counters),
#     ifetch_TAG_sass.txt, ifetch_TAG_traces.tar
set -u
TAG=${1:-h200}; R=$PWD; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build_run ifetch $TAG 2
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.max,smsp__inst_executed.sum,launch__grid_size
for cc in all none; do
  ncu_csv $OUT/ifetch_${TAG}_ncu_$cc.csv --kernel-name regex:hops --cache-control $cc \
    --metrics $M $T/ifetch 2
done
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump)
$CUOBJDUMP -sass $T/ifetch > $OUT/ifetch_${TAG}_sass.txt
grep -cE "FFMA" $OUT/ifetch_${TAG}_sass.txt
if [ -d .carry/nvbit/core ]; then
  t0=$(date +%s)
  make -s tracer NVBIT_DIR=$R/.carry/nvbit > $T/tracer_build.txt 2>&1 || { tail -20 $T/tracer_build.txt; exit 1; }
  SO=$R/simfront/capture/tracer/build/simfront_tracer.so
  echo "tracer built in $(( $(date +%s) - t0 )) s: $(sha256sum $SO | cut -c1-16)"
  d=$OUT/ifetch_${TAG}_traces
  timeout 200 env LD_PRELOAD=$SO NOBANNER=1 CUDA_MODULE_LOADING=EAGER SIMFRONT_TRACE_DIR=$d \
    SIMFRONT_KERNEL_REGEX="hops" SIMFRONT_SAMPLE_MAX_CTAS=8 SIMFRONT_COMPRESS=xz \
    $T/ifetch 2 > $d.csv 2> $d.err
  echo "traced: rc=$? $(ls $d | wc -l) files"; tail -3 $d.err
  sed -i "s#$OUT/##g" $d.err
  tar cf $OUT/ifetch_${TAG}_traces.tar -C $OUT ifetch_${TAG}_traces && rm -r $d
fi
# the same launches under the held-out profiles' `core` counters (many replay passes, caches
# flushed before each): whether a pass after the first finds the code in a cache the flush
# leaves alone
if [ "${CORE:-0}" = 1 ]; then
  CORE_M=$(PYTHONPATH=. python3 -c "from simfront.capture.metrics import METRIC_SETS; print(','.join(METRIC_SETS['core']))")
  ncu_csv $OUT/ifetch_${TAG}_ncu_core.csv --kernel-name regex:hops --cache-control all \
    --metrics $M,$CORE_M $T/ifetch 2
fi

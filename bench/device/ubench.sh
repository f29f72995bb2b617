#!/bin/bash
# One H100 call (~3-4 min, every step under its own timeout): the pipe microbenchmarks of bench/device/ubench.cu with their
# hardware truth (ncu per launch, CUDA events) and our tracer's trace of the same launches.
#   bash bench/device/ubench.sh            (carry .carry/bin/simfront_tracer.so)
# Writes $OUT/ubench.tar.xz: ubench/{gpu.csv,versions.txt,launches.csv,events*.csv,
# ubench.sass,ncu.csv,ncu.log,trace/ (first:2 CTAs, all launches),trace-12/ (first:12
# CTAs of FFMA/HMMA at 1 and 16 warps/SM: checks that sampling does not move the model)}.
set -u
export NOBANNER=1
R=$PWD; TR=$R/.carry/bin/simfront_tracer.so; P=${TMPDIR:-/tmp}; T=$P/ubench
rm -rf $T; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv > $T/gpu.csv
cat $T/gpu.csv
{ nvcc --version | tail -2; ncu --version | tail -1; sha256sum $TR; } > $T/versions.txt 2>&1
nvcc -O3 -arch=sm_90 bench/device/ubench.cu -o $T/ubench || { el "build failed"; exit 1; }
(cuobjdump -sass $T/ubench > $T/ubench.sass) 2>&1 | tail -2
$T/ubench list > $T/launches.csv; el "$(($(wc -l < $T/launches.csv) - 1)) launches"
# Untraced timing: the first pass also warms the GPU clock.
$T/ubench run > $T/events1.csv && $T/ubench run > $T/events.csv; el "events rc=$?"
M=gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg,sm__cycles_active.avg,sm__cycles_active.max,gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_fp16.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_tensor.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread
timeout ${NCU_TO:-100} ncu --clock-control none --metrics $M --export $T/ubench -f $T/ubench run > $T/ncu.log 2>&1
el "ncu rc=$?"; tail -3 $T/ncu.log
ncu --import $T/ubench.ncu-rep --csv --page raw > $T/ncu.csv 2>>$T/ncu.log; rm -f $T/ubench.ncu-rep
el "ncu.csv $(wc -l < $T/ncu.csv) lines"
tracerun() { local dir=$1 max=$2 to=$3; shift 3; mkdir -p $T/$dir
  ( cd $T && timeout $to env SIMFRONT_TRACE_DIR=$T/$dir SIMFRONT_WINDOW=all SIMFRONT_COMPRESS=xz \
      SIMFRONT_SAMPLE_STRIDE=1 SIMFRONT_SAMPLE_MAX_CTAS=$max CUDA_MODULE_LOADING=EAGER \
      LD_PRELOAD=$TR $T/ubench run "$@" > $T/$dir.log 2>&1 )
  el "$dir rc=$? $(ls $T/$dir/*.traceg.xz 2>/dev/null | wc -l) kernels $(du -sh $T/$dir | cut -f1)"; tail -2 $T/$dir.log; }
tracerun trace 2 ${TRACE_TO:-150}
# Six times the blocks for a few kernels: the model's answer must not depend on how many
# blocks stand for SM 0's.
tracerun trace-12 12 ${FULL_TO:-30} '^(ffma|hmma)_ilp[18]_w(1|16)$'
tar cJf $OUT/ubench.tar.xz -C $P ubench
ls -la $OUT; el done

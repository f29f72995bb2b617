#!/bin/bash
# Device call 1: smoke test of simfront's tracer on the H100 (see bench/RESULTS.md).
# Runs from the repository root with .carry/ holding the built tracer, the smoke app,
# Accel-Sim's tracer (reference), the shared scripts and the mamba_ssm wheel.
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1
R=$PWD; T=$R/.carry/bin/simfront_tracer.so; A=$R/.carry/accelsim/tracer_tool.so
S=$OUT/s; mkdir -p $S
M=$(head -1 bench/device/ncu_metrics.txt); MF=$(tail -1 bench/device/ncu_metrics.txt)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; which xz zstd ncu g++;
  ncu --version | tail -1; python3 -c "import torch,triton,sys;print(sys.version.split()[0],torch.__version__,torch.version.cuda,triton.__version__)";
  python3 -c "import torch_geometric,einops;print('pyg',torch_geometric.__version__,'einops',einops.__version__)"; } > $S/env.txt 2>&1
python3 -m pip install -q --no-deps --no-compile --target /tmp/site .carry/wheels/*.whl > $S/pip.txt 2>&1
export PYTHONPATH=/tmp/site:$R
python3 -c "import mamba_ssm;print('mamba_ssm',mamba_ssm.__version__)" >> $S/env.txt 2>&1
cat $S/env.txt
tm() { local t0=$(date +%s%N); "$@"; local rc=$?; echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"; }
trace() { # name env... -- cmd...
  local name=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name"; mkdir -p $S/$name
  ( cd $S/$name && tm timeout ${TO:-120} env "${envs[@]}" SIMFRONT_TRACE_DIR=$S/$name/trace LD_PRELOAD=$T NVTX_INJECTION64_PATH=$T "$@" ) > $S/$name/log.txt 2>&1
  tail -3 $S/$name/log.txt; ls $S/$name/trace 2>/dev/null | wc -l; du -sh $S/$name/trace 2>/dev/null
}
APP=$R/.carry/bin/smoke_app
echo "== app plain"; tm $APP
trace app_profiler SIMFRONT_WINDOW=profiler -- $APP
trace app_nvtx SIMFRONT_WINDOW=nvtx:step -- $APP
trace app_regex SIMFRONT_WINDOW=all SIMFRONT_KERNEL_REGEX=shared_sum -- $APP
trace app_sample SIMFRONT_WINDOW=profiler SIMFRONT_SAMPLE_STRIDE=2 SIMFRONT_SAMPLE_MAX_CTAS=3 -- $APP
trace app_list SIMFRONT_LIST_ONLY=1 -- $APP
echo "== app ncu"; ( tm ncu --profile-from-start off --clock-control none --csv --page raw --metrics $MF $APP > $S/app_ncu_full.csv ) 2>&1 | tail -2
head -c 600 $S/app_ncu_full.csv; grep -c '"' $S/app_ncu_full.csv
echo "== app accelsim"; mkdir -p $S/app_accelsim; ( cd $S/app_accelsim && tm timeout 120 env ACTIVE_FROM_START=0 LD_PRELOAD=$A $APP ) > $S/app_accelsim/log.txt 2>&1; tail -2 $S/app_accelsim/log.txt; ls $S/app_accelsim/traces
G=$R/bench/device/graph_step.py
echo "== graph plain"; tm python3 $G
trace graph_profiler SIMFRONT_WINDOW=profiler -- python3 $G
echo "== graph ncu"; ( tm ncu --profile-from-start off --clock-control none --csv --page raw --metrics $M python3 $G > $S/graph_ncu.csv ) 2>&1 | tail -2
P=$R/.carry/ref/step.py
echo "== step plain"; tm python3 $P
TO=240 trace step_profiler SIMFRONT_WINDOW=profiler -- python3 $P
echo "== step ncu"; ( tm ncu --profile-from-start off --clock-control none --csv --page raw --metrics $M python3 $P > $S/step_ncu.csv ) 2>&1 | tail -2
L=$R/.carry/ref/lm_step.py
echo "== lm plain"; tm python3 $L Mamba2 256 1 256 1 2
TO=200 trace lm2_sampled SIMFRONT_WINDOW=profiler SIMFRONT_SAMPLE_MAX_CTAS=8 -- python3 $L Mamba2 256 1 256 1 2
cd $OUT && tar czf smoke.tgz s && ls -la $OUT

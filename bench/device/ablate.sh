#!/bin/bash
# One device call: vector-work ablation of the SSD kernels of sets of traces/corpus.yaml
# (docs/ablation.md). For each set: one CUPTI timeline of the
# unchanged step with TRITON_PRINT_AUTOTUNING=1 (the configs the kernels were tuned to),
# then for each variant a package copy with the kernels rewritten and pinned to those
# configs (`simfront workloads ablate`), timed on all SMs and on 64 and traced (the
# ablated kernels only, box:8 sampling) with that copy first on PYTHONPATH.
#   bash bench/device/ablate.sh "ho-m2-d1024 ho-m2-d512"
# KERNELS (default the two below) and VARIANTS (default "base exp2 noexp") change the run;
# BUDGET (s, default 520): no new step starts after it. A step that finished (its .ok
# marker in out/ablate/abl_<set>/) is not run again while the machine is warm: call again
# to go on.
# Carry: .carry/wheels (mamba_ssm) and .carry/nvbit/core (the tracer is built there).
# Results: $OUT/abl_<set>.tgz (abl_<set>/: autotune.log, report.txt (simfront workloads
# ablate-report, also printed), <variant>/ with ablation.json, timeline-{all,sms64}.csv/.json
# and trace/), $OUT/abl_logs.tgz.
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1 TRITON_CACHE_AUTOTUNING=1
# W is an ignored folder of the checkout: it stays on a warm machine, so a later call goes on
R=$PWD; T=${TMPDIR:-/tmp}; W=${ABL_DIR:-$R/out/ablate}; mkdir -p $W/logs $OUT
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $W/logs/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
simfront() { python3 -m simfront "$@"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $W/logs/gpu.csv
if [ ! -f .carry/bin/simfront_tracer.so ] && [ -d .carry/nvbit/core ]; then
  make -s tracer NVBIT_DIR=$R/.carry/nvbit > $W/logs/tracer_build.txt 2>&1 || tail -5 $W/logs/tracer_build.txt
  mkdir -p .carry/bin && cp simfront/capture/tracer/build/simfront_tracer.so .carry/bin/
fi
export SIMFRONT_TRACER=$R/.carry/bin/simfront_tracer.so
KERNELS=${KERNELS:-_chunk_scan_fwd_kernel _chunk_scan_chunk_state_bwd_dx_kernel}
VARIANTS=${VARIANTS:-base exp2 noexp}
# find_spec of a top-level package locates it without importing it (mamba_ssm imports CUDA)
PKG=$(python3 -c "import importlib.util;print(importlib.util.find_spec('mamba_ssm').submodule_search_locations[0])")
KA=; for K in $KERNELS; do KA="$KA --kernel $K"; done
WIN="kernel:($(echo $KERNELS | tr ' ' '|'))"
T0=$(date +%s); BUDGET=${BUDGET:-520}
left() { [ $(( $(date +%s) - T0 )) -lt $BUDGET ] || { echo "   skipped $1: budget"; return 1; }; }
# step NAME LOG CMD...: runs CMD unless done before ($D/.NAME.ok), one line of outcome
step() {
  local name=$1 log=$2; shift 2
  [ -f $D/.$name.ok ] && return 0
  left $name || return 1
  local t0=$(date +%s); "$@" > $log 2>&1; local rc=$?
  echo "   $name: rc=$rc $(( $(date +%s) - t0 )) s"
  [ $rc = 0 ] && touch $D/.$name.ok || tail -2 $log
  return $rc
}
for N in $1; do
  A=$(python3 bench/device/corpus_args.py $N); TA=$(python3 bench/device/corpus_args.py $N --timeline)
  D=$W/abl_$N; mkdir -p $D; echo "== $N"
  # one Triton cache per set, fresh for the tuning run (a cached tuning prints nothing), so
  # the kernels not ablated keep the tiling they got there in every variant's run
  export TRITON_CACHE_DIR=$W/tcache_$N
  [ -f $D/.tune.ok ] || rm -rf $TRITON_CACHE_DIR
  TRITON_PRINT_AUTOTUNING=1 step tune $D/autotune.log simfront timeline $TA --sms all -o $D/tuned &&
  for V in $VARIANTS; do
    P=$W/pkg_$N/$V; mkdir -p $D/$V
    step ${V}_pkg $D/$V/ablate.txt simfront workloads ablate --package $PKG $KA --variant $V \
      --config-from $D/autotune.log -o $P || continue
    cp $P/ablation.json $D/$V/
    PYTHONPATH=$P:$PYTHONPATH step ${V}_timeline $D/$V/timeline.txt \
      simfront timeline $TA --sms all,64 -o $D/$V
    PYTHONPATH=$P:$PYTHONPATH step ${V}_trace $D/$V/trace.txt \
      simfront trace $A --window "$WIN" --sample box:8 -o $D/$V/trace --timeout 300
  done
  [ -d $D/base ] && simfront workloads ablate-report $D > $D/report.txt 2>&1; cut -c1-100 $D/report.txt 2>/dev/null
  tar czf $OUT/abl_$N.tgz -C $W abl_$N
  S=$(stat -c %s $OUT/abl_$N.tgz); [ $S -gt 16777216 ] && echo "   abl_$N.tgz is $((S >> 20)) MiB (over 16)"
done
tar czf $OUT/abl_logs.tgz -C $W logs
ls -l $OUT | tail -n +2

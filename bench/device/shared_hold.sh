#!/bin/bash
# One device call: occupancy what-ifs of held-out steps (simfront.workloads.shared_hold).
#   HOLDS=64,117 bash bench/device/shared_hold.sh "h200-ho-hybrid h200-ho-m2-d512"
# First the hold's own check (bench/device/shared_hold_check.py: blocks a probe finds on an
# SM, held and not, against the count the hold should leave); then per set of
# traces/corpus.yaml a CUPTI timeline of the step on the whole GPU and with HOLDS KiB of
# shared memory held around each launch of the SSD kernels (KERNELS, fnmatch patterns).
# BUDGET (s, default 540): no set starts after it. Carry: .carry/wheels (mamba_ssm).
# Writes $OUT/hold.tgz: check.jsonl, per set hold_<set>/timeline-<condition>.{csv,json}.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/hold; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $W/pip.txt 2>&1
export PYTHONPATH=$T/site:$R TRITON_CACHE_DIR=$R/out/hold_tcache
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $W/gpu.csv
T0=$(date +%s); BUDGET=${BUDGET:-540}
KERNELS=${KERNELS:-"_chunk_* _state_passing_* _bmm_chunk_*"}
KA=; for K in $KERNELS; do KA="$KA --hold-kernels $K"; done
nvcc -arch=sm_90 -cubin -o $W/probe.cubin bench/device/shared_hold_probe.cu &&
  python3 bench/device/shared_hold_check.py $W/probe.cubin | tee $W/check.jsonl
echo "check rc=${PIPESTATUS[0]}"
for N in $1; do
  [ $(( $(date +%s) - T0 )) -lt $BUDGET ] || { echo "skipped $N: budget"; continue; }
  TA=$(python3 bench/device/corpus_args.py $N --timeline)
  t0=$(date +%s)
  timeout ${TO:-400} python3 -m simfront timeline $TA --sms all --hold-shared ${HOLDS:-64,117} \
    $KA -o $W/hold_$N > $W/hold_$N.log 2>&1
  echo "== $N rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warning $W/hold_$N.log | tail -4 | cut -c1-300
done
tar czf $OUT/hold.tgz --exclude hold/pip.txt --exclude hold/probe.cubin -C $T hold
ls -la $OUT

#!/bin/bash
# One device call: what the Mamba2 paper step's SSD kernels (Triton: _chunk_*, _bmm_*,
# _state_*) wait on, on the whole GPU and on fewer SMs. ncu (`--clock-control none`) with
# its WarpStateStats and MemoryWorkloadAnalysis sections (warp stall reasons, L1/L2 sectors
# by operation, L2 and shared-memory throughput) over those launches of the windowed
# iteration, the window on N SMs of a green context (`simfront profile --sms N`).
#   bash bench/device/ssd_stalls.sh ["all 64 32"] [SET]
# SET: a Mamba2 step of traces/corpus.yaml (held_out or seen) instead of the paper step;
# the results then go to ssd_stalls_SET. KERNELS: another ncu --kernel-name regex than the
# SSD kernels' (e.g. 'reduce_kernel|multi_tensor_apply'), with TAG naming its results
# (ssd_stalls_SET_TAG).
# Carry .carry/wheels (mamba_ssm). Writes $OUT/ssd_stalls[_SET].tgz after every run.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
SET=${2:-}; TAG=${TAG:-}; NAME=ssd_stalls${SET:+_$SET}${TAG:+_$TAG}
KERNELS=${KERNELS:-^_(chunk|bmm|state)}
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/$NAME; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl \
  $(ls .carry/deps/*.whl 2>/dev/null) > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $W/gpu.csv
pack() { tar czf $OUT/$NAME.tgz -C $T $NAME; }
for sms in ${1:-all 64 32}; do
  t0=$(date +%s); n=$sms; [ "$sms" = all ] && n=None
  python3 -c "
import sys
sys.path.insert(0, 'bench/device')
from corpus_args import step_args
from simfront.capture.driver import Step, profile
a = step_args('$SET') if '$SET' else ['mamba2_lm']
sets = tuple(v for k, v in zip(a, a[1:]) if k == '--set')
r = profile(Step(a[0], 'paper', 2, 1, overrides=sets, sms=$n), '$W/ncu_$sms', metrics='time',
            timeout=${TO:-240}, extra_args=('--section', 'WarpStateStats', '--section',
            'MemoryWorkloadAnalysis', '--section', 'MemoryWorkloadAnalysis_Tables',
            '--kernel-name', 'regex:$KERNELS'))
print(r.stats)" 2>&1 | grep -v Warn | tail -3
  echo "sms=$sms ncu $(( $(date +%s) - t0 )) s"
  pack
done
ls -la $OUT

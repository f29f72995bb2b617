#!/bin/bash
# One device call: ncu's memory-unit sections (speed of light, memory workload tables, warp
# states) on the kernels the model-1.6 sharing left furthest off: Mamba1's selective scan
# (the backward 23% slower on the H100 than modelled) and Mamba2's layer norm forward and
# _chunk_scan_bwd_dcb, of the paper steps' windowed iteration.
#   bash bench/device/ncu_units.sh
# Carry .carry/wheels (mamba_ssm). Writes $OUT/ncu_units_*.csv.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
mkdir -p $OUT
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for job in "mamba1_lm selective_scan 4" "mamba2_lm _layer_norm_fwd|_chunk_scan_bwd_dcb 4"; do
  set -- $job; wl=$1; rx=$2; n=$3; t0=$(date +%s)
  timeout 200 $NCU --profile-from-start off --clock-control none --kernel-name "regex:$rx" \
    --launch-count $n --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section LaunchStats \
    --csv --page raw \
    python3 -m simfront.workloads.run $wl --preset paper --iterations 2 --window 1 \
    > $OUT/ncu_units_$wl.csv 2> $T/ncu_$wl.err
  echo "$wl rc=$? $(( $(date +%s) - t0 )) s, $(wc -l < $OUT/ncu_units_$wl.csv) lines"
  tail -3 $T/ncu_$wl.err
done
ls -la $OUT

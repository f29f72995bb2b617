#!/bin/bash
# One device call: where cuBLAS's GEMMs' warps wait on this GPU, instruction by instruction.
# The fit step mamba2_lm at its paper preset (the set mamba2_lm-paper-box's step), its
# windowed iteration under ncu: the source page (per SASS instruction: executions and
# warp-state samples) and the raw page's warp states of every nvjet GEMM launch in it.
#   bash bench/device/gemm_pc.sh [TAG]
# Carry .carry/wheels (mamba_ssm) and traces/corpus.yaml. Writes $OUT/gemm_pc_TAG/.
set -u
export PYTHONUNBUFFERED=1
TAG=${1:-h200}; R=$PWD; T=${TMPDIR:-/tmp}; D=$OUT/gemm_pc_$TAG; mkdir -p $D
. "$(dirname "$0")/tools.sh"
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $D/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $D/gpu.csv
$NCU --version > $D/ncu_version.txt
RUN="mamba2_lm --preset paper --iterations 2 --window 1"
t0=$(date +%s)
$NCU --profile-from-start off --clock-control none --kernel-name "regex:^nvjet" \
  --section SourceCounters --page source --print-source sass --csv \
  python3 -m simfront.workloads.run $RUN > $D/source.csv 2> $D/ncu_source.log
echo "source rc=$? $(( $(date +%s) - t0 )) s; $(wc -l < $D/source.csv) lines"; tail -2 $D/ncu_source.log
ncu_csv $D/warp_states.csv --profile-from-start off --kernel-name "regex:^nvjet" \
  --section WarpStateStats --section LaunchStats --section SpeedOfLight \
  python3 -m simfront.workloads.run $RUN
xz -9 $D/source.csv
ls -l $D

#!/bin/bash
# One device call (at most 9 minutes): model-size training steps captured with launch
# deduplication and a CTA cap (--sample first:8), their CUPTI timelines (wall step, GPU-busy
# share), and ncu (core metrics) over as many launches of the window as the time left allows.
#   bash bench/device/capture_scale.sh ["m2_130m m1_130m"] [budget_s]
#   (also the box-sampled paper steps: bash bench/device/capture_scale.sh "m2pb m1pb" 500)
# Jobs are capture_suite.py's: m2_130m (Mamba2 130M, 24 layers, 4 x 2048) first, then
# m1_130m with the time that remains; NCU_SKIP=N starts ncu's range N launches into the window.
# Carry: .carry/bin/simfront_tracer.so (the dedup tracer, 1.2) or .carry/nvbit/core (NVBit's public
# core, to build it there), and .carry/wheels/ (mamba_ssm, zstandard).
# Results: $OUT/results.jsonl, meta.tar.gz (logs, launch records, multiplicity, ncu CSVs,
# timelines), kernels*.tar (trace kernels).
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R SUITE_WORK=$T/suite
mkdir -p $SUITE_WORK $OUT
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee $SUITE_WORK/gpu.csv
# The tracer is built on the device (nvcc and the driver are there) when only NVBit's public
# core/ was carried (.carry/nvbit/core); never part of the repository.
if [ ! -f .carry/bin/simfront_tracer.so ] && [ -d .carry/nvbit/core ]; then
  t0=$(date +%s)
  make -s tracer NVBIT_DIR=$R/.carry/nvbit > $T/tracer_build.txt 2>&1 || tail -20 $T/tracer_build.txt
  mkdir -p .carry/bin && cp simfront/capture/tracer/build/simfront_tracer.so .carry/bin/
  echo "tracer built in $(( $(date +%s) - t0 )) s: $(sha256sum .carry/bin/simfront_tracer.so)"
fi
B=${2:-480}
timeout $((B + 40)) python3 bench/device/capture_suite.py ${1:-m2_130m m1_130m} --budget $B 2>&1 \
  | grep -v "Warning\|warn("
ls $OUT/meta.tar.gz >/dev/null 2>&1 || python3 bench/device/capture_suite.py pack
ls -la $OUT

#!/bin/bash
# One device call: the Mamba2 paper step's SSD kernels (a fit set's step), instruction by
# instruction: ncu's SourceCounters per SASS instruction (executed instructions, predicated-on
# threads, L2 sectors a global access asked for) of one launch per kernel of the windowed
# iteration, to hold against the traced lanes' addresses of the same kernels
# (bench/ssd_source.py).
#   bash bench/device/ssd_source.sh [KERNEL_REGEX]
# Carry .carry/wheels (mamba_ssm), .carry/deps. Writes $OUT/ssd_source.tgz.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$T/ssd_source; rm -rf $W; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl \
  $(ls .carry/deps/*.whl 2>/dev/null) > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.csv
ncu --version > $W/ncu_version.txt
RX=${1:-^_(chunk_scan_fwd|chunk_scan_chunk_state_bwd_dx|chunk_state_fwd|chunk_scan_bwd_dcb|bmm_chunk_fwd)}
t0=$(date +%s)
timeout 400 ncu --profile-from-start off --clock-control none --kernel-name "regex:$RX" \
  --launch-count 5 --section SourceCounters --import-source no --page source \
  --print-source sass --csv \
  python3 -m simfront.workloads.run mamba2_lm --preset paper --iterations 2 --window 1 \
  > $W/source.csv 2> $W/ncu.log
echo "rc=$? ncu $(( $(date +%s) - t0 )) s; $(wc -l < $W/source.csv) lines"
tail -5 $W/ncu.log
head -c 1500 $W/source.csv
tar czf $OUT/ssd_source.tgz -C $T ssd_source

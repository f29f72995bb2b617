#!/bin/bash
# One device call: the SM clock by operation and SM count (bench/device/dvfs.py, sampled by
# nvidia-smi; nothing device-wide is set), then ncu on the LM head's two GEMMs in green
# contexts: per-SM active cycles (is the work even over the context's SMs?) and the clock.
#   bash bench/device/dvfs.sh TAG [SMS]     (TAG: h100 or h200; SMS default 132,96,64,32)
# Carry .carry/wheels/ (mamba_ssm, for the SSD forward). Writes $OUT/dvfs_TAG/. The per-SM
# (--print-metric-instances) step failed on the H100 for these cluster kernels (ncu: "Failed
# to prepare kernel for profiling"); the sums and maxima of the first step stand in for it.
set -u
TAG=${1:-h100}; SMS=${2:-132,96,64,32}; T=${TMPDIR:-/tmp}; D=$OUT/dvfs_$TAG
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $T/pip.txt 2>&1
export PYTHONPATH=$T/site:$PWD PYTHONUNBUFFERED=1
mkdir -p $D
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee $D/gpu.csv
python3 bench/device/dvfs.py $D --sms $SMS 2>&1 | grep -v "Warning\|warn("
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
M=gpc__cycles_elapsed.max,gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.sum,launch__grid_size,launch__sm_count,launch__uses_green_context,launch__cluster_size,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
$NCU --clock-control none --csv --page raw --kernel-name regex:nvjet --metrics $M \
  python3 bench/device/dvfs.py --ncu --sms $SMS --ops lmhead_dx,lmhead_dw > $D/lmhead_ncu.csv 2> $T/ncu.err
echo "ncu rc=$?"; tail -3 $T/ncu.err
$NCU --clock-control none --csv --page raw --print-metric-instances values --kernel-name regex:nvjet \
  --metrics sm__cycles_active.max,launch__sm_count -c 8 \
  python3 bench/device/dvfs.py --ncu --sms $SMS --ops lmhead_dx > $D/lmhead_dx_per_sm.csv 2> $T/ncu2.err
echo "ncu per-SM rc=$?"; tail -3 $T/ncu2.err
ls -la $D

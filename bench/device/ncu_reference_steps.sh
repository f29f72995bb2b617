#!/usr/bin/env bash
# Hardware truth for the shared H100 traces: profile, under ncu, exactly the steps that
# produced ../shared/data/h100/traces (step.py for mamba1_scan_step; lm_step.py Mamba2 256 1
# 256 1 2 for mamba2_lm_partial), windowed by cudaProfilerStart/Stop as the traces were.
# Run on the H100 machine through the device tool, from the repo root, with .carry carried:
#   bash bench/device/ncu_reference_steps.sh
set -euo pipefail
OUT=$(realpath -m "${OUT:-out/ncu_ref}")
SITE=${TMPDIR:-/tmp}/site
mkdir -p "$OUT" "$SITE"
python3 -m pip install -q --no-deps --no-index --target "$SITE" .carry/wheels/mamba_ssm-*.whl
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
metrics=$(cat bench/device/ncu_metrics.txt)
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv; "$NCU" --version;
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } > "$OUT/versions.txt" 2>&1
cd .carry/ref
t0=$(date +%s)
python3 step.py > "$OUT/step_untraced.log" 2>&1
echo "step.py untraced wall: $(( $(date +%s) - t0 )) s" >> "$OUT/versions.txt"
profile() {  # name, command...: a report file, then its raw page as CSV (app output kept apart)
  local name=$1; shift
  local t0=$(date +%s)
  "$NCU" --profile-from-start off --clock-control none --metrics "$metrics" -f -o "/tmp/$name" "$@" \
    > "$OUT/$name.app.log" 2>&1 || tail -20 "$OUT/$name.app.log"
  echo "$name ncu wall: $(( $(date +%s) - t0 )) s" >> "$OUT/versions.txt"
  "$NCU" --import "/tmp/$name.ncu-rep" --csv --page raw > "$OUT/$name.ncu.csv"
}
profile mamba1_scan_step python3 step.py
profile mamba2_lm_partial python3 lm_step.py Mamba2 256 1 256 1 2
wc -l "$OUT"/*.csv

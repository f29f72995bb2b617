#!/bin/bash
# One device call: where the SSD kernels' warps wait, instruction by instruction, on the
# same binary the model runs: a fit set's SSD kernels, the two ablated ones
# (traces/SET/ablation) pinned to the tiling of its ablation (`simfront workloads ablate --variant base --config-from
# traces/SET/ablation/autotune.log`), then ncu's SourceCounters (per SASS instruction:
# executions and warp-state samples) of each kernel's launches in the window (two a kernel
# in a two-layer step), and a box:8 trace of the
# same kernels on this GPU (so the trace's code addresses are those ncu names).
#   bash bench/device/ssd_pc.sh SET
# Carry .carry/wheels (mamba_ssm), .carry/deps, .carry/nvbit/core (the tracer), and
# traces/SET/ablation/autotune.log beside traces/corpus.yaml. Writes $OUT/ssd_pc_SET.tgz.
set -u
export PYTHONUNBUFFERED=1 NOBANNER=1 TRITON_CACHE_AUTOTUNING=1
SET=${1:?SET}; R=$PWD; T=${TMPDIR:-/tmp}; W=$T/ssd_pc_$SET; rm -rf $W; mkdir -p $W
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl \
  $(ls .carry/deps/*.whl 2>/dev/null) > $W/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
simfront() { python3 -m simfront "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.csv
ncu --version > $W/ncu_version.txt
if [ ! -f .carry/bin/simfront_tracer.so ] && [ -d .carry/nvbit/core ]; then
  make -s tracer NVBIT_DIR=$R/.carry/nvbit > $W/tracer_build.txt 2>&1 || tail -5 $W/tracer_build.txt
  mkdir -p .carry/bin && cp simfront/capture/tracer/build/simfront_tracer.so .carry/bin/
fi
export SIMFRONT_TRACER=$R/.carry/bin/simfront_tracer.so
# the two ablated kernels are pinned; the others keep the tiling Triton tunes them to in
# the first run, which the second reads back from the autotuning cache
PINNED="_chunk_scan_fwd_kernel _chunk_scan_chunk_state_bwd_dx_kernel"
KERNELS=${KERNELS:-$PINNED _chunk_state_fwd_kernel _chunk_scan_bwd_dstates_kernel _chunk_state_bwd_db_kernel}
NK=$(echo $KERNELS | wc -w)
PKG=$(python3 -c "import importlib.util;print(importlib.util.find_spec('mamba_ssm').submodule_search_locations[0])")
KA=; for K in $PINNED; do KA="$KA --kernel $K"; done
simfront workloads ablate --package $PKG $KA --variant base \
  --config-from traces/$SET/ablation/autotune.log -o $W/pkg > $W/ablate.txt 2>&1 || tail -3 $W/ablate.txt
cp $W/pkg/ablation.json $W/
export PYTHONPATH=$W/pkg:$PYTHONPATH
A=$(python3 bench/device/corpus_args.py $SET)
# the same step for the workload runner: -n -> --iterations, --window-iteration -> --window
RUN=$(echo "$A" | sed -e 's/ -n / --iterations /' -e 's/--window-iteration /--window /')
t0=$(date +%s)
timeout 420 ncu --profile-from-start off --clock-control none \
  --kernel-name "regex:^($(echo $KERNELS | tr ' ' '|'))" --launch-count $((2 * NK)) \
  --section SourceCounters --import-source no --page source --print-source sass --csv \
  python3 -m simfront.workloads.run $RUN > $W/source.csv 2> $W/ncu.log
echo "rc=$? ncu $(( $(date +%s) - t0 )) s; $(wc -l < $W/source.csv) lines"; tail -3 $W/ncu.log
t0=$(date +%s)
simfront trace $A --window "kernel:($(echo $KERNELS | tr ' ' '|'))" --sample box:8 \
  -o $W/trace --timeout 300 > $W/trace.txt 2>&1
echo "rc=$? trace $(( $(date +%s) - t0 )) s"; tail -2 $W/trace.txt
tar czf $OUT/ssd_pc_$SET.tgz -C $T ssd_pc_$SET
ls -l $OUT

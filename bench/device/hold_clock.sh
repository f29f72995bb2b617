#!/bin/bash
# One device call: the SM clock of the paper-size Mamba2 step's SSD kernels as they run in
# the step, read by a 1 KiB shared-memory hold's holders (clock64 over %globaltimer,
# docs/occupancy.md), beside the whole-GPU timeline of the same run.
#   bash bench/device/hold_clock.sh
# Carry .carry/wheels (mamba_ssm). Writes $OUT/clock_paper/timeline-{all,shmem1k}.{csv,json}
# (the clocks: timeline-shmem1k.json's extra.held_clock_ghz) and $OUT/clock_paper.log.
T=${TMPDIR:-/tmp}; python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$T/site:$PWD PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 300 python3 -m simfront timeline mamba2_lm --preset paper --sms all --hold-shared 1 \
  --hold-kernels '_chunk_*' --hold-kernels '_state_passing_*' --hold-kernels '_bmm_chunk_*' \
  -o $OUT/clock_paper > $OUT/clock_paper.log 2>&1; echo rc=$?
python3 -c "
import json; d=json.load(open('$OUT/clock_paper/timeline-shmem1k.json')); print(json.dumps(d['extra']['held_clock_ghz']))"
tail -3 $OUT/clock_paper.log

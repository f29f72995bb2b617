#!/bin/bash
# One device call: PerfMamba's row. Mamba1 and Mamba2 LM steps (preset paper: 2 layers,
# d_model 768) along sequence length at a fixed token count a step, then along d_state at
# one length, each timed once on the whole GPU with CUPTI (`simfront timeline`, which
# records kernel time, wall step, GPU-busy share and peak memory). Read with
# `simfront analyze lengths`.
#   bash bench/device/lengths.sh [TOKENS] [LENGTHS] [DSTATE_LEN]
# defaults: 16384 tokens, lengths 64..16384, d_state sweep at 2048 (the presets' 128 and 16
# are the length sweep's points there).
# Carry: .carry/wheels (mamba_ssm). Results: $OUT/lengths.tgz (one timeline folder a point).
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
R=$PWD; T=${TMPDIR:-/tmp}; W=$R/out/lengths; mkdir -p $W $OUT
python3 -m pip install -q --no-deps --no-compile --target $T/site .carry/wheels/*.whl > $W/pip.txt 2>&1
export PYTHONPATH=$T/site:$R
simfront() { python3 -m simfront "$@"; }
TOK=${1:-16384}; LENS=${2:-64 128 256 512 1024 2048 4096 8192 16384}; DL=${3:-2048}
T0=$(date +%s); BUDGET=${BUDGET:-540}
point() {  # point NAME WORKLOAD --set ...
  local name=$1 wl=$2; shift 2
  [ -f $W/$name/timeline-all.json ] && return 0
  [ $(( $(date +%s) - T0 )) -lt $BUDGET ] || { echo "   skipped $name: budget"; return 1; }
  local t0=$(date +%s)
  simfront timeline $wl --preset paper -n 2 "$@" --sms all -o $W/$name > $W/$name.log 2>&1
  echo "   $name: rc=$? $(( $(date +%s) - t0 )) s"
}
for L in $LENS; do
  B=$(( TOK / L )); [ $B -lt 1 ] && B=1
  for wl in mamba2_lm mamba1_lm; do point ${wl%_lm}-L$L $wl --set seqlen=$L --set batch=$B; done
done
B=$(( TOK / DL ))
for S in 16 32 64; do point mamba2-L$DL-N$S mamba2_lm --set seqlen=$DL --set batch=$B --set d_state=$S; done
for S in 4 8; do point mamba1-L$DL-N$S mamba1_lm --set seqlen=$DL --set batch=$B --set d_state=$S; done
tar czf $OUT/lengths.tgz -C $R/out lengths --exclude pip.txt
ls -l $OUT | tail -n +2

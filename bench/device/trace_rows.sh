#!/bin/bash
# One device call: bench/device/mem_rows.cu's rows kernel traced with simfront's tracer (8
# CTAs of each launch, the first 8 working sets: W = 8-36 MB at 2 blocks per SM) in the
# launch shapes of the whole GPU and of green contexts of 64 and 32 SMs, so that the model
# can run the launches whose times mem_rows.sh measured (bench/data/device/mem_rows/): the
# model's SM side against a kernel whose re-reads hit the L2, on fewer SMs. NVBit cannot
# trace inside a green context (cuGreenCtxCreate: operation not supported), so the 64- and
# 32-SM launches are traced on the whole GPU with the green context's shapes (SHAPE_SMS):
# a block's instructions and addresses do not depend on where it runs.
#   bash bench/device/trace_rows.sh          (KIND=rowsw: the rows whose last pass writes;
#                                             KIND=stores: bench/device/store_shapes.cu's
#                                             stores, every shape, as store_shapes.sh runs them;
#                                             KIND=loads: load_shapes.cu's loads likewise)
# Carry: .carry/nvbit/core (NVBit's public core, to build the tracer there). Writes
# $OUT/KIND_traces.tar (KIND_smsN/: trace sets) and $OUT/KIND_smsN.err (the tracer's log).
set -u
R=$PWD; T=${TMPDIR:-/tmp}; mkdir -p $OUT; K=${KIND:-rows}
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
if [ "$K" = stores ] || [ "$K" = loads ]; then
  P=${K%s}  # store / load
  $NVCC -O3 -arch=sm_90 -o $T/prog bench/device/${P}_shapes.cu -lcuda || exit 1
  PROG="$T/prog 1 0"; REGEX="${P}_op<"; KERNELS=13
else
  $NVCC -O3 -arch=sm_90 -o $T/prog bench/device/mem_rows.cu -lcuda || exit 1
  PROG="$T/prog 1 0 $K"; REGEX='^rows\('; KERNELS=8
fi
t0=$(date +%s)
make -s tracer NVBIT_DIR=$R/.carry/nvbit > $T/tracer_build.txt 2>&1 || { tail -20 $T/tracer_build.txt; exit 1; }
SO=$R/simfront/capture/tracer/build/simfront_tracer.so
echo "tracer built in $(( $(date +%s) - t0 )) s: $(sha256sum $SO | cut -c1-16)"
for sms in 0 64 32; do
  d=$OUT/${K}_sms$sms; t0=$(date +%s)
  # env after timeout: NVBit loaded into timeout itself would not reach the child
  timeout 150 env SHAPE_SMS=$sms LD_PRELOAD=$SO NOBANNER=1 CUDA_MODULE_LOADING=EAGER SIMFRONT_TRACE_DIR=$d \
    SIMFRONT_KERNEL_REGEX="$REGEX" SIMFRONT_VERBOSE=1 SIMFRONT_SAMPLE_MAX_CTAS=8 \
    SIMFRONT_MAX_KERNELS=$KERNELS SIMFRONT_COMPRESS=xz $PROG > $d.csv 2> $d.err
  echo "sms $sms: rc=$? $(( $(date +%s) - t0 )) s, $(ls $d 2>/dev/null | wc -l) files"; grep -v "^rows" $d.err | tail -4
done
sed -i "s#$OUT/##g" $OUT/${K}_sms*.err  # the tracer logs its output folder: this machine's
tar cf $OUT/${K}_traces.tar -C $OUT ${K}_sms0 ${K}_sms64 ${K}_sms32 && rm -r $OUT/${K}_sms*/
du -sh $OUT

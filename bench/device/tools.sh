# What the device scripts share (sourced): the CUDA tools, a scratch folder, a program of
# bench/device/ built and run there (linked with the driver API that green.h uses), and
# ncu's raw page of a command as CSV.
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
T=${TMPDIR:-/tmp}
build() { $NVCC -O3 -arch=sm_90 -o "$T/$1" "bench/device/$1.cu" -lcuda; }
# build_run PROG TAG ARGS...: PROG built and run, its CSV into $OUT/PROG_TAG.csv and shown;
# the calling script stops where either fails
build_run() {
  local prog=$1 tag=$2; shift 2
  build $prog || exit 1
  $T/$prog "$@" > $OUT/${prog}_$tag.csv || exit 1
  cat $OUT/${prog}_$tag.csv
}
# sass PROG TAG: the SASS of a program build_run built, into $OUT/PROG_TAG_sass.txt
sass() {
  local cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump)
  $cuobjdump -sass "$T/$1" > "$OUT/${1}_$2_sass.txt"
}
# ncu_csv FILE NCU-ARGS... COMMAND...: ncu's raw page (clocks left alone) into FILE, its exit
# status and the end of its log said, the scratch folder taken out of the names in FILE
ncu_csv() {
  local out=$1; shift
  $NCU --clock-control none --csv --page raw "$@" > "$out" 2> $T/ncu.err
  echo "ncu $(basename "$out") rc=$?"; tail -3 $T/ncu.err
  sed -i "s#$T/##g" "$out"
}
# microbench PROG TAG ARGS...: the GPU named, PROG built and run (build_run) and its SASS
# dumped (sass): what a one-program device script does
microbench() {
  local prog=$1 tag=$2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  build_run "$@"
  sass $prog $tag
}

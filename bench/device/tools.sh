# What the device scripts share (sourced): the CUDA tools, a scratch folder, and a program
# of bench/device/ built there (linked with the driver API that green.h uses).
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
T=${TMPDIR:-/tmp}
build() { $NVCC -O3 -arch=sm_90 -o "$T/$1" "bench/device/$1.cu" -lcuda; }

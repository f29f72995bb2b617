// What a warp's load costs its SM when it misses the L1 and hits the L2, by shape: how many
// lines and sectors one load instruction asks for. The paper steps' transposing copies
// (PyTorch's elementwise_kernel on a strided view: every lane's bf16 in its own line) took
// up to twice model-1.9's time on the H100 (ncu; bench/RESULTS.md, *an SM's loads*);
// these shapes tell the line, the sector and the lane apart, as store_shapes.cu does for
// stores.
//
// Every kernel loads in a loop over a 16 MB target that stays in the L2 (first touch
// outside the timing), 8 blocks of 256 threads per SM, one load instruction per iteration,
// unrolled 8 times so that a warp has up to 8 loads in flight. Plain pointers, so that the
// loads are the workloads' LDG.E, not the read-only path's LDG.E.CONSTANT. A load's lines
// are a hash of its (warp, iteration): a line comes back to an SM at random, about as often
// as its L1 holds lines of the target (2%), where a sequential walk brings it back to the
// same warp once a pass. Shapes (lanes x bytes -> lines x sectors a line):
//   w4       32 x 4 B  -> 1 line  x 4     (a coalesced float load)
//   w8       32 x 8 B  -> 2 lines x 4
//   w16      32 x 16 B -> 4 lines x 4     (float4)
//   h2       32 x 2 B  -> 1 line  x 2     (bf16 lanes)
//   s1/s2    8/16 x 4 B -> 1 line x 1/2
//   h2x2     32 x 2 B, lanes 0-15 and 16-31 in two lines -> 2 lines x 1
//   w4x2     32 x 4 B, lanes 0-15 and 16-31 in two lines -> 2 lines x 2
//   scat     32 x 2 B, every lane its own line -> 32 lines x 1 (the transposing copy's load)
//   scat16   32 x 4 B, 2 lanes a line          -> 16 lines x 1
//   scat8    32 x 4 B, 4 lanes a line          -> 8 lines x 1
//   scat16x2 32 x 4 B, 2 lanes a line 32 B apart -> 16 lines x 2
//   scat8x4  32 x 4 B, 4 lanes a line 32 B apart -> 8 lines x 4
//
// SMS > 0 runs them in a green context of that many SMs (8 blocks per SM it holds).
//
//   nvcc -O3 -arch=sm_90 load_shapes.cu -o load_shapes -lcuda && ./load_shapes [REPS [SMS]]
// (SHAPE_SMS=N in the environment: a green context's grid of N SMs on the whole GPU.)
// Prints CSV rows: shape,lines,sectors_per_line,lanes,blocks,instructions,ms
// (host-clocked in a green context, where ncu's times are the ones to use).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <array>
#include <utility>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

enum Shape { W4, W8, W16, H2, S1, S2, H2X2, W4X2, SCAT, SCAT16, SCAT8, SCAT16X2, SCAT8X4,
             N_SHAPES };
struct ShapeInfo { const char* name; int lines; int sectors_per_line; int lanes; };
static constexpr ShapeInfo kShapes[N_SHAPES] = {
    {"w4", 1, 4, 32},      {"w8", 2, 4, 32},    {"w16", 4, 4, 32},   {"h2", 1, 2, 32},
    {"s1", 1, 1, 8},       {"s2", 1, 2, 16},    {"h2x2", 2, 1, 32},  {"w4x2", 2, 2, 32},
    {"scat", 32, 1, 32},   {"scat16", 16, 1, 32}, {"scat8", 8, 1, 32},
    {"scat16x2", 16, 2, 32}, {"scat8x4", 8, 4, 32}};

// Each warp's i-th load starts at line LINES * h(warp + i * n_warps), h a Fibonacci hash
// onto the target's 2^bits groups of LINES lines (two instructions: the loop stays light).
template <int S, int LINES>
__global__ void __launch_bounds__(256) load_op(const char* t, int bits, int iters,
                                               float* sink) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned n_warps = (gridDim.x * blockDim.x) >> 5;
  float acc = 0.f;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    const size_t line = (size_t)(((warp + (unsigned)i * n_warps) * 2654435761u) >> (32 - bits)) * LINES;
    const char* base = t + line * 128;
    if (S == W4) acc += ((const float*)base)[lane];
    else if (S == W8) { float2 v = ((const float2*)base)[lane]; acc += v.x + v.y; }
    else if (S == W16) { float4 v = ((const float4*)base)[lane]; acc += v.x + v.y + v.z + v.w; }
    else if (S == H2) acc += __half2float(((const __half*)base)[lane]);
    else if (S == S1) { if (lane < 8) acc += ((const float*)base)[lane]; }
    else if (S == S2) { if (lane < 16) acc += ((const float*)base)[lane]; }
    else if (S == H2X2) acc += __half2float(((const __half*)(base + (lane >> 4) * 128))[lane & 15]);
    else if (S == W4X2) acc += ((const float*)(base + (lane >> 4) * 128))[lane & 15];
    else if (S == SCAT) acc += __half2float(*(const __half*)(base + lane * 128));
    else if (S == SCAT16) acc += ((const float*)(base + (lane >> 1) * 128))[lane & 1];
    else if (S == SCAT8) acc += ((const float*)(base + (lane >> 2) * 128))[lane & 3];
    else if (S == SCAT16X2) acc += *(const float*)(base + (lane >> 1) * 128 + (lane & 1) * 32);
    else if (S == SCAT8X4) acc += *(const float*)(base + (lane >> 2) * 128 + (lane & 3) * 32);
  }
  if (acc == -1.f) sink[threadIdx.x] = acc;  // never: the target holds zeros
}

// First touch: the whole target into the L2, its own kernel (ncu profiles load_op only).
__global__ void touch(float4* t, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    t[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// One load_op per shape, in the order of Shape.
using LoadKernel = void (*)(const char*, int, int, float*);
template <size_t... S>
static std::array<LoadKernel, N_SHAPES> kernels_of(std::index_sequence<S...>) {
  return {load_op<(int)S, kShapes[S].lines>...};
}
static const std::array<LoadKernel, N_SHAPES> kKernels =
    kernels_of(std::make_index_sequence<N_SHAPES>());

static int bits_of(size_t n) { int b = 0; while ((size_t(1) << (b + 1)) <= n) ++b; return b; }

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms;
  cudaStream_t st = shapes_stream(argc, argv, &sms);
  // 16 MB: stays in the L2 on the whole GPU (32 MB did not: 54-79% read hits there)
  const size_t bytes = (size_t)(getenv("LOAD_MB") ? atoi(getenv("LOAD_MB")) : 16) << 20;
  char* t; CK(cudaMalloc(&t, bytes));
  float* sink; CK(cudaMalloc(&sink, 256 * sizeof(float)));
  const int blocks = sms * 8;
  const int iters = 256;
  printf("shape,lines,sectors_per_line,lanes,blocks,instructions,ms\n");
  for (int s = 0; s < N_SHAPES; ++s) {
    touch<<<blocks, 256, 0, st>>>((float4*)t, bytes / 16);
    CK(cudaGetLastError());
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r)
      ms.push_back(time_ms(st, [&] {
        kKernels[s]<<<blocks, 256, 0, st>>>(t, bits_of(bytes / 128 / kShapes[s].lines),
                                            iters, sink);
        CK(cudaGetLastError());
      }));
    const ShapeInfo& k = kShapes[s];
    print_shape_row(k.name, k.lines, k.sectors_per_line, k.lanes, blocks,
                    (long)blocks * 8 * iters, ms);
  }
  return 0;
}

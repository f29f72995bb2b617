// What a warp's store costs its SM, by shape: how many lines, sectors and active lanes one
// store instruction carries. l2_ports.cu found an SM's store path takes about 1.07 sectors
// a clock for whole 128-byte lines, yet stores of 1 or 2 sectors a line take 1.5 times a
// whole line's time per instruction (bench/RESULTS.md, *What the L2 takes in per clock*):
// neither a sector nor a request rate. These shapes tell the line, the sector and the lane
// apart, as the workloads' stores come (bf16 lanes, vector lanes, a transposing copy's
// scattered lanes).
//
// Every kernel stores in a loop over a 16 MB target that stays in the L2 (first touch
// outside the timing), 8 blocks of 256 threads per SM, one store instruction per
// iteration. Shapes (lanes x bytes -> lines x sectors a line):
//   w4     32 x 4 B  -> 1 line  x 4     (l2_ports' store)
//   w8     32 x 8 B  -> 2 lines x 4     (float2)
//   w16    32 x 16 B -> 4 lines x 4     (float4)
//   h2     32 x 2 B  -> 1 line  x 2     (bf16 lanes)
//   b1     32 x 1 B  -> 1 line  x 1     (byte lanes)
//   s1/s2/s3  8/16/24 x 4 B -> 1 line x 1/2/3 (l2_ports' store1, store2; and 3 sectors)
//   h2x2   32 x 2 B, lanes 0-15 and 16-31 in two lines -> 2 lines x 1
//   w4x2   32 x 4 B, lanes 0-15 and 16-31 in two lines -> 2 lines x 2
//   scat   32 x 4 B, every lane its own line -> 32 lines x 1 (a transposing copy's store)
//   scat8  32 x 4 B, 4 lanes a line           -> 8 lines x 1 (16 B of each)
//
// SMS > 0 runs them in a green context of that many SMs (8 blocks per SM it holds), where
// the L2's input port has room and an SM's own path shows.
//
//   nvcc -O3 -arch=sm_90 store_shapes.cu -o store_shapes -lcuda && ./store_shapes [REPS [SMS]]
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

enum Shape { W4, W8, W16, H2, B1, S1, S2, S3, H2X2, W4X2, SCAT, SCAT8, N_SHAPES };
struct ShapeInfo { const char* name; int lines; int sectors_per_line; int lanes; };
static constexpr ShapeInfo kShapes[N_SHAPES] = {
    {"w4", 1, 4, 32},   {"w8", 2, 4, 32},   {"w16", 4, 4, 32}, {"h2", 1, 2, 32},
    {"b1", 1, 1, 32},   {"s1", 1, 1, 8},    {"s2", 1, 2, 16},  {"s3", 1, 3, 24},
    {"h2x2", 2, 1, 32}, {"w4x2", 2, 2, 32}, {"scat", 32, 1, 32}, {"scat8", 8, 1, 32}};

// Each warp's i-th store starts at line (warp + i * n_warps) * LINES, masked to the target
// (a power of two of lines), so no two warps of an iteration share a line.
template <int S, int LINES>
__global__ void __launch_bounds__(256) store_op(char* __restrict__ t, unsigned mask, int iters) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned n_warps = (gridDim.x * blockDim.x) >> 5;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    const size_t line = (size_t)(((warp + (unsigned)i * n_warps) * LINES) & mask);
    char* base = t + line * 128;
    const float v = (float)i;
    if (S == W4) ((float*)base)[lane] = v;
    else if (S == W8) ((float2*)base)[lane] = make_float2(v, v);
    else if (S == W16) ((float4*)base)[lane] = make_float4(v, v, v, v);
    else if (S == H2) ((__half*)base)[lane] = __float2half(v);
    else if (S == B1) base[lane] = (char)i;
    else if (S == S1) { if (lane < 8) ((float*)base)[lane] = v; }
    else if (S == S2) { if (lane < 16) ((float*)base)[lane] = v; }
    else if (S == S3) { if (lane < 24) ((float*)base)[lane] = v; }
    else if (S == H2X2) ((__half*)(base + (lane >> 4) * 128))[lane & 15] = __float2half(v);
    else if (S == W4X2) ((float*)(base + (lane >> 4) * 128))[lane & 15] = v;
    else if (S == SCAT) *(float*)(base + lane * 128) = v;
    else if (S == SCAT8) ((float*)(base + (lane >> 2) * 128))[lane & 3] = v;
  }
}

// First touch: the whole target into the L2, its own kernel (ncu profiles store_op only).
__global__ void touch(float4* t, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    t[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// One store_op per shape, in the order of Shape.
using StoreKernel = void (*)(char*, unsigned, int);
template <size_t... S>
static std::array<StoreKernel, N_SHAPES> kernels_of(std::index_sequence<S...>) {
  return {store_op<(int)S, kShapes[S].lines>...};
}
static const std::array<StoreKernel, N_SHAPES> kKernels =
    kernels_of(std::make_index_sequence<N_SHAPES>());

static void launch_shape(int s, cudaStream_t st, int blocks, char* t, unsigned mask, int iters) {
  kKernels[s]<<<blocks, 256, 0, st>>>(t, mask, iters);
  CK(cudaGetLastError());
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms;
  cudaStream_t st = shapes_stream(argc, argv, &sms);
  const size_t bytes = 16u << 20;
  const unsigned mask = (unsigned)(bytes / 128) - 1;
  char* t; CK(cudaMalloc(&t, bytes + 32 * 128));  // scat reaches 31 lines past the mask
  CK(cudaMemset(t, 0, bytes + 32 * 128));
  const int blocks = sms * 8;
  const int iters = 256;
  printf("shape,lines,sectors_per_line,lanes,blocks,instructions,ms\n");
  for (int s = 0; s < N_SHAPES; ++s) {
    // first touch: the whole target in the L2 (its own launch under ncu)
    touch<<<blocks, 256, 0, st>>>((float4*)t, (bytes + 32 * 128) / 16);
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r)
      ms.push_back(time_ms(st, [&] { launch_shape(s, st, blocks, t, mask, iters); }));
    const ShapeInfo& k = kShapes[s];
    print_shape_row(k.name, k.lines, k.sectors_per_line, k.lanes, blocks,
                    (long)blocks * 8 * iters, ms);
  }
  return 0;
}

// Does a read wait for its own warp's stores, or for everyone's? A stream that stores a
// float4 a step beside each load moves its reads a third slower on 32 SMs of the H200 than
// the same reads alone (bench/device/dram_mix.cu, four blocks a SM, one load in flight a
// warp), and the pointer chase's next load waits ~150 ns longer after its warp's store; but
// Mamba1's selective scan, whose warps store each chunk's outputs before the next chunk's
// loads, shows no such cost. Here the same reads and writes are split between warps:
//   both    every warp loads a float4 and stores one a step (dram_mix's 1:1 stream);
//   split   even warps only load, odd warps only store, as many bytes each way;
//   reads   even warps only load, odd warps idle (the split's reads without its writes);
//   half    even warps load and store a step (both's warps, as few as the split's readers),
//           odd warps idle.
// If the split reads as slowly as `half`, reads wait for the stores whoever issued them; if
// as fast as `reads`, for their own warp's stores.
// Blocks of 256 threads, 4 a SM, a 256 MiB buffer each way, grid-stride, one float4 in
// flight a warp. SMS > 0 runs them in a green context of that many SMs.
//
//   nvcc -O3 -arch=sm_90 rw_split.cu -o rw_split -lcuda && ./rw_split REPS [SMS] > out.csv
// Prints CSV rows: sms,mode,blocks_per_sm,ms,read_gbps,write_gbps.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

enum Mode { BOTH, SPLIT, READS, HALF };
static const char* kModes[] = {"both", "split", "reads", "half"};

// Each warp walks the buffer in float4s, its 32 lanes a step apart by the grid's lanes. In
// SPLIT and READS a warp pair shares a slice and steps together (a named barrier of the two
// warps each step): the even warp loads, then the odd warp stores (READS: does not), so a
// store leaves as the next load does, as in BOTH, from the other warp of the pair.
__device__ __forceinline__ void pair_sync(unsigned pair) {
  asm volatile("bar.sync %0, 64;" :: "r"(pair + 1) : "memory");
}

template <int MODE>
__global__ void __launch_bounds__(256) rw(const float4* __restrict__ src, float4* __restrict__ dst,
                                          size_t n4, float* sink) {
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bool reader = MODE == BOTH || (warp & 1) == 0;
  // BOTH: every warp its own lanes; SPLIT/READS: a pair of warps the same lanes
  const size_t lanes = MODE == BOTH ? (size_t)gridDim.x * blockDim.x
                                    : (size_t)gridDim.x * blockDim.x / 2;
  const size_t me = MODE == BOTH ? (size_t)blockIdx.x * blockDim.x + threadIdx.x
                                 : (size_t)blockIdx.x * blockDim.x / 2 + (warp >> 1) * 32 + lane;
  float acc = 0.f;
  for (size_t i = me; i < n4; i += lanes) {
    if (MODE == BOTH || MODE == HALF) {
      if (MODE == HALF && !reader) continue;
      float4 v = src[i];
      acc += v.x;
      v.y += acc;
      dst[i] = v;
      continue;
    }
    if (reader) { acc += src[i].x; }
    pair_sync(warp >> 1);  // the reader's load is in
    if (!reader && MODE == SPLIT) dst[i] = make_float4(1.f, acc, 1.f, 1.f);
  }
  if (acc == -1.f) sink[threadIdx.x] = acc;  // never: the source holds zeros
}

template <int MODE>
void run(const float4* src, float4* dst, size_t n4, float* sink, cudaStream_t st, int sms,
         int reps) {
  const int bps = 4, grid = sms * bps;
  rw<MODE><<<grid, 256, 0, st>>>(src, dst, n4, sink);  // warm-up: TLBs, clocks
  CK(cudaGetLastError());
  float t = median_ms(st, reps, [&] { rw<MODE><<<grid, 256, 0, st>>>(src, dst, n4, sink); });
  const double bytes = (double)n4 * 16.0;
  printf("%d,%s,%d,%.4f,%.1f,%.1f\n", sms, kModes[MODE], bps, t, bytes / t / 1e6,
         MODE == READS ? 0.0 : bytes / t / 1e6);
  fflush(stdout);
}

int main(int argc, char** argv) {
  int reps = 0, sms = 0;
  cudaStream_t st = args_stream(argc, argv, &reps, &sms);
  const size_t n4 = (256ull << 20) / 16;
  float4 *src, *dst;
  float* sink;
  CK(cudaMalloc(&src, n4 * 16)); CK(cudaMalloc(&dst, n4 * 16));
  CK(cudaMalloc(&sink, 256 * sizeof(float)));
  CK(cudaMemset(src, 0, n4 * 16)); CK(cudaMemset(dst, 0, n4 * 16));
  CK(cudaDeviceSynchronize());
  printf("sms,mode,blocks_per_sm,ms,read_gbps,write_gbps\n");
  run<BOTH>(src, dst, n4, sink, st, sms, reps);
  run<SPLIT>(src, dst, n4, sink, st, sms, reps);
  run<READS>(src, dst, n4, sink, st, sms, reps);
  run<HALF>(src, dst, n4, sink, st, sms, reps);
  return 0;
}

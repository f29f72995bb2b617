// What the L2 takes in per clock: loads that hit it, stores and reductions into lines it
// holds, and reductions many blocks aim at the same lines (Mamba1's selective-scan backward
// adds every channel's dB and dC into its batch's lines with REDG; ncu found it limited by
// the crossbar-to-L2 port, bench/RESULTS.md, *What limits the kernels model-1.6 leaves
// furthest off*).
//
// Every kernel moves full 128-byte lines (one 4-byte lane each) in a loop over a target of
// TARGET bytes that fits the L2 (nothing reaches DRAM after the first touch); the grid is
// 8 blocks of 256 threads per SM; target sizes are powers of two (the index is a mask).
// Kinds:
//   load    __ldcg of the target, L2 hits
//   store   stores over the target (storeN: only N sectors of each line, N x 8 lanes: the
//           same store instructions carrying fewer sectors, a request rate against a
//           sector rate)
//   red     atomicAdd without return (REDG.E.ADD.F32) over the target
//   redfan  atomicAdd into a target of FAN lines only, which every block adds into
// Under ncu the L2's sectors by operation and the cycles say the rate per clock.
//
// SMS > 0 runs them in a green context of that many SMs (8 blocks per SM it holds): whether
// a rate is the L2's (it stays) or the SMs' (it falls with them).
//
//   nvcc -O3 -arch=sm_90 l2_ports.cu -o l2_ports -lcuda && ./l2_ports [REPS [SMS]]
// Prints CSV rows: kind,<target lines>,<blocks>,<lines moved>,<ms>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

// kind: 0 load, 1 store, 2 red, 3 and 4: stores of 1 and 2 sectors a line. Each warp visits lines (warp0 + i * stride) % n_lines.
__global__ void __launch_bounds__(256) lines_op(float* __restrict__ t, unsigned n_lines,
                                                int iters, int kind, float* sink) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned n_warps = (gridDim.x * blockDim.x) >> 5;
  float acc = 0.f;
  const unsigned mask = n_lines - 1;  // a power of two: no 64-bit division in the loop
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    unsigned line = (warp + (unsigned)i * n_warps) & mask;
    float* p = t + (size_t)line * 32 + lane;
    if (kind == 0) acc += __ldcg(p);
    else if (kind == 1) *p = (float)i;
    else if (kind >= 3) { if (lane < 8u * (unsigned)(kind - 2)) *p = (float)i; }
    else atomicAdd(p, 1.0f);
  }
  if (kind == 0 && acc == 1234.5f) *sink = acc;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  const int want_sms = argc > 2 ? atoi(argv[2]) : 0;
  int sms;
  cudaStream_t st = sm_stream(want_sms, &sms);
  const size_t MB = 1 << 20;
  float* t; CK(cudaMalloc(&t, 16 * MB));
  float* sink; CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(t, 0, 16 * MB));
  const int blocks = sms * 8;
  const int iters = 256;
  struct Case { const char* name; int kind; unsigned lines; };
  std::vector<Case> cases = {
      {"load", 0, (unsigned)(16 * MB / 128)},  {"store", 1, (unsigned)(16 * MB / 128)},
      {"red", 2, (unsigned)(16 * MB / 128)},   {"redfan", 2, 65536},
      {"redfan", 2, 8192},                     {"redfan", 2, 4096},
      {"redfan", 2, 1024},
      {"redfan", 2, 256},                      {"redfan", 2, 32},
      {"store1", 3, (unsigned)(16 * MB / 128)}, {"store2", 4, (unsigned)(16 * MB / 128)}};
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  printf("kind,target_lines,blocks,lines_moved,ms\n");
  for (auto& c : cases) {
    // a first touch brings the target into the L2 (outside the timing; under ncu, REPS=1,
    // each launch is profiled and the first touch is its own launch)
    lines_op<<<blocks, 256, 0, st>>>(t, c.lines, 4, 1, sink);
    std::vector<float> ms;
    auto go = [&] { lines_op<<<blocks, 256, 0, st>>>(t, c.lines, iters, c.kind, sink); };
    for (int r = 0; r < reps; ++r) {
      if (want_sms > 0) {  // events cannot cross into a green context's stream
        ms.push_back(time_ms(st, go));
        continue;
      }
      CK(cudaEventRecord(a));
      go();
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float x; CK(cudaEventElapsedTime(&x, a, b)); ms.push_back(x);
    }
    std::sort(ms.begin(), ms.end());
    printf("%s,%u,%d,%ld,%.4f\n", c.name, c.lines, blocks, (long)blocks * 8 * iters,
           ms[ms.size() / 2]);
    fflush(stdout);
  }
  return 0;
}

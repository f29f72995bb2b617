// One thread's dependent loads (a pointer chase through the L2, __ldcg), timed per step with
// %globaltimer, over lines laid out so that the chase stays in one page or takes a new
// 2 MiB page every step: is the DRAM latency a warp waits the same for both, and is the
// difference the address translation's (the TLBs, warmed or thrashed apart from the L2)?
//   tlb_chase [STEPS]   prints CSV: case,stride_bytes,steps,state,ns_per_step
// States, each case in its own region: "cold" after the L2 is flushed (a 256 MiB write)
// and the TLBs thrashed (one load from each of 8192 other 2 MiB pages); "l2_cold_tlb_warm"
// after the chase ran once and the L2 alone was flushed; "l2_warm" the chase run again at
// once. Under ncu (which flushes the caches itself) the case is chase's template argument.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

typedef unsigned long long u64;

template <int CASE>
__global__ void chase(const u64* __restrict__ p, u64 start, int steps, u64* out) {
  u64 i = start;
  u64 t0 = globaltimer_ns();
  for (int s = 0; s < steps; ++s) i = __ldcg(p + i);
  u64 t1 = globaltimer_ns();
  out[0] = i; out[1] = t1 - t0;
}

__global__ void link(u64* p, u64 base, u64 stride, int steps) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < steps) p[(base + s * stride) / 8] = (base + ((s + 1) % steps) * stride) / 8;
}

__global__ void touch_pages(const u64* q, size_t pages, u64* sink) {  // one line a 2 MiB page
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < pages) { u64 v = __ldcg(q + i * (2u << 20) / 8); if (v == 12345) sink[0] = v; }
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 256;
  const size_t region = 13ull << 30;         // the four cases' lines, each its own part
  const size_t thrash = 16ull << 30;         // 8192 other 2 MiB pages
  const size_t flush = 256ull << 20;
  u64 *p, *t, *f, *out;
  CK(cudaMalloc(&p, region)); CK(cudaMalloc(&t, thrash)); CK(cudaMalloc(&f, flush));
  CK(cudaMalloc(&out, 64));
  const char* names[4] = {"seq128", "seq4k", "page2m", "page32m"};
  const u64 strides[4] = {128, 4096, (2ull << 20) + 128, (32ull << 20) + 128};
  void (*kern[4])(const u64*, u64, int, u64*) = {chase<0>, chase<1>, chase<2>, chase<3>};
  printf("case,stride_bytes,steps,state,ns_per_step\n");
  for (int c = 0; c < 4; ++c) {
    const u64 bases[4] = {0, 1ull << 30, 2ull << 30, 4ull << 30};
    u64 base = bases[c];
    if (base + strides[c] * steps > region) continue;
    link<<<(steps + 255) / 256, 256>>>(p, base, strides[c], steps);
    CK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 3; ++rep) {
      scribble<<<1024, 256>>>(f, flush / 8);
      touch_pages<<<(8192 + 255) / 256, 256>>>(t, 8192, out + 4);
      const char* state[3] = {"cold", "l2_cold_tlb_warm", "l2_warm"};
      for (int k = 0; k < 3; ++k) {
        if (k == 1) scribble<<<1024, 256>>>(f, flush / 8);
        kern[c]<<<1, 1>>>(p, base / 8, steps, out);
        u64 h[2];
        CK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
        printf("%s,%llu,%d,%s,%.1f\n", names[c], strides[c], steps, state[k], (double)h[1] / steps);
      }
    }
  }
  return 0;
}

// One warp's loads of whole 128-byte lines (8 lanes x 16 B, as PyTorch's one-block sums
// load), LINES of them an iteration, each iteration's address depending on the last one's
// data (the data are zeros): one DRAM round trip an iteration, timed per iteration with
// %globaltimer after the L2 is flushed (a 256 MiB write). The iterations walk the lines in
// order ("seq": the next iteration's lines follow this one's) or jump to a random 64 KiB
// block ("rand"), or read in order what the kernel before wrote ("seq_fresh"): does a
// sequential stream of whole lines wait less than a DRAM latency, and does ncu's cache
// flush between two kernels take the first one's writes out of the L2?
//   seq_lines [ITERS]   prints CSV: order,load,lines,iters,rep,ns_per_iter
// load: "ldcg" (__ldcg, LDG.E.128.STRONG.GPU) or "plain" (LDG.E.128 through the L1)
// Under ncu the case is the kernel's template arguments.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

typedef unsigned long long u64;

__device__ __forceinline__ unsigned hash32(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x;
}

template <int LINES, bool SEQ, bool STRONG>
__global__ void lines_walk(const float4* __restrict__ p, int iters, size_t n_blocks, float* out,
                           u64* ns) {
  const int lane = threadIdx.x;  // 8 lanes: 128 B a load
  size_t base = 0;               // in float4s
  float acc = 0.f;
  u64 t0 = globaltimer_ns();
  for (int i = 0; i < iters; ++i) {
    float4 v[LINES];
#pragma unroll
    for (int l = 0; l < LINES; ++l)
      v[l] = STRONG ? __ldcg(p + base + l * 8 + lane) : p[base + l * 8 + lane];
    float s = 0.f;
#pragma unroll
    for (int l = 0; l < LINES; ++l) s += v[l].x + v[l].y + v[l].z + v[l].w;
    acc += s;
    // s is 0: the next address waits for this iteration's data
    size_t next = SEQ ? base + LINES * 8 : (size_t)(hash32(i + 1) % n_blocks) * 4096;
    base = next + (size_t)(int)s;
  }
  u64 t1 = globaltimer_ns();
  if (lane == 0) { out[0] = acc; ns[0] = t1 - t0; }
}

__global__ void fill_zero(float4* p, size_t n) {  // the producer: writes what the walk reads
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// FRESH: the walk reads lines the kernel before it wrote (no flush between), as a
// reduction's last pass reads the partial sums its first pass wrote
template <int LINES, bool SEQ, bool STRONG, bool FRESH = false>
void run(float4* p, size_t n_blocks, u64* f, size_t flush, float* out, u64* ns,
         int iters) {
  for (int rep = 0; rep < 3; ++rep) {
    scribble<<<1024, 256>>>(f, flush / 8);
    if (FRESH) fill_zero<<<64, 256>>>(p, (size_t)iters * LINES * 8);
    lines_walk<LINES, SEQ, STRONG><<<1, 8>>>(p, iters, n_blocks, out, ns);
    u64 h;
    CK(cudaMemcpy(&h, ns, 8, cudaMemcpyDeviceToHost));
    printf("%s,%s,%d,%d,%d,%.1f\n", FRESH ? "seq_fresh" : SEQ ? "seq" : "rand",
           STRONG ? "ldcg" : "plain", LINES,
           iters, rep, (double)h / iters);
  }
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 256;
  const size_t bytes = 1ull << 30, flush = 256ull << 20;
  float4* p; u64 *f, *ns; float* out;
  CK(cudaMalloc(&p, bytes)); CK(cudaMemset(p, 0, bytes));
  CK(cudaMalloc(&f, flush)); CK(cudaMalloc(&out, 64)); CK(cudaMalloc(&ns, 64));
  const size_t n_blocks = bytes / 65536;
  printf("order,load,lines,iters,rep,ns_per_iter\n");
  run<1, true, true>(p, n_blocks, f, flush, out, ns, iters);
  run<4, true, true>(p, n_blocks, f, flush, out, ns, iters);
  run<8, true, true>(p, n_blocks, f, flush, out, ns, iters);
  run<1, false, true>(p, n_blocks, f, flush, out, ns, iters);
  run<4, false, true>(p, n_blocks, f, flush, out, ns, iters);
  run<8, false, true>(p, n_blocks, f, flush, out, ns, iters);
  run<1, true, false>(p, n_blocks, f, flush, out, ns, iters);
  run<4, true, false>(p, n_blocks, f, flush, out, ns, iters);
  run<8, true, false>(p, n_blocks, f, flush, out, ns, iters);
  run<4, false, false>(p, n_blocks, f, flush, out, ns, iters);
  run<4, true, false, true>(p, n_blocks, f, flush, out, ns, iters);
  CK(cudaDeviceSynchronize());
  return 0;
}

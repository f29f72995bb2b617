// An L2 hit's latency under the whole GPU's L2 load: the model times every L2 hit at one
// latency whatever the traffic (docs/model-memory.md), where the log-softmax forward, its
// rows hitting the L2 on 64 SMs, waits 26.9 clocks an issue on its loads and runs 13% slower
// than the model (bench/RESULTS.md, *The loss kernels' rows on fewer SMs*).
//
// One block per SM (its shared memory holds the SM), N blocks: warp 0's lane 0 walks a
// random cycle over 4 MiB of L2-resident lines, each hop timed with clock64; the block's
// other S warps stream 16-byte ld.global.cg loads over their own 4 KB stripe of a
// L2-resident buffer (17 MiB on 132 SMs; mode rw: every fourth pass also stores what it read
// to a 4 MiB L2-resident output, the log-softmax's three reads to one write) until the walk
// ends.
// Varying N and S moves the L2's load at one SM's load (N) and one SM's load at one L2 load
// (S): a latency that follows N is the L2's queue, one that follows S the SM's.
//
//   l2_loaded HOPS [N S MODE]   (no N: every N, S and mode of the grid below)
// Prints CSV rows: n,s,mode,block,sm,hops,chase_clocks,median_hop,streamed_bytes,stored_bytes
// (one configuration, as under ncu: to stderr, so that ncu's own CSV stays alone on stdout)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"  // smid, warm_l2

static const size_t CHASE_LINES = 32768;             // 4 MiB
static const unsigned STRIPE = 256;                  // float4 a warp: 4 KB
static const unsigned OUT_VEC = (4u << 20) / 16;     // 4 MiB of float4
static const int SMEM = 160 * 1024;                  // one block an SM


__global__ void loaded(const unsigned* chain, const float4* stream, float4* out, int hops,
                       int rw, long long* clk, unsigned* meta, unsigned long long* bytes) {
  extern __shared__ float4 hold[];
  __shared__ volatile int done;
  __shared__ unsigned long long streamed, stored;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) { done = 0; streamed = 0; stored = 0; }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      meta[blockIdx.x] = smid();
      unsigned line = (blockIdx.x * 4099u) % CHASE_LINES;
      long long* mine = clk + (size_t)blockIdx.x * hops;
      for (int h = 0; h < hops; ++h) {
        long long t0 = clock64();
        unsigned nxt = __ldcg(chain + (size_t)line * 32);
        ((volatile unsigned*)hold)[0] = nxt;  // the store waits for the load
        long long t1 = clock64();
        mine[h] = t1 - t0;
        line = nxt;
      }
      done = 1;
    }
  } else {
    // each streaming warp its own stripe, 8 independent float4 loads a lane a pass
    unsigned w = blockIdx.x * 32 + warp;
    const float4* mine = stream + (size_t)w * STRIPE;
    unsigned i = 0;
    float acc = 0;
    unsigned long long n = 0, m = 0;
    int pass = 0;
    while (!done) {
      float4 v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = __ldcg(mine + ((i + u * 32 + lane) & (STRIPE - 1)));
#pragma unroll
      for (int u = 0; u < 8; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
      n += 8 * 16;
      if (rw && (++pass & 3) == 0) {
        __stcg(out + ((w * STRIPE + ((i + lane) & (STRIPE - 1))) & (OUT_VEC - 1)), v[0]);
        m += 16;
      }
      i += 64;  // the next pass reads the stripe shifted, so no load is hoisted
    }
    if (acc == 1234.5f) hold[1] = make_float4(acc, 0, 0, 0);
    atomicAdd(&streamed, n);
    atomicAdd(&stored, m);
  }
  __syncthreads();
  if (threadIdx.x == 0) { bytes[2 * blockIdx.x] = streamed; bytes[2 * blockIdx.x + 1] = stored; }
}

static FILE* rows = stdout;

static void run(const unsigned* d_chain, const float4* d_stream, float4* d_out, int n, int s,
                int rw, int hops, long long* d_clk, unsigned* d_meta,
                unsigned long long* d_bytes) {
  loaded<<<n, 32 * (1 + s), SMEM>>>(d_chain, d_stream, d_out, hops, rw, d_clk, d_meta, d_bytes);
  CK(cudaDeviceSynchronize());
  std::vector<long long> clk((size_t)n * hops);
  std::vector<unsigned> meta(n);
  std::vector<unsigned long long> bytes(2 * n);
  CK(cudaMemcpy(clk.data(), d_clk, clk.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(meta.data(), d_meta, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(bytes.data(), d_bytes, 2 * n * 8, cudaMemcpyDeviceToHost));
  for (int b = 0; b < n; ++b) {
    // the first hops ride in before every block's stream is going
    std::vector<long long> h(clk.begin() + (size_t)b * hops + hops / 8,
                             clk.begin() + (size_t)(b + 1) * hops);
    long long total = 0;
    for (long long x : h) total += x;
    std::nth_element(h.begin(), h.begin() + h.size() / 2, h.end());
    long long all = 0;
    for (int k = 0; k < hops; ++k) all += clk[(size_t)b * hops + k];
    fprintf(rows, "%d,%d,%s,%d,%u,%d,%lld,%lld,%llu,%llu\n", n, s, rw ? "rw" : "read", b, meta[b],
           hops, all, h[h.size() / 2], bytes[2 * b], bytes[2 * b + 1]);
  }
}

int main(int argc, char** argv) {
  int hops = argc > 1 ? atoi(argv[1]) : 2048;
  std::vector<unsigned> order(CHASE_LINES), host(CHASE_LINES * 32, 0);
  for (size_t i = 0; i < CHASE_LINES; ++i) order[i] = (unsigned)i;
  std::mt19937 rng(12345);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < CHASE_LINES; ++i)
    host[(size_t)order[i] * 32] = order[(i + 1) % CHASE_LINES];
  unsigned *d_chain, *d_meta;
  float4 *d_stream, *d_out;
  long long* d_clk;
  unsigned long long* d_bytes;
  unsigned* d_sink;
  CK(cudaMalloc(&d_chain, host.size() * 4));
  CK(cudaMalloc(&d_stream, (size_t)1024 * 32 * STRIPE * 16));
  CK(cudaMalloc(&d_out, OUT_VEC * 16));
  CK(cudaMalloc(&d_meta, 1024 * 4));
  CK(cudaMalloc(&d_bytes, 2048 * 8));
  CK(cudaMalloc(&d_sink, 4));
  CK(cudaMalloc(&d_clk, (size_t)1024 * hops * 8));
  CK(cudaMemcpy(d_chain, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(d_stream, 0, (size_t)1024 * 32 * STRIPE * 16));
  CK(cudaMemset(d_out, 0, OUT_VEC * 16));
  CK(cudaFuncSetAttribute(loaded, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int w = 0; w < 3; ++w) {
    warm_l2<<<264, 256>>>(d_chain, host.size(), d_sink);
    warm_l2<<<264, 256>>>((const unsigned*)d_stream, (size_t)sms * 32 * STRIPE * 4, d_sink);
    warm_l2<<<264, 256>>>((const unsigned*)d_out, (size_t)OUT_VEC * 4, d_sink);
  }
  CK(cudaDeviceSynchronize());
  if (argc > 4) rows = stderr;
  fprintf(rows, "n,s,mode,block,sm,hops,chase_clocks,median_hop,streamed_bytes,stored_bytes\n");
  if (argc > 4) {
    run(d_chain, d_stream, d_out, atoi(argv[2]), atoi(argv[3]), strcmp(argv[4], "rw") == 0,
        hops, d_clk, d_meta, d_bytes);
    return 0;
  }
  const int ns[] = {8, 16, 32, 48, 64, 96, 132}, ss[] = {0, 1, 2, 4, 8, 16, 31};
  for (int rw = 0; rw < 2; ++rw)
    for (int n : ns)
      for (int s : ss)
        if (n <= sms) run(d_chain, d_stream, d_out, n, s, rw, hops, d_clk, d_meta, d_bytes);
  return 0;
}

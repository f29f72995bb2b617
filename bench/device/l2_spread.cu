// How much an L2 hit's latency varies with the line, and what a warp waits for a group of
// loads. The model times every L2 hit of an SM at one latency (the pointer chase's mean),
// so a wait for a group of copies (cp.async's DEPBAR) or for a block's warps at a barrier
// costs it no more than one load; on hardware a group waits for its slowest line.
//
// `chase`: one thread per block walks a random cycle over an L2-resident buffer (every line
// read once before), timing each hop with clock64: per hop, the block's SM and the clocks.
// `group`: one warp per block; lane 0 issues K independent ld.global.cg of random lines of
// the same buffer, then one use of all K values, timed; K = 1, 2, 4, 8, 16, 32, many times.
//
//   nvcc -O3 -arch=sm_90 l2_spread.cu -o l2_spread && ./l2_spread BLOCKS HOPS > out.csv
// Prints CSV rows: kind,sm,k,clocks (kind chase: k = hop index; group: k = loads).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"  // smid, warm_l2

// next[i]: the line index after line i in one random cycle; 32 words (128 B) a line.

__global__ void chase(const unsigned* buf, int hops, unsigned start_stride, long long* clk,
                      unsigned* sms) {
  __shared__ volatile unsigned held[1];
  if (threadIdx.x != 0) return;
  unsigned line = (blockIdx.x * start_stride) % 65536u;
  sms[blockIdx.x] = smid();
  for (int h = 0; h < hops; ++h) {
    long long t0 = clock64();
    unsigned nxt = __ldcg(buf + (size_t)line * 32);
    held[0] = nxt;  // the store waits for the load, the clock read after it for the store
    long long t1 = clock64();
    clk[(size_t)blockIdx.x * hops + h] = t1 - t0;
    line = nxt;
  }
}

template <int K>
__global__ void group(const unsigned* buf, const unsigned* lines, int reps, long long* clk,
                      unsigned* sms, unsigned* sink) {
  __shared__ volatile unsigned held[1];
  if (threadIdx.x != 0) return;
  sms[blockIdx.x] = smid();
  unsigned acc = 0;
  for (int r = 0; r < reps; ++r) {
    const unsigned* l = lines + ((size_t)(blockIdx.x * reps + r) * 32) % (65536 - 32);
    unsigned idx[K];
#pragma unroll
    for (int k = 0; k < K; ++k) idx[k] = l[k];  // line numbers first, out of the timing
    unsigned v[K];
    long long t0 = clock64();
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = __ldcg(buf + (size_t)((idx[k] + acc) % 65536u) * 32);
    unsigned s = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) s += v[k];
    held[0] = s;
    long long t1 = clock64();
    acc = s & 1u;  // the next group's addresses wait for this one
    clk[(size_t)blockIdx.x * reps + r] = t1 - t0;
  }
  if (acc == 7u) sink[0] = acc;
}

template <int K>
static void run_group(const unsigned* d_buf, const unsigned* d_lines, int blocks, int reps,
                      long long* d_clk, unsigned* d_sms, unsigned* d_sink) {
  group<K><<<blocks, 32>>>(d_buf, d_lines, reps, d_clk, d_sms, d_sink);
  CK(cudaDeviceSynchronize());
  std::vector<long long> clk((size_t)blocks * reps);
  std::vector<unsigned> sms(blocks);
  CK(cudaMemcpy(clk.data(), d_clk, clk.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(sms.data(), d_sms, blocks * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int r = 1; r < reps; ++r) printf("group,%u,%d,%lld\n", sms[b], K, clk[(size_t)b * reps + r]);
}

int main(int argc, char** argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 8;
  int hops = argc > 2 ? atoi(argv[2]) : 2048;
  const size_t lines = 65536, words = lines * 32;  // 8 MiB: L2-resident on the H100 and H200
  std::vector<unsigned> next(lines), order(lines);
  for (size_t i = 0; i < lines; ++i) order[i] = (unsigned)i;
  std::mt19937 rng(12345);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<unsigned> host(words, 0);
  for (size_t i = 0; i < lines; ++i) host[(size_t)order[i] * 32] = order[(i + 1) % lines];
  unsigned *d_buf, *d_lines, *d_sms, *d_sink;
  long long* d_clk;
  CK(cudaMalloc(&d_buf, words * 4));
  CK(cudaMalloc(&d_lines, lines * 4));
  CK(cudaMalloc(&d_sms, 4096 * 4));
  CK(cudaMalloc(&d_sink, 4));
  CK(cudaMalloc(&d_clk, (size_t)blocks * std::max(hops, 256) * 8));
  CK(cudaMemcpy(d_buf, host.data(), words * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_lines, order.data(), lines * 4, cudaMemcpyHostToDevice));
  for (int w = 0; w < 3; ++w) warm_l2<<<264, 256>>>(d_buf, words, d_sink);
  CK(cudaDeviceSynchronize());
  printf("kind,sm,k,clocks\n");
  chase<<<blocks, 32>>>(d_buf, hops, 4099, d_clk, d_sms);
  CK(cudaDeviceSynchronize());
  std::vector<long long> clk((size_t)blocks * hops);
  std::vector<unsigned> sms(blocks);
  CK(cudaMemcpy(clk.data(), d_clk, clk.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(sms.data(), d_sms, blocks * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int h = 1; h < hops; ++h) printf("chase,%u,%d,%lld\n", sms[b], h, clk[(size_t)b * hops + h]);
  run_group<1>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  run_group<2>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  run_group<4>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  run_group<8>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  run_group<16>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  run_group<32>(d_buf, d_lines, blocks, 256, d_clk, d_sms, d_sink);
  return 0;
}

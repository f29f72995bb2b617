// How far apart a block's warps reach a barrier after the same number of L2 hits: the
// hardware's warps wait at the block barrier after each row's maximum in the log-softmax
// forward, where the model's warps arrive together (bench/RESULTS.md, *The loss kernels'
// rows on fewer SMs*), and an L2 hit has two latencies (*An L2 hit's latency, line by
// line*).
//
// One block of 32 warps on each of N SMs; in each of R rounds every warp reads K lines of
// an L2-resident buffer (lane l the l-th word of each: one line a warp instruction, K
// loads in flight, no dependence between them), adds them up, reads the clock and waits at
// __syncthreads(). Per round and block: the spread of the warps' arrival clocks (last -
// first) and the mean wait of a warp for the last one.
//
//   barrier_spread N ROUNDS
// Prints CSV rows: k,block,sm,round,spread,mean_wait
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"  // smid, warm_l2

static const unsigned LINES = 65536;  // 8 MiB of 128-byte lines: L2-resident


template <int K>
__global__ void arrive(const unsigned* buf, const unsigned* order, int rounds,
                       long long* clk, unsigned* sms, unsigned* sink) {
  __shared__ volatile unsigned held[32];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) sms[blockIdx.x] = smid();
  unsigned acc = 0;
  for (int r = 0; r < rounds; ++r) {
    // each warp its own random lines, each round new ones
    const unsigned* o = order + ((size_t)((blockIdx.x * rounds + r) * 32 + warp) * K) % (LINES - K);
    unsigned v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = __ldcg(buf + (size_t)o[k] * 32 + lane);
#pragma unroll
    for (int k = 0; k < K; ++k) acc += v[k];
    // the store waits for the loads' values, the clock read after it for the store
    held[warp] = acc;
    long long t = clock64();
    if (lane == 0) clk[((size_t)blockIdx.x * rounds + r) * 32 + warp] = t;
    __syncthreads();
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

template <int K>
static void run(const unsigned* d_buf, const unsigned* d_order, int blocks, int rounds,
                long long* d_clk, unsigned* d_sms, unsigned* d_sink) {
  arrive<K><<<blocks, 1024>>>(d_buf, d_order, rounds, d_clk, d_sms, d_sink);
  CK(cudaDeviceSynchronize());
  std::vector<long long> clk((size_t)blocks * rounds * 32);
  std::vector<unsigned> sms(blocks);
  CK(cudaMemcpy(clk.data(), d_clk, clk.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(sms.data(), d_sms, blocks * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int r = 1; r < rounds; ++r) {  // the first round starts the block
      const long long* w = clk.data() + ((size_t)b * rounds + r) * 32;
      long long lo = *std::min_element(w, w + 32), hi = *std::max_element(w, w + 32);
      double wait = 0;
      for (int i = 0; i < 32; ++i) wait += hi - w[i];
      printf("%d,%d,%u,%d,%lld,%.1f\n", K, b, sms[b], r, hi - lo, wait / 32);
    }
}

int main(int argc, char** argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 8;
  int rounds = argc > 2 ? atoi(argv[2]) : 64;
  std::vector<unsigned> order(LINES), host((size_t)LINES * 32, 1);
  for (unsigned i = 0; i < LINES; ++i) order[i] = i;
  std::mt19937 rng(12345);
  std::shuffle(order.begin(), order.end(), rng);
  unsigned *d_buf, *d_order, *d_sms, *d_sink;
  long long* d_clk;
  CK(cudaMalloc(&d_buf, host.size() * 4));
  CK(cudaMalloc(&d_order, LINES * 4));
  CK(cudaMalloc(&d_sms, 4096 * 4));
  CK(cudaMalloc(&d_sink, 4));
  CK(cudaMalloc(&d_clk, (size_t)blocks * rounds * 32 * 8));
  CK(cudaMemcpy(d_buf, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_order, order.data(), LINES * 4, cudaMemcpyHostToDevice));
  for (int w = 0; w < 3; ++w) warm_l2<<<264, 256>>>(d_buf, host.size(), d_sink);
  CK(cudaDeviceSynchronize());
  printf("k,block,sm,round,spread,mean_wait\n");
  run<1>(d_buf, d_order, blocks, rounds, d_clk, d_sms, d_sink);
  run<2>(d_buf, d_order, blocks, rounds, d_clk, d_sms, d_sink);
  run<4>(d_buf, d_order, blocks, rounds, d_clk, d_sms, d_sink);
  run<8>(d_buf, d_order, blocks, rounds, d_clk, d_sms, d_sink);
  run<16>(d_buf, d_order, blocks, rounds, d_clk, d_sms, d_sink);
  return 0;
}

// What a kernel's instruction fetch costs when its code is in no cache: a warp calls N
// functions laid PAD FFMAs apart in the module (each a few instructions executed, the pad
// behind a branch it does not take: "jump"), or runs through the same N functions' FFMAs
// too ("run": straight-line code), calling them down through the module or rising (UP).
// Each block times itself with clock64 (its first warp's clocks around the calls); under
// ncu (caches flushed before each launch) the kernel's elapsed and active cycles come
// beside. The case is in the kernel's template arguments: hops<N, RUN, PAD, UP>.
//   ifetch [2]   prints CSV kernel,n,run,pad,up,blocks,rep,clocks_block0,clocks_median,
//                clocks_max (2: the second set of cases too, each on one block)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

// PAD: FFMAs of 16 B each behind the branch (240: a function of about 4 KB)
template <int K, int PAD>
__device__ __noinline__ float hop(float x, int run) {
  if (run) {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = x + j;
#pragma unroll
    for (int i = 0; i < PAD; ++i) a[i % 8] = fmaf(a[i % 8], 1.0001f, (float)(i + K));
#pragma unroll
    for (int j = 0; j < 8; ++j) x += a[j];
  }
  return x + (float)K;
}

// Chain<K>: hop<K> first, then K-1 ... 1 (the functions lie in the module in the order the
// kernel calls them, so a call goes to the next lower address: "down"); Rise<K>: 1 first
template <int K, int PAD>
struct Chain {
  __device__ __forceinline__ static float go(float x, int run) {
    return Chain<K - 1, PAD>::go(hop<K, PAD>(x, run), run);
  }
};
template <int PAD>
struct Chain<0, PAD> {
  __device__ __forceinline__ static float go(float x, int) { return x; }
};
template <int K, int PAD>
struct Rise {
  __device__ __forceinline__ static float go(float x, int run) {
    return hop<K, PAD>(Rise<K - 1, PAD>::go(x, run), run);
  }
};
template <int PAD>
struct Rise<0, PAD> {
  __device__ __forceinline__ static float go(float x, int) { return x; }
};

template <int N, int RUN, int PAD = 240, int UP = 0>
__global__ void hops(float* out, long long* clocks, int run) {
  long long t0 = clock64();
  float x = UP ? Rise<N, PAD>::go((float)threadIdx.x, run)
               : Chain<N, PAD>::go((float)threadIdx.x, run);
  long long t1 = clock64();
  if (x == -1.f) out[0] = x;  // never: keeps the chain
  if (threadIdx.x == 0) clocks[blockIdx.x] = t1 - t0;
}

template <int N, int RUN, int PAD = 240, int UP = 0>
void launch(int blocks, float* out, long long* clocks, int rep) {
  CK(cudaMemset(clocks, 0, blocks * sizeof(long long)));
  hops<N, RUN, PAD, UP><<<blocks, 32>>>(out, clocks, RUN);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<long long> c(blocks);
  CK(cudaMemcpy(c.data(), clocks, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
  long long first = c[0];
  std::sort(c.begin(), c.end());
  printf("hops<%d %d %d %d>,%d,%d,%d,%d,%d,%d,%lld,%lld,%lld\n", N, RUN, PAD, UP, N, RUN, PAD,
         UP, blocks, rep, first, c[blocks / 2], c[blocks - 1]);
}

template <int N, int RUN>
void cases(float* out, long long* clocks) {
  for (int blocks : {1, 132, 1056})
    for (int rep = 0; rep < 2; ++rep) launch<N, RUN>(blocks, out, clocks, rep);
}

int main(int argc, char** argv) {
  int second = argc > 1 && argv[1][0] == '2';
  float* out;
  long long* clocks;
  CK(cudaMalloc(&out, 4));
  CK(cudaMalloc(&clocks, 2048 * sizeof(long long)));
  printf("kernel,n,run,pad,up,blocks,rep,clocks_block0,clocks_median,clocks_max\n");
  cases<1, 0>(out, clocks);
  cases<8, 0>(out, clocks);
  cases<32, 0>(out, clocks);
  cases<64, 0>(out, clocks);
  cases<8, 1>(out, clocks);
  cases<32, 1>(out, clocks);
  cases<64, 1>(out, clocks);
  if (second) {  // where a far line's cost comes from: spacing, order, and the code's size
    for (int rep = 0; rep < 2; ++rep) {
      launch<16, 0, 24>(1, out, clocks, rep);      // 16 functions 0.5 KB apart
      launch<16, 0, 960>(1, out, clocks, rep);     // 16 functions 16 KB apart
      launch<32, 0, 24>(1, out, clocks, rep);
      launch<8, 0, 1920>(1, out, clocks, rep);     // 8 functions 32 KB apart
      launch<32, 0, 240, 1>(1, out, clocks, rep);  // called in rising order
      launch<64, 0, 240, 1>(1, out, clocks, rep);
      launch<8, 1, 1920>(1, out, clocks, rep);     // 8 x 30 KB of straight-line code
      launch<32, 1, 24>(1, out, clocks, rep);      // 32 x 0.4 KB of straight-line code
    }
  }
  return 0;
}

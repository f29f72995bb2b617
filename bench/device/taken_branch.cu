// What a taken branch costs a warp in warm code: PyTorch's reductions run a branch every
// 9 instructions (their 92 KB of SASS is mostly the paths a launch does not take), and
// ncu puts 19-39% of their warps' waits on `no_instruction` even on grids of thousands of
// blocks, whose code is warm after the first.
//
// One block of W warps; each warp runs a loop of dependent FADDs. In `jump`, every FADD is
// followed by a branch over a block of FFMAs that a runtime zero skips (ptxas keeps the
// branch: the skipped block is too long to predicate); `straight` runs the same FADDs
// without the branches. Each warp times its loop with clock64, after one warm-up trip of
// the same code. Clocks a taken branch = (jump - straight) / branches, per warp.
//
//   nvcc -O3 -arch=sm_90 taken_branch.cu -o taken_branch && ./taken_branch
// Prints CSV rows: case,warps,trips,branches,clocks_median,clocks_max
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int STEPS = 16;  // FADDs (and branches) a trip

// the block a zero skips: long enough that ptxas branches over it rather than predicating
#define SKIPPED(k)                                                         \
  if (z == (k) + 1) {                                                      \
    _Pragma("unroll") for (int j = 0; j < 24; ++j) x = fmaf(x, x, 1.0f + j); \
  }

template <bool JUMP>
__global__ void walk(float* out, long long* clk, int trips, int z) {
  float x = out[threadIdx.x];
  long long t0 = 0;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 warms the code
    if (pass == 1) t0 = clock64();
#pragma unroll 1
    for (int t = 0; t < trips; ++t) {
#pragma unroll
      for (int k = 0; k < STEPS; ++k) {
        x = x + 1.0f;
        if (JUMP) { SKIPPED(k) }
      }
    }
  }
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x % 32 == 0) clk[threadIdx.x / 32] = t1 - t0;
}

template <bool JUMP>
void run(const char* name, int warps, int trips, float* out, long long* clk) {
  for (int r = -1; r < 5; ++r) {
    walk<JUMP><<<1, warps * 32>>>(out, clk, trips, 0);
    CHECK(cudaDeviceSynchronize());
    if (r < 0) continue;
    std::vector<long long> c(warps);
    CHECK(cudaMemcpy(c.data(), clk, sizeof(long long) * warps, cudaMemcpyDeviceToHost));
    std::sort(c.begin(), c.end());
    printf("%s,%d,%d,%d,%lld,%lld\n", name, warps, trips, JUMP ? trips * STEPS : 0,
           c[warps / 2], c[warps - 1]);
  }
}

int main() {
  float* out; long long* clk;
  CHECK(cudaMalloc(&out, sizeof(float) * 1024));
  CHECK(cudaMemset(out, 0, sizeof(float) * 1024));
  CHECK(cudaMalloc(&clk, sizeof(long long) * 32));
  printf("case,warps,trips,branches,clocks_median,clocks_max\n");
  for (int warps : {1, 4, 8, 16, 32}) {
    run<false>("straight", warps, 256, out, clk);
    run<true>("jump", warps, 256, out, clk);
  }
  return 0;
}

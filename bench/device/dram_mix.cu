// What DRAM bandwidth a GPU sustains with reads and writes mixed, against the bytes each SM
// keeps in flight. The model bounds a kernel by one sustainable share of the DRAM peak
// whatever its write share, and its loads wait a loaded latency fitted on the H100; the
// H200 (HBM3e, 1.43x the H100's peak) runs the same softmax and AdamW kernels at 70% of its
// peak where the H100 runs them at 80%, and its streaming elementwise kernels at 90% on both.
//
// `mix`: every thread walks its own slice of R read streams and W write streams, ILP float4s
// of each stream per step (loads of a step issued together, their sum stored), buffers of
// 1 GiB a stream (17 times the L2), five launches timed together. Grids of B blocks of 256 threads a SM.
//
// SMS > 0 runs them in a green context of that many SMs (the L2 and DRAM stay whole): what
// an SM streams when fewer share the DRAM.
//
//   nvcc -O3 -arch=sm_90 dram_mix.cu -o dram_mix -lcuda && ./dram_mix REPS [SMS] > out.csv
// Prints CSV rows: sms,r,w,blocks_per_sm,ilp,inflight_kib_per_sm,ms,read_gbps,write_gbps.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

template <int R, int W, int ILP>
__global__ void __launch_bounds__(256) mix(const float4* __restrict__ src, float4* __restrict__ dst,
                                           size_t n4) {
  // stream k of src is src + k * n4; the grid covers n4 float4s of each stream once
  const size_t stride = (size_t)gridDim.x * blockDim.x * ILP;
  for (size_t base = (size_t)blockIdx.x * blockDim.x * ILP + threadIdx.x; base < n4; base += stride) {
    float4 v[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (R > 0) {
      float4 a[R > 0 ? R : 1][ILP];
#pragma unroll
      for (int k = 0; k < R; ++k)
#pragma unroll
        for (int j = 0; j < ILP; ++j) {
          size_t i = base + (size_t)j * blockDim.x;
          a[k][j] = i < n4 ? src[k * n4 + i] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
      for (int k = 0; k < R; ++k)
#pragma unroll
        for (int j = 0; j < ILP; ++j) {
          v[j].x += a[k][j].x; v[j].y += a[k][j].y; v[j].z += a[k][j].z; v[j].w += a[k][j].w;
        }
    }
    if (W == 0) {  // reads alone: a store that never happens keeps the loads
#pragma unroll
      for (int j = 0; j < ILP; ++j)
        if (v[j].x == -1.2345e-38f) dst[base + (size_t)j * blockDim.x] = v[j];
    }
#pragma unroll
    for (int k = 0; k < W; ++k)
#pragma unroll
      for (int j = 0; j < ILP; ++j) {
        size_t i = base + (size_t)j * blockDim.x;
        if (i < n4) {
          float4 o = v[j]; o.x += k;
          dst[k * n4 + i] = o;
        }
      }
  }
}

constexpr int LAUNCHES = 5;

template <int R, int W, int ILP>
void run(const float4* src, float4* dst, size_t n4, cudaStream_t st, int sms, int reps) {
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mix<R, W, ILP>, 256, 0));
  for (int bps : {1, 2, 4, 8}) {
    if (bps > occ) break;
    int grid = sms * bps;
    // LAUNCHES back to back timed together by the host clock (a green context's stream
    // takes no events of the primary context): a launch's own cost stays a small share
    auto go = [&] {
      for (int l = 0; l < LAUNCHES; ++l) mix<R, W, ILP><<<grid, 256, 0, st>>>(src, dst, n4);
    };
    mix<R, W, ILP><<<grid, 256, 0, st>>>(src, dst, n4);  // warm-up: TLBs, clocks
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) ms.push_back(time_ms(st, go));
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end()); float t = ms[ms.size() / 2];
    double bytes = (double)n4 * 16.0 * LAUNCHES;
    double kib = bps * 256.0 * ILP * R * 16.0 / 1024.0;
    printf("%d,%d,%d,%d,%d,%.1f,%.4f,%.1f,%.1f\n", sms, R, W, bps, ILP, kib, t,
           R * bytes / t / 1e6, W * bytes / t / 1e6);
    fflush(stdout);
  }
}

template <int R, int W>
void ilps(const float4* src, float4* dst, size_t n4, cudaStream_t st, int sms, int reps) {
  run<R, W, 1>(src, dst, n4, st, sms, reps);
  run<R, W, 2>(src, dst, n4, st, sms, reps);
  run<R, W, 4>(src, dst, n4, st, sms, reps);
  run<R, W, 8>(src, dst, n4, st, sms, reps);
}

int main(int argc, char** argv) {
  int reps = 0, sms = 0;
  cudaStream_t st = args_stream(argc, argv, &reps, &sms);
  const size_t n4 = (1ull << 30) / 16;  // 1 GiB a stream
  float4 *src, *dst;
  CK(cudaMalloc(&src, 3 * n4 * 16)); CK(cudaMalloc(&dst, 3 * n4 * 16));
  CK(cudaMemset(src, 0, 3 * n4 * 16)); CK(cudaMemset(dst, 0, 3 * n4 * 16));
  CK(cudaDeviceSynchronize());
  printf("sms,r,w,blocks_per_sm,ilp,inflight_kib_per_sm,ms,read_gbps,write_gbps\n");
  ilps<1, 0>(src, dst, n4, st, sms, reps);
  ilps<3, 1>(src, dst, n4, st, sms, reps);
  ilps<2, 1>(src, dst, n4, st, sms, reps);
  ilps<1, 1>(src, dst, n4, st, sms, reps);
  ilps<1, 2>(src, dst, n4, st, sms, reps);
  ilps<0, 1>(src, dst, n4, st, sms, reps);
  return 0;
}

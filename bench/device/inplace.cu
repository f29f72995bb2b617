// Read-modify-write streams in place against the same streams out of place. PyTorch's
// multi_tensor_apply over a large tensor (the held-out hybrid step on the H200: 320 blocks of
// 512 threads, each warp a float4 load then its store back to the same address, a step
// apart by the grid) takes 1.27x its whole-GPU time on 64 SMs and 1.73x on 32, and the
// model, whose issue loop reads dram_mix.cu's out-of-place 1:1 streams within 10% on 32
// SMs, times it at 0.75-0.81 of the hardware there: does writing back in place cost more?
//
// `upd<MODE, ILP>`: every thread walks its slice of a 256 MiB buffer (4x the H200's L2),
// ILP float4s a step (loads issued together), adds one to each and stores it:
//   out  to a second buffer at the same offset (dram_mix.cu's 1:1 stream, 512 threads);
//   in   back where it was read (multi_tensor_apply's);
//   lag  back into the source, to the elements it read one step earlier (the store's line
//        read a grid's stride before, not just now);
//   chunk  in place, each block walking a 256 KiB chunk of its own from start to end, then
//        the grid's next (multi_tensor_apply's order: at any moment the grid's blocks are
//        in as many places of the buffer, where the others' blocks are side by side).
// Blocks of 512 threads, 1, 2 or 4 a SM, and a grid of 320 (the step's launch).
// SMS > 0 runs them in a green context of that many SMs (the L2 and DRAM stay whole).
//
//   nvcc -O3 -arch=sm_90 inplace.cu -o inplace -lcuda && ./inplace REPS [SMS] > out.csv
// Prints CSV rows: sms,mode,grid,blocks_per_sm,ilp,ms,gbps (bytes read + written a second).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

enum Mode { OUT, IN, LAG, CHUNK };
static const char* kModes[] = {"out", "in", "lag", "chunk"};

// multi_tensor_apply's chunk: 65,536 floats
constexpr size_t CHUNK4 = 65536 / 4;

template <int ILP>
__device__ void chunks(float4* src, size_t n4) {
  for (size_t c = blockIdx.x; c * CHUNK4 < n4; c += gridDim.x) {
    const size_t end = (c + 1) * CHUNK4 < n4 ? (c + 1) * CHUNK4 : n4;
    for (size_t base = c * CHUNK4 + threadIdx.x; base < end; base += blockDim.x * ILP) {
      float4 a[ILP];
#pragma unroll
      for (int j = 0; j < ILP; ++j) {
        size_t i = base + (size_t)j * blockDim.x;
        a[j] = i < end ? src[i] : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int j = 0; j < ILP; ++j) {
        size_t i = base + (size_t)j * blockDim.x;
        a[j].x += 1.f;
        if (i < end) src[i] = a[j];
      }
    }
  }
}

template <int MODE, int ILP>
__global__ void __launch_bounds__(512) upd(float4* src, float4* dst, size_t n4) {
  if (MODE == CHUNK) { chunks<ILP>(src, n4); return; }
  const size_t stride = (size_t)gridDim.x * blockDim.x * ILP;
  float4* out = MODE == OUT ? dst : src;
  float4 prev[ILP];
  bool have = false;
  for (size_t base = (size_t)blockIdx.x * blockDim.x * ILP + threadIdx.x; base < n4;
       base += stride) {
    float4 a[ILP];
#pragma unroll
    for (int j = 0; j < ILP; ++j) {
      size_t i = base + (size_t)j * blockDim.x;
      a[j] = i < n4 ? src[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < ILP; ++j) {
      a[j].x += 1.f;
      if (MODE == LAG) {
        // the elements read a step earlier, now that this step's loads are in
        if (have) out[base - stride + (size_t)j * blockDim.x] = prev[j];
        prev[j] = a[j];
      } else {
        size_t i = base + (size_t)j * blockDim.x;
        if (i < n4) out[i] = a[j];
      }
    }
    have = true;
  }
}

template <int MODE, int ILP>
void run(float4* src, float4* dst, size_t n4, cudaStream_t st, int sms, int reps) {
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, upd<MODE, ILP>, 512, 0));
  for (int grid : {sms, 2 * sms, 4 * sms, 320}) {
    if (grid > occ * sms && grid != 320) continue;
    upd<MODE, ILP><<<grid, 512, 0, st>>>(src, dst, n4);  // warm-up: TLBs, clocks
    CK(cudaGetLastError());
    float t = median_ms(st, reps, [&] { upd<MODE, ILP><<<grid, 512, 0, st>>>(src, dst, n4); });
    printf("%d,%s,%d,%.2f,%d,%.4f,%.1f\n", sms, kModes[MODE], grid, (double)grid / sms, ILP, t,
           2.0 * n4 * 16.0 / t / 1e6);
    fflush(stdout);
  }
}

int main(int argc, char** argv) {
  int reps = 0, sms = 0;
  cudaStream_t st = args_stream(argc, argv, &reps, &sms);
  const size_t n4 = (256ull << 20) / 16;
  float4 *src, *dst;
  CK(cudaMalloc(&src, n4 * 16)); CK(cudaMalloc(&dst, n4 * 16));
  CK(cudaMemset(src, 0, n4 * 16)); CK(cudaMemset(dst, 0, n4 * 16));
  CK(cudaDeviceSynchronize());
  printf("sms,mode,grid,blocks_per_sm,ilp,ms,gbps\n");
  run<OUT, 1>(src, dst, n4, st, sms, reps);
  run<IN, 1>(src, dst, n4, st, sms, reps);
  run<LAG, 1>(src, dst, n4, st, sms, reps);
  run<CHUNK, 1>(src, dst, n4, st, sms, reps);
  run<OUT, 4>(src, dst, n4, st, sms, reps);
  run<IN, 4>(src, dst, n4, st, sms, reps);
  run<LAG, 4>(src, dst, n4, st, sms, reps);
  run<CHUNK, 4>(src, dst, n4, st, sms, reps);
  return 0;
}

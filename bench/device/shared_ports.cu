// Do an SM's shared-memory reads and writes share one data path, and do cp.async's writes
// into shared memory take it from the reads? The model (model-1.20) puts shared loads,
// shared stores and cp.async's shared writes on one L1TEX data path at one 128-byte
// wavefront a clock; without its exps, `_chunk_scan_fwd` is bound there in the model and
// saves less than on the hardware.
//
// One block an SM (132 blocks; its shared memory keeps a second one out), 8 warps. Each
// warp runs ITERS steps of one kind of work, conflict-free, 128-bit a lane (4 wavefronts a
// warp instruction):
//   read   LDS.128 (summed into a register so the loads stay)
//   write  STS.128
//   copy   cp.async 16 B a lane from an L2-resident 64 KB buffer into shared memory
//          (`cp.async.cg`, a commit and wait every 8)
//   read+write, read+copy   the two kinds in alternate warps (4 warps each)
// The SM's clocks for the block (the slowest warp's clock64 span) over the warp
// instructions it issued of the timed kind: clocks a warp instruction an SM.
//
//   nvcc -O3 -arch=sm_90 shared_ports.cu -o shared_ports && ./shared_ports [REPS]
// Prints CSV rows: mode,rep,instructions_per_sm,sm_clk_median,clk_per_instruction
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int WARPS = 8;
constexpr int THREADS = WARPS * 32;
constexpr int ITERS = 4096;
constexpr int SHARED_BYTES = 160 * 1024;     // one block an SM
constexpr int WARP_BYTES = 16 * 1024;        // each warp's own 16 KB of shared memory
constexpr int SRC_BYTES = 64 * 1024;         // the copies' source: stays in the L2

enum Mode { READ = 0, WRITE = 1, COPY = 2, READ_WRITE = 3, READ_COPY = 4 };

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(gmem));
}

__global__ void ports(int mode, const float4* __restrict__ src, float4* sink, long long* clk) {
  extern __shared__ float4 smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float4* mine = smem + warp * (WARP_BYTES / 16);
  const int slots = WARP_BYTES / 16 / 32;    // 512-byte rows in the warp's area
  int kind = mode;
  if (mode == READ_WRITE) kind = (warp & 1) ? WRITE : READ;
  if (mode == READ_COPY) kind = (warp & 1) ? COPY : READ;
  for (int i = lane; i < WARP_BYTES / 16; i += 32) mine[i] = make_float4(1.f, 2.f, 3.f, 4.f);
  __syncthreads();
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  const float4* from = src + (blockIdx.x * WARPS + warp) % (SRC_BYTES / 512) * 32;
  long long t0 = clock64();
  if (kind == READ) {
#pragma unroll 8
    for (int i = 0; i < ITERS; ++i) {
      float4 v = mine[(i % slots) * 32 + lane];
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
  } else if (kind == WRITE) {
    float4 v = make_float4(lane, 1.f, 2.f, 3.f);
#pragma unroll 8
    for (int i = 0; i < ITERS; ++i) {
      mine[(i % slots) * 32 + lane] = v;
      v.x += 1.f;
    }
  } else {
    for (int i = 0; i < ITERS; i += 8) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        cp_async16(&mine[((i + j) % slots) * 32 + lane], from + lane);
      asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
    }
  }
  long long t1 = clock64();
  __syncthreads();
  if (acc.x == -1.f) sink[threadIdx.x] = acc;  // never: keeps the reads
  if (lane == 0) clk[blockIdx.x * WARPS + warp] = t1 - t0;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaFuncSetAttribute(ports, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES));
  float4 *src, *sink;
  long long* clk;
  CHECK(cudaMalloc(&src, SRC_BYTES));
  CHECK(cudaMemset(src, 0, SRC_BYTES));
  CHECK(cudaMalloc(&sink, THREADS * sizeof(float4)));
  CHECK(cudaMalloc(&clk, sms * WARPS * sizeof(long long)));
  const char* names[] = {"read", "write", "copy", "read+write", "read+copy"};
  std::vector<long long> h(sms * WARPS);
  printf("mode,rep,instructions_per_sm,sm_clk_median,clk_per_instruction\n");
  for (int mode = 0; mode < 5; ++mode) {
    for (int rep = 0; rep < reps + 1; ++rep) {
      ports<<<sms, THREADS, SHARED_BYTES>>>(mode, src, sink, clk);
      CHECK(cudaDeviceSynchronize());
      if (rep == 0) continue;  // warm-up
      CHECK(cudaMemcpy(h.data(), clk, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      std::vector<long long> per_sm(sms);
      for (int b = 0; b < sms; ++b)
        per_sm[b] = *std::max_element(h.begin() + b * WARPS, h.begin() + (b + 1) * WARPS);
      std::nth_element(per_sm.begin(), per_sm.begin() + sms / 2, per_sm.end());
      long long med = per_sm[sms / 2];
      long long instr = static_cast<long long>(WARPS) * ITERS;
      printf("%s,%d,%lld,%lld,%.3f\n", names[mode], rep, instr, med,
             static_cast<double>(med) / instr);
    }
  }
  return 0;
}

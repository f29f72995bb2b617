// Helpers of the device microbenchmarks, most of them for a green context (a per-process SM
// subset: the L2 and DRAM stay whole), shared by mem_rows.cu, l2_ports.cu, the shapes
// benchmarks and the chases. The includer defines CK (its CUDA runtime error check) first.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CKD(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* m; \
  cuGetErrorString(e, &m); fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, m); exit(1); } } while (0)

// A stream of a green context holding n SMs; *got: the SMs it really holds.
static cudaStream_t green_stream(int n, int* got) {
  CUdevice dev; CKD(cuInit(0)); CKD(cuDeviceGet(&dev, 0));
  CUdevResource all, part, rest; unsigned groups = 1;
  CKD(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  CKD(cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, n));
  CUdevResourceDesc desc; CKD(cuDevResourceGenerateDesc(&desc, &part, 1));
  CUgreenCtx g; CKD(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CUstream s; CKD(cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0));
  *got = (int)part.sm.smCount;
  return (cudaStream_t)s;
}

// The stream a microbenchmark launches on: the whole GPU's default stream (want <= 0) or a
// green context's of `want` SMs; *sms: the SMs it holds.
static cudaStream_t sm_stream(int want, int* sms) {
  CK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, 0));
  return want > 0 ? green_stream(want, sms) : (cudaStream_t)0;
}

// A microbenchmark's two arguments: REPS timed launches a case (argv[1], default 5) on the
// SMs of a green context (argv[2]; 0 or none: the whole GPU); *sms: the SMs it holds.
static cudaStream_t args_stream(int argc, char** argv, int* reps, int* sms) {
  *reps = argc > 1 ? atoi(argv[1]) : 5;
  return sm_stream(argc > 2 ? atoi(argv[2]) : 0, sms);
}

// The GPU's nanosecond clock, for a time taken inside a kernel (one thread's chase).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Writes every word of q: run over a buffer larger than the L2, it evicts what the L2 held.
__global__ void scribble(unsigned long long* q, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    q[i] = i;
}

// Wall time of one launch: events cannot be recorded across a green context's stream and
// the primary context's, so the host clock times it (launch cost included, ~10 us).
template <class F> static float time_ms(cudaStream_t s, F launch) {
  CK(cudaStreamSynchronize(s));
  auto t0 = std::chrono::steady_clock::now();
  launch();
  CK(cudaStreamSynchronize(s));
  return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The median of `reps` timed launches of `launch` on `s`: CUDA events on the whole GPU's
// stream, the host clock on a green context's (time_ms).
template <class F> static float median_ms(cudaStream_t s, int reps, F launch) {
  std::vector<float> ms;
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int r = 0; r < reps; ++r) {
    if (s != (cudaStream_t)0) { ms.push_back(time_ms(s, launch)); continue; }
    CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float x; CK(cudaEventElapsedTime(&x, a, b)); ms.push_back(x);
  }
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The stream and SM count of a shapes microbenchmark (store_shapes.cu, load_shapes.cu):
// argv[2] SMs of a green context (0 or none: the whole GPU), or with SHAPE_SMS=N in the
// environment the grid a green context of N SMs would get, on the whole GPU (NVBit cannot
// trace inside a green context: bench/device/trace_rows.sh).
static cudaStream_t shapes_stream(int argc, char** argv, int* sms) {
  const int want = argc > 2 ? atoi(argv[2]) : 0;
  cudaStream_t st = sm_stream(want, sms);
  const char* shape = getenv("SHAPE_SMS");
  if (want == 0 && shape && atoi(shape) > 0) *sms = atoi(shape);
  return st;
}

// One CSV row of a shapes microbenchmark: what a warp instruction touches, the launch, and
// the median of its timed runs (sorts ms).
static void print_shape_row(const char* name, int lines, int sectors_per_line, int lanes,
                            int blocks, long instructions, std::vector<float>& ms) {
  std::sort(ms.begin(), ms.end());
  printf("%s,%d,%d,%d,%d,%ld,%.4f\n", name, lines, sectors_per_line, lanes, blocks,
         instructions, ms[ms.size() / 2]);
  fflush(stdout);
}

// The SM a thread runs on.
static __device__ __forceinline__ unsigned smid() {
  unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r;
}

// Every word of buf read once through the L2 (ld.global.cg), so that a buffer that fits it
// is there when the timed kernels start; sink only keeps the reads.
__global__ void warm_l2(const unsigned* buf, size_t words, unsigned* sink) {
  unsigned s = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
    s += __ldcg(buf + i);
  if (s == 0x12345678u) sink[0] = s;
}

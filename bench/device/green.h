// Helpers of the device microbenchmarks that run in a green context (a per-process SM
// subset: the L2 and DRAM stay whole), shared by mem_rows.cu and l2_ports.cu. The includer
// defines CK (its CUDA runtime error check) first.
#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

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

// Wall time of one launch: events cannot be recorded across a green context's stream and
// the primary context's, so the host clock times it (launch cost included, ~10 us).
template <class F> static float time_ms(cudaStream_t s, F launch) {
  CK(cudaStreamSynchronize(s));
  auto t0 = std::chrono::steady_clock::now();
  launch();
  CK(cudaStreamSynchronize(s));
  return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

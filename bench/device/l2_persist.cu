// Does the persisting-L2 set-aside shrink the L2 that normal accesses see?
//
// Read bandwidth (loads cached in L2 only) of a working set of W MB, read over and over, against W: a knee where W
// outgrows the L2. Measured twice: as the GPU is, then with cudaLimitPersistingL2CacheSize
// set to SETASIDE MB and a buffer of that size pinned (an access-policy window, hitRatio 1,
// persisting) and touched before every timed pass. If the set-aside takes capacity from
// normal accesses, the knee moves left by about SETASIDE. The limit is this process's: it is
// reset (cudaCtxResetPersistingL2Cache, limit 0) before exit.
//
//   nvcc -O3 -arch=sm_90 l2_persist.cu -o l2_persist && ./l2_persist [SETASIDE_MB]
// Prints CSV: mode,working_set_mb,gbps
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void read_sum(const float4* __restrict__ p, size_t n, int passes, float* sink) {
  float acc = 0.f;
  for (int k = 0; k < passes; ++k)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
      float4 v = __ldcg(p + i);  // L2 only: the L1 would hide the L2's capacity
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == 1234.5f) *sink = acc;  // never true; keeps the loads
}

static float time_passes(const float4* p, size_t n, int passes, float* sink, cudaStream_t s,
                         const float4* pin, size_t npin) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (pin) read_sum<<<sms * 8, 512, 0, s>>>(pin, npin, 1, sink);
  read_sum<<<sms * 8, 512, 0, s>>>(p, n, 1, sink);  // warm
  CK(cudaEventRecord(a, s));
  read_sum<<<sms * 8, 512, 0, s>>>(p, n, passes, sink);
  CK(cudaEventRecord(b, s));
  CK(cudaEventSynchronize(b));
  float ms; CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  return ms;
}

int main(int argc, char** argv) {
  size_t setaside_mb = argc > 1 ? atoi(argv[1]) : 24;
  const size_t MB = 1 << 20;
  std::vector<int> sizes = {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 80, 96, 128};
  float4* buf; float* sink;
  CK(cudaMalloc(&buf, 160 * MB));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(buf, 0, 160 * MB));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  int l2, maxp; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CK(cudaDeviceGetAttribute(&maxp, cudaDevAttrMaxPersistingL2CacheSize, 0));
  fprintf(stderr, "l2=%d bytes, max persisting=%d bytes\n", l2, maxp);
  printf("mode,working_set_mb,gbps\n");
  for (int pass = 0; pass < 2; ++pass) {
    float4* pin = nullptr; size_t npin = 0;
    if (pass == 1) {
      size_t bytes = setaside_mb * MB;
      if (bytes > (size_t)maxp) bytes = maxp;
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes));
      size_t got; CK(cudaDeviceGetLimit(&got, cudaLimitPersistingL2CacheSize));
      fprintf(stderr, "persisting limit set to %zu bytes\n", got);
      CK(cudaMalloc(&pin, bytes));
      CK(cudaMemset(pin, 0, bytes));
      npin = bytes / sizeof(float4);
      cudaStreamAttrValue attr = {};
      attr.accessPolicyWindow.base_ptr = pin;
      attr.accessPolicyWindow.num_bytes = bytes;
      attr.accessPolicyWindow.hitRatio = 1.0f;
      attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
      attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
      CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr));
    }
    for (int w : sizes) {
      size_t n = w * MB / sizeof(float4);
      int passes = 20;
      float ms = time_passes(buf, n, passes, sink, s, pin, npin);
      printf("%s,%d,%.1f\n", pass ? "setaside" : "normal", w,
             (double)w * MB * passes / (ms * 1e-3) / 1e9);
    }
    if (pass == 1) {
      cudaStreamAttrValue attr = {};
      attr.accessPolicyWindow.num_bytes = 0;
      CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr));
      CK(cudaCtxResetPersistingL2Cache());
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
      CK(cudaFree(pin));
    }
  }
  return 0;
}

// Smoke test of the tracer: one kernel launched every way a training step launches
// kernels (runtime <<<>>> -> cuLaunchKernel, the driver's cuLaunchKernelEx, CUDA-graph
// kernel nodes), inside and outside the windows the tracer offers (cudaProfilerStart/Stop,
// an NVTX range). Prints OK when the results are right, so instrumentation that breaks the
// program shows. Build: nvcc -arch=sm_90 -O2 smoke_app.cu -o smoke_app
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void shared_sum(const float *x, float *out, int n) {
  extern __shared__ float s[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);

int main() {
  const int n = 4096;
  float *x, *y, *sum;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&y, n * 4));
  CK(cudaMalloc(&sum, 4));
  float *h = (float *)malloc(n * 4);
  for (int i = 0; i < n; i++) h[i] = 1.0f;
  CK(cudaMemcpy(x, h, n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(y, 0, n * 4));
  CK(cudaMemset(sum, 0, 4));

  axpy<<<4, 128>>>(1.f, x, y, 512);  // before the window
  CK(cudaDeviceSynchronize());
  CK(cudaProfilerStart());
  axpy<<<16, 256>>>(2.f, x, y, n);  // cuLaunchKernel; y = 2 (first 512: 3)

  // cuLaunchKernelEx straight from the driver, as Triton and cuBLAS sm90 do
  launch_ex_t launch_ex = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", (void **)&launch_ex, 12000,
                                      cudaEnableDefault, &q));
  CUfunction f;
  CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)shared_sum));
  CUlaunchConfig cfg = {};
  cfg.gridDimX = 8; cfg.gridDimY = 1; cfg.gridDimZ = 1;
  cfg.blockDimX = 512; cfg.blockDimY = 1; cfg.blockDimZ = 1;
  cfg.sharedMemBytes = 512 * 4;
  cfg.hStream = 0;
  int nn = n;
  void *args[] = {&y, &sum, &nn};
  if (launch_ex(&cfg, f, args, nullptr) != CUDA_SUCCESS) { fprintf(stderr, "launch_ex failed\n"); return 1; }

  nvtxRangePushA("step");
  axpy<<<2, 64>>>(1.f, x, y, 128);  // inside the NVTX range
  nvtxRangePop();

  // a CUDA graph of two kernel nodes, captured from a stream and launched twice
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  axpy<<<32, 128, 0, s>>>(1.f, x, y, n);
  shared_sum<<<4, 1024, 1024 * 4, s>>>(y, sum, n);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaProfilerStop());
  axpy<<<4, 128>>>(1.f, x, y, 512);  // after the window
  CK(cudaDeviceSynchronize());

  float hs;
  CK(cudaMemcpy(h, y, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&hs, sum, 4, cudaMemcpyDeviceToHost));
  // y: 0 +1 (first 512) +2 (all) +1 (first 128) +1 +1 (graph, all) +1 (first 512)
  double expect_sum = 0, ysum = 0;
  for (int i = 0; i < n; i++) {
    double v = 4.0 + (i < 512 ? 2.0 : 0.0) + (i < 128 ? 1.0 : 0.0);
    ysum += h[i];
    if (h[i] != v) { printf("BAD y[%d]=%f want %f\n", i, h[i], v); return 1; }
  }
  // sum: after Ex launch y=2+(i<512) -> 2n+512; then graph sums y after each axpy
  expect_sum = (2.0 * n + 512) + (3.0 * n + 512 + 128) + (4.0 * n + 512 + 128);
  if (hs != (float)expect_sum) { printf("BAD sum %f want %f\n", hs, expect_sum); return 1; }
  printf("OK smoke_app y_sum=%.0f sum=%.0f\n", ysum, hs);
  return 0;
}

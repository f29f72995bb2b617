// A split reduction's last block, timed on the SM: PyTorch's reduce_kernel, when a column
// of outputs needs more blocks than one (grid.y = ctas_per_output > 1), has every block
// write its partial sums to a staging buffer, fence, and count itself in on a semaphore;
// the block that arrives last walks all ctas_per_output partials of its outputs, blockDim.y
// at a time, and writes the result. The held-out steps' strided sums (grid (10, 193) x
// (32, 4)) run 1.7-1.9x the model's cycles, their SMs' active cycles spread 21k-55k: that
// walk runs after every other block is done, one L2 round trip a step, on one SM a column.
//
// The same idiom here (block (32, 4), four outputs a thread, the walk's four scalar loads a
// step as PyTorch's SASS has them): G columns x C blocks each, C varied. The last block of
// each column reads clock64 before its walk and after its result is stored; the host
// also times the whole launch with events. Clocks a step = tail clocks / ceil(C / 4).
//
//   nvcc -O3 -arch=sm_90 split_tail.cu -o split_tail && ./split_tail [REPS]
// Prints CSV rows: columns,ctas,steps,rep,tail_clocks_max,tail_clocks_median,launch_us
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int BX = 32, BY = 4, VT = 4;

__global__ void split_sum(const float* in, int rows_per_block, float* staging,
                          unsigned* sem, float* out, long long* tail) {
  __shared__ float part[BY][BX][VT];
  __shared__ bool last;
  const int cols = gridDim.x * BX * VT, x = blockIdx.x, y = blockIdx.y;
  const int col = (x * BX + threadIdx.x) * VT;
  float v[VT] = {0.f, 0.f, 0.f, 0.f};
  // the main body: each block sums its own rows of its columns
  for (int r = threadIdx.y; r < rows_per_block; r += BY) {
    const float4 a = *reinterpret_cast<const float4*>(
        in + (size_t)(y * rows_per_block + r) * cols + col);
    v[0] += a.x; v[1] += a.y; v[2] += a.z; v[3] += a.w;
  }
  for (int i = 0; i < VT; ++i) part[threadIdx.y][threadIdx.x][i] = v[i];
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int j = 1; j < BY; ++j)
      for (int i = 0; i < VT; ++i) v[i] += part[j][threadIdx.x][i];
    float* s = staging + ((size_t)y * gridDim.x * BX + x * BX + threadIdx.x) * VT;
    for (int i = 0; i < VT; ++i) s[i] = v[i];
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0)
    last = atomicAdd(&sem[x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const long long t0 = clock64();
  for (int i = 0; i < VT; ++i) v[i] = 0.f;
#pragma unroll 1  // one step a trip, as PyTorch's SASS walks (ptxas would unroll by 4)
  for (int c = threadIdx.y; c < (int)gridDim.y; c += BY) {
    const float* s = staging + ((size_t)c * gridDim.x * BX + x * BX + threadIdx.x) * VT;
    for (int i = 0; i < VT; ++i) v[i] += s[i];
  }
  for (int i = 0; i < VT; ++i) part[threadIdx.y][threadIdx.x][i] = v[i];
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int j = 1; j < BY; ++j)
      for (int i = 0; i < VT; ++i) v[i] += part[j][threadIdx.x][i];
    for (int i = 0; i < VT; ++i) out[col + i] = v[i];
  }
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    tail[x] = clock64() - t0;
    sem[x] = 0;
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  const int G = 10, rows_total = 24576;
  const int cols = G * BX * VT;
  float *in, *staging, *out; unsigned* sem; long long* tail;
  CHECK(cudaMalloc(&in, sizeof(float) * (size_t)rows_total * cols));
  CHECK(cudaMemset(in, 0, sizeof(float) * (size_t)rows_total * cols));
  CHECK(cudaMalloc(&staging, sizeof(float) * (size_t)512 * cols));
  CHECK(cudaMalloc(&out, sizeof(float) * cols));
  CHECK(cudaMalloc(&sem, sizeof(unsigned) * G));
  CHECK(cudaMemset(sem, 0, sizeof(unsigned) * G));
  CHECK(cudaMalloc(&tail, sizeof(long long) * G));
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  printf("columns,ctas,steps,rep,tail_clocks_max,tail_clocks_median,launch_us\n");
  // the same rows each time, split among more blocks: the walk grows, the body shrinks
  for (int ctas : {8, 16, 32, 64, 96, 128, 193, 256, 384, 512}) {
    const int rpb = rows_total / ctas;
    for (int r = -1; r < reps; ++r) {  // r = -1 warms up
      CHECK(cudaEventRecord(e0));
      split_sum<<<dim3(G, ctas), dim3(BX, BY)>>>(in, rpb, staging, sem, out, tail);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
      std::vector<long long> t(G);
      CHECK(cudaMemcpy(t.data(), tail, sizeof(long long) * G, cudaMemcpyDeviceToHost));
      std::sort(t.begin(), t.end());
      if (r >= 0)
        printf("%d,%d,%d,%d,%lld,%lld,%.3f\n", G, ctas, (ctas + BY - 1) / BY, r, t[G - 1],
               t[G / 2], ms * 1e3);
    }
  }
  return 0;
}

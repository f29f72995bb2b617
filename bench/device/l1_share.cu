// How much of the L1 do blocks re-reading their own rows keep? l1_rows.cu's rows without
// stores (each block reads its own fp32 row three times, 16-byte loads), with the SM's
// footprint (blocks an SM x row) swept, in three shapes:
//   b1024:       1024 threads a block, two an SM (l1_rows.cu's nowrite case);
//   b256:        256 threads a block, eight an SM, rows a quarter as long;
//   b256_l1max:  b256 with the kernel's preferred shared-memory carve-out set to 0 (the
//                largest L1 the driver gives it).
// If the hits fall off at the same footprint in all three, the share of the L1 such reuse
// finds is the L1's, not the shape's (docs/history.md, *Tried and not kept*: an L1 share of
// 0.8 fitted on b1024 read a transposing copy's hits too low).
// Prints CSV rows: case,footprint_kb,row_bytes,blocks,ms (median of REPS event-timed runs).
//   nvcc -O3 -arch=sm_90 l1_share.cu -lcuda -o l1_share && ./l1_share REPS [SMS]
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

template <int THREADS>
__global__ void rows(const float4* in, int n4, float* sink) {
  __shared__ float red[THREADS / 32];
  const float4* row = in + (long)blockIdx.x * n4;
  float m = -INFINITY, s = 0.f, t = 0.f;
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    m = fmaxf(m, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    s += __expf(x.x - m) + __expf(x.y - m) + __expf(x.z - m) + __expf(x.w - m);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    t += (x.x + x.y + x.z + x.w) * s;
  }
  // one sum a block, so no pass can be dropped
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < THREADS / 32; ++w) a += red[w];
    sink[blockIdx.x] = a;
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms;
  cudaStream_t st = sm_stream(argc > 2 ? atoi(argv[2]) : 0, &sms);
  const int footprint_kb[] = {96, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288};
  const long max_bytes = (long)sms * 288 * 1024 * 8;  // eight waves of the largest footprint
  float4* in; float* sink;
  CK(cudaMalloc(&in, max_bytes)); CK(cudaMalloc(&sink, (long)sms * 8 * 8 * 4));
  CK(cudaMemset(in, 0, max_bytes));
  CK(cudaFuncSetAttribute(rows<1024>, cudaFuncAttributePreferredSharedMemoryCarveout, -1));
  printf("case,footprint_kb,row_bytes,blocks,ms\n");
  for (int shape = 0; shape < 3; ++shape) {
    const int per_sm = shape == 0 ? 2 : 8;
    if (shape == 2)
      CK(cudaFuncSetAttribute(rows<256>, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
    for (int kb : footprint_kb) {
      const int row_bytes = kb * 1024 / per_sm;
      const int n4 = row_bytes / 16;
      const int blocks = sms * per_sm * 8;
      auto go = [&] {
        if (shape == 0) rows<1024><<<blocks, 1024, 0, st>>>(in, n4, sink);
        else rows<256><<<blocks, 256, 0, st>>>(in, n4, sink);
      };
      go();
      CK(cudaStreamSynchronize(st));
      const char* name = shape == 0 ? "b1024" : shape == 1 ? "b256" : "b256_l1max";
      printf("%s,%d,%d,%d,%.4f\n", name, kb, row_bytes, blocks, median_ms(st, reps, go));
      fflush(stdout);
    }
  }
  return 0;
}

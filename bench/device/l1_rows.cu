// Do the lines a kernel stores take room in the L1? A softmax's shape: blocks of 1024
// threads (two an SM), each reading its own fp32 row of ROW_KB three times (max, sum of
// exps, then the output pass) with 16-byte loads, strided by the block as PyTorch's
// cunn_SoftMaxForward does. Two cases per row size:
//   write:   the third pass writes the row's output (as the softmax does);
//   nowrite: the third pass reads and sums only, one store a block.
// If stores take no room, the third pass's and the second pass's loads hit alike in both
// cases, up to rows of about half the L1 left beside the shared-memory carve-out; if they
// do, the write case's hits fall off at smaller rows. ncu's global-load lookups and hits
// (l1tex__t_sectors_pipe_lsu_mem_global_op_ld[_lookup_hit]) answer it (docs/model-memory.md,
// *L1 crowding*).
// Prints CSV rows: case,row_kb,blocks,ms (the median of REPS event-timed runs).
//   nvcc -O3 -arch=sm_90 l1_rows.cu -lcuda -o l1_rows && ./l1_rows REPS [SMS]
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

static constexpr int THREADS = 1024;

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[threadIdx.x & 31];
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();
  return v;
}

// in and out are not __restrict__: the loads stay LDG.E.128 as the softmax's are.
template <bool WRITE>
__global__ void rows(const float4* in, float4* out, int n4, float* sink) {
  __shared__ float red[32];
  const float4* row = in + (long)blockIdx.x * n4;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    m = fmaxf(m, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
  }
  m = block_reduce(m, true, red);
  float s = 0.f;
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    s += __expf(x.x - m) + __expf(x.y - m) + __expf(x.z - m) + __expf(x.w - m);
  }
  s = block_reduce(s, false, red);
  const float r = 1.f / s;
  float t = 0.f;
  for (int i = threadIdx.x; i < n4; i += THREADS) {
    const float4 x = row[i];
    const float4 y = make_float4(__expf(x.x - m) * r, __expf(x.y - m) * r,
                                 __expf(x.z - m) * r, __expf(x.w - m) * r);
    if (WRITE) out[(long)blockIdx.x * n4 + i] = y;
    else t += y.x + y.y + y.z + y.w;
  }
  if (!WRITE) {
    t = block_reduce(t, false, red);
    if (threadIdx.x == 0) sink[blockIdx.x] = t;
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms;
  cudaStream_t st = sm_stream(argc > 2 ? atoi(argv[2]) : 0, &sms);
  const int row_kb[] = {48, 64, 80, 96, 104, 112, 116, 120, 124, 127, 132, 144};
  const int blocks = sms * 2 * 8;  // eight waves of two blocks an SM
  const long max_n4 = 144L * 1024 / 16;
  float4 *in, *out; float* sink;
  CK(cudaMalloc(&in, blocks * max_n4 * 16)); CK(cudaMalloc(&out, blocks * max_n4 * 16));
  CK(cudaMalloc(&sink, blocks * 4));
  CK(cudaMemset(in, 0, blocks * max_n4 * 16));
  printf("case,row_kb,blocks,ms\n");
  for (int w = 1; w >= 0; --w) {
    for (int kb : row_kb) {
      const int n4 = kb * 1024 / 16;
      auto go = [&] {
        if (w) rows<true><<<blocks, THREADS, 0, st>>>(in, out, n4, sink);
        else rows<false><<<blocks, THREADS, 0, st>>>(in, out, n4, sink);
      };
      go();
      CK(cudaStreamSynchronize(st));
      printf("%s,%d,%d,%.4f\n", w ? "write" : "nowrite", kb, blocks, median_ms(st, reps, go));
      fflush(stdout);
    }
  }
  return 0;
}

// Column reads with one or four loads in flight a thread: does the L2 take PyTorch's
// CatArrayBatchedCopy's one-sector requests slower because each of its threads keeps one
// load in flight (load, store, next element), where the transposing copy's issue four
// before their stores? bench/RESULTS.md, *Column reads by row pitch*.
//
// Each kernel copies a bf16 [R, C] source's transpose into a contiguous [C, R] output
// (out[k] = src[(k % R) * C + k / R]: a warp's 32 lanes read one element of 32 rows, one
// one-sector L2 request each), R = C = 4096 (a row pitch of 8,192 bytes):
//   ilp1, ilp4: 128 threads a block, 1 or 4 elements a thread, all loads before the stores
//               (ilp4 is PyTorch's elementwise_kernel<128, 4>);
//   loop1, loop4: a grid-stride loop over 792 blocks of 512 threads (the cat's launch
//               shape), one element an iteration or four loaded before they are stored.
// Prints CSV rows: case,blocks,threads,elements,ms (the median of REPS event-timed runs;
// argv[2] > 0: a green context of that many SMs, host-timed).
//   nvcc -O3 -arch=sm_90 column_ilp.cu -lcuda -o column_ilp && ./column_ilp REPS [SMS]
#include <cuda_bf16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"

static constexpr long R = 4096, C = 4096, N = R * C;

__device__ __forceinline__ long src_of(long k) { return (k % R) * C + k / R; }

template <int ILP>
__global__ void ilp(const __nv_bfloat16* __restrict__ src, __nv_bfloat16* __restrict__ dst) {
  const long base = (long)blockIdx.x * blockDim.x * ILP + threadIdx.x;
  __nv_bfloat16 v[ILP];
#pragma unroll
  for (int i = 0; i < ILP; ++i) {
    const long k = base + (long)i * blockDim.x;
    if (k < N) v[i] = src[src_of(k)];
  }
#pragma unroll
  for (int i = 0; i < ILP; ++i) {
    const long k = base + (long)i * blockDim.x;
    if (k < N) dst[k] = v[i];
  }
}

template <int ILP>
__global__ void loop(const __nv_bfloat16* __restrict__ src, __nv_bfloat16* __restrict__ dst) {
  const long stride = (long)gridDim.x * blockDim.x;
  for (long k0 = (long)blockIdx.x * blockDim.x + threadIdx.x; k0 < N; k0 += stride * ILP) {
    __nv_bfloat16 v[ILP];
#pragma unroll
    for (int i = 0; i < ILP; ++i) {
      const long k = k0 + i * stride;
      if (k < N) v[i] = src[src_of(k)];
    }
#pragma unroll
    for (int i = 0; i < ILP; ++i) {
      const long k = k0 + i * stride;
      if (k < N) dst[k] = v[i];
    }
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms;
  cudaStream_t st = sm_stream(argc > 2 ? atoi(argv[2]) : 0, &sms);
  __nv_bfloat16 *src, *dst;
  CK(cudaMalloc(&src, N * 2)); CK(cudaMalloc(&dst, N * 2));
  CK(cudaMemset(src, 0, N * 2));
  struct Case { const char* name; int kind; int blocks; int threads; };
  const Case cases[] = {{"ilp1", 1, (int)(N / 128), 128}, {"ilp4", 4, (int)(N / 512), 128},
                        {"loop1", -1, 792, 512}, {"loop4", -4, 792, 512}};
  printf("case,blocks,threads,elements,ms\n");
  for (const Case& c : cases) {
    auto go = [&] {
      switch (c.kind) {
        case 1: ilp<1><<<c.blocks, c.threads, 0, st>>>(src, dst); break;
        case 4: ilp<4><<<c.blocks, c.threads, 0, st>>>(src, dst); break;
        case -1: loop<1><<<c.blocks, c.threads, 0, st>>>(src, dst); break;
        default: loop<4><<<c.blocks, c.threads, 0, st>>>(src, dst); break;
      }
    };
    go();
    CK(cudaStreamSynchronize(st));
    printf("%s,%d,%d,%ld,%.4f\n", c.name, c.blocks, c.threads, N, median_ms(st, reps, go));
    fflush(stdout);
  }
  return 0;
}

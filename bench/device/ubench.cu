// Microbenchmarks whose bound is known: dependent chains of one SASS operation (FFMA,
// HFMA2, IMAD, MUFU.EX2, MUFU.RSQ, HMMA bf16->fp32) at ILP 1/2/4/8 and several warps per
// SM, plus mixes of two pipes at fixed ratios. Each kernel is bound by one thing: the
// pipe's latency (few warps, ILP 1) or its throughput (many warps, high ILP), so the
// model's cycles can be held against a number derived from the GPU description alone.
//
//   ubench list            the launch table (CSV), in launch order
//   ubench run [REGEX]     launch every kernel whose label matches REGEX once, in order
//
// Every operation is inline PTX inside `asm volatile`, so neither nvcc nor ptxas may drop
// or fuse it; the chains' results are stored at the end so nothing is dead. Warps per SM
// are fixed by the launch shape: grid = 132 blocks of 32*W threads with enough dynamic
// shared memory that only one block fits an SM (W <= 32), or 2 blocks of 1024 threads per
// SM (W = 64, 264 blocks). The traces are meant to be taken with CTA sampling first:2
// (SM 0's share), the hardware truth with ncu over the same launch order.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

enum Op { FFMA = 0, HFMA2 = 1, IMAD = 2, MUFU_EX2 = 3, MUFU_RSQ = 4, HMMA = 5 };
static const char* kOpName[] = {"ffma", "hfma2", "imad", "mufu_ex2", "mufu_rsq", "hmma"};

// Operations per loop iteration per thread: large enough that the loop's own IADD/ISETP/BRA
// are a few percent of the issue slots, small enough to keep the code in the I-cache.
constexpr int kOpsPerIter = 64;
constexpr int kMmaPerIter = 16;

__device__ __forceinline__ void op_ffma(float& x, float a, float b) {
  asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
}
__device__ __forceinline__ void op_hfma2(unsigned& x, unsigned a, unsigned b) {
  asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
}
__device__ __forceinline__ void op_imad(unsigned& x, unsigned a, unsigned b) {
  asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
}
__device__ __forceinline__ void op_ex2(float& x) {
  asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x));
}
__device__ __forceinline__ void op_rsq(float& x) {
  asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x));
}
// One m16n8k16 bf16 MMA, accumulating into d (the chain runs through the accumulator).
__device__ __forceinline__ void op_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ILP independent chains of one operation, interleaved so that consecutive instructions of
// a warp are independent up to ILP and each depends on the one ILP before it.
template <int OP, int ILP>
__global__ void __launch_bounds__(1024) k_chain(const float* __restrict__ in, float* __restrict__ out, int iters) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float a = in[0], b = in[1];
  if constexpr (OP == HMMA) {
    float d[ILP][4];
    unsigned av[4], bv[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) av[i] = __float_as_uint(in[2 + i]) ^ t;
    bv[0] = __float_as_uint(in[6]); bv[1] = __float_as_uint(in[7]);
#pragma unroll
    for (int c = 0; c < ILP; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) d[c][i] = in[8 + i] + c;
#pragma unroll 1  // one loop body: the trace's instruction mix is the design's
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int u = 0; u < kMmaPerIter / ILP; ++u)
#pragma unroll
        for (int c = 0; c < ILP; ++c) op_mma(d[c], av, bv);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < ILP; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    out[t] = s;
  } else if constexpr (OP == FFMA || OP == MUFU_EX2 || OP == MUFU_RSQ) {
    float x[ILP];
#pragma unroll
    for (int c = 0; c < ILP; ++c) x[c] = in[2 + c] + t;
#pragma unroll 1  // one loop body: the trace's instruction mix is the design's
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int u = 0; u < kOpsPerIter / ILP; ++u)
#pragma unroll
        for (int c = 0; c < ILP; ++c) {
          if constexpr (OP == FFMA) op_ffma(x[c], a, b);
          else if constexpr (OP == MUFU_EX2) op_ex2(x[c]);
          else op_rsq(x[c]);
        }
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < ILP; ++c) s += x[c];
    out[t] = s;
  } else {  // HFMA2, IMAD: 32-bit integer registers
    const unsigned ua = __float_as_uint(a), ub = __float_as_uint(b);
    unsigned x[ILP];
#pragma unroll
    for (int c = 0; c < ILP; ++c) x[c] = __float_as_uint(in[2 + c]) + t;
#pragma unroll 1  // one loop body: the trace's instruction mix is the design's
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int u = 0; u < kOpsPerIter / ILP; ++u)
#pragma unroll
        for (int c = 0; c < ILP; ++c) {
          if constexpr (OP == HFMA2) op_hfma2(x[c], ua, ub);
          else op_imad(x[c], ua, ub);
        }
    }
    unsigned s = 0;
#pragma unroll
    for (int c = 0; c < ILP; ++c) s ^= x[c];
    out[t] = __uint_as_float(s);
  }
}

// Two pipes at a fixed ratio, each pipe's work in 4 independent chains (per iteration):
//   MIX 0: 32 FFMA : 4 HMMA     MIX 1: 32 FFMA : 4 MUFU.EX2     MIX 2: 32 IMAD : 32 FFMA
template <int MIX>
__global__ void __launch_bounds__(1024) k_mix(const float* __restrict__ in, float* __restrict__ out, int iters) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float a = in[0], b = in[1];
  float f[4], m[4];
  unsigned g[4];
  float d[2][4];
  unsigned av[4], bv[2];
#pragma unroll
  for (int c = 0; c < 4; ++c) { f[c] = in[2 + c] + t; m[c] = in[10 + c] - t; g[c] = __float_as_uint(in[6 + c]) + t; }
#pragma unroll
  for (int i = 0; i < 4; ++i) { av[i] = __float_as_uint(in[2 + i]) ^ t; d[0][i] = in[8 + i]; d[1][i] = in[12 + i]; }
  bv[0] = __float_as_uint(in[6]); bv[1] = __float_as_uint(in[7]);
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
#pragma unroll
      for (int c = 0; c < 4; ++c) op_ffma(f[c], a, b);
      if constexpr (MIX == 0) { if (u % 4 == 0) { op_mma(d[0], av, bv); op_mma(d[1], av, bv); } }
      if constexpr (MIX == 1) { if (u % 2 == 0) { op_ex2(m[u / 2]); } }
      if constexpr (MIX == 2) {
#pragma unroll
        for (int c = 0; c < 4; ++c) op_imad(g[c], __float_as_uint(a), __float_as_uint(b));
      }
    }
  }
  float s = f[0] + f[1] + f[2] + f[3] + d[0][0] + d[0][1] + d[0][2] + d[0][3] + d[1][0] + d[1][3];
  out[t] = s + m[0] + m[1] + m[2] + m[3] + __uint_as_float(g[0] ^ g[1] ^ g[2] ^ g[3]);
}

typedef void (*KernelFn)(const float*, float*, int);

struct Launch {
  std::string label;   // e.g. ffma_ilp4_w16
  const char* op;      // operation or mix name
  int ilp, warps_per_sm, iters, ops_per_iter;
  KernelFn fn;
};

template <int OP>
static KernelFn chain_fn(int ilp) {
  switch (ilp) {
    case 1: return k_chain<OP, 1>;
    case 2: return k_chain<OP, 2>;
    case 4: return k_chain<OP, 4>;
    default: return k_chain<OP, 8>;
  }
}
static KernelFn chain_by_op(int op, int ilp) {
  switch (op) {
    case FFMA: return chain_fn<FFMA>(ilp);
    case HFMA2: return chain_fn<HFMA2>(ilp);
    case IMAD: return chain_fn<IMAD>(ilp);
    case MUFU_EX2: return chain_fn<MUFU_EX2>(ilp);
    case MUFU_RSQ: return chain_fn<MUFU_RSQ>(ilp);
    default: return chain_fn<HMMA>(ilp);
  }
}

// Fewer warps per SM run longer per warp: the same traced instructions per SM (16 warps'
// worth), and 8x the launch overhead even for the shortest (ILP 8 at 1 warp per SM).
static int longer(int warps_per_sm) { return warps_per_sm >= 16 ? 1 : 16 / warps_per_sm; }

static std::vector<Launch> table() {
  std::vector<Launch> v;
  const int ilps[] = {1, 2, 4, 8};
  for (int op : {FFMA, HFMA2, IMAD, MUFU_EX2, HMMA}) {
    // HMMA at ILP 8 holds 32 accumulator registers: 64 warps/SM (32 regs/thread) cannot fit.
    const int ws[] = {1, 4, 16, op == HMMA ? 32 : 64};
    // Per thread: 2048 operations (1024 MUFU, 512 MMA) at 16 and more warps per SM, more
    // below (longer()), so a sampled trace of SM 0's blocks stays under ~130k warp
    // instructions and every kernel runs far longer than the ~4k-cycle launch overhead.
    const int per_iter = op == HMMA ? kMmaPerIter : kOpsPerIter;
    const int total = op == HMMA ? 512 : op == MUFU_EX2 ? 1024 : 2048;
    for (int w : ws)
      for (int ilp : ilps) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s_ilp%d_w%d", kOpName[op], ilp, w);
        v.push_back({buf, kOpName[op], ilp, w, total * longer(w) / per_iter, per_iter, chain_by_op(op, ilp)});
      }
  }
  for (int w : {1, 16})
    for (int ilp : {1, 8}) {
      char buf[64];
      snprintf(buf, sizeof buf, "mufu_rsq_ilp%d_w%d", ilp, w);
      v.push_back({buf, "mufu_rsq", ilp, w, 1024 * longer(w) / kOpsPerIter, kOpsPerIter,
                   chain_by_op(MUFU_RSQ, ilp)});
    }
  const char* mixes[] = {"mix_ffma_hmma", "mix_ffma_mufu", "mix_imad_ffma"};
  const KernelFn mix_fns[] = {k_mix<0>, k_mix<1>, k_mix<2>};
  const int mix_iters[] = {128, 64, 64};
  const int mix_ops[] = {36, 36, 64};
  for (int m = 0; m < 3; ++m)
    for (int w : {4, 16, 64}) {
      char buf[64];
      snprintf(buf, sizeof buf, "%s_w%d", mixes[m], w);
      v.push_back({buf, mixes[m], 4, w, mix_iters[m] * longer(w), mix_ops[m], mix_fns[m]});
    }
  // No loop iterations: the launch overhead alone (launch, block distribution, drain).
  for (int w : {1, 64}) {
    char buf[64];
    snprintf(buf, sizeof buf, "empty_w%d", w);
    v.push_back({buf, "empty", 1, w, 0, kOpsPerIter, chain_by_op(FFMA, 1)});
  }
  return v;
}

static void shape(const Launch& l, int sms, int& grid, int& block, int& shmem) {
  if (l.warps_per_sm <= 32) {
    grid = sms; block = 32 * l.warps_per_sm;
    shmem = 120 * 1024;  // > half of the SM's 228 KB: one block per SM
  } else {
    grid = sms * (l.warps_per_sm / 32); block = 1024; shmem = 0;
  }
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "list";
  const std::regex filter(argc > 2 ? argv[2] : "");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  auto launches = table();
  if (mode == "list") {
    printf("index,label,op,ilp,warps_per_sm,grid,block,shmem,iters,ops_per_iter\n");
    int i = 0;
    for (auto& l : launches) {
      if (!std::regex_search(l.label, filter)) continue;
      int g, b, s;
      shape(l, sms, g, b, s);
      printf("%d,%s,%s,%d,%d,%d,%d,%d,%d,%d\n", i++, l.label.c_str(), l.op, l.ilp, l.warps_per_sm, g, b, s,
             l.iters, l.ops_per_iter);
    }
    return 0;
  }
  if (mode != "run") { fprintf(stderr, "usage: ubench list|run [REGEX]\n"); return 2; }
  float h_in[16];
  for (int i = 0; i < 16; ++i) h_in[i] = 0.25f + 0.01f * i;
  h_in[0] = 0.999f; h_in[1] = 0.001f;
  float *d_in, *d_out;
  CK(cudaMalloc(&d_in, sizeof h_in));
  CK(cudaMalloc(&d_out, sizeof(float) * sms * 2048));
  CK(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  for (auto& l : launches)
    CK(cudaFuncSetAttribute(l.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 120 * 1024));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("index,label,grid,block,shmem,event_ms\n");
  int i = 0;
  for (auto& l : launches) {
    if (!std::regex_search(l.label, filter)) continue;
    int g, b, s;
    shape(l, sms, g, b, s);
    CK(cudaEventRecord(e0));
    l.fn<<<g, b, s>>>(d_in, d_out, l.iters);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("%d,%s,%d,%d,%d,%.6f\n", i++, l.label.c_str(), g, b, s, ms);
    fflush(stdout);
  }
  return 0;
}

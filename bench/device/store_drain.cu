// What a block's closing stores cost the first load of the block that takes its place on
// the SM. The model (stores.load_ns) charges each global store a warp issued after its
// last global load 157 ns to the first load of the warp that takes its slot next, linearly
// in the stores: the pointer chase measured one and two lines a step (185 and 302 ns on
// the H100). The SSD kernels' warps close with 8 or more 512-byte stores, where the linear
// charge reaches 2,500 clocks, and ncu's warp samples of the fit step (hd128, H200) put
// almost nothing at the instruction that waits for that first load.
//
// Here one block an SM at a time (its shared memory keeps a second one out), 4 warps. Each
// block times its first load (clock64 before it and after a shared-memory store of its
// value, which cannot issue before the value is there): `l2`, one line every block reads
// (an L2 hit); `dram`, a line of its own no launch read before, 4 KiB from the next
// block's (a DRAM miss, as the pointer chase's loads were). Then it spins
// SPIN clocks, then every lane stores N float4 to lines no block wrote before (each warp N
// x 512 B) and the block exits. Also read: %globaltimer at the block's start and after its
// stores issue, for the gap from one block's end to the next one's start on the same SM
// (the H200 read 256 ns at every N: read it as the timer's step, not a measured gap).
//
//   nvcc -O3 -arch=sm_90 store_drain.cu -o store_drain && ./store_drain [REPS]
// Prints CSV rows: load,n_stores,rep,blocks,followers,first_load_clk_median,first_load_clk_p90,
//   first_load_clk_first_wave,gap_ns_median,block_clk_median,launch_us
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int THREADS = 128;
constexpr long long SPIN = 2000;
// enough dynamic shared memory that a second block cannot join the first on its SM
constexpr int HOLD_BYTES = 160 * 1024;

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

__global__ void drain(const float* __restrict__ src, size_t line_floats, float4* sink, int n_stores,
                      long long* first_load, long long* block_clk, unsigned* sm,
                      unsigned long long* start_ns, unsigned long long* end_ns) {
  extern __shared__ float hold[];
  volatile float* vs = hold;
  const unsigned long long g0 = gtimer();
  const long long t0 = clock64();
  const float v = __ldcg(src + blockIdx.x * line_floats + (threadIdx.x & 31));
  vs[threadIdx.x] = v;  // waits for v
  const long long t1 = clock64();
  while (clock64() - t1 < SPIN) {
  }
  const float4 w = make_float4(v, v + 1.f, v + 2.f, v + 3.f);
  for (int i = 0; i < n_stores; ++i)
    sink[((size_t)blockIdx.x * n_stores + i) * THREADS + threadIdx.x] = w;
  const long long t2 = clock64();
  const unsigned long long g1 = gtimer();
  if (threadIdx.x == 0) {
    first_load[blockIdx.x] = t1 - t0;
    block_clk[blockIdx.x] = t2 - t0;
    sm[blockIdx.x] = smid();
    start_ns[blockIdx.x] = g0;
    end_ns[blockIdx.x] = g1;
  }
}

template <typename T>
static double quantile(std::vector<T> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return (double)v[(size_t)(q * (v.size() - 1))];
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 24, max_n = 32;
  CHECK(cudaFuncSetAttribute(drain, cudaFuncAttributeMaxDynamicSharedMemorySize, HOLD_BYTES));
  float *hot, *cold;
  // the DRAM case: a line a block, 4 KiB apart, a fresh stretch for every launch
  const size_t cold_stride = 1024, launches = 2 * 7 * (size_t)reps;  // the dram mode's
  float4* sink;
  long long *first, *bclk;
  unsigned* sm;
  unsigned long long *s_ns, *e_ns;
  CHECK(cudaMalloc(&hot, 32 * sizeof(float)));
  CHECK(cudaMemset(hot, 0, 32 * sizeof(float)));
  CHECK(cudaMalloc(&cold, launches * blocks * cold_stride * sizeof(float)));
  CHECK(cudaMemset(cold, 0, launches * blocks * cold_stride * sizeof(float)));
  size_t launch = 0;
  CHECK(cudaMalloc(&sink, (size_t)blocks * max_n * THREADS * sizeof(float4)));
  CHECK(cudaMalloc(&first, blocks * sizeof(long long)));
  CHECK(cudaMalloc(&bclk, blocks * sizeof(long long)));
  CHECK(cudaMalloc(&sm, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&s_ns, blocks * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&e_ns, blocks * sizeof(unsigned long long)));
  std::vector<long long> h_first(blocks), h_bclk(blocks);
  std::vector<unsigned> h_sm(blocks);
  std::vector<unsigned long long> h_s(blocks), h_e(blocks);
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  printf("load,n_stores,rep,blocks,followers,first_load_clk_median,first_load_clk_p90,"
         "first_load_clk_first_wave,gap_ns_median,block_clk_median,launch_us\n");
  const int ns[] = {0, 1, 2, 4, 8, 16, 32};
  for (int mode = 0; mode < 2; ++mode)
  for (int rep = 0; rep < reps; ++rep) {
    for (int n : ns) {
      // the first launch leaves the SMs' previous blocks with n stores as well
      const float* src[2];
      size_t step[2];
      for (int k = 0; k < 2; ++k) {
        src[k] = mode == 0 ? hot : cold + (launch++) * blocks * cold_stride;
        step[k] = mode == 0 ? 0 : cold_stride;
      }
      drain<<<blocks, THREADS, HOLD_BYTES>>>(src[0], step[0], sink, n, first, bclk, sm, s_ns, e_ns);
      CHECK(cudaEventRecord(a));
      drain<<<blocks, THREADS, HOLD_BYTES>>>(src[1], step[1], sink, n, first, bclk, sm, s_ns, e_ns);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      CHECK(cudaMemcpy(h_first.data(), first, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(h_bclk.data(), bclk, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(h_sm.data(), sm, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(h_s.data(), s_ns, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(h_e.data(), e_ns, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      // per SM, its blocks in start order: the first one followed no block of this launch
      std::vector<int> order(blocks);
      for (int i = 0; i < blocks; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](int x, int y) {
        return h_sm[x] != h_sm[y] ? h_sm[x] < h_sm[y] : h_s[x] < h_s[y];
      });
      std::vector<long long> follow, lead;
      std::vector<double> gap;
      for (int k = 0; k < blocks; ++k) {
        const int i = order[k];
        if (k > 0 && h_sm[order[k - 1]] == h_sm[i]) {
          follow.push_back(h_first[i]);
          gap.push_back((double)h_s[i] - (double)h_e[order[k - 1]]);
        } else {
          lead.push_back(h_first[i]);
        }
      }
      printf("%s,%d,%d,%d,%zu,%.0f,%.0f,%.0f,%.0f,%.0f,%.2f\n", mode == 0 ? "l2" : "dram", n, rep, blocks, follow.size(),
             quantile(follow, 0.5), quantile(follow, 0.9), quantile(lead, 0.5),
             quantile(gap, 0.5), quantile(h_bclk, 0.5), ms * 1000.0);
    }
  }
  return 0;
}

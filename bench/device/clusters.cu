// How many thread-block clusters an SM subset holds at once. The cuBLAS sm90 GEMMs
// (nvjet_*_1x2_*, _2x1_, _4x2_: cluster shapes in their names) launch 132 one-block-a-SM
// workers in clusters; on 96 SMs of a green context they took 1.6-1.8x their whole-GPU
// time where 132/96 workers' worth of tiles is 1.375x (bench/RESULTS.md, *What-ifs against
// hardware*). A cluster's blocks must sit in one GPC, so how many of a subset's SMs a
// cluster launch can fill depends on how the subset's SMs fall across GPCs.
//
// Each block holds 200 KB of shared memory (one block a SM, as the GEMMs) and 384 threads,
// records its SM and its start and end on the global timer, and spins SPIN_US. The largest
// number of blocks running at one time is what the subset holds; the driver's own answer
// (cudaOccupancyMaxActiveClusters on the green context's stream) is printed beside it.
//
//   nvcc -O3 -arch=sm_90 clusters.cu -o clusters -lcuda && ./clusters [SMS ...]
// CSV: sms,cluster,grid,held_blocks,api_clusters,rounds,elapsed_us,distinct_sms
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#include "green.h"
#include <set>

constexpr int SMEM = 200 * 1024;
constexpr int THREADS = 384;
constexpr long long SPIN_NS = 200000;

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}

__global__ void hold(unsigned long long* rec) {
  extern __shared__ char smem[];
  if (threadIdx.x == 0) {
    unsigned long long t0 = now(), t = t0;
    unsigned smid; asm("mov.u32 %0, %%smid;" : "=r"(smid));
    while (t - t0 < SPIN_NS) t = now();
    smem[0] = (char)t;
    const int b = blockIdx.x;
    rec[3 * b] = t0; rec[3 * b + 1] = t; rec[3 * b + 2] = smid + (smem[0] & 0);
  }
  __syncthreads();
}

int main(int argc, char** argv) {
  std::vector<int> wants = {0, 120, 96, 80, 64, 48, 32};
  if (argc > 1) { wants.clear(); for (int i = 1; i < argc; ++i) wants.push_back(atoi(argv[i])); }
  CK(cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  CK(cudaFuncSetAttribute(hold, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  printf("sms,cluster,grid,held_blocks,api_clusters,rounds,elapsed_us,distinct_sms\n");
  for (int want : wants) {
    int sms = 0;
    cudaStream_t st = sm_stream(want, &sms);
    for (int c : {1, 2, 4, 8, 16}) {
      const int grid = (132 / c) * c;
      unsigned long long* rec;
      CK(cudaMalloc(&rec, sizeof(unsigned long long) * 3 * grid));
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(grid); cfg.blockDim = dim3(THREADS);
      cfg.dynamicSmemBytes = SMEM; cfg.stream = st;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = c; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr; cfg.numAttrs = 1;
      int api = -1;
      if (cudaOccupancyMaxActiveClusters(&api, hold, &cfg) != cudaSuccess) {
        api = -1; cudaGetLastError();
      }
      // a warm-up launch, then the recorded one
      if (cudaLaunchKernelEx(&cfg, hold, rec) != cudaSuccess) {
        printf("%d,%d,%d,,%d,,,\n", sms, c, grid, api); cudaGetLastError();
        CK(cudaFree(rec)); continue;
      }
      CK(cudaStreamSynchronize(st));
      CK(cudaLaunchKernelEx(&cfg, hold, rec));
      CK(cudaStreamSynchronize(st));
      std::vector<unsigned long long> h(3 * grid);
      CK(cudaMemcpy(h.data(), rec, sizeof(unsigned long long) * 3 * grid, cudaMemcpyDeviceToHost));
      CK(cudaFree(rec));
      std::vector<std::pair<unsigned long long, int>> ev;
      std::set<unsigned long long> used;
      unsigned long long lo = ~0ull, hi = 0;
      for (int b = 0; b < grid; ++b) {
        ev.push_back({h[3 * b], +1}); ev.push_back({h[3 * b + 1], -1});
        used.insert(h[3 * b + 2]);
        lo = std::min(lo, h[3 * b]); hi = std::max(hi, h[3 * b + 1]);
      }
      // ends before starts at one time stamp: a block that ends frees its SM for the next
      std::sort(ev.begin(), ev.end());
      int cur = 0, held = 0;
      for (auto& e : ev) { cur += e.second; held = std::max(held, cur); }
      const double us = (hi - lo) / 1e3;
      printf("%d,%d,%d,%d,%d,%.2f,%.1f,%zu\n", sms, c, grid, held, api, us / (SPIN_NS / 1e3), us,
             used.size());
      fflush(stdout);
    }
  }
  return 0;
}

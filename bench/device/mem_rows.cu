// Two memory facts the timing model takes from the description, measured where a kernel
// meets them (issue 12: the LM-head softmax and the elementwise casts of the paper steps).
//
// rows: how much of the L2 the resident blocks of a kernel can reuse. Every block owns one
//   row of R bytes and reads it PASSES times, each pass waiting on the one before through a
//   block reduction (a softmax's max, sum and write passes). With B blocks resident on each
//   of S SMs a row's re-read comes after the resident rows moved W = B*S*R bytes through the
//   L2; an LRU L2 of C bytes keeps the rows while W < C. Under ncu, dram__bytes_read per row
//   over R gives the reads of each row: 1 when every re-read hit, PASSES when none did.
//   The data is random (a hash), so no compression can make it look smaller. rowsw: the
//   same, the last pass also writing the row out, as a softmax's does.
// chase: DRAM load-to-use under load. Each warp follows ILP chains of dependent loads through
//   a random cycle of 128-byte lines in a buffer far larger than the L2 (every load misses),
//   one line per step and chain. With N warps resident per SM, time per step is the loaded
//   latency, and lines x 128 B / time the bandwidth that load makes. chasew: the same with 1
//   or 2 full lines written per step and chain, streamed to another 1 GB: how writes
//   lengthen the reads' wait.
//
// SMS > 0 runs the kernels in a green context of that many SMs (a per-process setting, as
// `simfront timeline --sms` uses): the L2 stays whole, the SMs that share it are fewer.
//
//   nvcc -O3 -arch=sm_90 mem_rows.cu -o mem_rows -lcuda && ./mem_rows [REPS [SMS [rows|rowsw|chase|chasew|all]]]
// Prints CSV rows: rows[w],<SMs>,<blocks/SM>,<resident rows>,<row bytes>,<W MB>,<grid>,<ms>,<GB/s>
//             and: chase[w],<SMs>,<warps/SM>,<ilp>,<steps>,<ms>,<ns per step>,<GB/s read>,<writes>
// REPS=1 (under ncu) leaves the warm-up launches out: every rows/chase launch is one profiled
// kernel, in the order printed.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ unsigned hash32(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
}

__global__ void fill_random(float* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = (hash32((unsigned)i ^ 0x9e3779b9U) >> 8) * (1.0f / 16777216.0f);
}

__global__ void __launch_bounds__(1024, 2) rows(const float4* __restrict__ p, int n4, int passes,
                                             float* out, float4* __restrict__ wrow) {
  extern __shared__ float pad[];  // dynamic shared memory only limits blocks per SM
  __shared__ float red[32];
  const float4* row = p + (size_t)blockIdx.x * n4;
  float carry = 0.f;
  for (int k = 0; k < passes; ++k) {
    float s = 0.f;
    const bool write = wrow != nullptr && k == passes - 1;  // rowsw: a softmax's last pass
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
      float4 v = __ldcg(row + i);  // L2 only: the question is the L2's capacity
      s += fmaxf(v.x, carry) + v.y + v.z + v.w;
      if (write) wrow[(size_t)blockIdx.x * n4 + i] = make_float4(v.x * carry, v.y, v.z, v.w);
    }
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
      float t = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
      for (int o = 16; o; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
      if (threadIdx.x == 0) red[0] = t;
    }
    __syncthreads();
    carry = red[0] * 1e-9f;  // the next pass needs this one's result
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = carry;
  if (n4 < 0) out[0] = pad[0];  // never: the shared memory is there to be allocated, not read
}

// next[i]: the line after line i on one random cycle through all lines (as 32-bit indices,
// one per line, in the line's first word; the rest of the line is not read).
__global__ void __launch_bounds__(128) chase(const unsigned* __restrict__ lines, int steps,
                                             int ilp, unsigned n_lines, unsigned* out,
                                             int writes, unsigned* wbuf, unsigned w_lines) {
  extern __shared__ unsigned pad2[];
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned lane = threadIdx.x & 31;
  unsigned cur[4];
  for (int c = 0; c < 4; ++c) cur[c] = hash32(warp * 4 + c) % n_lines;
  unsigned acc = 0;
  for (int s = 0; s < steps; ++s) {
    unsigned nx[4];
    for (int c = 0; c < 4; ++c)
      if (c < ilp) nx[c] = __ldcg(lines + (size_t)cur[c] * 32 + lane);  // one full line
    for (int c = 0; c < 4; ++c)
      if (c < ilp) { cur[c] = __shfl_sync(0xffffffffu, nx[c], 0); acc += nx[c]; }
    // a full line streamed out per write: stores the warp does not wait for
    for (int w = 0; w < writes; ++w)
      wbuf[(size_t)((((size_t)warp * steps + s) * writes + w) % w_lines) * 32 + lane] = acc;
  }
  if (acc == 0x12345u) out[0] = acc;
  if (steps < 0) out[0] = pad2[0];  // never (see rows)
}

#include "green.h"

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 3;
  const int want_sms = argc > 2 ? atoi(argv[2]) : 0;
  const char* what = argc > 3 ? argv[3] : "all";
  const size_t MB = 1 << 20;
  int sms, l2; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaFree(0));  // the primary context first: the buffers live there
  cudaStream_t st = sm_stream(want_sms, &sms);
  fprintf(stderr, "%s: %d SMs in use, L2 %d bytes\n", prop.name, sms, l2);
  float* out; CK(cudaMalloc(&out, 1 << 20));

  // rows ------------------------------------------------------------------------------
  const bool rows_write = strcmp(what, "rowsw") == 0;
  if (strcmp(what, "rows") == 0 || strcmp(what, "all") == 0 || rows_write) {
  const int passes = 3;
  const size_t buf_bytes = 3072 * MB;
  float* buf; CK(cudaMalloc(&buf, buf_bytes));
  float4* wbuf_rows = nullptr;  // rowsw: each row's output, as large as its input
  if (rows_write) CK(cudaMalloc(&wbuf_rows, buf_bytes));
  fill_random<<<sms * 8, 512>>>(buf, buf_bytes / 4);
  CK(cudaDeviceSynchronize());
  CK(cudaFuncSetAttribute(rows, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  const int wmb[] = {8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 96, 128};
  for (int per_sm = 2; per_sm >= 1; --per_sm) {
    size_t smem = per_sm == 2 ? 0 : 120 * 1024;  // 1 block/SM: its shared memory says so
    int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, rows, 1024, smem));
    // SHAPE_SMS=N: rows and grid as a green context of N SMs sizes them, run on the whole
    // GPU (NVBit cannot trace inside a green context: cuGreenCtxCreate fails under it).
    const char* shape = getenv("SHAPE_SMS");
    const long resident = (long)occ * (shape && atoi(shape) > 0 ? atoi(shape) : sms);
    for (int w : wmb) {
      size_t rb = ((size_t)w * MB / resident) / 512 * 512;  // bytes per row, whole float4 x 32
      int n4 = (int)(rb / 16);
      long grid = std::min<long>(resident * 16, (long)(buf_bytes / rb));
      auto go = [&] { rows<<<grid, 1024, smem, st>>>((const float4*)buf, n4, passes, out,
                                                      wbuf_rows); };
      if (reps > 1) go();  // warm-up
      std::vector<float> t;
      for (int r = 0; r < reps; ++r) t.push_back(time_ms(st, go));
      std::sort(t.begin(), t.end());
      float ms = t[t.size() / 2];
      double bytes = (double)grid * rb * passes;
      printf("%s,%d,%d,%ld,%zu,%.2f,%ld,%.4f,%.1f\n", rows_write ? "rowsw" : "rows", sms,
             occ, resident, rb,
             resident * (double)rb / MB, grid, ms, bytes / ms / 1e6);
      fflush(stdout);
    }
  }
  CK(cudaFree(buf));
  if (wbuf_rows) CK(cudaFree(wbuf_rows));
  }

  // chase ------------------------------------------------------------------------------
  if (strcmp(what, "rows") == 0 || rows_write) return 0;
  const bool with_writes = strcmp(what, "chasew") == 0;
  const unsigned w_lines = (unsigned)(1024 * MB / 128);
  unsigned* wbuf; CK(cudaMalloc(&wbuf, (size_t)w_lines * 128));
  const unsigned n_lines = (unsigned)(2048 * MB / 128);
  unsigned* lines; CK(cudaMalloc(&lines, (size_t)n_lines * 128));
  {
    // A random cycle through all lines (Sattolo), built on the host in the first words.
    std::vector<unsigned> perm(n_lines);
    for (unsigned i = 0; i < n_lines; ++i) perm[i] = i;
    unsigned long long s = 88172645463325252ULL;
    for (unsigned i = n_lines - 1; i > 0; --i) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      unsigned j = (unsigned)(s % i);
      std::swap(perm[i], perm[j]);
    }
    std::vector<unsigned> nxt(n_lines);
    for (unsigned i = 0; i < n_lines; ++i) nxt[perm[i]] = perm[(i + 1) % n_lines];
    std::vector<unsigned> host((size_t)n_lines * 32);
    for (unsigned i = 0; i < n_lines; ++i)
      for (int w = 0; w < 32; ++w) host[(size_t)i * 32 + w] = nxt[i];
    CK(cudaMemcpy(lines, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  }
  CK(cudaFuncSetAttribute(chase, cudaFuncAttributeMaxDynamicSharedMemorySize, 226 * 1024));
  const int warps_per_sm[] = {4, 8, 16, 32, 64};
  const int steps = 256;
  for (int writes = with_writes ? 1 : 0; writes <= (with_writes ? 2 : 0); ++writes)
  for (int ilp = 1; ilp <= 4; ilp *= 2) {
    for (int wps : warps_per_sm) {
      int blocks_per_sm = wps / 4;
      // shared memory caps blocks per SM at blocks_per_sm (228 KB per SM, 1 KB reserved each)
      size_t smem = blocks_per_sm >= 16 ? 0
                    : std::min<size_t>(226 * 1024, 228 * 1024 / blocks_per_sm - 2048);
      int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, chase, 128, smem));
      long grid = (long)occ * sms;  // one wave: every warp runs the whole time
      auto go = [&] { chase<<<grid, 128, smem, st>>>(lines, steps, ilp, n_lines, (unsigned*)out,
                                                     writes, wbuf, w_lines); };
      if (reps > 1) chase<<<grid, 128, smem, st>>>(lines, 16, ilp, n_lines, (unsigned*)out,
                                                   writes, wbuf, w_lines);
      std::vector<float> t;
      for (int r = 0; r < reps; ++r) t.push_back(time_ms(st, go));
      std::sort(t.begin(), t.end());
      float ms = t[t.size() / 2];
      double bytes = (double)grid * 4 * steps * ilp * 128;
      printf("%s,%d,%d,%d,%d,%.4f,%.1f,%.1f,%d\n", with_writes ? "chasew" : "chase", sms,
             occ * 4, ilp, steps, ms, ms * 1e6 / steps, bytes / ms / 1e6, writes);
      fflush(stdout);
    }
  }
  CK(cudaFree(lines));
  CK(cudaFree(wbuf));
  return 0;
}

// Dependent-issue latencies the trace cannot show: how long after a compare an instruction
// that reads its predicate can issue (as a guard `@P`, as an operand of SEL/FSEL), and
// how long an instruction that overwrites a MUFU's source waits (a write after read of a
// variable-latency op). The SSD kernels wait on exactly these: ncu's per-instruction
// samples put a third of _chunk_scan_fwd's `wait` stalls on `@!P6 FMUL` right after the
// `FSETP.GEU` of Triton's exp2 (bench/RESULTS.md, *The SSD kernels on fewer SMs*).
//
// One warp, one block: each kernel is a single dependent chain (PTX, unrolled 16 times a
// loop trip), timed with clock64 on the SM; clocks per body = elapsed / bodies. A body that
// goes through a predicate costs the compare's latency to that reader plus the reader's
// own latency back to the compare, so each chain has a partner without the predicate
// (e.g. `fmul` for `fsetp_guard`). `cuobjdump -sass` of the binary shows what ptxas made.
//
//   nvcc -O3 -arch=sm_90 dep_latency.cu -o dep_latency && ./dep_latency [TRIPS]
// Prints CSV rows: chain,instructions of the chain per body,bodies,clocks,clocks_per_body
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

#define R16(s) s s s s s s s s s s s s s s s s

// Every chain keeps its value live in `out` so nothing is folded away; a, c, m, k are
// kernel arguments (unknown to ptxas): a = 1.0f, c = -126.0f, m = 1, k = 0, n = 1 << 30.
#define CHAIN(NAME, INIT, BODY, OUTEXPR)                                                   \
  __global__ void NAME(float* out, long long* clk, int trips, float a, float c, int m,      \
                       int k, int n) {                                                      \
    INIT;                                                                                   \
    long long t0 = clock64();                                                               \
    for (int t = 0; t < trips; ++t) { asm volatile(R16(BODY) : "+f"(x), "+r"(i), "+f"(y)    \
                                                   : "f"(a), "f"(c), "r"(m), "r"(k), "r"(n)); } \
    long long t1 = clock64();                                                               \
    if (threadIdx.x == 0) { clk[0] = t1 - t0; }                                             \
    out[threadIdx.x] = OUTEXPR;                                                             \
  }

#define INIT_ float x = (float)threadIdx.x * 1e-3f; int i = threadIdx.x; float y = 0.f
// %0 x, %1 i, %2 y, %3 a, %4 c, %5 m, %6 k, %7 n
CHAIN(fmul, INIT_, "mul.f32 %0, %0, %3;\n", x)
CHAIN(fadd, INIT_, "add.f32 %0, %0, %3;\n", x)
CHAIN(fadd_fmnmx, INIT_, "add.f32 %0, %0, %3;\n max.f32 %0, %0, %4;\n", x)
CHAIN(fsetp_guard, INIT_,
      "{ .reg .pred p; setp.geu.f32 p, %0, %4;\n @p mul.f32 %0, %0, %3; }\n", x)
CHAIN(fsetp_fsel, INIT_,
      "{ .reg .pred p; setp.geu.f32 p, %0, %4;\n selp.f32 %0, %3, %4, p; }\n", x)
CHAIN(imad, INIT_, "mad.lo.s32 %1, %1, %5, %6;\n", (float)i)
CHAIN(isetp_guard, INIT_,
      "{ .reg .pred p; setp.lt.s32 p, %1, %7;\n @p mad.lo.s32 %1, %1, %5, %6; }\n", (float)i)
CHAIN(isetp_sel, INIT_,
      "{ .reg .pred p; setp.lt.s32 p, %1, %7;\n selp.b32 %1, %5, %6, p; }\n", (float)i)
CHAIN(isetp_fguard, INIT_,
      "{ .reg .pred p; .reg .s32 q; cvt.rzi.s32.f32 q, %0;\n setp.lt.s32 p, q, %7;\n"
      " @p mul.f32 %0, %0, %3; }\n", x)
CHAIN(f2i, INIT_, "{ .reg .s32 q; cvt.rzi.s32.f32 q, %0;\n cvt.rn.f32.s32 %0, q; }\n", x)
CHAIN(mufu, INIT_, "ex2.approx.ftz.f32 %0, %0;\n", x)
// Meant as MUFU reading x and the FMUL after it overwriting x (a write after read of the
// MUFU's source), but ptxas renames the unrolled chain's registers (see the SASS), so
// neither this pair nor mufu_nowar measures the hazard; they are kept as what was run.
CHAIN(mufu_war, INIT_,
      "{ .reg .f32 e; ex2.approx.ftz.f32 e, %0;\n mul.f32 %0, %0, %3;\n add.f32 %2, %2, e; }\n",
      x + y)
// The same work without the hazard: the FMUL writes a register the MUFU did not read.
CHAIN(mufu_nowar, INIT_,
      "{ .reg .f32 e; ex2.approx.ftz.f32 e, %2;\n mul.f32 %0, %0, %3;\n add.f32 %2, %2, e; }\n",
      x + y)

typedef void (*Kern)(float*, long long*, int, float, float, int, int, int);

int main(int argc, char** argv) {
  const int trips = argc > 1 ? atoi(argv[1]) : 4096;
  struct { const char* name; Kern k; int links_per_body; } chains[] = {
    {"fmul", fmul, 1}, {"fadd", fadd, 1}, {"fadd_fmnmx", fadd_fmnmx, 2},
    {"fsetp_guard", fsetp_guard, 2}, {"fsetp_fsel", fsetp_fsel, 2},
    {"imad", imad, 1}, {"isetp_guard", isetp_guard, 2}, {"isetp_sel", isetp_sel, 2},
    {"isetp_fguard", isetp_fguard, 3}, {"f2i", f2i, 2}, {"mufu", mufu, 1},
    {"mufu_war", mufu_war, 3}, {"mufu_nowar", mufu_nowar, 3}};
  float* out; long long* clk;
  CK(cudaMalloc(&out, 32 * sizeof(float)));
  CK(cudaMalloc(&clk, sizeof(long long)));
  printf("chain,chain_instructions,bodies,clocks,clocks_per_body\n");
  for (auto& ch : chains) {
    long long best = -1;
    for (int rep = 0; rep < 5; ++rep) {  // the fewest clocks of five runs
      ch.k<<<1, 32>>>(out, clk, trips, 1.0f, -126.0f, 1, 0, 1 << 30);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      long long c; CK(cudaMemcpy(&c, clk, sizeof c, cudaMemcpyDeviceToHost));
      if (best < 0 || c < best) best = c;
    }
    long long bodies = (long long)trips * 16;
    printf("%s,%d,%lld,%lld,%.3f\n", ch.name, ch.links_per_body, bodies, best,
           (double)best / bodies);
  }
  return 0;
}

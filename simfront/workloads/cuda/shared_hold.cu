// Kernels of simfront.workloads.shared_hold: one block per SM holds dynamic shared memory
// (and one warp, one block slot) while a chosen kernel of the step runs beside it, so that
// kernel's blocks find less shared memory on every SM: an occupancy what-if on hardware.
// Built into shared_hold.ptx by `make ptx` (nvcc); the package loads the PTX through the
// driver, so running it needs no compiler.
//
// state, per hold (unsigned words): [0] release flag, [1] SMs held, [2] holders that found
// their SM taken, [3] waits that timed out, [4-5] SM clocks the holders saw pass and [6-7]
// nanoseconds (64-bit sums over SMs: the SM clock while the held kernel ran), [8 + smid]
// an SM's claim.

extern "C" __global__ void simfront_hold(unsigned *state, unsigned long long max_ns)
{
    extern __shared__ unsigned char held[];
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    // where two holders fit on an SM, twice as many as SMs are launched so that every SM
    // gets one: the second on an SM leaves at once
    if (atomicCAS(&state[8 + sm], 0u, 1u) != 0u) {
        atomicAdd(&state[2], 1u);
        return;
    }
    held[threadIdx.x] = 1;
    __threadfence();
    atomicAdd(&state[1], 1u);
    volatile unsigned *flag = state;
    unsigned long long t0, t;
    long long c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    t = t0;
    while (flag[0] == 0u) {
        __nanosleep(2000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > max_ns) {
            atomicAdd(&state[3], 1u);
            break;
        }
    }
    atomicAdd((unsigned long long *)&state[4], (unsigned long long)(clock64() - c0));
    atomicAdd((unsigned long long *)&state[6], t - t0);
}

// On the step's stream before the held kernel: returns once every SM is held.
extern "C" __global__ void simfront_hold_wait(unsigned *state, unsigned n_sm,
                                              unsigned long long max_ns)
{
    volatile unsigned *held = state + 1;
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (*held < n_sm) {
        __nanosleep(500);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > max_ns) {
            atomicAdd(&state[3], 1u);
            return;
        }
    }
}

// On the step's stream after the held kernel: the holders leave.
extern "C" __global__ void simfront_hold_release(unsigned *state)
{
    atomicExch(&state[0], 1u);
}

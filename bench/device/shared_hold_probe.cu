// How many blocks of a kernel sit on one SM at once (bench/device/shared_hold_check.py):
// each block counts itself in on its SM, notes the count, stays a while, counts itself out.
extern "C" __global__ void probe(unsigned *on_sm, unsigned *peak, unsigned long long stay_ns)
{
    extern __shared__ unsigned char mine[];
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    mine[threadIdx.x] = 1;
    if (threadIdx.x != 0)
        return;
    unsigned now = atomicAdd(&on_sm[sm], 1u) + 1u;
    atomicMax(&peak[sm], now);
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        atomicMax(&peak[sm], *(volatile unsigned *)&on_sm[sm]);
    } while (t - t0 < stay_ns);
    atomicSub(&on_sm[sm], 1u);
}

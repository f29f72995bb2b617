/* Device function injected before every SASS instruction of a traced kernel. */
#include <stdint.h>
#include <stdio.h>

#include "utils/channel.hpp"
#include "utils/utils.h"

#include "common.h"

extern "C" __device__ __noinline__ void sf_trace(int pred, uint32_t sid, int is_mem,
                                                 uint64_t addr, uint64_t launch_word,
                                                 uint64_t pchannel_dev, uint64_t pcur_word) {
  /* a non-graph traced launch publishes its word in managed memory (launches are
   * serialised by the tracer); graph nodes get theirs through nvbit_set_at_launch */
  const uint64_t cur = *(volatile uint64_t *)pcur_word;
  if (cur) launch_word = cur;
  const uint32_t slot = SF_LW_SLOT(launch_word);
  if (slot == 0) return;
  const int4 cta = get_ctaid();
  /* sampling is decided per CTA, so the whole warp leaves together */
  const bool box = SF_LW_IS_BOX(launch_word);
  const uint32_t stride =
      !box && SF_LW_STRIDE(launch_word) > 1 ? SF_LW_STRIDE(launch_word) : 1;
  const uint32_t maxcta = box ? 0 : SF_LW_MAXCTA(launch_word);
  const uint64_t lin = (uint64_t)cta.x + (uint64_t)cta.y * gridDim.x +
                       (uint64_t)cta.z * gridDim.x * gridDim.y;
  const uint32_t active = __activemask();
  if ((box || stride > 1 || maxcta) && cur) {
    /* census over every CTA of a sampled (non-graph) launch: one count per warp */
    if (get_laneid() == __ffs(active) - 1) {
      uint64_t *census = (uint64_t *)pcur_word + SF_CENSUS_OFFSET;
      atomicAdd((unsigned long long *)&census[get_smid() % SF_CENSUS_STRIPES], 1ull);
    }
  }
  if (box) {
    if (cta.x >= (int)SF_LW_BOX(launch_word, 0) || cta.y >= (int)SF_LW_BOX(launch_word, 1) ||
        cta.z >= (int)SF_LW_BOX(launch_word, 2))
      return;
  } else {
    if (lin % stride) return;
    if (maxcta && lin / stride >= maxcta) return;
  }

  const uint32_t predmask = __ballot_sync(active, pred);
  const int lane = get_laneid();
  const int first = __ffs(active) - 1;

  sf_mem_rec_t r;
  r.h.slot = slot;
  r.h.sid = sid;
  r.h.cta_x = cta.x;
  r.h.cta_y = cta.y;
  r.h.cta_z = cta.z;
  r.h.warp_tb = (threadIdx.z * blockDim.y * blockDim.x + threadIdx.y * blockDim.x +
                 threadIdx.x) / 32;
  r.h.mask = active & predmask;
  r.h.has_addr = is_mem ? 1 : 0;
  if (is_mem) {
    for (int i = 0; i < 32; i++) r.addrs[i] = __shfl_sync(active, addr, i);
  }
  if (lane == first) {
    ChannelDev *ch = (ChannelDev *)pchannel_dev;
    ch->push(&r, is_mem ? sizeof(sf_mem_rec_t) : sizeof(sf_rec_t));
  }
}

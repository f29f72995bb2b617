/* Tool kernel, loaded with nvbit_load_tool_module: pushes the end-of-launch marker and
 * flushes the channel so the host has seen every record of the finished launches. */
#include "utils/channel.hpp"
#include "../common.h"

extern "C" __global__ void sf_flush(ChannelDev *ch) {
  sf_rec_t r;
  r.slot = SF_SENTINEL_SLOT;
  r.sid = 0;
  r.has_addr = 0;
  ch->push(&r, sizeof(sf_rec_t));
  ch->flush();
}

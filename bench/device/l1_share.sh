#!/bin/bash
# One device call: bench/device/l1_share.cu timed (median of 5) and profiled (ncu: the global
# loads' L1 lookups and hits, the carve-out the driver chose) on the whole GPU.
#   bash bench/device/l1_share.sh TAG   (TAG names the files: h100, h200)
# Writes $OUT/l1_share_TAG.csv and $OUT/l1_share_TAG_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" l1_share "--kernel-name regex:rows \
  --metrics gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,launch__shared_mem_config_size,launch__occupancy_limit_warps,launch__occupancy_limit_shared_mem,launch__block_size" "$@"

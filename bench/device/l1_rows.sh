#!/bin/bash
# One device call: bench/device/l1_rows.cu timed (median of 5) and profiled (ncu: the global
# loads' L1 lookups and hits, the carve-out the driver chose, the L2 and DRAM) on the whole
# GPU.
#   bash bench/device/l1_rows.sh TAG   (TAG names the files: h100, h200)
# Writes $OUT/l1_rows_TAG.csv and $OUT/l1_rows_TAG_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" l1_rows "--kernel-name regex:rows \
  --metrics gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_sector_hit_rate.pct,launch__shared_mem_config_size,launch__occupancy_limit_warps,lts__t_sector_hit_rate.pct,dram__bytes_read.sum" "$@"

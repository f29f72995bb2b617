#!/bin/bash
# One device call: bench/device/l2_ports.cu timed (median of 5) and profiled (ncu: the L2's
# sectors by operation, its throughput, cycles) on the GPU the call gets.
#   bash bench/device/l2_ports.sh TAG [SMS ...]   (TAG names the files: h100; SMS: green
#                                                  contexts of that many SMs as well)
# Writes $OUT/l2_ports_TAG[_smsN].csv and $OUT/l2_ports_TAG[_smsN]_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" l2_ports "--kernel-name lines_op \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
  --metrics gpc__cycles_elapsed.max,gpu__time_duration.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,launch__sm_count" "$@"

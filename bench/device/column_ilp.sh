#!/bin/bash
# One device call: bench/device/column_ilp.cu timed (median of 5) and profiled (ncu: the
# L2's read requests and sectors from the L1, their hit rate, cycles) on the whole GPU and
# in green contexts of SMS SMs.
#   bash bench/device/column_ilp.sh TAG [SMS ...]   (TAG names the files: h100)
# Writes $OUT/column_ilp_TAG[_smsN].csv and $OUT/column_ilp_TAG[_smsN]_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" column_ilp "--kernel-name regex:ilp|loop \
  --metrics gpc__cycles_elapsed.max,gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,launch__sm_count" "$@"

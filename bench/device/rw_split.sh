#!/bin/bash
# One device call: bench/device/rw_split.cu timed (median of 5) and profiled (ncu: time,
# DRAM bytes read and written) on the whole GPU and in green contexts of SMS SMs.
#   bash bench/device/rw_split.sh TAG [SMS ...]   (TAG names the files: h200)
# Writes $OUT/rw_split_TAG[_smsN].csv and $OUT/rw_split_TAG[_smsN]_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" rw_split "--kernel-name regex:rw \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__sm_count" "$@"

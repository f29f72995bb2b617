#!/bin/bash
# One device call: bench/device/inplace.cu timed (median of 5) and profiled (ncu: time,
# cycles, DRAM bytes read and written, the L2's hit rate) on the whole GPU and in green
# contexts of SMS SMs.
#   bash bench/device/inplace.sh TAG [SMS ...]   (TAG names the files: h200)
# Writes $OUT/inplace_TAG[_smsN].csv and $OUT/inplace_TAG[_smsN]_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" inplace "--kernel-name regex:upd \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__sm_count" "$@"

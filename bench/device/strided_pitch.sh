#!/bin/bash
# One device call: bench/device/strided_pitch.py timed on the whole GPU and on 96 and 64 SMs
# (green contexts), then once under ncu (whole GPU): each launch's L2 requests and sectors
# read, their largest and mean share over the L2's slices, the DRAM bytes and the time.
#   bash bench/device/strided_pitch.sh TAG [--rows]   (TAG names the files: h100, h200;
#                                                    --rows: by row count, not pitch)
# Writes $OUT/strided_pitch_TAG.json, $OUT/strided_pitch_TAG_ncu.csv.
set -euo pipefail
tag=${1:?TAG}
rows=${2:-}
out=${OUT:-.}
here=$(dirname "$0")
python3 "$here/strided_pitch.py" $rows --sms 132,96,64 --calls 20 -o "$out/strided_pitch_$tag.json"
ncu --clock-control none --csv --page raw \
  --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.max,lts__t_sectors_srcunit_tex_op_read.avg,lts__t_requests_srcunit_tex_op_read.max,lts__t_requests_srcunit_tex_op_read.avg,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,launch__grid_size \
  python3 "$here/strided_pitch.py" $rows --sms 132 --calls 1 --no-names > "$out/strided_pitch_${tag}_ncu.csv"
echo "strided_pitch: done"

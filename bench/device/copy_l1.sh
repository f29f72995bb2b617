#!/bin/bash
# One device call: bench/device/copy_l1.py timed, then under ncu (L1 and L2 counts).
#   bash bench/device/copy_l1.sh [SMS]     Writes $OUT/copy_l1/.
set -u
SMS=${1:-132,96,64,32}; T=${TMPDIR:-/tmp}; D=$OUT/copy_l1; mkdir -p $D
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 bench/device/copy_l1.py --sms $SMS --time | tee $D/time.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
M=gpc__cycles_elapsed.max,gpu__time_duration.sum,sm__cycles_active.avg,launch__sm_count,launch__grid_size,smsp__inst_executed_op_global_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum
$NCU --clock-control none --csv --page raw --kernel-name regex:elementwise --metrics $M \
  python3 bench/device/copy_l1.py --sms $SMS --calls 2 > $D/ncu.csv 2> $T/ncu.err
echo "ncu rc=$?"; tail -3 $T/ncu.err
M2=l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum,l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_lg.sum,l1tex__m_xbar2l1tex_read_sectors.sum
$NCU --clock-control none --csv --page raw --kernel-name regex:elementwise --metrics $M2 \
  python3 bench/device/copy_l1.py --sms $SMS --calls 1 > $D/ncu_tags.csv 2> $T/ncu2.err
echo "ncu tags rc=$?"; tail -3 $T/ncu2.err

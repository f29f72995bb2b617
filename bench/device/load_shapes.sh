#!/bin/bash
# One device call: bench/device/load_shapes.cu timed (median of 5, host clock) and
# profiled (ncu: cycles, the L1's and the L2's read sectors and requests, the crossbar's
# ports, the SMs' load instructions) on the whole GPU and in green contexts of SMS SMs.
#   bash bench/device/load_shapes.sh TAG [SMS ...]
# Writes $OUT/load_shapes_TAG[_smsN].csv and $OUT/load_shapes_TAG[_smsN]_ncu.csv.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
M=gpc__cycles_elapsed.max,sm__cycles_elapsed.max,gpu__time_duration.sum,launch__sm_count
M=$M,smsp__inst_executed_op_global_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
M=$M,l1tex__m_xbar2l1tex_read_sectors.sum,l1tex__m_l1tex2xbar_req.sum,l1tex__data_bank_reads.sum
M=$M,lts__t_sectors_op_read.sum,lts__t_requests_op_read.sum,lts__t_sector_op_read_hit_rate.pct
M=$M,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed
M=$M,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum.per_cycle_elapsed
M=$M,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct
M=$M,smsp__warps_active.avg.per_cycle_active
# ncu refuses a whole list for one unknown name: keep the names this ncu knows
known=$($NCU --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
keep=""; for m in ${M//,/ }; do
  if [[ $m == launch__* ]] || grep -qx "${m%%.*}" <<< "$known"; then keep=$keep,$m; else echo "ncu lacks $m"; fi
done
exec bash "$(dirname "$0")/green_ncu.sh" load_shapes "--kernel-name regex:load_op --metrics ${keep#,}" "$@"

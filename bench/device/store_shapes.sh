#!/bin/bash
# One device call: bench/device/store_shapes.cu timed (median of 5, host clock) and
# profiled (ncu: cycles, the L2's write sectors and input port, the SMs' store
# instructions) on the whole GPU and in green contexts of SMS SMs.
#   bash bench/device/store_shapes.sh TAG [SMS ...]
# Writes $OUT/store_shapes_TAG[_smsN].csv and $OUT/store_shapes_TAG[_smsN]_ncu.csv.
exec bash "$(dirname "$0")/green_ncu.sh" store_shapes "--kernel-name regex:store_op \
  --metrics gpc__cycles_elapsed.max,sm__cycles_elapsed.max,gpu__time_duration.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_write.sum,lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_op_global_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__m_l1tex2xbar_req.sum,l1tex__m_l1tex2xbar_write_bytes.sum,l1tex__lsu_writeback_active.sum,launch__sm_count" "$@"

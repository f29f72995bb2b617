#!/bin/bash
# One device call (at most 9 minutes): points of the 130M Mamba2 sweep, each a CUPTI timeline
# of the untraced step, then a deduplicated CTA-capped capture (--sample first:8).
#   bash bench/device/capture_sweep.sh ["L512 L1024 L2048 L4096 L8192"] [budget_s]
# Points (capture_suite.py): L<seqlen> at the preset's 8192 tokens (L16384 at batch 1),
# B<batch> at length 2048, C<chunk> for the SSD chunk length. A point not started within the
# budget is reported as skipped: run the rest in a second call.
# Carry: .carry/bin/simfront_tracer.so and .carry/wheels/ (mamba_ssm).
exec bash "$(dirname "$0")/capture_scale.sh" "${1:-L512 L1024 L2048 L4096 L8192}" "${2:-480}"

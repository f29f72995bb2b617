#!/bin/bash
# One device call: bench/device/store_drain.cu built and run (what a block's closing stores
# cost the next block's first load on its SM; stores.load_ns).
#   bash bench/device/store_drain.sh TAG     writes $OUT/store_drain_TAG.csv
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
microbench store_drain $TAG 5
grep -E "LDG|STS|STG|CS2R" $OUT/store_drain_${TAG}_sass.txt | head -20

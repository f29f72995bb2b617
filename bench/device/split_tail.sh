#!/bin/bash
# One device call: bench/device/split_tail.cu built, run and its SASS dumped (a split
# reduction's last block walking its partials, clocks a step; bench/bench_split_tail.py).
#   bash bench/device/split_tail.sh TAG      writes $OUT/split_tail_TAG.csv, split_tail_TAG_sass.txt
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
microbench split_tail $TAG 5
grep -c "LDG" $OUT/split_tail_${TAG}_sass.txt

#!/bin/bash
# One device call: bench/device/taken_branch.cu built, its SASS dumped and run (what a taken
# branch costs a warp in warm code).
#   bash bench/device/taken_branch.sh TAG    writes $OUT/taken_branch_TAG.csv, taken_branch_TAG_sass.txt
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
build_run taken_branch $TAG
sass taken_branch $TAG
grep -cE "BRA" $OUT/taken_branch_${TAG}_sass.txt

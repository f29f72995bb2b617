#!/bin/bash
# One device call: bench/device/shared_ports.cu built and run (whether shared-memory reads,
# writes and cp.async's writes share one data path a clock; model-1.20's L1TEX path).
#   bash bench/device/shared_ports.sh TAG     writes $OUT/shared_ports_TAG.csv and its SASS
set -u
TAG=${1:-h200}; mkdir -p $OUT
. "$(dirname "$0")/tools.sh"
microbench shared_ports $TAG 5
grep -cE "LDS.128|STS.128|LDGSTS" $OUT/shared_ports_${TAG}_sass.txt

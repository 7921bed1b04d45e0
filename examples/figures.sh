#!/bin/sh
# Regenerates the numbers and pictures in examples/README.md.
# Usage: examples/figures.sh [BUILD_DIR]   (default: build)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
L=${1:-$src/build}/cli/lhsim
img=$src/examples/img
mkdir -p "$img"
cd "$src"
echo '## 1. async-compute-limit on the default workload (moe-offload)'
$L sweep --sched lhs -p async-compute-limit=1:8 -o "$img/async-sweep.png"
for n in 2 4; do
	$L run --sched lhs -p async-compute-limit=$n -o "$img/lhs-limit$n.png" > /dev/null
done
echo '### the same, with lhs issuing offloads early (XLA delayMoveToHost)'
$L sweep --sched lhs -p async-compute-limit=1:6 -p delay-offload-start=true
echo '### the same, every layer an XLA scan iteration (scan=1)'
$L gen moe-offload scan=1 -o /tmp/lhsim-moe-scan.json > /dev/null
$L sweep /tmp/lhsim-moe-scan.json --sched lhs -p async-compute-limit=1:6
echo '### the same, offloading only the block inputs (offload=1) and nothing (offload=0)'
$L gen moe-offload offload=1 -o /tmp/lhsim-moe-off1.json > /dev/null
$L sweep /tmp/lhsim-moe-off1.json --sched lhs -p async-compute-limit=1:6
$L gen moe-offload offload=0 -o /tmp/lhsim-moe-off0.json > /dev/null
$L sweep /tmp/lhsim-moe-off0.json --sched lhs -p async-compute-limit=1:6
echo '## 2. IREE waves against stream scheduling'
$L compare --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath -o "$img/compare-moe.png"
$L compare examples/transformer.json --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath
$L compare examples/random.json --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath \
	-o "$img/compare-random.png"
echo '## 3. HEFT and cpath with 1 to 4 streams'
$L sweep examples/random.json --sched heft,cpath -p streams=1:4 -o "$img/streams-random.png"
$L sweep --sched heft,cpath -p streams=1:4
echo '## libuse'
"$(dirname "$L")/../examples/libuse"

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
echo '## 4. one module on one node and on two (and the 70B module on 1, 2 and 16 nodes)'
m=tests/data/hlo/hlo_llama3_8b_bf16_activation_offloading_1x8.hlo
for g in 4 64 128; do
	sed "s/^gpus_per_node = 8/gpus_per_node = $g/; s/^name = H100 SXM/name = H100 SXM, $g GPUs per node/" \
		models/hw/h100-sxm.ini > /tmp/lhsim-h100-$g.ini
done
$L run $m --sched lhs -o "$img/topo-1node.png"
$L run $m --sched lhs --hw /tmp/lhsim-h100-4.ini -o "$img/topo-2nodes.png"
$L run $m --sched serial | sed -n 2p
$L run $m --sched serial --hw /tmp/lhsim-h100-4.ini | sed -n 2p
big=tests/data/hlo/hlo_llama31_70b_bf16_16x8.hlo
for hw in /tmp/lhsim-h100-128.ini /tmp/lhsim-h100-64.ini h100-sxm; do
	for s in serial lhs; do
		echo "$hw $s"; $L run $big --sched $s --hw $hw 2>/dev/null | sed -n 2,5p
	done
done
echo '## libuse'
"$(dirname "$L")/../examples/libuse"

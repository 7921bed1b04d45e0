#!/bin/sh
# Regenerates the numbers and pictures in examples/README.md.
# Usage: examples/figures.sh [BUILD_DIR]   (default: build)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
L=${1:-$src/build}/cli/lhsim
img=$src/examples/img
tmp=${TMPDIR:-/tmp}
mkdir -p "$img"
cd "$src"
# ops TRACE FROM TO KINDS: the ops of a Chrome trace (stream rows) that start between FROM and
# TO ms and whose kind matches the regular expression KINDS, as "start +duration name kind".
ops() {
	grep '"pid":1,' "$1" | grep '"ph":"X"' |
		sed 's/^.*"name":"\([^"]*\)","cat":"\([^"]*\)".*"ts":\([0-9.]*\),"dur":\([0-9.]*\).*/\3 \4 \1 \2/' |
		awk -v a="$2" -v b="$3" -v k="$4" '$1 >= a * 1000 && $1 < b * 1000 && $4 ~ k {
			printf "  %.2f ms +%.2f ms  %s  %s\n", $1 / 1000, $2 / 1000, $3, $4 }' | sort -n
}
echo '## 1. async-compute-limit on the default workload (moe-offload)'
$L sweep --sched lhs -p async-compute-limit=1:8 -o "$img/async-sweep.png"
for n in 1 2 3 4; do
	echo "limit $n: copy engines"
	$L run --sched lhs -p async-compute-limit=$n -o "$img/lhs-limit$n.png" \
		--trace "$tmp/lhsim-limit$n.json" | grep -E 'copy-(h2d|d2h) '
done
rm -f "$img/lhs-limit3.png"    # the README shows limits 1, 2 and 4
echo 'limit 1: the copies of the forward'
ops "$tmp/lhsim-limit1.json" 0 46 copy
echo 'limit 2: the first offload'
ops "$tmp/lhsim-limit2.json" 0 41 copy-d2h
echo '### the same with the duplex host-to-device rate of before (51 GB/s instead of 27): a diagnosis'
$L sweep --sched lhs -p async-compute-limit=1:4 --hw-set pcie_duplex_h2d_gbs=27,51
$L sweep --sched lhs -p async-compute-limit=1:2 --hw-set step_overhead_ns=0,15000
echo '### serial: the engines, and layer 1 forward collectives and copies'
$L run --sched serial --trace "$tmp/lhsim-serial.json" | sed -n '/busy per engine/,$p'
ops "$tmp/lhsim-serial.json" 0 1000 'all-|copy' | grep ' l1\.fwd\.'
echo '### the same, with lhs issuing offloads early (XLA delayMoveToHost)'
$L sweep --sched lhs -p async-compute-limit=1:6 -p delay-offload-start=true
for n in 2 3; do
	echo "limit $n: the turnaround"
	$L run --sched lhs -p async-compute-limit=$n -p delay-offload-start=true \
		--trace "$tmp/lhsim-delay$n.json" > /dev/null
	ops "$tmp/lhsim-delay$n.json" 43 62 'copy|all-to-all'
done
$L sweep --sched lhs -p async-compute-limit=1:6 -p delay-offload-start=true \
	--hw-set pcie_duplex_h2d_gbs=51
echo '### the same, every layer an XLA scan iteration (scan=1)'
$L gen moe-offload scan=1 -o "$tmp/lhsim-moe-scan.json" > /dev/null
$L sweep "$tmp/lhsim-moe-scan.json" --sched lhs -p async-compute-limit=1:6
for n in 1 2; do
	echo "limit $n: the turnaround"
	$L run "$tmp/lhsim-moe-scan.json" --sched lhs -p async-compute-limit=$n \
		--trace "$tmp/lhsim-scan$n.json" > /dev/null
	ops "$tmp/lhsim-scan$n.json" 50 65 'copy|all-to-all'
done
echo '### the same, offloading only the block inputs (offload=1) and nothing (offload=0)'
$L gen moe-offload offload=1 -o "$tmp/lhsim-moe-off1.json" > /dev/null
$L sweep "$tmp/lhsim-moe-off1.json" --sched lhs -p async-compute-limit=1:6
$L gen moe-offload offload=0 -o "$tmp/lhsim-moe-off0.json" > /dev/null
$L sweep "$tmp/lhsim-moe-off0.json" --sched lhs -p async-compute-limit=1:6
echo '## 2. IREE waves against stream scheduling'
$L compare --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath -o "$img/compare-moe.png"
$L compare examples/transformer.json --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath
$L compare examples/random.json --sched serial,iree,iree:favor=max-concurrency,lhs,heft,cpath \
	-o "$img/compare-random.png"
echo '## 3. HEFT and cpath with 1 to 4 streams'
$L sweep examples/random.json --sched heft,cpath -p streams=1:4 -o "$img/streams-random.png"
$L sweep --sched heft,cpath -p streams=1:4
echo 'random DAG, serial: link'
$L run examples/random.json --sched serial | grep -E '^    link '
for n in 1 2; do
	echo "random DAG, heft streams=$n"
	$L run examples/random.json --sched heft -p streams=$n --trace "$tmp/lhsim-heft$n.json" |
		grep -E 'makespan  |exposed|^    (sm|link) '
	ops "$tmp/lhsim-heft$n.json" 0 1000 kernel | tail -1
done
echo '## 4. one module on one node and on two (and the 70B module on 1, 2 and 16 nodes)'
m=tests/data/hlo/hlo_llama3_8b_bf16_activation_offloading_1x8.hlo
for g in 4 64 128; do
	sed "s/^gpus_per_node = 8/gpus_per_node = $g/; s/^name = H100 SXM/name = H100 SXM, $g GPUs per node/" \
		models/hw/h100-sxm.ini > "$tmp/lhsim-h100-$g.ini"
done
$L run $m --sched lhs -o "$img/topo-1node.png"
$L run $m --sched lhs --hw "$tmp/lhsim-h100-4.ini" -o "$img/topo-2nodes.png"
$L run $m --sched serial | grep -E 'makespan  |peak device'
$L run $m --sched serial --hw "$tmp/lhsim-h100-4.ini" | grep -E 'makespan  |peak device'
echo "lhs decisions by the memory-limit rule, one node:"
$L run $m --sched lhs --explain 2>&1 >/dev/null | grep -c kMemoryPeakOverLimit
echo "lhs without its memory guard, one node:"
$L run $m --sched lhs -p memory-limit=1000 2>/dev/null | grep -E 'makespan  |peak device'
big=tests/data/hlo/hlo_llama31_70b_bf16_16x8.hlo
for hw in "$tmp/lhsim-h100-128.ini" "$tmp/lhsim-h100-64.ini" h100-sxm; do
	for s in serial lhs; do
		echo "$hw $s"; $L run $big --sched $s --hw $hw 2>/dev/null | sed -n 2,5p
	done
done
echo '## libuse'
"$(dirname "$L")/../examples/libuse"

#!/bin/sh
# lhsim bench — writes the plans of `heft` and `lhs` (and `cpath`) for a set of graphs and
# parameters, so that a change made for speed can be checked to leave every plan the same,
# command for command: run it with the old build and the new one, then compare the two
# directories (`diff -r OLD NEW`). The set: random layered DAGs of several sizes, widths and
# seeds (up to the 10^6 ops of bench-sched, whose lhs runs under memory pressure), the
# transformer, moe-offload and pipeline generators, the examples, HLO modules and STG graphs
# of tests/data; lhs with its limits, memory limits that bind or not, the xla estimator and
# force-delayed offload starts, on hardware with and without a cluster.
#
# usage: bench/sched-plans.sh LHSIM OUTDIR [GRAPHDIR]
#   LHSIM     the lhsim binary (e.g. /tmp/rel/cli/lhsim)
#   OUTDIR    where the plans go (created), one file per (graph, scheduler, parameters)
#   GRAPHDIR  where the generated graphs go, reused when present (default OUTDIR/graphs)
# Environment: SCHED_PLANS_QUICK=1 leaves out the 10^6-op graph.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 LHSIM OUTDIR [GRAPHDIR]" >&2; exit 2; }
L=$1
OUT=$2
G=${3:-$OUT/graphs}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" "$G"

gen() { # NAME WORKLOAD K=V...
	name=$1
	shift
	[ -s "$G/$name.json" ] || "$L" gen "$@" -o "$G/$name.json" >/dev/null
}

# plan GRAPH TAG HW SCHED [K=V...]: one plan, OUTDIR/TAG.SCHED[.K=V...].plan
plan() {
	graph=$1 tag=$2 hw=$3 sched=$4
	shift 4
	file="$tag.$hw.$sched"
	args=""
	for kv in "$@"; do
		file="$file.$kv"
		args="$args -p $kv"
	done
	# shellcheck disable=SC2086
	if ! "$L" run "$graph" --hw "$hw" --sched "$sched" $args --save-plan "$OUT/$file.plan" \
		>/dev/null 2>"$OUT/$file.err"; then
		echo "failed: $file (see $OUT/$file.err)" >&2
		echo "failed, status $?" >"$OUT/$file.plan"
	fi
	rm -f "$OUT/$file.err"
}

lhs_set() { # GRAPH TAG HW: lhs under its parameters
	plan "$1" "$2" "$3" lhs
	plan "$1" "$2" "$3" lhs async-compute-limit=1
	plan "$1" "$2" "$3" lhs async-compute-limit=4 collective-limit=2 p2p-limit=1
	plan "$1" "$2" "$3" lhs memcpy-limit=1 scale-up-collective-limit=0
	plan "$1" "$2" "$3" lhs estimator=xla
	plan "$1" "$2" "$3" lhs delay-offload-start=true
	plan "$1" "$2" "$3" lhs memory-limit=100000
	for gib in 40 10 2 0.5 0.01; do
		plan "$1" "$2" "$3" lhs memory-limit=$gib
	done
	plan "$1" "$2" "$3" lhs memory-limit=4 async-compute-limit=4 delay-offload-start=true
}

heft_set() { # GRAPH TAG HW
	for p in 1 4 7; do
		plan "$1" "$2" "$3" heft streams=$p
	done
	plan "$1" "$2" "$3" cpath
}

for ops in 1000 20000; do
	for seed in 1 2 3; do
		for width in 16 64; do
			gen "random-$ops-$width-$seed" random ops=$ops width=$width seed=$seed
		done
	done
done
gen random-100000-64-1 random ops=100000 width=64 seed=1
gen random-100000-16-7 random ops=100000 width=16 seed=7 max-deps=6
gen transformer transformer
gen transformer-l8 transformer layers=8
gen moe moe-offload
gen moe-scan moe-offload scan=1 layers=2
gen moe-nooff moe-offload offload=0 layers=2
gen pipeline pipeline
for f in "$SRC"/tests/data/stg/50/rand0000.stg "$SRC"/tests/data/stg/100/rand0003.stg; do
	t="stg-$(basename "$(dirname "$f")")-$(basename "$f" .stg)"
	[ -s "$G/$t.json" ] || "$L" import "$f" -o "$G/$t.json" >/dev/null
done

for f in "$G"/*.json; do
	t=$(basename "$f" .json)
	lhs_set "$f" "$t" h100-sxm
	heft_set "$f" "$t" h100-sxm
done
for f in "$SRC"/examples/*.json "$SRC"/tests/data/hlo/*.hlo; do
	t=$(basename "$f")
	lhs_set "$f" "$t" h100-sxm
	heft_set "$f" "$t" h100-sxm
	plan "$f" "$t" a100-sxm lhs scale-up-collective-limit=2
done

if [ "${SCHED_PLANS_QUICK:-0}" != 1 ]; then
	# bench-sched's 10^6-op graph (lh_gen_random_dag seed 1 width 64).
	mkdir -p "$G/big"
	[ -s "$G/big/random-1000000-64-1.json" ] ||
		"$L" gen random ops=1000000 width=64 seed=1 -o "$G/big/random-1000000-64-1.json" >/dev/null
	f="$G/big/random-1000000-64-1.json"
	plan "$f" random-1000000-64-1 h100-sxm heft
	plan "$f" random-1000000-64-1 h100-sxm lhs
	plan "$f" random-1000000-64-1 h100-sxm lhs memory-limit=100000
	plan "$f" random-1000000-64-1 h100-sxm lhs memory-limit=40
fi
echo "$(ls "$OUT"/*.plan | wc -l) plans in $OUT"

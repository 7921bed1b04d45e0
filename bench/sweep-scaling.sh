#!/bin/sh
# Wall time of one 200-point sweep (20 async-compute-limit values x 10 PCIe bandwidths, lhs)
# with 1 and 2 processes: -j 1, -j 2, two shards at once merged by sweep-merge, and
# mpirun -n 2 when lhsim is built with MPI. Checks that every way writes the same CSV.
# Usage: bench/sweep-scaling.sh BUILD [REPEATS] [-- GRAPH OPTIONS...]
set -eu
build=${1:?usage: bench/sweep-scaling.sh BUILD [REPEATS] [-- GRAPH OPTIONS...]}
reps=${2:-3}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
lhsim="$build/cli/lhsim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
grid="--sched lhs -p async-compute-limit=1:20 --hw-set pcie_gbs=55:100:5"
now() { date +%s.%N; }
t() { # name command...: prints the wall time of the command
	name=$1
	shift
	a=$(now)
	"$@" >/dev/null 2>&1 || [ $? -eq 1 ]
	b=$(now)
	printf '%-10s %8.2f s\n' "$name" "$(echo "$b - $a" | bc)"
}
shards() {
	"$lhsim" sweep "$@" $grid --shard 1/2 --csv "$tmp/p1.csv" &
	"$lhsim" sweep "$@" $grid --shard 2/2 --csv "$tmp/p2.csv"
	wait
	"$lhsim" sweep-merge "$tmp/p1.csv" "$tmp/p2.csv" -o "$tmp/shards.csv"
}
mpi=0
if command -v mpirun >/dev/null && ldd "$lhsim" | grep -q libmpi; then mpi=1; fi
for r in $(seq "$reps"); do
	t "-j 1" "$lhsim" sweep "$@" $grid -j 1 --csv "$tmp/j1.csv"
	t "-j 2" "$lhsim" sweep "$@" $grid -j 2 --csv "$tmp/j2.csv"
	t "2 shards" shards "$@"
	[ $mpi = 1 ] && t "mpirun -n 2" mpirun --allow-run-as-root --oversubscribe -n 2 \
		"$lhsim" sweep "$@" $grid --csv "$tmp/mpi.csv"
done
cmp "$tmp/j1.csv" "$tmp/j2.csv" && cmp "$tmp/j1.csv" "$tmp/shards.csv" &&
	{ [ $mpi = 0 ] || cmp "$tmp/j1.csv" "$tmp/mpi.csv"; } &&
	echo "the same CSV every way ($(($(wc -l <"$tmp/j1.csv") - 1)) points)"

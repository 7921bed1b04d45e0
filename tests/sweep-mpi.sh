#!/bin/sh
# lhsim tests — `mpirun -n N lhsim sweep` writes the file one process writes (N = 2, 3), failed
# points are failed rows, --resume and --shard work under it, and a rank that dies fails the run
# with no output. Skipped (77) when lhsim is built without MPI or mpirun is missing.
# Usage: sweep-mpi.sh LHSIM HAVE_MPI PLUGIN_DIR
set -u
lhsim=$1
have_mpi=$2
plugins=$3
if [ "$have_mpi" != 1 ]; then
	echo "lhsim is built without MPI (meson -Dmpi=enabled needs libopenmpi-dev): skipped"
	exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
	echo "no mpirun (Debian: openmpi-bin): skipped"
	exit 77
fi
# Containers run as root; OpenMPI refuses that without both variables.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's own allocations are not ours to leak-check (ASan builds).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
mpi="mpirun --allow-run-as-root --oversubscribe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# 2 hardware x 3 schedulers x 4 x 2 values = 48 points of the default workload.
set -- --sched lhs,serial,cpath -p async-compute-limit=1:4 -p p2p-limit=1,2 \
	--hw-set pcie_gbs=55,64
"$lhsim" sweep "$@" -j 1 --csv "$tmp/one.csv" >"$tmp/one.out" 2>"$tmp/one.err" ||
	fail "one process: $(cat "$tmp/one.err")"
[ "$(wc -l <"$tmp/one.csv")" -eq 49 ] || fail "one process: not 48 rows"
for n in 2 3; do
	$mpi -n $n "$lhsim" sweep "$@" --csv "$tmp/mpi$n.csv" >"$tmp/mpi$n.out" 2>"$tmp/mpi$n.err" ||
		fail "mpirun -n $n: $(cat "$tmp/mpi$n.err")"
	cmp "$tmp/one.csv" "$tmp/mpi$n.csv" || fail "mpirun -n $n: another CSV"
	cmp "$tmp/one.out" "$tmp/mpi$n.out" || fail "mpirun -n $n: another table"
	echo "ok: mpirun -n $n writes the one-process CSV and table"
done

# Under mpirun with a shard and a resumed half file.
"$lhsim" sweep "$@" --shard 2/3 --csv "$tmp/s2.csv" >/dev/null 2>&1 || fail "shard 2/3"
$mpi -n 2 "$lhsim" sweep "$@" --shard 2/3 --csv "$tmp/s2m.csv" >/dev/null 2>&1 ||
	fail "mpirun shard 2/3"
cmp "$tmp/s2.csv" "$tmp/s2m.csv" || fail "mpirun -n 2 --shard 2/3: another file"
head -n 25 "$tmp/one.csv" >"$tmp/r.csv"
$mpi -n 2 "$lhsim" sweep "$@" --resume "$tmp/r.csv" >/dev/null 2>&1 || fail "mpirun --resume"
cmp "$tmp/one.csv" "$tmp/r.csv" || fail "mpirun -n 2 --resume: another file"
echo "ok: --shard and --resume under mpirun"

# Failed points: 1 byte of device memory fails every point on the first hardware.
set -- --strict-memory --sched lhs -p async-compute-limit=1:3 --hw-set memory_gib=0.000000001,80
"$lhsim" sweep "$@" --csv "$tmp/f1.csv" >/dev/null 2>&1
[ $? -eq 1 ] || fail "failed points: one process does not exit 1"
$mpi -n 3 "$lhsim" sweep "$@" --csv "$tmp/f3.csv" >/dev/null 2>&1
[ $? -eq 1 ] || fail "failed points: mpirun -n 3 does not exit 1"
cmp "$tmp/f1.csv" "$tmp/f3.csv" || fail "failed points: another CSV under mpirun"
[ "$(grep -c ',failed,' "$tmp/f3.csv")" -eq 3 ] || fail "failed points: not 3 failed rows"
echo "ok: failed points are the same failed rows under mpirun"

# A rank that dies (the test plugin kills rank 1 when it plans): the run fails, no CSV, no
# temporary file.
mkdir "$tmp/out"
$mpi -n 2 "$lhsim" sweep --plugin "$plugins/shuffle.so" --sched shuffle -p die-on-rank=1 \
	-p seed=1:64 --csv "$tmp/out/dead.csv" >"$tmp/dead.out" 2>"$tmp/dead.err"
rc=$?
[ $rc -ne 0 ] || fail "a dead rank: exit 0"
[ -z "$(ls -A "$tmp/out")" ] || fail "a dead rank left $(ls -A "$tmp/out")"
grep -q "signal 9" "$tmp/dead.err" || fail "a dead rank: mpirun does not say so: $(cat "$tmp/dead.err")"
echo "ok: a rank that dies fails the run (exit $rc) and leaves no file"

#!/bin/bash
# lhsim — mutation testing: applies each mutant of tests/mutants/list (or those named on the
# command line) to a copy of the source tree, one at a time, rebuilds it in a build directory
# of its own, runs the test suite and reports whether a test failed (killed), none did
# (survived) or the mutant's text was not found (did not apply). See tests/mutants/README.md.
#
# usage: tests/mutants/run.sh [MUTANT.mut ...]
# environment: LHSIM_MUTANT_DIR (default /tmp/lhsim-mutants): the copy, its build and the
#   results; JOBS (default 2): ninja's and meson test's parallelism; MESON_TEST_ARGS: extra
#   arguments for meson test (e.g. test names, to run part of the suite while writing a test).
# The working tree is never modified. Exit status: 0 when every mutant was killed, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(git -C "$here" rev-parse --show-toplevel) || exit 2
work=${LHSIM_MUTANT_DIR:-/tmp/lhsim-mutants}
jobs=${JOBS:-2}
tree=$work/src
build=$work/build
mkdir -p "$work"

if [ $# -gt 0 ]; then
	mutants=("$@")
else
	mutants=("$here"/list/*.mut)
fi

# The copy: tracked and untracked, not ignored files, with their times (so that a build kept
# from an earlier run only recompiles what changed).
rm -rf "$tree"
mkdir -p "$tree"
(cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 -r sh -c \
	'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -C "$tree" -xpf - || exit 2
commit=$(git -C "$src" rev-parse --short HEAD)
dirty=$(git -C "$src" status --porcelain --untracked-files=no | grep -q . && echo "+changes")

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$tree" >"$work/setup.log" 2>&1 ||
		{ echo "meson setup failed: $work/setup.log"; exit 2; }
fi

build_it() { nice ninja -C "$build" -j"$jobs" >"$work/build.log" 2>&1; }
test_it() {
	# shellcheck disable=SC2086
	nice meson test -C "$build" --no-rebuild --num-processes "$jobs" --maxfail 1 \
		--timeout-multiplier 0.3 ${MESON_TEST_ARGS:-} >"$work/test.log" 2>&1
}
# The tests that failed, from meson's summary lines ("N/M lhsim / NAME  FAIL ...").
failed_tests() {
	grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|ERROR) ' "$work/test.log" |
		sed -E 's/^ *[0-9]+\/[0-9]+ +([^ ]+ \/ )?([^ ]+) .*/\2/' | sort -u | paste -sd ' ' -
}

echo "baseline: building and testing the unmutated tree ($commit$dirty)"
if ! build_it; then echo "the unmutated tree does not build: $work/build.log"; exit 2; fi
if ! test_it; then echo "the unmutated tree fails its tests: $work/test.log"; exit 2; fi

results=$work/results.md
{
	echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC') on commit $commit$dirty."
	echo
	echo "| mutant | file | change | result |"
	echo "| --- | --- | --- | --- |"
} >"$results"
n_killed=0 n_survived=0 n_equiv=0 n_na=0
for m in "${mutants[@]}"; do
	name=$(basename "$m" .mut)
	IFS=$'\t' read -r file why equiv < <(python3 "$here/apply.py" --describe "$m")
	if ! python3 "$here/apply.py" "$m" "$tree" 2>"$work/apply.log"; then
		result="did not apply: $(cat "$work/apply.log")"
		n_na=$((n_na + 1))
	elif ! build_it; then
		result="killed (does not build)"
		n_killed=$((n_killed + 1))
	elif test_it; then
		if [ -n "$equiv" ]; then
			result="survived, equivalent: $equiv"
			n_equiv=$((n_equiv + 1))
		else
			result="**survived**"
			n_survived=$((n_survived + 1))
		fi
	else
		by=$(failed_tests)
		result="killed by ${by:-the suite}"
		n_killed=$((n_killed + 1))
	fi
	# Restore the file with a new time stamp, so that the next build recompiles it.
	[ -n "$file" ] && cp "$src/$file" "$tree/$file" && touch "$tree/$file"
	echo "$name: $result"
	echo "| $name | $file | $why | $result |" >>"$results"
done
build_it
echo >>"$results"
summary="$n_killed killed, $n_survived survived, $n_equiv equivalent (survived, shown to change nothing), $n_na did not apply (of ${#mutants[@]})"
echo "$summary." >>"$results"
echo "$summary; table: $results"
[ "$n_survived" -eq 0 ] && [ "$n_na" -eq 0 ]

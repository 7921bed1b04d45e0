#!/bin/sh
# Builds the libFuzzer harnesses with meson (-Dfuzz=true, clang) and runs them.
# Usage: tests/fuzz/run.sh [hlo|json|plan|ini|stg|measured|all|build] [SECONDS]
#   tests/fuzz/run.sh hlo 600    fuzz the HLO importer for 10 minutes, one job
#   tests/fuzz/run.sh all 5      every harness for 5 s in turn (what .ci/run does)
# The build directory is $FUZZ_DIR (default build-fuzz/), configured on first use with
# CC=clang -Dfuzz=true -Dcuda=disabled -Dmpi=disabled. Corpora live there too (corpus-NAME), seeded
# from tests/data, examples/, models/hw/ and tests/fuzz/seeds. Build once (`run.sh build`) before
# starting several runs side by side: each run rebuilds its harness, and concurrent builds of one
# directory race. A crash (or a leak, or a UBSan finding) exits non-zero and leaves crash-* in
# $FUZZ_DIR.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${FUZZ_DIR:-$src/build-fuzz}
what=${1:-build}
secs=${2:-60}
all="hlo json plan ini stg measured"
case "$what" in
build | all) harnesses=$all ;;
hlo | json | plan | ini | stg | measured) harnesses=$what ;;
*) echo "usage: $0 [hlo|json|plan|ini|stg|measured|all|build] [SECONDS]" >&2; exit 2 ;;
esac
# Absolute, because the runs below work inside it.
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -f "$out/build.ninja" ]; then
	CC=${FUZZ_CC:-clang} meson setup "$out" "$src" -Dfuzz=true -Dcuda=disabled -Dmpi=disabled
fi
# Only the harnesses (and the instrumented library they link): the rest of the tree is not
# needed to fuzz.
targets=""
for h in $harnesses; do targets="$targets fuzz-$h"; done
# shellcheck disable=SC2086
meson compile -C "$out" $targets
[ "$what" = build ] && exit 0

run() {
	h=$1
	corpus="$out/corpus-$h"
	mkdir -p "$corpus"
	dict=""
	case "$h" in
	hlo)
		cp -n "$src"/tests/data/hlo/*.hlo "$corpus"/ 2>/dev/null || true
		dict="-dict=$here/hlo.dict" ;;
	json) cp -n "$src"/examples/*.json "$corpus"/ 2>/dev/null || true ;;
	plan) cp -n "$here"/seeds/*.plan "$corpus"/ 2>/dev/null || true ;;
	ini) cp -n "$src"/models/hw/*.ini "$corpus"/ 2>/dev/null || true ;;
	stg) cp -n "$src"/tests/data/stg/50/rand000*.stg "$corpus"/ 2>/dev/null || true ;;
	esac
	echo "== fuzz-$h, $secs s"
	# In $out, where libFuzzer writes crash-*, leak-* and oom-* files.
	# shellcheck disable=SC2086
	(cd "$out" && "./tests/fuzz/fuzz-$h" $dict -max_total_time="$secs" -max_len=65536 \
		-print_final_stats=1 "$corpus")
}
for h in $harnesses; do run "$h"; done

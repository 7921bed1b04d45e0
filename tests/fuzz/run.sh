#!/bin/sh
# Builds the libFuzzer harnesses with clang straight from the sources (the meson build stays
# gcc-only) and runs them. Usage: tests/fuzz/run.sh [hlo|json|plan|ini|stg|measured|build] [SECONDS]
#   tests/fuzz/run.sh hlo 600    fuzz the HLO importer for 10 minutes, one job
# A run builds only its own harness, so several can start side by side. Corpora live in
# $FUZZ_DIR (default build-fuzz/): seeds come from tests/data, examples/ and models/hw/.
# Harnesses: hlo, json, plan, ini, stg, measured (Chrome traces of measured timelines).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${FUZZ_DIR:-$src/build-fuzz}
what=${1:-build}
secs=${2:-60}
mkdir -p "$out"
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I$src -I$out $(pkg-config --cflags glib-2.0 json-glib-1.0)"
libs="$(pkg-config --libs glib-2.0 json-glib-1.0) -lm"
# The sources the readers need: the sim core and the readers of models/.
[ -f "$out/lh-config.h" ] || echo '#pragma once' > "$out/lh-config.h"
core="$src/sim/graph.c $src/sim/util.c $src/sim/hw.c $src/sim/plan.c $src/sim/validate.c \
  $src/sim/engine.c $src/sim/cost.c $src/sim/trace.c $src/sim/topo.c $src/sim/cost-collective.c $src/models/graph-json.c $src/models/stg.c \
  $(ls "$src"/models/hlo*.c)"
case "$what" in
build) harnesses="hlo json plan ini stg measured" ;;
hlo | json | plan | ini | stg | measured) harnesses=$what ;;
*) echo "usage: $0 [hlo|json|plan|ini|stg|measured|build] [SECONDS]" >&2; exit 2 ;;
esac
for h in $harnesses; do
	if [ "$h" = measured ]; then # the measured-trace reader alone, with its gzip and SQLite
		clang $cflags $(pkg-config --cflags gio-2.0 sqlite3) -o "$out/fuzz-$h.tmp" \
			"$here/fuzz-$h.c" "$src/models/measured.c" $libs $(pkg-config --libs gio-2.0 sqlite3)
	else
		clang $cflags -o "$out/fuzz-$h.tmp" "$here/fuzz-$h.c" $core $libs
	fi
	mv "$out/fuzz-$h.tmp" "$out/fuzz-$h"
done
[ "$what" = build ] && exit 0
corpus="$out/corpus-$what"
mkdir -p "$corpus"
dict=""
case "$what" in
hlo)
	cp -n "$src"/tests/data/hlo/*.hlo "$corpus"/ 2>/dev/null || true
	dict="-dict=$here/hlo.dict" ;;
json) cp -n "$src"/examples/*.json "$corpus"/ 2>/dev/null || true ;;
plan) cp -n "$here"/seeds/*.plan "$corpus"/ 2>/dev/null || true ;;
ini) cp -n "$src"/models/hw/*.ini "$corpus"/ 2>/dev/null || true ;;
stg) cp -n "$src"/tests/data/stg/50/rand000*.stg "$corpus"/ 2>/dev/null || true ;;
esac
cd "$out"
exec "./fuzz-$what" $dict -max_total_time="$secs" -max_len=65536 \
	-print_final_stats=1 "$corpus"

#!/bin/sh
# Builds the libFuzzer harnesses with clang straight from the sources (the meson build stays
# gcc-only) and runs them. Usage: tests/fuzz/run.sh [hlo|json|build] [SECONDS]
#   tests/fuzz/run.sh hlo 600    fuzz the HLO importer for 10 minutes, one job
# Corpora live in $FUZZ_DIR (default build-fuzz/): seeds come from tests/data.
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
# The sources the readers need: the sim core (graph, util) and the two readers.
[ -f "$out/lh-config.h" ] || echo '#pragma once' > "$out/lh-config.h"
core="$src/sim/graph.c $src/sim/util.c $src/sim/topo.c $src/models/graph-json.c $src/models/hlo-read.c $src/models/hlo-cost.c $src/models/hlo-lower.c $src/models/hlo-groups.c"
clang $cflags -o "$out/fuzz-hlo" "$here/fuzz-hlo.c" $core $libs
clang $cflags -o "$out/fuzz-json" "$here/fuzz-json.c" $core $libs
[ "$what" = build ] && exit 0
corpus="$out/corpus-$what"
mkdir -p "$corpus"
if [ "$what" = hlo ]; then
	cp -n "$src"/tests/data/hlo/*.hlo "$corpus"/ 2>/dev/null || true
	dict="-dict=$here/hlo.dict"
else
	cp -n "$src"/examples/*.json "$corpus"/ 2>/dev/null || true
	dict=""
fi
cd "$out"
exec "./fuzz-$what" $dict -jobs=1 -workers=1 -max_total_time="$secs" -max_len=65536 \
	-print_final_stats=1 "$corpus"

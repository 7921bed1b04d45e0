#!/bin/sh
# liblhsim's contract, checked on what `meson install` installs (docs/api.md):
#  - the headers installed are exactly lhsim.h and the headers it includes: no internal header
#    (sched-util.h, viz/layout.h, *-private.h) is installed, and every public one is;
#  - the installed lhsim.h compiles on its own with the installed headers alone;
#  - `nm -D` of the installed library lists exactly the functions and variables those headers
#    declare: nothing named lh__*, nothing declared only in an internal header, and no public
#    declaration without a definition.
# The declarations come from the compiler (GCC's -aux-info lists every function prototype with
# the file it is in; variables from the preprocessed headers), not from build-aux/symbols.py,
# which writes the version script: the two readers check each other.
# usage: check-exports.sh BUILD_ROOT CC...
set -eu
build=$1
shift
command -v nm >/dev/null 2>&1 || { echo "nm is missing: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/stage" --no-rebuild --quiet >/dev/null
top=$(find "$tmp/stage" -path '*/include/lhsim/lhsim.h' | head -n 1)
[ -n "$top" ] || { echo "FAIL: no include/lhsim/lhsim.h under the stage"; exit 1; }
inc=$(dirname "$top")
lib=$(find "$tmp/stage" -name 'liblhsim.so.*' -type f | head -n 1)
[ -n "$lib" ] || { echo "FAIL: no liblhsim.so under the stage"; exit 1; }
fail=0

# 1. Installed headers = lhsim.h and what it includes from the installed tree.
printf '#include <lhsim.h>\n' >"$tmp/use.c"
flags="$(pkg-config --cflags glib-2.0) -I$inc"
"$@" $flags -Wall -Wextra -Werror -std=c11 -M "$tmp/use.c" >"$tmp/deps" ||
	{ echo "FAIL: the installed lhsim.h does not compile on its own"; exit 1; }
tr ' \\' '\n\n' <"$tmp/deps" | grep "^$inc/" | sed "s|^$inc/||" | sort -u >"$tmp/included"
(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort) >"$tmp/installed"
if ! cmp -s "$tmp/included" "$tmp/installed"; then
	echo "FAIL: installed headers that lhsim.h does not include (internal?) or the reverse:"
	diff "$tmp/included" "$tmp/installed" || true
	fail=1
fi

# 2. Declared in the installed headers.
"$@" $flags -std=c11 -fsyntax-only -aux-info "$tmp/aux" "$tmp/use.c" 2>/dev/null ||
	{ echo "the compiler has no -aux-info (not GCC): export check skipped"; exit 77; }
grep "^/\* $inc/" "$tmp/aux" | grep ' extern ' |
	sed -E 's/^.*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*$/\1/' >"$tmp/declared"
"$@" $flags -std=c11 -E "$tmp/use.c" | awk -v inc="$inc/" '
	/^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); mine = index(f, inc) == 1; next }
	mine && /^ *extern / && !/\(/ {
		s = $0; sub(/ *(\[[^]]*\])? *; *$/, "", s); n = split(s, w, /[ *]+/); print w[n] }' \
	>>"$tmp/declared"
sort -u -o "$tmp/declared" "$tmp/declared"
[ -s "$tmp/declared" ] || { echo "FAIL: found no declaration in the installed headers"; exit 1; }

# 3. Exported by the installed library.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ { print $3 }' | sort -u >"$tmp/exported"
if grep '^lh__' "$tmp/exported"; then
	echo "FAIL: internal lh__ functions are exported (above)"
	fail=1
fi
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/extra"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
if [ -s "$tmp/extra" ]; then
	echo "FAIL: exported but declared in no installed header:"
	sed 's/^/  /' "$tmp/extra"
	fail=1
fi
if [ -s "$tmp/missing" ]; then
	echo "FAIL: declared in an installed header but not exported (no definition?):"
	sed 's/^/  /' "$tmp/missing"
	fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "ok: $(wc -l <"$tmp/exported") symbols exported, all declared in the" \
	"$(wc -l <"$tmp/installed") installed headers"

#!/bin/sh
# The example plugin built the way a user builds it: out of tree, with examples/plugin/Makefile,
# against an installed lhsim found through its pkg-config file; then loaded by `lhsim --plugin`.
# usage: plugin-out-of-tree.sh BUILD_ROOT SOURCE_ROOT LHSIM
set -eu
build=$1 src=$2 lhsim=$3
command -v make >/dev/null 2>&1 || { echo "make is missing: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/stage" --no-rebuild --quiet >/dev/null
pc=$(find "$tmp/stage" -name lhsim.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: meson install put no lhsim.pc under the stage"; exit 1; }
# Plugins need nothing of CUDA: the pkg-config file names no CUDA library or absolute path of
# it, and the installed liblhsim does not load the CUDA runtime (the cuda backend is a module
# of its own, loaded when used).
if grep -qi cuda "$pc"; then cat "$pc"; echo "FAIL: lhsim.pc names CUDA"; exit 1; fi
lib=$(find "$tmp/stage" -name 'liblhsim.so*' -type f | head -n 1)
if command -v ldd >/dev/null 2>&1 && ldd "$lib" | grep -q cudart; then
	ldd "$lib"; echo "FAIL: liblhsim needs the CUDA runtime"; exit 1
fi
mkdir "$tmp/plugin"
cp "$src/examples/plugin/Makefile" "$src/examples/plugin/reverse-serial.c" "$tmp/plugin/"
# A copy of the installed lhsim.pc whose prefix points into the stage (GLib's own .pc files
# stay the system's).
mkdir "$tmp/pc"
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed "s|^prefix=.*|prefix=$tmp/stage$prefix|" "$pc" >"$tmp/pc/lhsim.pc"
PKG_CONFIG_PATH="$tmp/pc" make -s -C "$tmp/plugin" >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; echo "FAIL: make"; exit 1; }
# Three independent kernels: the plugin runs the ready op that comes last first, so c, b, a.
cat >"$tmp/abc.json" <<'JSON'
{"format": "lhsim-graph", "version": 1, "ops": [
 {"name": "a", "kind": "kernel", "duration_ns": 10},
 {"name": "b", "kind": "kernel", "duration_ns": 10},
 {"name": "c", "kind": "kernel", "duration_ns": 10}]}
JSON
out=$("$lhsim" run "$tmp/abc.json" --plugin "$tmp/plugin/reverse-serial.so" --sched reverse-serial \
	--json --save-plan "$tmp/abc.plan")
echo "$out" | grep -q '"scheduler": "reverse-serial"' || { echo "$out"; echo "FAIL: not scheduled by the plugin"; exit 1; }
order=$(sed -n 's/^run main //p' "$tmp/abc.plan" | tr '\n' ' ')
[ "$order" = "c b a " ] || { cat "$tmp/abc.plan"; echo "FAIL: run order '$order', expected 'c b a '"; exit 1; }
echo "ok: built against $(basename "$pc") in the stage and loaded"

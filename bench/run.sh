#!/usr/bin/env bash
# Runs every benchmark built in BUILD (default: build) and prints their tables.
# Benchmarks are not tests: their figures go in bench/README.md with the machine they ran on.
set -euo pipefail
build=${1:-build}
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
for b in "$build"/bench/bench-*; do
	[ -x "$b" ] || continue
	echo
	echo "== $(basename "$b")"
	"$b"
done

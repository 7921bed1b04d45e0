#!/bin/sh
# lhsim bench — iree, iree-cost and heft on the STG instances of tests/data/stg (20 graphs,
# P = 2, 4, 8, 16: 80 instances) on the `ideal` hardware with `streams=P`: the mean makespan
# above the best known schedule length of OPTIMA.md (the upper end of a range), and iree-cost's
# mean above heft. Scheduling results only: no timing.
#
# usage: bench/stg-iree-cost.sh LHSIM   (run from the source root)
set -eu
L=${1:?usage: stg-iree-cost.sh LHSIM}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -E '^\| (50|100)/' tests/data/stg/OPTIMA.md | while IFS='|' read -r _ file _ _ _ _ _ p2 p4 p8 p16 _; do
	file=$(echo "$file" | tr -d ' ')
	set -- "$p2" "$p4" "$p8" "$p16"
	for P in 2 4 8 16; do
		# The best known length: the last number of the cell's first field ("132–134": 134).
		best=$(echo "$1" | sed 's/(.*//; s/\*//g' | grep -oE '[0-9]+' | tail -1)
		shift
		"$L" import "tests/data/stg/$file" --processors "$P" -o "$tmp/g.json" >/dev/null 2>&1
		"$L" compare "$tmp/g.json" --hw ideal \
			--sched "iree:streams=$P,iree-cost:streams=$P,heft:streams=$P" --csv - 2>/dev/null |
			awk -F, -v best="$best" -v f="$file" -v P="$P" \
				'NR > 1 { printf "%s %s %s %.6f\n", f, P, $3, $5 / (best * 1000) }'
	done
done > "$tmp/rows"
awk '{ split($3, s, ":"); r[s[1]] += $4; n[s[1]]++; k = $1 " " $2; v[k, s[1]] = $4 }
     END {
	for (x in r) printf "%-10s mean %.3f %% above the best known (%d instances)\n", x, 100 * (r[x] / n[x] - 1), n[x]
	c = 0; m = 0
	for (key in v) { split(key, part, SUBSEP); if (part[2] == "iree-cost") { m += v[part[1], "iree-cost"] / v[part[1], "heft"] - 1; c++ } }
	printf "iree-cost  mean %.3f %% above heft\n", 100 * m / c
     }' "$tmp/rows" | sort

#!/usr/bin/env bash
# The launch path's cost with the compute share's hooks, on the test double (issue 28's targets: no limit set, one
# predictable branch; a limit of 100 %, at most 50 ns added per launch). tests/integration/launcher launches N
# kernels of 0 us (the double runs nothing) and synchronizes every 1000; its wall time / N is the cost of a launch.
# Three ways side by side, interleaved, REPS times each, the median of each printed:
#   none      no preload (the double alone)
#   preload   LD_PRELOAD=build/libvramguard.so, no compute limit (the launch hooks' one branch)
#   cap100    the same with VRAMGUARD_COMPUTE_LIMIT=100% (every launch measured, none held)
# Usage: bash bench/run_launch.sh [N] [REPS]   (defaults 200000, 7); needs make test-bins (build/tests/launcher).
set -u
cd "$(dirname "$0")/.." || exit 1
N=${1:-200000}
REPS=${2:-7}
B=${BUILD:-build}
LN=$B/tests/launcher
LIB=$PWD/$B/libvramguard.so
[ -x "$LN" ] && [ -f "$LIB" ] || { echo "run make test-bins first ($LN, $LIB)" >&2; exit 1; }
one() { # WAY: ns per launch
	local pre=() lim=()
	case $1 in preload) pre=(LD_PRELOAD="$LIB") ;; cap100) pre=(LD_PRELOAD="$LIB"); lim=(VRAMGUARD_COMPUTE_LIMIT=100%) ;; esac
	env LD_LIBRARY_PATH="$PWD/$B/tests" VRAMGUARD_REPORT=off "${pre[@]}" "${lim[@]}" "$LN" kernels 0 "$N" 1000 |
		sed -n "s/^figures: .* wall_us \([0-9]*\) .*/\1/p" | awk -v n="$N" '{ printf "%.1f\n", $1 * 1000 / n }'
}
declare -A got
for ((r = 0; r < REPS; r++)); do
	for way in none preload cap100; do got[$way]+="$(one $way) "; done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "launch path, test double, $N launches x $REPS runs each (ns per launch: median; every run)"
for way in none preload cap100; do
	printf '  %-8s %7s   %s\n' "$way" "$(median <<<"${got[$way]}")" "${got[$way]}"
done

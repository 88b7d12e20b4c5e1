#!/usr/bin/env bash
# Two builds of the library side by side on the alloc+free pair (test double, null-memory mode, as section 1 of
# bench/run_cpu.sh): without the preload, with the previous library, with this one, alternated process by process
# in one run so that the machine's drift reaches all three alike. Each process gives the best of ROUNDS timed
# loops; each column is the best of PROCS processes; "added" = with - without. Capture off and the default 16 frames,
# 1 and 2 threads. Instructions per pair (callgrind, exact) where valgrind is installed.
# Usage: bash bench/run_cpu_compare.sh OLD_LIB [NEW_LIB]     (NEW_LIB default build/libvramguard.so; make bench-cpu
#        builds the double and bench_cpu); PROCS=N (default 7)
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
T=$B/tests
BIN=$T/bench_cpu
OLD=$(readlink -f "${1:?usage: run_cpu_compare.sh OLD_LIB [NEW_LIB]}")
NEW=$(readlink -f "${2:-$B/libvramguard.so}")
PROCS=${PROCS:-7}
for f in "$BIN" "$OLD" "$NEW" "$T/libcuda.so.1"; do
	[ -e "$f" ] || { echo "run_cpu_compare.sh: $f is missing (make bench-cpu builds the double and bench_cpu)" >&2; exit 1; }
done

base() { env FAKECUDA_MEM=64T FAKECUDA_NULLMEM=1 LD_LIBRARY_PATH="$PWD/$T" "$@"; }
vg() { local lib=$1; shift; base LD_PRELOAD="$lib" NVIDIA_GPU_MEMORY_LIMITS=64T VRAMGUARD_REPORT=off "$@"; }
min() { awk 'NR == 1 || $1 < m { m = $1 } END { print m }'; }
id() { printf '%s (%s bytes, sha256 %s)' "$1" "$(stat -c %s "$1")" "$(sha256sum "$1" | cut -c1-8)"; }

echo "vramguard: the alloc+free pair, two libraries side by side, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "previous: $(id "$OLD")"
echo "this:     $(id "$NEW")"
echo "ns per pair, best of $PROCS processes per column (alternated), each the best of its rounds; test double in"
echo "null-memory mode (FAKECUDA_NULLMEM=1)"
printf '%-36s %9s %9s %9s %9s %9s\n' setting without previous this "added,prev" "added,this"
# row LABEL THREADS ITERS ROUNDS [VAR=VALUE...]
row() {
	local label=$1 thr=$2 it=$3 rounds=$4 a=() o=() n=() i
	shift 4
	if [ "$thr" -gt 1 ]; then it=$((it * 10)) rounds=$(((rounds + 3) / 4)); fi
	for ((i = 0; i < PROCS; i++)); do
		a+=("$(base "$BIN" calls pair "$thr" "$it" "$rounds")")
		o+=("$(vg "$OLD" "$@" "$BIN" calls pair "$thr" "$it" "$rounds")")
		n+=("$(vg "$NEW" "$@" "$BIN" calls pair "$thr" "$it" "$rounds")")
	done
	local wo wa wn
	wo=$(printf '%s\n' "${a[@]}" | min) wa=$(printf '%s\n' "${o[@]}" | min) wn=$(printf '%s\n' "${n[@]}" | min)
	awk -v l="$label" -v wo="$wo" -v wa="$wa" -v wn="$wn" \
		'BEGIN { printf "%-36s %9.1f %9.1f %9.1f %9.1f %9.1f\n", l, wo, wa, wn, wa - wo, wn - wo }'
}
for thr in 1 2; do
	row "pair, capture off, ${thr}T" "$thr" 10000 20 VRAMGUARD_BACKTRACE=0
	row "pair, capture 16 frames (default), ${thr}T" "$thr" 5000 5
done
if command -v valgrind >/dev/null; then
	echo
	echo "instructions per pair (valgrind --tool=callgrind --toggle-collect=count_pairs, null-memory double)"
	ir() { # ir PAIRS [env...]
		local pairs=$1 out
		shift
		out=$(mktemp)
		"$@" valgrind --tool=callgrind --toggle-collect=count_pairs --callgrind-out-file="$out" "$BIN" count \
			"$pairs" >/dev/null 2>&1
		awk -v n="$pairs" '/^totals:/ { printf "%.0f", $2 / n }' "$out"
		rm -f "$out"
	}
	i0=$(ir 20000 base)
	for bt in 0 16; do
		pairs=$((bt ? 4000 : 20000))
		io=$(ir "$pairs" vg "$OLD" VRAMGUARD_BACKTRACE=$bt) in=$(ir "$pairs" vg "$NEW" VRAMGUARD_BACKTRACE=$bt)
		printf '%-36s %9s %9s %9s %9s %9s\n' "capture $bt, instructions" "$i0" "$io" "$in" $((io - i0)) $((in - i0))
	done
fi

#!/usr/bin/env bash
# The growth sampler's cost (issue 29; docs/PERFORMANCE.md, "Issue 29: the growth sampler"), a previous version next
# to this one in one run, for 10 000, 100 000 and 1 000 000 live allocations:
#  1. one growth point's walk (bench/bench_growth.c, linked with accounting/table.c and accounting/growth.c): ms per
#     point, back to back, and the longest a shard stays locked; then ns per table insert+remove pair from 2 threads
#     while a third takes points back to back, and with none. The previous table.c is taken from git (OLD_REV).
#  2. what an application sees (bench/bench_growth_app.c, preloaded against the test double in null-memory mode):
#     cuMemAlloc_v2+cuMemFree_v2 from 2 threads, with a point every 100 ms (VRAMGUARD_GROWTH_WINDOW=1s, the shortest
#     step) and with none (168h: one point before the timing starts), under the previous library and this one; and
#     the sampler thread's CPU time per second.
# Usage: bash bench/run_growth.sh OLD_LIB [NEW_LIB]   (make bench-growth builds the double and bench_growth_app; NEW_LIB
#        default build/libvramguard.so); OLD_REV (default c8a4231) names the previous accounting/table.c; SECS (3);
#        SIZES (default "10000 100000 1000000") the live counts
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
T=$B/tests
APP=$T/bench_growth_app
OLD=$(readlink -f "${1:?usage: run_growth.sh OLD_LIB [NEW_LIB]}")
NEW=$(readlink -f "${2:-$B/libvramguard.so}")
OLD_REV=${OLD_REV:-c8a4231}
SECS=${SECS:-3}
SIZES=${SIZES:-10000 100000 1000000}
for f in "$APP" "$OLD" "$NEW" "$T/libcuda.so.1"; do
	[ -e "$f" ] || { echo "run_growth.sh: $f is missing (make bench-growth builds the double and the programs)" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/accounting"
git show "$OLD_REV:accounting/table.c" >"$WORK/accounting/table.c"
build() { cc -std=gnu11 -O2 -g -pthread -I. -o "$1" bench/bench_growth.c "$2" accounting/growth.c -lm; }
build "$WORK/walk_old" "$WORK/accounting/table.c"
build "$WORK/walk_new" accounting/table.c

echo "vramguard: the growth sampler's cost, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "table.c: previous = $OLD_REV, this = $(git describe --always --dirty)"
echo
echo "1. a point's walk, linked with table.c (100 call sites; 20 points back to back; pairs: $SECS s, 2 threads)"
for n in $SIZES; do
	for v in old new; do
		echo "$n $v point: $("$WORK/walk_$v" point "$n" 100 20)"
		echo "$n $v pairs, no points:   $("$WORK/walk_$v" pairs "$n" 100 "$SECS" 0)"
		echo "$n $v pairs, back to back: $("$WORK/walk_$v" pairs "$n" 100 "$SECS" 1)"
	done
done
echo
echo "2. cuMemAlloc_v2+cuMemFree_v2 under the preload (8 call sites; $SECS s, 2 threads; VRAMGUARD_DEVICE_POLL=50)"
echo "previous: $OLD"
echo "this:     $NEW"
app() { # app LIB WINDOW N
	env FAKECUDA_MEM=64T FAKECUDA_NULLMEM=1 LD_LIBRARY_PATH="$PWD/$T" LD_PRELOAD="$1" NVIDIA_GPU_MEMORY_LIMITS=64T \
		VRAMGUARD_REPORT=off VRAMGUARD_DEVICE_POLL=50 VRAMGUARD_GROWTH_WINDOW="$2" "$APP" "$3" "$SECS"
}
for n in $SIZES; do
	for lib in "$OLD" "$NEW"; do
		v=$([ "$lib" = "$OLD" ] && echo old || echo new)
		echo "$n $v no points (168h):     $(app "$lib" 168h "$n")"
		echo "$n $v a point every 100 ms: $(app "$lib" 1s "$n")"
	done
done

#!/usr/bin/env bash
# Cost of call-site capture: ns per cuMemAlloc_v2+cuMemFree_v2 pair (and cuMemAllocAsync+cuMemFreeAsync) from a
# 48-frame stack, without vramguard, and with it at several VRAMGUARD_BACKTRACE depths. CPU only (test double).
# Usage: make bench   (or bash bench/run_capture.sh [stack_depth] [iterations])
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
T=$B/tests
depth=${1:-48}
iters=${2:-200000}
run() { env LD_LIBRARY_PATH="$PWD/$T" "$@" "$T/bench_capture" "$depth" "$iters"; }
printf '%-28s %14s %14s\n' "setting" "alloc+free ns" "async pair ns"
read -r s a < <(run env)
printf '%-28s %14s %14s\n' "no vramguard" "$s" "$a"
for bt in 0 4 8 16 32 64; do
	read -r s a < <(run env LD_PRELOAD="$PWD/$B/libvramguard.so" NVIDIA_GPU_MEMORY_LIMITS=64G \
		VRAMGUARD_REPORT=off VRAMGUARD_BACKTRACE=$bt)
	printf '%-28s %14s %14s\n' "vramguard, backtrace $bt" "$s" "$a"
done
echo "(stack depth $depth frames, $iters pairs per run, best of 5; $(nproc) CPUs, $(uname -m))"

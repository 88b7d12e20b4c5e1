#!/usr/bin/env bash
# Cost of Python frames in call sites (VRAMGUARD_PYTHON): ns per cuMemAlloc_v2+cuMemFree_v2 pair called through
# ctypes from a Python stack 16 frames deep, without vramguard, and with it with Python capture off and on (one
# captured allocation per pair; the free captures nothing). CPU only (test double).
# Usage: bash bench/run_python.sh [python3] [python_depth] [iterations]
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
T=$B/tests
py=${1:-python3}
depth=${2:-16}
iters=${3:-100000}
run() { env LD_LIBRARY_PATH="$PWD/$T" "$@" "$py" bench/bench_python.py "$PWD/$T/libcuda.so.1" "$depth" "$iters"; }
vg=(LD_PRELOAD="$PWD/$B/libvramguard.so" NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off)
# Three rounds, the settings interleaved so that a noisy neighbour hits all three alike; the best of each.
min() { if [ -z "$1" ] || [ "$2" -lt "$1" ]; then echo "$2"; else echo "$1"; fi; }
base="" off="" on=""
for _ in 1 2 3; do
	base=$(min "$base" "$(run env)")
	off=$(min "$off" "$(run env "${vg[@]}" VRAMGUARD_PYTHON=off)")
	on=$(min "$on" "$(run env "${vg[@]}" VRAMGUARD_PYTHON=on)")
done
printf '%-40s %14s\n' "setting" "alloc+free ns"
printf '%-40s %14s\n' "no vramguard" "$base" "vramguard, VRAMGUARD_PYTHON=off" "$off" "vramguard, VRAMGUARD_PYTHON=on" "$on"
printf '%-40s %14s\n' "Python capture, per captured allocation" "$((on - off))"
echo "($($py -c 'import platform; print("CPython", platform.python_version())'), Python depth $depth," \
	"native depth 16 (VRAMGUARD_BACKTRACE), $iters pairs per run, best of 3 x 5 interleaved; $(nproc) CPUs, $(uname -m))"

#!/usr/bin/env bash
# On a GPU machine: ns per real cudaMalloc+cudaFree and cudaMallocAsync+cudaFreeAsync pair (1 MiB, 48-frame stack),
# without vramguard and with it at several VRAMGUARD_BACKTRACE depths. Needs nvcc and build/libvramguard.so.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp -d)
nvcc -O2 -o "$out/gpu_alloc_cost" bench/gpu_alloc_cost.cu
LIB=$PWD/build/libvramguard.so
printf '%-28s %16s %16s\n' "setting" "malloc+free ns" "async pair ns"
read -r s a < <("$out/gpu_alloc_cost")
printf '%-28s %16s %16s\n' "no vramguard" "$s" "$a"
for bt in 0 4 8 16 32; do
	read -r s a < <(env LD_PRELOAD="$LIB" NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off VRAMGUARD_BACKTRACE=$bt \
		"$out/gpu_alloc_cost")
	printf '%-28s %16s %16s\n' "vramguard, backtrace $bt" "$s" "$a"
done
echo "($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); best of 5 runs of 2000 pairs)"
rm -rf "$out"

#!/usr/bin/env bash
# The demo: build vramguard and run examples/quota_demo under a 2 GiB quota, on the real driver when this machine
# has an NVIDIA GPU, otherwise on the test double of libcuda.so.1 and libnvidia-ml.so.1 (it says which). It ends
# with the commands to try next, each of which works as printed from the repository's root (make test runs them).
set -eu
cd "$(dirname "$0")/.."
# Under `make demo` / `make try` this script's make would be a sub-make without the jobserver (the Makefile sets -j):
# make it a make of its own, which also keeps make[1]'s directory lines out of the output.
unset MAKEFLAGS MFLAGS MAKELEVEL
# The test double's NVML is built too, before or after `make test` alike: without it the driver's memory would not
# be measured and the demo would show one more piece than with it.
targets="build/libvramguard.so build/vramguard build/tests/libcuda.so.1 build/tests/libnvidia-ml.so.1 build/quota_demo"
# Already built (e.g. a build directory copied to a GPU machine): nothing to install.
if ! make -q $targets 2>/dev/null; then
	bash scripts/setup.sh >/dev/null
	make -s $targets
fi
LIB=$PWD/build/libvramguard.so
limit=${NVIDIA_GPU_MEMORY_LIMITS:-2048}
if nvidia-smi -L >/dev/null 2>&1; then
	echo "demo: running against the real NVIDIA driver ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
	libpath=${LD_LIBRARY_PATH:-}
	double=
else
	echo "demo: no NVIDIA GPU here: running against the test double of libcuda.so.1 and libnvidia-ml.so.1"
	echo "      (tests/fakecuda: one 16 GiB device; the driver itself holds nothing there)"
	libpath=$PWD/build/tests
	double="LD_LIBRARY_PATH=build/tests "
fi
echo
echo "\$ ./build/quota_demo                     # without vramguard"
LD_LIBRARY_PATH=$libpath ./build/quota_demo
echo
echo "\$ NVIDIA_GPU_MEMORY_LIMITS=$limit LD_PRELOAD=$LIB ./build/quota_demo"
rc=0
out=$(NVIDIA_GPU_MEMORY_LIMITS=$limit LD_PRELOAD=$LIB LD_LIBRARY_PATH=$libpath ./build/quota_demo 2>&1) || rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
# Why the count is what it is, in this run's own figures: the quota as the job saw it, what was held before its
# first allocation (the driver's memory and the headroom), how many pieces fitted.
total=$(sed -n 's/^cuMemGetInfo: total \([0-9]*\) MiB, free [0-9]* MiB$/\1/p' <<<"$out" | head -1)
free=$(sed -n 's/^cuMemGetInfo: total [0-9]* MiB, free \([0-9]*\) MiB$/\1/p' <<<"$out" | head -1)
n=$(sed -n 's/^allocated \([0-9]*\) x 512 MiB.*/\1/p' <<<"$out")
echo
if [ -n "$total" ] && [ -n "$free" ] && [ -n "$n" ] && [ "$free" -lt "$total" ]; then
	pieces="$n pieces of 512 MiB"
	[ "$n" -lt $((total / 512)) ] && pieces="$pieces, not $((total / 512))"
	cat <<EOF
demo: $pieces: the quota counts what the GPU holds for the process (VRAMGUARD_COUNT=device),
      and it held $((total - free)) of the $total MiB before its first allocation: the driver's own memory, measured through NVML,
      plus VRAMGUARD_DRIVER_HEADROOM (192 MiB by default) for what the driver loads later. VRAMGUARD_DRIVER_HEADROOM=0
      charges only the measured memory; VRAMGUARD_COUNT=allocations counts only the bytes asked for.
EOF
elif [ -n "$total" ] && [ -n "$n" ]; then
	echo "demo: $n pieces of 512 MiB filled the $total MiB quota; the next one was refused as a full GPU refuses it."
fi
cat <<EOF

demo: try it yourself, from here${double:+ (no GPU here: LD_LIBRARY_PATH points at the test double)}; \`make try\` opens
      a shell where build/ is on PATH${double:+ and LD_LIBRARY_PATH is set}:
  \$ ${double}build/vramguard run --limit 2G -- ./build/quota_demo
  \$ ${double}VRAMGUARD_DRIVER_HEADROOM=0 build/vramguard run --limit 2G -- ./build/quota_demo
  \$ ${double}build/vramguard check
EOF

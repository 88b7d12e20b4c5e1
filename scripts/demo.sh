#!/usr/bin/env bash
# The demo: build vramguard and run examples/quota_demo under a 2 GiB quota, on the real driver when this machine
# has an NVIDIA GPU, otherwise on the test double of libcuda.so.1 (it says which).
set -eu
cd "$(dirname "$0")/.."
targets="build/libvramguard.so build/tests/libcuda.so.1 build/quota_demo"
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
else
	echo "demo: no NVIDIA GPU here: running against the test double of libcuda.so.1 (tests/fakecuda, 16 GiB device)"
	libpath=$PWD/build/tests
fi
echo
echo "\$ ./build/quota_demo                     # without vramguard"
LD_LIBRARY_PATH=$libpath ./build/quota_demo
echo
echo "\$ NVIDIA_GPU_MEMORY_LIMITS=$limit LD_PRELOAD=$LIB ./build/quota_demo"
NVIDIA_GPU_MEMORY_LIMITS=$limit LD_PRELOAD=$LIB LD_LIBRARY_PATH=$libpath ./build/quota_demo

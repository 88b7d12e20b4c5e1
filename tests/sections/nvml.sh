#!/usr/bin/env bash
# Section nvml: NVML under the preload (interposer/nvml/nvml_hooks.c): nvmlDeviceGetMemoryInfo[_v2] read every way a
# program reaches NVML (tests/integration/nvml_probe.c, built as nvml_link and nvml_smi) against the test double
# (tests/fakecuda/fakenvml.h: 16 GiB devices, 32 MiB reserved, this process's usage as its only one). Other processes
# are tests/integration/shared_alloc.c driven through shp_lib.sh. Everything in a private VRAMGUARD_SHM_DIR.
# Needs: make test-bins (nvml_link, nvml_smi, shared_alloc, libnvidia-ml.so.1).
source tests/lib/section.sh

source tests/integration/shp_lib.sh
SHD=$(shp_dir nvml)
NL=$T/nvml_link
NS=$T/nvml_smi
NV="VRAMGUARD_SHM_DIR=$SHD"

# The fake's own answers: total 16 GiB, used = this process's usage + 32 MiB reserved.
prog "NVML without the preload: the fake's answers, every route (linked, 3 dlopen names)" -- $NL --alloc 100 \
	--reserved 32 16384 132
prog "NVML without the preload, nvidia-smi's way" -- $NS --reserved 32 16384 32
out=$(LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=1G timeout 60 $NS 1024 0 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "control: without the preload the NVML quota checks fail"; else
	bad "control: without the preload the NVML quota checks should fail"; fi

prog "NVML under the preload, no limit: the real answer" $PRE $NV -- $NL --alloc 100 --reserved 32 16384 132
prog "  nvidia-smi's way, no limit: the real answer, libcuda never loaded" $PRE $NV -- $NS --cuda no --reserved 32 \
	16384 32
prog "NVML with a 1 GiB quota, CUDA process: total 1 GiB, used = its usage, every route" $PRE $NV \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NL --alloc 100 1024 100
prog "  nvidia-smi's way (not a CUDA process): total 1 GiB, used 0, libcuda never loaded" $PRE $NV \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NS --cuda no 1024 0
prog "  a percentage of the card (25%)" $PRE $NV NVIDIA_GPU_MEMORY_LIMITS=25% -- $NS --cuda no 4096 0
prog "  HAMi's CUDA_DEVICE_MEMORY_LIMIT (bytes)" $PRE $NV CUDA_DEVICE_MEMORY_LIMIT=2147483648 -- $NS --cuda no 2048 0
prog "  an invalid limit changes nothing here (the CUDA side fails closed)" $PRE $NV NVIDIA_GPU_MEMORY_LIMITS=4XB \
	-- $NS --cuda no --reserved 32 16384 32
G1=GPU-00000001-0000-0000-0000-000000000001
prog "  a UUID key: that GPU only, no driver needed" $PRE $NV FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=$G1:512M \
	-- $NS --index 1 --cuda no 512 0
prog "  ... the other GPU: the real answer" $PRE $NV FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=$G1:512M \
	-- $NS --index 0 --cuda no --reserved 32 16384 32
# NVML numbers GPUs by PCI order; CUDA (CUDA_VISIBLE_DEVICES, here FAKECUDA_UUID_BASE=1) does not see NVML's 0.
ORD="FAKECUDA_DEVICES=2 FAKECUDA_UUID_BASE=1 NVIDIA_GPU_MEMORY_LIMITS=0:1G,1:2G"
prog "per-ordinal limits, not a CUDA process: NVML's GPU 1 is CUDA's 0 (the driver is asked)" $PRE $NV $ORD \
	-- $NS --index 1 --cuda yes 1024 0
prog "  NVML's GPU 2 is CUDA's 1" $PRE $NV $ORD -- $NS --index 2 --cuda yes 2048 0
prog "  NVML's GPU 0, which CUDA cannot see: no key applies, the real answer" $PRE $NV $ORD \
	-- $NS --index 0 --cuda yes --reserved 32 16384 32
prog "  HAMi's CUDA_DEVICE_MEMORY_LIMIT_1 is a per-ordinal key too" $PRE $NV FAKECUDA_DEVICES=2 FAKECUDA_UUID_BASE=1 \
	CUDA_DEVICE_MEMORY_LIMIT_1=1073741824 -- $NS --index 2 --cuda yes 1024 0
prog "  the same limits in a CUDA process that uses the GPU: the ordinal vramguard resolved" $PRE $NV $ORD \
	-- $NL --index 1 --alloc 10 1024 10

# Other processes of the container: their control segments in VRAMGUARD_SHM_DIR.
shp_spawn n1 NVIDIA_GPU_MEMORY_LIMITS=1G
shp_send n1 init
shp_expect "a CUDA process holds 300 MiB (quota 1 GiB)" n1 "alloc 300" '^= alloc 0 held 314572800$'
prog "  nvidia-smi's way in its container: total 1 GiB, used 300 MiB (its control segment)" $PRE $NV \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NS --cuda no 1024 300
prog "  a CUDA process of the container: its 100 MiB and the other's 300" $PRE $NV NVIDIA_GPU_MEMORY_LIMITS=1G \
	-- $NL --alloc 100 1024 400
shp_spawn n2 FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=1G
shp_send n2 init
shp_send n2 "dev 1"
shp_expect "  a third process holds 50 MiB on another GPU" n2 "alloc 50" '^= alloc 0 '
prog "  ... not counted on the first" $PRE $NV FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=1G \
	-- $NS --index 0 --cuda no 1024 300
prog "  ... counted on its own" $PRE $NV FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=1G \
	-- $NS --index 1 --cuda no 1024 50
prog "  no limit here: the real answer, whatever the others hold" $PRE $NV -- $NS --cuda no --reserved 32 16384 32
prog "  a quota of 256 MiB with 300 MiB in use: used is capped at the total" $PRE $NV NVIDIA_GPU_MEMORY_LIMITS=256M \
	-- $NS --cuda no 256 256
shp_kill n1
prog "  a killed process (its segment left behind) is not counted" $PRE $NV FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NS --index 0 --cuda no 1024 0
shp_end n2

# A shared region: its budget and its usage.
SR="VRAMGUARD_SHARED=nv VRAMGUARD_SHARED_LIMITS=2G"
shp_spawn s1 $SR NVIDIA_GPU_MEMORY_LIMITS=4G
shp_send s1 init
shp_expect "a member of region nv (budget 2 GiB) holds 500 MiB" s1 "alloc 500" '^= alloc 0 held 524288000$'
prog "  nvidia-smi's way with VRAMGUARD_SHARED: the region's budget and usage, never joined" $PRE $NV \
	VRAMGUARD_SHARED=nv -- $NS --cuda no 2048 500
prog "  ... with a quota of 1 GiB too: the tighter total, the region's usage" $PRE $NV VRAMGUARD_SHARED=nv \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NS --cuda no 1024 500
prog "  a member with a 1 GiB quota holding 100 MiB: total 1 GiB, used the region's 600 MiB" $PRE $NV $SR \
	NVIDIA_GPU_MEMORY_LIMITS=1G -- $NL --alloc 100 1024 600
prog "  a GPU nobody registered in the region: the budget its spec gives it, nothing used" $PRE $NV $SR \
	FAKECUDA_DEVICES=2 -- $NS --index 1 --cuda no 2048 0
shp_top
shp_json "  the non-member did not join: one member" members nv "${SHP_PID[s1]}" $((500 * MIB))
shp_end s1
prog "a region that does not exist: the real answer" $PRE $NV VRAMGUARD_SHARED=absent -- $NS --cuda no \
	--reserved 32 16384 32
[ ! -e "$SHD/vramguard.absent" ] && ok "  and it was not created" || bad "  reading NVML created region 'absent'"
rm -rf "$SHD"
done_testing

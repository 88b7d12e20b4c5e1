#!/usr/bin/env bash
# Section quota: the quota on the direct-link route (values, units, HAMi's names, precedence), the charging
# rules of each allocation kind, per-device limits and the routes to the driver (dlsym, cuGetProcAddress, RTLD_NEXT).
# Needs: make test-bins (direct, physical, dl_route, rtld_next, libnext.so).
source tests/lib/section.sh

echo "== quota on the direct-link route"
prog "quota 4096 MiB" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D quota
expect_err "denial message names size, GPU, entry point, usage and variable" \
	'^vramguard: denied 2\.00 GiB on GPU 0 \(cuMemAlloc_v2\): 3\.00 GiB of 4\.00 GiB quota in use \(NVIDIA_GPU_MEMORY_LIMITS\)$'
expect_err_lines "denials are rate-limited (2 denials within a second: 1 line)" '^vramguard: denied' 1
prog "quota 4G spelled with a unit" $PRE NVIDIA_GPU_MEMORY_LIMITS=4GiB -- $D quota
prog "quota as 25% of a 16 GiB device" $PRE NVIDIA_GPU_MEMORY_LIMITS=25% -- $D quota
prog "quota from HAMi's CUDA_DEVICE_MEMORY_LIMIT (bytes)" $PRE CUDA_DEVICE_MEMORY_LIMIT=4294967296 -- $D quota
expect_err "the message names the variable the limit came from" '\(CUDA_DEVICE_MEMORY_LIMIT\)$'
prog "NVIDIA_GPU_MEMORY_LIMITS wins over HAMi's variables" $PRE NVIDIA_GPU_MEMORY_LIMITS=4G \
	CUDA_DEVICE_MEMORY_LIMIT=1g CUDA_DEVICE_MEMORY_LIMIT_0=2g -- $D quota
prog "no limit: pass-through" $PRE VRAMGUARD_REPORT=off -- $D unlimited
expect_quiet "no limit: nothing printed"
prog "empty NVIDIA_GPU_MEMORY_LIMITS means unset" $PRE NVIDIA_GPU_MEMORY_LIMITS= -- $D unlimited
# Control: the same checks without the preload must fail, or they prove nothing.
out=$(LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=4096 timeout 60 $D quota 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "control: without the preload the quota checks fail"; else
	bad "control: without the preload the quota checks should fail"; fi

echo "== charging rules"
prog "pitch and managed" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D pitch_managed
prog "VRAMGUARD_MANAGED=ignore" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_MANAGED=ignore -- $D managed_ignore
prog "arrays (estimate)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D arrays
prog "VMM: refs + maps, NCCL order, HOST_NUMA, retry after 800" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	FAKECUDA_FAIL=cuMemCreate:1=800 -- $D vmm
prog "async, pools, capture" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D async
prog "async: a stream handle reused by another device's stream" $PRE VRAMGUARD_COUNT=allocations FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMITS=0:2G,1:1G -- $D async_streams
for i in 0 1 2 3 4; do
	prog "async: capture begun by entry point $i" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 -- \
		$D async_capture $i
done
prog "device counting: pools charged by their reserve (threshold 0 and max, trim before refusing, created pools)" \
	$PRE NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 -- $T/physical pools
prog "device counting: graph memory charged, cuDeviceGraphMemTrim gives it back" $PRE NVIDIA_GPU_MEMORY_LIMITS=1024 \
	FAKECUDA_AUTOCTX=0 -- $T/physical graphs
prog "device counting: the driver's own memory (context, modules) measured through NVML and charged" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=0 FAKECUDA_AUTOCTX=0 FAKECUDA_CTX_BYTES=300M \
	FAKECUDA_MODULE_BYTES=64M -- $T/physical driver
prog "device counting: an allocation near the quota before the context's first measurement waits for it" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=0 FAKECUDA_AUTOCTX=0 FAKECUDA_CTX_BYTES=300M \
	-- $T/physical driver_first_alloc
prog "device counting: VRAMGUARD_DRIVER_HEADROOM is charged beyond the first measurement until growth uses it" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=100M FAKECUDA_AUTOCTX=0 FAKECUDA_CTX_BYTES=300M \
	FAKECUDA_MODULE_BYTES=64M -- $T/physical headroom
# The driver's memory measured while a thread allocates and frees, NVML slow (5 ms each side of its reading): never
# the thread's memory taken for the driver's (the churn case failed 5 of 6 runs before vg_quota_releases), and
# still measured when the thread pauses now and then (a module loaded meanwhile is seen).
for mode in churn bursts; do
	mkdir -p "$RD/sampler-$mode"
	prog "device counting: the driver's memory measured while a thread allocates and frees 1 MiB ($mode)" $PRE \
		NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DEVICE_POLL=50 FAKENVML_PROCS_DELAY_US=5000 FAKECUDA_MODULE_BYTES=64M \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RD/sampler-$mode/r-%p-%n-%r.json" -- $D sampler $mode
done
# The same race made exact: the fake NVML's hook has a worker allocate 1 MiB just before NVML reads the process's
# usage and free it just after, inside the first measurement (the headroom's floor) or a later one.
for when in first later; do
	prog "device counting: 1 MiB allocated and freed inside NVML's call ($when measurement) is not the driver's" \
		$PRE NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=0 FAKECUDA_CTX_BYTES=300M \
		VRAMGUARD_DEVICE_POLL=60000 -- $T/physical measure $when
done
# Its mirror image: an allocation reserved but not yet made by the driver (held inside the double) while NVML reads.
prog "device counting: an allocation under way during NVML's call is not taken off the driver's part" \
	$PRE NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=0 FAKECUDA_CTX_BYTES=300M FAKECUDA_MODULE_BYTES=64M \
	VRAMGUARD_DEVICE_POLL=60000 -- $T/physical measure inflight
prog "VRAMGUARD_COUNT=allocations: logical bytes, pools' kept memory and graphs not counted" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 -- $T/physical allocations
prog "context destroy and primary reset release" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D ctx
prog "driver failure rolls the reservation back" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FAIL=cuMemAlloc_v2:2 \
	-- $D fault

echo "== per-device limits"
prog "per-device list 0:2G,1:1G" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=0:2G,1:1G -- $D perdevice 2048 1024
prog "MPS style 1=1536 leaves device 0 unlimited" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=1=1536 \
	-- $D perdevice -1 1536
prog "bare default plus one device" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=3G,1:1G -- $D perdevice 3072 1024
prog "UUID key" $PRE FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMITS=GPU-00000001-0000-0000-0000-000000000001:512M -- $D perdevice -1 512
prog "HAMi per-device CUDA_DEVICE_MEMORY_LIMIT_1" $PRE FAKECUDA_DEVICES=2 CUDA_DEVICE_MEMORY_LIMIT_1=1g \
	-- $D perdevice -1 1024

echo "== routes"
prog "dlopen + dlsym, cudart's cuGetProcAddress pattern, _ptsz" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/dl_route
expect_err_lines "an unwrapped legacy entry point is reported once" 'does not wrap' 1
prog "RTLD_NEXT stays the caller's (second preload library)" "LD_PRELOAD=$SP$LIB $PWD/$T/libnext.so" -- $T/rtld_next
expect_err "libnext got libc's getppid, not itself" '^libnext: RTLD_NEXT ok$'
if objdump -d --no-show-raw-insn "$LIB" | awk '/<dlsym>:/,/^$/' | grep -Eq 'jmp +\*'; then
	ok "dlsym's pass-through is a jump (disassembly)"
else
	bad "dlsym's pass-through is a jump (disassembly)"
fi

done_testing

#!/usr/bin/env bash
# Section reliability: fault injection on every hook of interposer/hooks.h, stress and signal storms against a tight
# quota, and process lifecycle (fork, exec, exit under load, dlopen/dlclose, two copies, SIGUSR1 handlers,
# constructors, a second preload library). Needs: make test-bins (faults, stress, lifecycle, dl_lifecycle, ctor).
source tests/lib/section.sh

RL=$RD/reliability
mkdir -p "$W/copy" && cp "$LIB" "$W/copy/libvramguard.so"
rm -rf "$RL" && mkdir -p "$RL/faults" "$RL/stress" "$RL/storm" "$RL/fork1" "$RL/fork0" "$RL/exit" "$RL/sig"
MIB=$((1 << 20))
FE=${FORKENV:-}
CE=${COPYENV:-}

# The reports are checked by $CHK (tests/lib/report_check.py): faults, zero, fork, exits, valid.

# The figures line of the last prog (from the log), shown under its result.
figures() { # REGEX
	local line
	line=$(grep -E -- "$1" "$LOG" | tail -n 1)
	[ -n "$line" ] && sed -E 's/^(not )?ok [0-9]+ - /# /' <<<"$line"
}

echo "== reliability: fault injection on every hook (FAKECUDA_FAIL=HOOK:N[+]=CODE, N=1,2,3, once and from then on)"
# The balance these runs check is the allocations' (the double counts stream-ordered allocations by their size):
# VRAMGUARD_COUNT=allocations. Device counting has its own checks (tests/integration/physical.c). A compute share of
# 100 % makes every launch and synchronization go through the compute share's path (measured, never held).
prog "fault campaign: each run balanced after every step (cuMemGetInfo_v2 = quota - driver's bytes)" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_COMPUTE_LIMIT=100% -- $T/faults campaign "$RL/faults"
figures '^(not )?ok [0-9]+ - campaign: '
prog "  the exit reports agree with the double (used, sites, live, allocs/frees, streams)" -- $CHK faults "$RL/faults"
out=$(env LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 FAKECUDA_FAIL=cuMemAlloc_v2:2 \
	FAULTS_DIR="$RL" timeout 60 $T/faults one cuMemAlloc_v2 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "  control: without the preload the balance checks fail"; else
	bad "  control: without the preload the balance checks should fail"; fi
prog "a failed first sizing of the device (cuDeviceTotalMem_v2:1) keeps the absolute quota" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_FAIL=cuDeviceTotalMem_v2:1=999 VRAMGUARD_REPORT=off -- $T/faults sizing

echo "== reliability: stress and signal storms"
prog "8 threads x 3 s: every allocation kind, frees, busy streams, cuMemGetInfo_v2, SIGUSR1 reports, 256 MiB quota" \
	$PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=256 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/stress/r-%p-%n-%r.json" \
	-- timeout 60 $T/stress race 3
figures '^ok [0-9]+ - 8 threads x '
prog "  every report complete JSON within the quota; the exit report at exact zero" -- \
	$CHK zero 10 $((256 * MIB)) "$RL"/stress/r-*.json
out=$(env LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=256 timeout 60 $T/stress race 0.3 2>&1)
if grep -Eq '^not ok [0-9]+ - the driver never held more than the quota' <<<"$out"; then
	ok "  control: without the preload the driver goes over the quota"
else bad "  control: without the preload the quota check should fail"; fi
prog "signal storm: 5000 SIGUSR1 (another process + a thread) while 4 threads allocate" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=256 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/storm/r-%p-%n-%r.json" \
	-- timeout 60 $T/stress storm 5000
figures '^ok [0-9]+ - survived '
prog "  every report complete JSON; the exit report at exact zero" -- \
	$CHK zero 2 $((256 * MIB)) "$RL"/storm/r-*.json

echo "== reliability: process lifecycle"
prog "20 forks while 4 threads allocate (FAKECUDA_FORK_OK=1): plain children and exec'd ones" $PRE \
	$FE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FORK_OK=1 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/fork1/r-%p-%n-%r.json" -- timeout 60 $T/lifecycle fork "$RL/fork1"
prog "  no report from a plain child; an exec'd child is a fresh process with its own" -- \
	$CHK fork "$RL/fork1" $((192 * MIB))
prog "20 forks while 4 threads allocate (the driver refuses the child, like the real one)" $PRE $FE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/fork0/r-%p-%n-%r.json" \
	-- timeout 60 $T/lifecycle fork "$RL/fork0"
prog "  the same reports" -- $CHK fork "$RL/fork0" $((192 * MIB))
prog "exit(7) while 4 threads are inside the driver, 10 runs" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/exit/r-%p-%n-%r.json" -- timeout 100 $T/lifecycle exitloop "$RL/exit"
prog "  one complete exit report per run" -- $CHK exits "$RL/exit"
prog "dlopen/dlclose of libcuda.so.1 by the application, 5 cycles (dlsym route)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_REPORT=off -- $T/dl_lifecycle cycles
prog "a copy dlopened RTLD_GLOBAL before the first CUDA call, which goes through it; then dlclosed" $PRE \
	$FE $CE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/dl_lifecycle copy "$W/copy/libvramguard.so"
expect_err_lines "  one exit report (the preloaded library's)" '^vramguard: report \(exit\)' 1
prog "the application's SIGUSR1 handler, installed before 8 threads' racing first CUDA use, is kept" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=4096 "VRAMGUARD_REPORT=$RL/sig/before-%p-%n-%r.json" -- $T/lifecycle sig_before
expect_err_lines "  vramguard says once that signal reports are off" \
	'^vramguard: warning: SIGUSR1 already has a handler in this process; reports on signal are off' 1
prog "the application's SIGUSR1 handler installed after the first CUDA use replaces ours; chaining still reports" \
	$PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/sig/sigafter-%p-%n-%r.json" \
	-- $T/lifecycle sig_after "$RL/sig"
prog "  its reports complete JSON (the chained signal one and the exit one)" -- $CHK valid 2 "$RL"/sig/sigafter-*.json
if [ -x "$T/ctor" ]; then
	prog "CUDA from constructors (a linked library's and the program's): the quota holds" $PRE \
		NVIDIA_GPU_MEMORY_LIMITS=2048 VRAMGUARD_REPORT=off -- $T/ctor
else
	bad "CUDA from constructors: $T/ctor not built (Makefile rules for tests/integration/ctor/)"
fi
for order in "$LIB $PWD/$T/libnext.so" "$PWD/$T/libnext.so $LIB"; do
	prog "a second preload library using dlsym(RTLD_NEXT): LD_PRELOAD='${order//$PWD\//}'" "LD_PRELOAD=${SP:-}$order" \
		NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT=off -- $T/lifecycle next
	expect_err "  libnext got libc's getppid" '^libnext: RTLD_NEXT ok$'
done
if ls "$RL"/*/*.vgtmp.* >/dev/null 2>&1; then bad "reliability: temporary report files were left behind"; else
	ok "reliability: no temporary report files left behind"; fi
done_testing

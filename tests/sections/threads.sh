#!/usr/bin/env bash
# Section threads: fork, 8 threads racing for a quota, 10 000 short-lived threads, two copies of the library in one
# process.
# Needs: make test-bins (direct, dl_copy).
source tests/lib/section.sh

echo "== fork, threads, second copy"
# $FORKENV, $COPYENV: what the sanitizers need for these (tests/lib/section.sh says why).
prog "fork: child starts with empty tables" $PRE $FORKENV NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FORK_OK=1 -- $D fork
prog "8 threads racing alloc/free against 1 GiB" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 -- $D stress
# Threads that come and go leave nothing behind: credit held by exited threads is neither usage nor lost quota.
for count in device allocations; do
	prog "10 000 short-lived threads allocate and free ($count counting): usage back to exactly zero" $PRE \
		NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_COUNT=$count -- $D threadchurn
done
mkdir -p "$W/copy" && cp "$LIB" "$W/copy/libvramguard.so"
prog "two copies preloaded: the quota holds exactly once" "LD_PRELOAD=$SP$LIB $W/copy/libvramguard.so" \
	$COPYENV NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D quota
prog "a second copy dlopened late stays passive" $PRE $COPYENV NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_LOG=debug \
	-- $T/dl_copy "$W/copy/libvramguard.so"
expect_err "the second copy says it is passive" 'another copy of vramguard is loaded first'

done_testing

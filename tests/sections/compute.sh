#!/usr/bin/env bash
# Section compute: the compute share (docs/compute.md) against the test double's simulated GPU, where a kernel keeps
# the device busy for gridDimX microseconds (tests/integration/launcher.c). What is judged does not depend on the
# machine's speed: a lower bound on how long capped work takes (a slower machine only takes longer), which launches
# wait and which never do (the report's counters), what is charged against what ran, and that nothing hangs. The
# bucket's arithmetic has its own unit test on a simulated clock (tests/unit/test_throttle.c). Needs: make test-bins
# (launcher).
source tests/lib/section.sh
source tests/lib/compute.sh

echo "== no compute limit: the launch hooks pass straight through, nothing is measured"
crun none "" kernels 2000 100 10
judge "  no limit in the report, no GPU time measured, no launch waited" none \
	'd["compute_limit_permille"] is None and d["compute_limit_source"] is None and d["gpu_time_ns"] == 0 and d["compute_waits"] == 0'

echo "== a 25 % share: 200 ms of kernels (2 ms each, synchronized every 10) take at least 520 ms"
# The share's bound: (work - the bucket's 50 ms of savings - the 20 ms queued before the debt shows) / 25 %.
crun k25 25% kernels 2000 100 10
judge "  at least (200 - 70) ms / 0.25 of wall time; the limit and its variable in the report" k25 \
	'wall_us >= 520000 and d["compute_limit_permille"] == 250 and d["compute_limit_source"] == "VRAMGUARD_COMPUTE_LIMIT"'
# "At least the kernels' time" holds because a busy period is counted from just before the driver's call. (It was
# counted from the hook's return at first, at the idle rate in between: under TSan, slow hooks, 199.1 ms of 200.)
judge "  launches waited, and at least the kernels' 200 ms was charged" k25 \
	'd["compute_waits"] > 0 and d["gpu_time_ns"] >= gpu_us * 1000'
crun ex25 25% ex 2000 100 10
judge "  cuLaunchKernelEx on a stream of its own, cuStreamSynchronize: held the same" ex25 \
	'wall_us >= 520000 and d["compute_waits"] > 0 and d["gpu_time_ns"] >= gpu_us * 1000'
crun graph25 25% graph 10 2
judge "  cuGraphLaunch (10 graphs of 20 ms, synchronized every 2: 40 ms queued): at least (200 - 90) ms / 0.25" graph25 \
	'wall_us >= 440000 and d["compute_waits"] > 0 and d["gpu_time_ns"] >= gpu_us * 1000'

echo "== what never waits"
crun k100 100% kernels 2000 100 10
judge "  a 100 % share measures (at least the kernels' time) and never holds a launch" k100 \
	'd["compute_limit_permille"] == 1000 and d["compute_waits"] == 0 and d["gpu_time_ns"] >= gpu_us * 1000'
crun thr100 100% threads 200 250 25 4
judge "  4 threads at once at 100 % (2 on a stream they share, 2 on the legacy stream): every kernel's time measured" \
	thr100 'd["compute_waits"] == 0 and d["gpu_time_ns"] >= gpu_us * 1000'
crun nccl 10% kernels 2000 100 10 ncclDevKernel_AllReduce_Sum_f32_RING_LL
# Nor is their time charged: a collective's kernel spins until every rank has launched its part, so its time includes
# the other ranks' waits for their shares (charged, DDP on two H200s at 50 % ran at 6 steps/s against 366). Nor are
# the pauses before them (a synchronization's return to the next launch, under 1 ms, which a launch-bound process's
# own kernels are charged for): under TSan those of the 10 bursts came to 14.6 ms, 7 % of the kernels' time.
judge "  NCCL's kernels at a 10 % share: none waits (a rank held back would hold its peers), their time is not charged" \
	nccl 'd["compute_waits"] == 0 and d["gpu_time_ns"] < gpu_us * 1000 * 0.05'
crun ncclcxx 10% kernels 2000 100 10 _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE
judge "  ... named as the driver names them (cuFuncGetName: NCCL's kernels are C++ functions, their symbols mangled)" \
	ncclcxx 'd["compute_waits"] == 0 and d["gpu_time_ns"] < gpu_us * 1000 * 0.05'
crun ncclpause 10% kernels 2000 100 1 ncclDevKernel_AllReduce_Sum_f32_RING_LL 900
judge "  ... each synchronized, 0.9 ms of the CPU's work before the next: none of those pauses charged either" \
	ncclpause 'd["compute_waits"] == 0 and d["gpu_time_ns"] < gpu_us * 1000 * 0.05'
crun capture 10% capture 10000 100
judge "  100 launches of 10 ms into a stream capture at 10 %: nothing runs, nothing waits, nothing is charged" capture \
	'd["compute_waits"] == 0 and d["gpu_time_ns"] == 0'

echo "== a launch-bound loop (5 us kernels, 20 us of CPU work before each launch) at 50 %"
# While a launch waits, the stream it was launched on must be seen idle as soon as it is (its event is recorded
# behind its last launches when the wait begins): the time charged is then at most what the loop ran, plus one
# polling period of lateness per wait. Before that was fixed, each wait was charged about 1 ms more (the polling
# thread's VG_COMPUTE_GAP_NS before it records the event itself): 0.75 s charged for 0.52 s run in this loop.
crun bound50 50% kernels 5 20000 40 - 20
judge "  charged no more than the loop ran (wall - waited) + 0.5 ms a wait" bound50 \
	'd["compute_waits"] > 0 and d["gpu_time_ns"] <= wall_us * 1000 - d["compute_waited_ns"] + d["compute_waits"] * 500000'

echo "== a launch that waits while another stream has launches after its last event (3 kernels there, 1 here, at 10 %)"
# The other stream's event is recorded when the wait begins, so that it is seen idle when it is. Before, it stayed
# busy (charged) until the polling thread recorded it 1 ms after its last launch: 85.6 ms charged where the loop ran
# 55.5 ms (the bound below: 70 ms), and the loop ran at half its share. (2000 rounds then; 6000 since the bucket
# saves 50 ms, so that the loop runs past its savings and waits.)
crun two10 10% two 5 6000 20 20
judge "  charged no more than the loop ran (wall - waited) + 0.5 ms a wait" two10 \
	'd["compute_waits"] > 0 and d["gpu_time_ns"] <= wall_us * 1000 - d["compute_waited_ns"] + d["compute_waits"] * 500000'

echo "== where it shows: the exporter and top, while a capped process runs"
# The process publishes its figures into its region slot once a second (its compute thread): wait for them (at most
# 5 s) while it runs its 1.2 s of kernels at 25 % (about 4.6 s).
env $FAKEENV $PRE VRAMGUARD_COMPUTE_LIMIT=25% VRAMGUARD_REPORT=off "$LN" kernels 2000 600 10 >/dev/null 2>&1 &
LNPID=$!
exported=
for _ in $(seq 50); do
	exported=$($VG exporter --once 2>/dev/null | grep -E "^vramguard_process_(compute_limit_ratio|gpu_time_seconds_total)\{pid=\"$LNPID\"")
	[ "$(grep -c . <<<"$exported")" = 2 ] && break
	sleep 0.1
done
topout=$($VG top --once 2>/dev/null)
if grep -q "^vramguard_process_compute_limit_ratio{pid=\"$LNPID\".*gpu=\"0\".*} 0\.250\$" <<<"$exported" &&
	grep -Eq "^vramguard_process_gpu_time_seconds_total\{pid=\"$LNPID\".*\} [0-9]+\.[0-9]{9}\$" <<<"$exported"; then
	ok "  the exporter: vramguard_process_compute_limit_ratio 0.250 and vramguard_process_gpu_time_seconds_total"
else bad "  the exporter shows the compute share's two metrics" "$exported"; fi
if grep -Eq "^$LNPID +.* 25% \(used [0-9]+\.[0-9]%\)\$" <<<"$topout" && grep -q ' COMPUTE$' <<<"$topout"; then
	ok "  top: a COMPUTE column, '25% (used N%)'"
else bad "  top shows the process's compute share" "$topout"; fi
wait "$LNPID"
topout=$($VG top --once 2>/dev/null)
if ! grep -q 'COMPUTE' <<<"$topout"; then ok "  top without a capped process: no COMPUTE column (the table as before)"
else bad "  top without a capped process has no COMPUTE column" "$topout"; fi

echo "== two users on one GPU: they meet in its activity file (VRAMGUARD_SHM_DIR/vramguard-gpu.UUID)"
# Containers of different users share a GPU: each process must count the other while both have work, or both are
# charged for each other's time and fall below their shares. Observable from outside: a process measured at 100 %
# (never held) running alone is charged at least its kernels' time; two running at once, each charged half while
# both are busy (docs/compute.md), are each charged well under it. Run as root and as nobody, in both orders of who
# makes the file (protected_regular forbids O_CREAT on another user's file in a sticky directory, root included: the
# second process must open it without). The programs are copied where nobody can read them.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	UD=$(mktemp -d /tmp/vg-compute-users.XXXXXX)
	chmod 755 "$UD"
	cp "$LN" "$T/libcuda.so.1" "$LIB" "$UD/" && chmod 755 "$UD"/*
	mkdir -m 1777 "$UD/shm" "$UD/rep"
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# urun TAG AS...: the copied launcher, 300 kernels of 2 ms at 100 %; its report and output in $UD/rep/TAG.json, .out
	urun() {
		local tag=$1
		shift
		(cd "$UD" && "$@" env LD_LIBRARY_PATH="$UD" LD_PRELOAD="$SP$UD/libvramguard.so" VRAMGUARD_SHM_DIR="$UD/shm" \
			VRAMGUARD_COMPUTE_LIMIT=100% VRAMGUARD_REPORT_FORMAT=json VRAMGUARD_REPORT="$UD/rep/$tag.json" \
			./launcher kernels 2000 300 10 >"$UD/rep/$tag.out" 2>&1)
	}
	# ucheck NAME TAG MAX-RATIO MIN-RATIO: gpu_time_ns / the kernels' time of TAG within [MIN, MAX]
	ucheck() {
		local r
		r=$(python3 -c '
import json, re, sys
d = next(x for x in json.load(open(sys.argv[1]))["devices"] if x["ordinal"] == 0)
us = float(re.search(r"gpu_us ([0-9.]+)", open(sys.argv[2]).read()).group(1))
print("%.3f" % (d["gpu_time_ns"] / (us * 1000)))' "$UD/rep/$2.json" "$UD/rep/$2.out" 2>&1)
		if python3 -c 'import sys; r = float(sys.argv[1]); sys.exit(not (float(sys.argv[3]) <= r <= float(sys.argv[2])))' \
			"$r" "$3" "$4" 2>/dev/null; then ok "$1 (charged $r of its kernels' time; bounds $4..$3)"
		else bad "$1" "charged $r of its kernels' time, expected $4..$3; $(tail -c 300 "$UD/rep/$2.out")"; fi
	}
	urun alone
	ucheck "  alone: charged at least its kernels' time" alone 100 1
	for first in root nobody; do
		rm -f "$UD"/shm/vramguard-gpu.*
		# The second starts once the first has made the file (at its first launch), not after a fixed 50 ms: under
		# TSan nobody's process, slower to start, was once beaten to it by root's, and the file was root's.
		if [ $first = root ]; then urun "r-$first" & P1=$!; else urun "n-$first" "${NOBODY[@]}" & P1=$!; fi
		for _ in $(seq 400); do
			compgen -G "$UD/shm/vramguard-gpu.*" >/dev/null && break
			kill -0 "$P1" 2>/dev/null || break
			sleep 0.05
		done
		if [ $first = root ]; then urun "n-$first" "${NOBODY[@]}" & P2=$!; else urun "r-$first" & P2=$!; fi
		wait "$P1" "$P2"
		f=$(ls "$UD"/shm/vramguard-gpu.* 2>/dev/null | head -n 1)
		owner=$([ $first = root ] && echo root || echo nobody)
		if [ -n "$f" ] && [ "$(stat -c '%a %U' "$f")" = "666 $owner" ]; then
			ok "  $first first: the activity file is $owner's, mode 666 (every user's processes meet there)"
		else bad "  $first first: the activity file is $owner's, mode 666" "$(ls -l "$UD"/shm)"; fi
		# Both run 600 ms of kernels at once, the second started as the first began: each is charged half of most of
		# it.
		ucheck "  $first first: root's process counted nobody's" "r-$first" 0.75 0.4
		ucheck "  $first first: nobody's process counted root's" "n-$first" 0.75 0.4
	done
	rm -rf "$UD"
else
	skip "two users on one GPU's activity file" "needs root and setpriv"
fi

echo "== fork, bad values"
crun fork 25% fork 1000 20
cli "  an invalid VRAMGUARD_COMPUTE_LIMIT fails closed, as an invalid quota does" 1 '' \
	$FAKEENV $PRE VRAMGUARD_COMPUTE_LIMIT=0% -- "$LN" kernels 10 1 1
expect_err "  one line names the variable and the value" "^vramguard: error: invalid VRAMGUARD_COMPUTE_LIMIT '0%'"

done_testing

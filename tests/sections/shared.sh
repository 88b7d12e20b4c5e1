#!/usr/bin/env bash
# Section shared: shared regions and control segments with real processes under the preload: processes of
# tests/integration/shared_alloc.c (driven one command at a time through a FIFO each, so that they take turns
# deterministically: tests/integration/shp_lib.sh) race for a shared budget, are killed, exec, fork, have their
# limits changed with `vramguard limit set`, and meet corrupt or hostile region files; `vramguard top --json` is
# checked against what they hold. Everything in a private VRAMGUARD_SHM_DIR.
# Needs: make test-bins (shared_alloc, vramguard).
source tests/lib/section.sh

source tests/integration/shp_lib.sh
# In memory, where regions belong (elsewhere the library warns that the file system is not memory-backed).
SHD=$(shp_dir shp)

# Six processes race for a 100 MiB budget, allocating random 1-7 MiB and never freeing.
RACE=(r1 r2 r3 r4 r5 r6)
for n in "${RACE[@]}"; do
	shp_spawn $n NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=race VRAMGUARD_SHARED_LIMITS=100M
	shp_post $n init
done
inits=0
for n in "${RACE[@]}"; do shp_wait $n && [ "$SHP_R" = "= init 0" ] && inits=$((inits + 1)); done
declare -A DENIED       # the refusals each was told of, race and churn
[ "$inits" -eq 6 ] && ok "race: 6 processes joined one region" || bad "race: $inits of 6 processes joined"
seed=1
for n in "${RACE[@]}"; do shp_post $n race 25 $((seed++)) "$SHD/race.go"; done
touch "$SHD/race.go"
sum=0
fine=0
for n in "${RACE[@]}"; do
	shp_wait $n
	read -r _ _ got _ _ _ den _ other _ drv <<<"$SHP_R"
	sum=$((sum + ${got:-0}))
	[ "${got:-x}" = "${drv:-y}" ] && [ "${other:-1}" = 0 ] && [ "${den:-0}" = 25 ] && fine=$((fine + 1))
	DENIED[$n]=${den:-0}
	echo "== race $n: $SHP_R" >>"$LOG"
done
[ "$fine" -eq 6 ] && ok "race: each got 25 denials, no other error, the driver holds what it got" ||
	bad "race: $fine of 6 answers as expected" "$(for n in "${RACE[@]}"; do tail -n 1 "$SHD/$n.out"; done)"
if [ "$sum" -le $((100 * MIB)) ] && [ "$sum" -ge $((93 * MIB)) ]; then
	ok "race: together they hold $((sum / 1024)) KiB: within the 100 MiB budget, and it is used (>= 93 MiB)"
else
	bad "race: together they hold $sum bytes, want 93..100 MiB"
fi
msg=0
for n in "${RACE[@]}"; do
	[ "$(shp_lines $n "^vramguard: denied [0-9.]+ MiB on GPU 0 \\(cuMemAlloc_v2\\): .* budget of shared region 'race' in use")" -ge 1 ] &&
		msg=$((msg + 1))
done
[ "$msg" -eq 6 ] && ok "race: every process was told the shared region's budget denied it" ||
	bad "race: $msg of 6 printed a shared-region denial" "$(head -2 "$SHD/r1.err")"
shp_top
pids=$(for n in "${RACE[@]}"; do printf '%s,' "${SHP_PID[$n]}"; done)
shp_json "top --json during the race: 6 members whose used bytes add up to the region's" members race "$pids" "$sum"
# Then they churn: free a random allocation or allocate 1..7 MiB, 3000 times each, all at once, and free down to
# 10 MiB when done (a loaded machine may run them in turn: one whose churn starts after the others' ended must still
# find room, or it makes no allocation at all, as seen). top, looking meanwhile, never sees more than the budget in
# use; afterwards the region's count is exactly what they hold.
# That they contend does not rest on the scheduler. Each first takes a 4 MiB stake that its churn never frees; all six
# hold theirs before any churn starts (the script waits for each answer) and until every churn has answered, so each
# churn runs against the others' 20 MiB at least, however the six are scheduled: a member never holds more than
# 100 - 20 MiB, and every refusal it gets is for memory the others hold. And each gets one: until its first refusal a
# member's churn is what it would be alone, and alone each seed's churn takes its holdings plus a request past
# 100 - 6 x 4 = 76 MiB (checked first, below), where the others' 20 MiB and its stake leave no room for it.
STAKE=4
seed0=$seed
shp_spawn solo NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=solo VRAMGUARD_SHARED_LIMITS=$((100 - 6 * STAKE))M
shp_send solo init
touch "$SHD/solo.go"
fine=0
for ((s = seed0; s < seed0 + 6; s++)); do
	shp_send solo churn 3000 $s "$SHD/solo.go" 0
	read -r _ _ _ _ _ _ den _ other _ <<<"$SHP_R"
	[ "${den:-0}" -ge 1 ] && [ "${other:-1}" = 0 ] && fine=$((fine + 1))
	echo "== churn alone, seed $s: $SHP_R" >>"$LOG"
done
shp_end solo
[ "$fine" -eq 6 ] && ok "churn: alone, each seed's churn goes past $((100 - 6 * STAKE)) MiB" ||
	bad "churn: alone, $fine of 6 seeds' churns were refused in $((100 - 6 * STAKE)) MiB" \
		"$(grep '^== churn alone' "$LOG")"
for n in "${RACE[@]}"; do shp_send $n "freeto 0"; done
fine=0
for n in "${RACE[@]}"; do
	shp_send $n "alloc $STAKE" && [ "$SHP_R" = "= alloc 0 held $((STAKE * MIB))" ] && fine=$((fine + 1))
done
[ "$fine" -eq 6 ] && ok "churn: each of the 6 holds a $STAKE MiB stake before any churn starts" ||
	bad "churn: $fine of 6 took their $STAKE MiB stake"
for n in "${RACE[@]}"; do shp_post $n churn 3000 $((seed++)) "$SHD/churn.go" 10; done
touch "$SHD/churn.go"
for i in 1 2 3; do
	shp_top
	shp_json "churn: top, looking meanwhile ($i), never sees more than the budget in use" range race used_bytes 0 \
		$((100 * MIB))
done
sum=0
fine=0
refused=0
nals=0
dens=0
for n in "${RACE[@]}"; do
	shp_wait $n
	read -r _ _ got _ nal _ den _ other _ drv <<<"$SHP_R"
	sum=$((sum + ${got:-0}))
	nals=$((nals + ${nal:-0}))
	dens=$((dens + ${den:-0}))
	DENIED[$n]=$((DENIED[$n] + ${den:-0}))
	# No assertion on how many allocations each got: a shared budget is first come, first served (a member whose
	# churn runs while the others hold the budget may be refused almost every time), not a fair share.
	[ "${got:-x}" = "${drv:-y}" ] && [ "${other:-1}" = 0 ] && [ -n "$nal" ] && fine=$((fine + 1))
	[ "${den:-0}" -ge 1 ] && refused=$((refused + 1))
	echo "== churn $n: $SHP_R" >>"$LOG"
done
[ "$fine" -eq 6 ] && ok "churn: 6 x 3000 operations, no error but denials, the driver holds what each kept" ||
	bad "churn: $fine of 6 answers as expected" "$(for n in "${RACE[@]}"; do tail -n 1 "$SHD/$n.out"; done)"
[ "$refused" -eq 6 ] && ok "churn: each was refused for memory the others held (they hold $((5 * STAKE)) MiB at least)" ||
	bad "churn: $refused of 6 were refused for memory the others held" \
		"$(for n in "${RACE[@]}"; do tail -n 1 "$SHD/$n.out"; done)"
# Successes and refusals in all (refusals follow from the check above; alone, each seed's churn makes some 1450
# allocations).
[ "$nals" -gt 100 ] && [ "$dens" -gt 0 ] && ok "churn: they contended: $nals allocations and $dens refusals in all" ||
	bad "churn: no contention ($nals allocations, $dens refusals)"
shp_top
shp_json "churn: the region counts exactly what the members hold ($((sum / 1024)) KiB)" members race "$pids" "$sum"
told=$(for n in "${RACE[@]}"; do printf '%s:%s,' "${SHP_PID[$n]}" "${DENIED[$n]}"; done)
shp_json "race and churn: each member's refusals in top are the ones it was told of, the region's are all of them" \
	denied race "$told"
shp_json "churn: the region's peak is within the budget (and was reached)" range race peak_bytes $((93 * MIB)) \
	$((100 * MIB))
m=$(stat -c %a "$SHD/vramguard.race")
[ "$m" = 600 ] && ok "the region file was created with mode 0600" || bad "the region file has mode $m"
shp_end "${RACE[@]}"
shp_top
shp_json "after a normal exit every member has left (none reclaimed)" noregion race reclaimed=0
[ ! -e "$SHD/vramguard.race" ] && ok "  and the last one to leave removed the region's file" ||
	bad "  the region's file is left after its last member exited" "$(ls -l "$SHD")"

# SIGKILL reclaim. A holds 60 of 100 MiB; B is denied 60, A is killed, B gets it on its next try. A is the
# child of a process that does not wait for it: it stays a zombie, which counts as dead.
SHP_VIA_SLEEP=1 shp_spawn ka VRAMGUARD_SHARED=kill VRAMGUARD_SHARED_LIMITS=100M
shp_spawn kb VRAMGUARD_SHARED=kill VRAMGUARD_SHARED_LIMITS=100M
shp_send ka init
shp_expect "kill: A takes 60 of 100 MiB" ka "alloc 60" '^= alloc 0 '
shp_send kb init
shp_expect "kill: B is denied 60 MiB" kb "alloc 60" '^= alloc 2 held 0$'
shp_top
shp_json "  top lists both, 60 MiB in use" members kill "${SHP_PID[ka]},${SHP_PID[kb]}" $((60 * MIB))
kill -9 "${SHP_PID[ka]}"
# Its main thread turns zombie before its other threads (the library's own, e.g. vramguard-gpu) have exited, and
# until the last one has, its files are open and its liveness lock held: B would rightly count it alive (under
# .ci/run's ASan pass, once: B was denied again). Wait for the last thread too.
a_gone() { [ "$(ls "/proc/${SHP_PID[ka]}/task" 2>/dev/null | wc -l)" -le 1 ]; }
if wait_for "/proc/${SHP_PID[ka]}/status" '^State:.Z' && for _ in $(seq 1500); do a_gone && break; sleep 0.02; done &&
	a_gone; then ok "kill: A is a zombie, its threads gone"
else bad "kill: A is not a zombie with its threads gone" "$(grep -E '^(State|Threads)' "/proc/${SHP_PID[ka]}/status" 2>&1)"; fi
shp_expect "kill: B gets 60 MiB on its next try, without a restart" kb "alloc 60" '^= alloc 0 held 62914560$'
shp_top
shp_json "  top no longer lists A; B holds the 60 MiB" members kill "${SHP_PID[kb]}" $((60 * MIB))
shp_json "  and A is gone from the process list" absent "${SHP_PID[ka]}"
shp_kill ka
# cuMemGetInfo_v2 reclaims at most a second late: C holds 30 MiB and is killed; B's free memory comes back.
shp_spawn kc VRAMGUARD_SHARED=kill
shp_send kc init
shp_send kc "alloc 30"
shp_expect "kill: B sees 10 MiB free while C holds 30 MiB" kb info '^= info 0 10485760 104857600$'
shp_kill kc
t0=$(date +%s%N)
shp_until kb info "= info 0 41943040 104857600"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 0 ] && ok "  after C is killed, B's cuMemGetInfo_v2 gets its 30 MiB back (${ms} ms)" ||
	bad "  B's cuMemGetInfo_v2 after C was killed: '$SHP_R' after $ms ms"
shp_end kb

# exec: the old image's share goes with it (exec dropped its liveness lock), before the new image uses CUDA; the new
# image joins again as one slot.
for mode in shared control; do
	if [ $mode = shared ]; then shp_spawn ex VRAMGUARD_SHARED=exec VRAMGUARD_SHARED_LIMITS=100M
	else shp_spawn ex NVIDIA_GPU_MEMORY_LIMITS=100M; fi
	shp_send ex init
	shp_send ex "alloc 40"
	shp_expect "exec ($mode): the new image answers" ex exec '^= exec$'
	shp_top
	shp_json "  before it uses CUDA again, top no longer counts the old image" absent "${SHP_PID[ex]}"
	if [ $mode = shared ]; then
		shp_json "  and its region, which had no other member, is gone" noregion exec
	else
		n=$(segs "${SHP_PID[ex]}")
		[ "$n" -eq 0 ] && ok "  and its control segment is gone" || bad "  $n control segments left"
	fi
	shp_expect "  it initialises CUDA" ex init '^= init 0$'
	shp_top
	if [ $mode = shared ]; then
		shp_json "  top: one slot for the process, the old image's 40 MiB released" members exec "${SHP_PID[ex]}" 0
	else
		shp_json "  top: one slot for the process, the old image's 40 MiB released" proc "${SHP_PID[ex]}" 0
		n=$(segs "${SHP_PID[ex]}")
		[ "$n" -eq 1 ] && ok "  one control segment" || bad "  $n control segments for the process"
	fi
	shp_expect "  the whole 100 MiB can be allocated again" ex "alloc 100" '^= alloc 0 held 104857600$'
	shp_end ex
	rm -f "$SHD/ex.in"
done

# Live limits. A process's own quota through its control segment: raise, then lower below what it uses.
shp_spawn lv NVIDIA_GPU_MEMORY_LIMITS=64M
shp_send lv init
shp_expect "limit --pid: fills its 64 MiB quota" lv "fill 8" '^= fill 2 held 67108864$'
shp_limit 128M --pid "${SHP_PID[lv]}" && ok "  limit set 128M --pid" || bad "  limit set 128M --pid failed"
shp_expect "  fills on to 128 MiB" lv "fill 8" '^= fill 2 held 134217728$'
shp_expect "  cuMemGetInfo_v2: total 128 MiB, free 0" lv info '^= info 0 0 134217728$'
n=$(shp_lines lv 'quota changed from 64\.00 MiB to 128\.00 MiB by `vramguard limit set`')
[ "$n" -eq 1 ] && [ "$(shp_lines lv 'quota changed')" -eq 1 ] && ok "  one 'quota changed' line" ||
	bad "  $n 'quota changed' lines" "$(cat "$SHD/lv.err")"
shp_limit 32M --pid "${SHP_PID[lv]}" && ok "  limit set 32M --pid (below its 128 MiB)" || bad "  limit set 32M failed"
shp_expect "  the next allocation is denied" lv "alloc 1" '^= alloc 2 held 134217728$'
shp_expect "  nothing was freed" lv used '^= used 134217728 134217728$'
shp_top
shp_json "  top shows the 128 MiB still in use" proc "${SHP_PID[lv]}" $((128 * MIB))
[ "$(shp_lines lv 'quota changed from 128\.00 MiB to 32\.00 MiB .*new allocations are refused until usage drops')" -eq 1 ] &&
	ok "  one line says allocations are refused until usage drops" || bad "  the lowering line" "$(cat "$SHD/lv.err")"
shp_send lv "freeto 24"
shp_expect "  below 32 MiB again: allocations work" lv "alloc 8" '^= alloc 0 held 33554432$'
shp_expect "  up to the new quota only" lv "alloc 1" '^= alloc 2 held 33554432$'
shp_expect "  cuMemGetInfo_v2 total 32 MiB" lv info '^= info 0 0 33554432$'
[ "$(shp_lines lv 'quota changed')" -eq 2 ] && ok "  two changes, two lines" || bad "  $(shp_lines lv 'quota changed') lines"
# A request this library cannot parse (written unchecked, as a newer command's syntax would be): ignored, one line
# that says what was ignored and why.
"$PWD/$T/region_tool" request "$(ls "$SHD"/vramguard.proc."${SHP_PID[lv]}".*)" "${SHP_PID[lv]}" 4XB 2>>"$LOG"
shp_expect "  a request it cannot parse is ignored" lv "alloc 1" '^= alloc 2 held 33554432$'
n=$(shp_lines lv '^vramguard: warning: ignored a limit sent by `vramguard limit set`: invalid limit .4XB.: unknown unit .XB. \(expected e\.g\. ')
[ "$n" -eq 1 ] && [ "$(shp_lines lv 'invalid the ')" -eq 0 ] && ok "  one warning naming the request and the reason" ||
	bad "  $n warnings" "$(tail -n 2 "$SHD/lv.err")"
shp_end lv

# The same for a shared region's budget: two members, `limit set --shared`.
shp_spawn m1 NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=live VRAMGUARD_SHARED_LIMITS=64M
shp_spawn m2 NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=live VRAMGUARD_SHARED_LIMITS=64M
shp_send m1 init
shp_send m2 init
shp_send m1 "alloc 32"
shp_send m2 "alloc 32"
shp_expect "limit --shared: the 64 MiB budget is spent" m1 "alloc 8" '^= alloc 2 held 33554432$'
shp_limit 128M --shared live && ok "  limit set 128M --shared live" || bad "  limit set --shared failed"
shp_expect "  member 1 gets 32 MiB more" m1 "alloc 32" '^= alloc 0 held 67108864$'
shp_expect "  member 2 too" m2 "alloc 32" '^= alloc 0 held 67108864$'
shp_expect "  then the 128 MiB are spent" m2 "alloc 1" '^= alloc 2 held 67108864$'
shp_expect "  cuMemGetInfo_v2: total 128 MiB, free 0" m1 info '^= info 0 0 134217728$'
for n in m1 m2; do
	[ "$(shp_lines $n "budget changed to '128M'")" -eq 1 ] && [ "$(shp_lines $n 'budget changed')" -eq 1 ] &&
		ok "  $n logged one 'budget changed' line" || bad "  $n: 'budget changed' lines" "$(cat "$SHD/$n.err")"
done
shp_limit 48M --shared live && ok "  limit set 48M --shared (below the 128 MiB in use)" || bad "  lowering failed"
shp_expect "  the next allocation is denied" m1 "alloc 1" '^= alloc 2 held 67108864$'
shp_send m1 "freeto 0"
shp_expect "  still over the budget after member 1 freed its 64 MiB: denied" m1 "alloc 1" '^= alloc 2 held 0$'
shp_expect "  member 2's memory was left alone" m2 used '^= used 67108864 67108864$'
shp_send m2 "freeto 32"
shp_expect "  under it again: member 1 gets the 16 MiB left" m1 "alloc 16" '^= alloc 0 held 16777216$'
shp_expect "  and no more" m1 "alloc 1" '^= alloc 2 held 16777216$'
shp_send m2 info
for n in m1 m2; do
	[ "$(shp_lines $n "budget changed to '48M'")" -eq 1 ] && [ "$(shp_lines $n 'budget changed')" -eq 2 ] &&
		ok "  $n logged one line per change" || bad "  $n: 'budget changed' lines" "$(cat "$SHD/$n.err")"
done
# --pid reaches a member of a shared region through its slot.
shp_limit 8M --pid "${SHP_PID[m1]}" && ok "  limit set 8M --pid on a member" || bad "  limit set --pid on a member failed"
shp_expect "  its own quota now denies it" m1 "alloc 1" '^= alloc 2 held 16777216$'
[ "$(shp_lines m1 'quota changed from 1\.00 GiB to 8\.00 MiB')" -eq 1 ] && ok "  one 'quota changed' line" ||
	bad "  the quota line" "$(cat "$SHD/m1.err")"
shp_end m1 m2

# NVIDIA_GPU_MEMORY_LIMITS alone is the container's budget: each member's own quota follows the region's.
shp_spawn f1 NVIDIA_GPU_MEMORY_LIMITS=64M VRAMGUARD_SHARED=follow
shp_send f1 init
shp_send f1 "alloc 64"
shp_expect "follow: 64 MiB of NVIDIA_GPU_MEMORY_LIMITS=64M are spent" f1 "alloc 1" '^= alloc 2 held 67108864$'
shp_limit 128M --shared follow && ok "  limit set 128M --shared follow" || bad "  limit set --shared follow failed"
shp_expect "  the member goes past its old 64 MiB quota" f1 "alloc 64" '^= alloc 0 held 134217728$'
shp_expect "  cuMemGetInfo_v2: total 128 MiB" f1 info '^= info 0 0 134217728$'
[ "$(shp_lines f1 "budget changed to '128M' .*; this process's quota follows it")" -eq 1 ] &&
	[ "$(shp_lines f1 'quota changed|budget changed')" -eq 1 ] && ok "  one line says so" ||
	bad "  the follow line" "$(cat "$SHD/f1.err")"
shp_send f1 "freeto 0"
# A member started after the change, with the same setting, follows the budget in force.
shp_spawn f2 NVIDIA_GPU_MEMORY_LIMITS=64M VRAMGUARD_SHARED=follow VRAMGUARD_LOG=info
shp_send f2 init
shp_expect "  a later member with the same setting takes 100 MiB" f2 "alloc 100" '^= alloc 0 held 104857600$'
[ "$(shp_lines f2 "has the budget '128M' in force .*this process's quota follows it")" -eq 1 ] &&
	[ "$(shp_lines f2 'warning')" -eq 0 ] && ok "  and says so in one line, no warning" ||
	bad "  the later member's lines" "$(cat "$SHD/f2.err")"
shp_send f2 "freeto 0"
# --pid gives a member a quota of its own: a later --shared change leaves it alone.
shp_limit 32M --pid "${SHP_PID[f1]}" && ok "  limit set 32M --pid on a follower" || bad "  limit set --pid failed"
shp_limit 256M --shared follow && ok "  limit set 256M --shared follow" || bad "  the second --shared failed"
shp_expect "  the member with its own 32 MiB stays there" f1 "alloc 33" '^= alloc 2 held 0$'
shp_expect "  the follower gets 200 MiB" f2 "alloc 200" '^= alloc 0 held 209715200$'
shp_end f1 f2
# With VRAMGUARD_SHARED_LIMITS the two are separate: the region's change leaves the own 64 MiB alone.
shp_spawn s1 NVIDIA_GPU_MEMORY_LIMITS=64M VRAMGUARD_SHARED=separate VRAMGUARD_SHARED_LIMITS=64M
shp_send s1 init
shp_limit 128M --shared separate && ok "separate: limit set 128M --shared" || bad "separate: limit set failed"
shp_expect "  the own 64 MiB quota still holds" s1 "alloc 65" '^= alloc 2 held 0$'
shp_expect "  cuMemGetInfo_v2: total 64 MiB" s1 info '^= info 0 67108864 67108864$'
shp_end s1

# A process joining with another budget is told, in one line; the region's budget applies.
shp_spawn mx VRAMGUARD_SHARED=mism VRAMGUARD_SHARED_LIMITS=100M
shp_spawn my VRAMGUARD_SHARED=mism VRAMGUARD_SHARED_LIMITS=200M
shp_send mx init
shp_send my init
[ "$(shp_lines my "^vramguard: warning: shared region 'mism' has the budget '100M' in force .*VRAMGUARD_SHARED_LIMITS says '200M': the region's budget applies")" -eq 1 ] &&
	[ "$(shp_lines my 'warning')" -eq 1 ] && ok "mismatch: one warning naming both budgets" ||
	bad "mismatch: the warning" "$(cat "$SHD/my.err")"
[ "$(shp_lines mx 'warning')" -eq 0 ] && ok "  none for the creator" || bad "  the creator warned" "$(cat "$SHD/mx.err")"
shp_expect "  cuMemGetInfo_v2 total is the region's 100 MiB" my info '^= info 0 104857600 104857600$'
shp_expect "  101 MiB are denied" my "alloc 101" '^= alloc 2 held 0$'
shp_expect "  100 MiB are not" my "alloc 100" '^= alloc 0 held 104857600$'
shp_end my
# Without VRAMGUARD_SHARED_LIMITS, the process's NVIDIA_GPU_MEMORY_LIMITS is its setting: named in the warning.
shp_spawn mz VRAMGUARD_SHARED=mism NVIDIA_GPU_MEMORY_LIMITS=2G
shp_send mz init
[ "$(shp_lines mz "budget '100M' in force .*NVIDIA_GPU_MEMORY_LIMITS says '2G'")" -eq 1 ] &&
	ok "  the warning names NVIDIA_GPU_MEMORY_LIMITS when that is where the setting came from" ||
	bad "  the warning without VRAMGUARD_SHARED_LIMITS" "$(cat "$SHD/mz.err")"
shp_end mz mx
# Lifecycle: the last member's exit removed the region, so the next job's budget is the one that applies (before,
# a later job with VRAMGUARD_SHARED_LIMITS=300M ran silently under the old 100M).
[ ! -e "$SHD/vramguard.mism" ] && ok "lifecycle: the region is removed when its last member exits" ||
	bad "lifecycle: the region's file is left after its last member exited"
shp_spawn n1 VRAMGUARD_SHARED=mism VRAMGUARD_SHARED_LIMITS=300M
shp_send n1 init
shp_expect "  the next job makes it again with its own 300M budget" n1 "alloc 250" '^= alloc 0 held 262144000$'
[ "$(shp_lines n1 'warning')" -eq 0 ] && ok "  and is told nothing about an old budget" || bad "  n1 warned" "$(cat "$SHD/n1.err")"
# Members killed with -9 never leave: the next one to join finds none alive and starts the region over.
shp_kill n1
[ -e "$SHD/vramguard.mism" ] && ok "  a member killed with -9 leaves the file behind" || bad "  the file vanished"
shp_spawn n2 VRAMGUARD_SHARED=mism VRAMGUARD_SHARED_LIMITS=40M VRAMGUARD_LOG=info
shp_send n2 init
shp_expect "  the next job starts it over with its own 40M budget" n2 "alloc 41" '^= alloc 2 held 0$'
shp_expect "  and all 40M of it are free" n2 "alloc 40" '^= alloc 0 held 41943040$'
[ "$(shp_lines n2 "shared region 'mism' .*every earlier member had exited; it starts over with this process's budget '40M'")" -eq 1 ] &&
	[ "$(shp_lines n2 'warning')" -eq 0 ] && ok "  one info line says it started over" || bad "  n2's lines" "$(cat "$SHD/n2.err")"
shp_end n2

# Region files that must be refused; the process fails closed (cuInit and cuMemAlloc_v2: NOT_PERMITTED, 800).
# The good one is persistent (`vramguard region create`): it outlives its member, whose budget it keeps.
env -u LD_PRELOAD "$VG" region create good --limit 100M --dir "$SHD" >>"$LOG" 2>&1 && ok "region create good --limit 100M" ||
	bad "region create good failed"
shp_spawn mk VRAMGUARD_SHARED=good VRAMGUARD_SHARED_LIMITS=50M
shp_send mk init
shp_expect "  a member of a persistent region gets its budget, not its own setting" mk "alloc 60" '^= alloc 0 '
[ "$(shp_lines mk "budget '100M' in force \(set by .vramguard region create.; 1 member, this one included\)")" -eq 1 ] &&
	ok "  one line says which budget applies and why" || bad "  the line about the budget" "$(cat "$SHD/mk.err")"
shp_end mk
[ -f "$SHD/vramguard.good" ] && ok "  the region outlives its last member" || bad "  the persistent region was removed"
for bad_kind in magic truncated size0 world symlink dangling dir fifo control; do
	f=$SHD/vramguard.$bad_kind
	case $bad_kind in
	magic) cp "$SHD/vramguard.good" "$f" && printf 'XXXXXXXX' | dd of="$f" conv=notrunc status=none
		shp_region_check "corrupt region (magic overwritten) refused, fail closed" $bad_kind 'bad magic' ;;
	truncated) cp "$SHD/vramguard.good" "$f" && truncate -s 4096 "$f"
		shp_region_check "truncated region refused, fail closed" $bad_kind 'size|too small' ;;
	size0) : >"$f" && chmod 600 "$f"
		shp_region_check "empty region file refused, fail closed" $bad_kind 'not a vramguard region|too small' ;;
	world) cp "$SHD/vramguard.good" "$f" && chmod 666 "$f"
		shp_region_check "world-writable region refused, fail closed" $bad_kind 'writable by every user' ;;
	symlink) ln -s "$SHD/vramguard.good" "$f"
		shp_region_check "a symlink at the region path refused, fail closed" $bad_kind 'symbolic link' ;;
	dangling) ln -s "$SHD/planted" "$f"
		shp_region_check "a dangling symlink refused" $bad_kind 'symbolic link'
		[ -e "$SHD/planted" ] && bad "  its target was created" || ok "  its target was not created" ;;
	dir) mkdir "$f"
		shp_region_check "a directory at the region path refused" $bad_kind 'not a regular file|Is a directory' ;;
	fifo) mkfifo "$f"
		shp_region_check "a FIFO at the region path refused, without hanging" $bad_kind 'not a regular file|cannot open' ;;
	control) shp_spawn cs
		shp_send cs init
		ln "$(ls "$SHD"/vramguard.proc."${SHP_PID[cs]}".*)" "$f"
		shp_region_check "a control segment named as a shared region refused" $bad_kind 'control segment'
		shp_end cs ;;
	esac
done
[ "$(cmp -s "$SHD/vramguard.good" "$SHD/vramguard.world"; echo $?)" = 0 ] && ok "  the world-writable file was not written" ||
	bad "  the world-writable region file was changed"

# Processes that see one GPU under different ordinals (CUDA_VISIBLE_DEVICES) share its budget.
shp_spawn vx FAKECUDA_DEVICES=2 FAKECUDA_UUID_BASE=0 VRAMGUARD_SHARED=cvd VRAMGUARD_SHARED_LIMITS=100M
shp_spawn vy FAKECUDA_DEVICES=2 FAKECUDA_UUID_BASE=1 VRAMGUARD_SHARED=cvd VRAMGUARD_SHARED_LIMITS=100M
shp_send vx init
shp_send vx "dev 1"
shp_send vy init
shp_send vy "dev 0"
shp_expect "visible devices: X takes 60 MiB on its GPU 1" vx "alloc 60" '^= alloc 0 '
shp_expect "  Y is denied 60 MiB on its GPU 0 (the same physical GPU)" vy "alloc 60" '^= alloc 2 held 0$'
shp_expect "  Y gets the 40 MiB left" vy "alloc 40" '^= alloc 0 held 41943040$'
shp_expect "  Y's cuMemGetInfo_v2: free 0 of 100 MiB" vy info '^= info 0 0 104857600$'
shp_send vy "dev 1"
shp_expect "  Y's GPU 1 is another physical GPU with its own budget" vy "alloc 60" '^= alloc 0 '
shp_top
shp_json "  top: 100 MiB on the shared GPU by 2 processes" gpus $G1 $((100 * MIB)) 2
shp_end vx vy

# Control segments: made at CUDA's first use, removed at exit; none with VRAMGUARD_CONTROL=off; a killed
# process's segment is removed by the next `vramguard top`.
shp_spawn c1
[ "$(segs "${SHP_PID[c1]}")" -eq 0 ] && ok "control: no segment before CUDA is used" || bad "control: a segment before cuInit"
shp_send c1 init
shp_send c1 "alloc 10"
[ "$(segs "${SHP_PID[c1]}")" -eq 1 ] && ok "  one segment vramguard.proc.PID.START while it runs" ||
	bad "  no control segment" "$(ls "$SHD")"
m=$(stat -c %a "$SHD"/vramguard.proc."${SHP_PID[c1]}".* 2>/dev/null)
[ "$m" = 600 ] && ok "  mode 0600" || bad "  mode '$m'"
c1=${SHP_PID[c1]}
shp_end c1
[ "$(segs "$c1")" -eq 0 ] && ok "  removed at a normal exit" || bad "  left after exit" "$(ls "$SHD")"
shp_spawn c2 VRAMGUARD_CONTROL=off NVIDIA_GPU_MEMORY_LIMITS=64M
shp_send c2 init
shp_expect "VRAMGUARD_CONTROL=off: the quota holds" c2 "alloc 65" '^= alloc 2 held 0$'
[ "$(segs "${SHP_PID[c2]}")" -eq 0 ] && ok "  no segment" || bad "  a segment with VRAMGUARD_CONTROL=off"
shp_top
shp_json "  top does not list it" absent "${SHP_PID[c2]}"
shp_end c2
shp_spawn c3
shp_send c3 init
c3=${SHP_PID[c3]}
shp_kill c3
[ "$(segs "$c3")" -eq 1 ] && ok "SIGKILL: the segment is left" || bad "SIGKILL: $(segs "$c3") segments left"
env -u LD_PRELOAD VRAMGUARD_SHM_DIR="$SHD" "$VG" top --once >>"$LOG" 2>&1
[ "$(segs "$c3")" -eq 0 ] && ok "  the next vramguard top --once removes it" || bad "  still there after top"

# cuMemGetInfo_v2 in a shared region: the tighter of own quota and budget, minus what the region has in use.
shp_spawn g1 NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=info VRAMGUARD_SHARED_LIMITS=100M
shp_spawn g2 NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=info
shp_spawn g3 NVIDIA_GPU_MEMORY_LIMITS=50M VRAMGUARD_SHARED=info
for n in g1 g2 g3; do shp_send $n init; done
shp_expect "meminfo: total is the budget (tighter than the 1 GiB quota), all free" g1 info '^= info 0 104857600 104857600$'
shp_send g2 "alloc 30"
shp_expect "  another member holds 30 MiB: free 70 MiB" g1 info '^= info 0 73400320 104857600$'
shp_send g1 "alloc 40"
shp_expect "  after its own 40 MiB: free 30 MiB" g1 info '^= info 0 31457280 104857600$'
shp_expect "  a member with a 50 MiB quota: total 50 MiB, free the region's 30 MiB" g3 info '^= info 0 31457280 52428800$'
shp_expect "  it is denied 31 MiB" g3 "alloc 31" '^= alloc 2 held 0$'
shp_expect "  and given 30 MiB" g3 "alloc 30" '^= alloc 0 held 31457280$'
shp_send g2 "freeto 0"
shp_send g1 "freeto 0"
shp_expect "  its own quota is the tighter one now: free 20 of 50 MiB" g3 info '^= info 0 20971520 52428800$'
shp_end g1 g2 g3

# A fork child (without exec) neither charges nor leaves its parent's slot.
shp_spawn fp $SHP_FE FAKECUDA_FORK_OK=1 NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_SHARED=fork VRAMGUARD_SHARED_LIMITS=100M
shp_send fp init
shp_send fp "alloc 20"
shp_send fp fork 90 "$SHD/fork.release"
child=${SHP_R#= fork }
wait_for "$SHD/fp.out" '^child '
grep -q '^child 0$' "$SHD/fp.out" && ok "fork: the child got 90 MiB (FAKECUDA_FORK_OK=1)" ||
	bad "fork: the child's allocation" "$(grep '^child' "$SHD/fp.out")"
shp_top
shp_json "fork: while the child holds 90 MiB, the region holds the parent's 20 MiB only" members fork "${SHP_PID[fp]}" $((20 * MIB))
shp_json "  the child is not listed" absent "$child"
touch "$SHD/fork.release"
shp_expect "  the child exited normally" fp reap '^= reap 0$'
shp_top
shp_json "  the parent is still listed with its 20 MiB" members fork "${SHP_PID[fp]}" $((20 * MIB))
shp_expect "  and can use the rest of the budget" fp "alloc 80" '^= alloc 0 held 104857600$'
shp_end fp
rm -f "$SHD/fork.release"
shp_spawn fq $SHP_FE NVIDIA_GPU_MEMORY_LIMITS=1G
shp_send fq init
shp_send fq "alloc 20"
shp_send fq fork 10 "$SHD/fork.release"
touch "$SHD/fork.release"
shp_expect "fork without FAKECUDA_FORK_OK: the child gets CUDA_ERROR_NOT_INITIALIZED (3), like the real driver" fq reap '^= reap 3$'
[ "$(segs "${SHP_PID[fq]}")" -eq 1 ] && ok "  the child's exit left the parent's control segment" ||
	bad "  the parent's control segment is gone"
shp_top
shp_json "  the parent is listed with its 20 MiB" proc "${SHP_PID[fq]}" $((20 * MIB))
shp_end fq
rm -f "$SHD/fork.release"

# exit() while threads allocate, free and ask cuMemGetInfo_v2: the destructor leaves the region under them. No
# charge may land in the slot once it is given up (the region would count memory nobody holds), and under TSan
# no data race. 8 runs, in a shared region and with a control segment.
for mode in shared control; do
	fine=0
	for i in 1 2 3 4; do
		if [ $mode = shared ]; then shp_spawn xr VRAMGUARD_SHARED=exitrace VRAMGUARD_SHARED_LIMITS=100M
		else shp_spawn xr NVIDIA_GPU_MEMORY_LIMITS=100M; fi
		shp_send xr init
		shp_send xr exitrace 4 20
		eval "exec ${SHP_FD[xr]}>&-"
		unset "SHP_FD[xr]"
		wait "${SHP_JOB[xr]}"
		rc=$?
		cat "$SHD/xr.err" >>"$LOG"
		[ "$SHP_R" = "= exitrace" ] && [ $rc -eq 0 ] && [ ! -s "$SHD/xr.err" ] && fine=$((fine + 1))
		rm -f "$SHD/xr.in"
	done
	[ "$fine" -eq 4 ] && ok "exit() under 4 allocating threads ($mode): 4 runs exit 0, nothing on stderr" ||
		bad "exit() under 4 allocating threads ($mode): $fine of 4 runs clean" "$(head -3 "$SHD/xr.err")"
done
shp_top
shp_json "  nothing was reclaimed: each left, the last one removing the region" noregion exitrace reclaimed=0 removed=0
[ ! -e "$SHD/vramguard.exitrace" ] && ok "  its file is gone" || bad "  the region's file is left"

# Where the directory is missing: a shared region fails closed; a control segment is only a warning.
shp_spawn nd VRAMGUARD_SHM_DIR="$SHD/missing" VRAMGUARD_SHARED=job
shp_send nd init
r1=$SHP_R
shp_end nd
[ "$r1" = "= init 800" ] && [ "$(shp_lines nd "^vramguard: error: shared region 'job': .*$SHD/missing")" -eq 1 ] &&
	ok "VRAMGUARD_SHM_DIR missing, shared region: one error line, fail closed" || bad "missing dir, shared" "$r1 $(cat "$SHD/nd.err")"
shp_spawn ne VRAMGUARD_SHM_DIR="$SHD/missing" NVIDIA_GPU_MEMORY_LIMITS=64M
shp_send ne init
shp_expect "VRAMGUARD_SHM_DIR missing, control segment: the quota holds" ne "alloc 65" '^= alloc 2 held 0$'
shp_expect "  and allocations within it work" ne "alloc 64" '^= alloc 0 held 67108864$'
shp_end ne
[ "$(shp_lines ne '^vramguard: warning: no control segment: ')" -eq 1 ] && ok "  one warning: no control segment" ||
	bad "  the warning" "$(cat "$SHD/ne.err")"
# An absolute path and VRAMGUARD_SHARED_MODE=0660: the file is made with that mode whatever the umask.
mkdir "$SHD/abs"
shp_spawn ab VRAMGUARD_SHARED="$SHD/abs/team" VRAMGUARD_SHARED_MODE=0660 VRAMGUARD_SHARED_LIMITS=10M
shp_send ab init
shp_expect "VRAMGUARD_SHARED=/absolute/path: the budget holds" ab "alloc 11" '^= alloc 2 held 0$'
m=$(stat -c %a "$SHD/abs/team" 2>/dev/null)
[ "$m" = 660 ] && ok "  the region file has mode 0660 (VRAMGUARD_SHARED_MODE)" || bad "  mode '$m', want 660"
shp_end ab

# Whatever is left, and nothing else under the directory.
for n in "${!SHP_FD[@]}"; do shp_kill "$n"; done
left=$(cd "$SHD" && find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | grep -v -E '\.(in|out|err|go)$|^abs$|^vramguard\.(race|kill|exec|exitrace|live|mism|good|magic|truncated|size0|world|symlink|dangling|dir|fifo|control|cvd|info|fork|follow|separate)$|^planted$')
[ -z "$left" ] && ok "no stray files under VRAMGUARD_SHM_DIR (temporary or control segments)" || bad "stray files" "$left"
rm -rf "$SHD"
done_testing

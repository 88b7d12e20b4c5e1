#!/usr/bin/env bash
# Section hostile: shared state under attack and under bad luck (docs/RELIABILITY.md, "Hostile local user"): files
# planted by another user (uid 65534 through setpriv; a third user, uid 4243), a region lock held by a stopped
# member, a poisoned region, members that die in another PID namespace or cannot be verified, more members than the
# old fixed 128 slots, and the lifecycle commands. Every check here failed on the code before issue 12.
# Needs: make test-bins (shared_alloc, region_tool, region_poke, vramguard); root and setpriv.
source tests/lib/section.sh

source tests/integration/shp_lib.sh
SHD=$(shp_dir hostile)
chmod 1777 "$SHD"               # like /dev/shm: every user may create files, only the owner removes them
HD=$SHD
RTOOL=$PWD/$T/region_tool
POKE=$PWD/$T/region_poke
G1=GPU-00000001-0000-0000-0000-000000000001
VGH=(env -u LD_PRELOAD -u VRAMGUARD_SHARED VRAMGUARD_SHM_DIR="$HD")
ASROOT=0
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && ASROOT=1
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
OTHER=(setpriv --reuid=4243 --regid=4243 --clear-groups)

# hst_refused CHECK NAME REGEX: a process spawned as NAME (already init'ed) fails closed with one error line.
hst_refused() {
	local what=$1 n=$2 re=$3 ri=$SHP_R
	shp_send "$n" "alloc 1"
	local ra=$SHP_R
	if [ "$ri" = "= init 800" ] && [ "$ra" = "= alloc 800 held 0" ] && [ "$(shp_lines "$n" '^vramguard: error: ')" -eq 1 ] &&
		grep -Eq -- "$re" "$SHD/$n.err"; then
		ok "$what"
	else
		bad "$what" "init '$ri', alloc '$ra': $(head -c 400 "$SHD/$n.err")"
	fi
}

# ---- 2. another user's files are never joined ----
if [ $ASROOT = 1 ]; then
	# nobody pre-creates the region root's job will name, with a 1 TiB budget.
	"${NOBODY[@]}" "$RTOOL" create "$HD/vramguard.squat" squat 1T >>"$LOG" 2>&1
	shp_spawn h2a NVIDIA_GPU_MEMORY_LIMITS=64M VRAMGUARD_SHARED=squat
	shp_send h2a init
	hst_refused "root does not join a region uid 65534 planted (1 TiB budget): fail closed, one line naming file and owner" \
		h2a "vramguard\\.squat' belongs to uid 65534 \\(mode 0600\\), not to this user \\(uid 0\\): refusing to join it"
	shp_end h2a
	# The same name squatted against a third user: one line that says whose file is in the way.
	SHP_AS=("${OTHER[@]}")
	shp_spawn h2b VRAMGUARD_SHARED=squat
	SHP_AS=()
	shp_send h2b init
	hst_refused "a squatted region name: the other user is told whose file it is and what to do" h2b \
		"cannot open '$HD/vramguard\\.squat': Permission denied \\(it belongs to uid 65534, mode 0600; this process runs as uid 4243\\): another user's region"
	shp_end h2b
	# Group sharing only when both sides ask for it, and only for members of the file's group.
	"${NOBODY[@]}" "$RTOOL" create "$HD/vramguard.grp" grp 1G 0660 >>"$LOG" 2>&1
	chgrp 4243 "$HD/vramguard.grp"
	SHP_AS=(setpriv --reuid=4243 --regid=4243 --groups=4243)
	shp_spawn h2c VRAMGUARD_SHARED=grp
	shp_send h2c init
	hst_refused "a group-shared region of another user without VRAMGUARD_SHARED_MODE=0660: refused" h2c \
		"belongs to uid 65534 \\(mode 0660\\).*VRAMGUARD_SHARED_MODE=0660 on both sides"
	shp_end h2c
	shp_spawn h2d VRAMGUARD_SHARED=grp VRAMGUARD_SHARED_MODE=0660
	SHP_AS=()
	shp_expect "  with it, a member of the file's group joins" h2d init '^= init 0$'
	shp_expect "  and is charged in its budget" h2d "alloc 10" '^= alloc 0 held 10485760$'
	shp_end h2d

	# A control segment planted under the name root's next process will use (its PID and start time are public),
	# so that uid 65534 could lift its quota through the slot.
	shp_spawn v NVIDIA_GPU_MEMORY_LIMITS=64M
	vpid=${SHP_PID[v]}
	vstart=$(sed 's/.*) //' "/proc/$vpid/stat" | cut -d' ' -f20)
	: >"$HD/plant.out"
	"${NOBODY[@]}" "$RTOOL" control "$HD" dev=0 uuid=$G1 total=16G >"$HD/plant.out" 2>>"$LOG" &
	ppid_=$!
	wait_for "$HD/plant.out" '^ready' || echo "== hostile: region_tool control never said ready" >>"$LOG"
	"${NOBODY[@]}" cp "$(ls "$HD"/vramguard.proc."$ppid_".*)" "$HD/vramguard.proc.$vpid.$vstart"
	kill -TERM $ppid_; wait $ppid_ 2>/dev/null
	shp_expect "planted control segment: the process starts (it is only a control segment)" v init '^= init 0$'
	[ "$(shp_lines v "^vramguard: warning: no control segment: '$HD/vramguard\\.proc\\.$vpid\\.$vstart' is not this process's own control segment \\(it belongs to uid 65534")" -eq 1 ] &&
		ok "  one warning: not its own control segment, whose it is" || bad "  the warning" "$(cat "$SHD/v.err")"
	"${VGH[@]}" "${NOBODY[@]}" "$VG" limit set unlimited --pid "$vpid" --dir "$HD" >>"$LOG" 2>&1
	rc=$?
	[ $rc -ne 0 ] && ok "  uid 65534's 'limit set unlimited --pid' reaches nothing (exit $rc)" ||
		bad "  uid 65534 changed the process's limit"
	shp_expect "  the 64 MiB quota holds" v "alloc 100" '^= alloc 2 held 0$'
	shp_end v
	rm -f "$HD/vramguard.squat" "$HD/vramguard.grp" "$HD/plant.out" "$HD"/vramguard.proc.*
else
	skip "another user's region and control files" "needs root and setpriv (uid 65534, 4243)"
fi

# ---- 4. a lock held by a stopped member costs one allocation, never the process ----
shp_spawn s1 VRAMGUARD_SHARED=stall VRAMGUARD_SHARED_LIMITS=100M
shp_send s1 init
shp_send s1 "alloc 10"
: >"$HD/stall.out"
"$POKE" lock "$HD/vramguard.stall" "$HD/stall.release" >"$HD/stall.out" 2>>"$LOG" &
pk=$!
wait_for "$HD/stall.out" '^locked' || echo "== hostile: region_poke never took the lock" >>"$LOG"
shp_spawn s2 VRAMGUARD_SHARED=stall VRAMGUARD_SHARED_LIMITS=100M
shp_post s2 init
shp_post s1 "alloc 1"
shp_wait s1
r1=$SHP_R
shp_wait s2
[ "$SHP_R" = "= init 0" ] && ok "lock held 2 s+ while a process starts: it starts (cuInit 0), not failed closed" ||
	bad "lock held while a process starts: '$SHP_R'" "$(cat "$SHD/s2.err")"
[ "$r1" = "= alloc 2 held 10485760" ] && ok "  a member's allocation meanwhile: that one is refused (out of memory)" ||
	bad "  the member's allocation under the stuck lock: '$r1'"
shp_expect "  the newcomer's allocations are refused until it can join" s2 "alloc 1" '^= alloc 2 held 0$'
touch "$HD/stall.release"
wait $pk
shp_expect "  once the lock is free, its next allocation joins and succeeds" s2 "alloc 1" '^= alloc 0 held 1048576$'
shp_expect "  and the member's too" s1 "alloc 1" '^= alloc 0 held 11534336$'
shp_top
shp_json "  top: both are members and the region counts both" members stall "${SHP_PID[s1]},${SHP_PID[s2]}" $((12 << 20))
[ "$(shp_lines s2 "allocations are refused until this process can join it; retried at each allocation")" -eq 1 ] &&
	[ "$(shp_lines s2 "not in shared region 'stall''s budget yet")" -eq 1 ] &&
	[ "$(shp_lines s2 "joined after [0-9]+ retr(y|ies) \\(its lock is free again\\)")" -eq 1 ] &&
	ok "  it said so: one line at start, one denial, one when it joined" || bad "  the newcomer's lines" "$(cat "$SHD/s2.err")"
shp_end s1 s2
rm -f "$HD/stall.release" "$HD/stall.out"

# ---- 5. lifecycle: a poisoned region with no member left starts from nothing; reset; persistent regions; rm ----
shp_spawn p1 VRAMGUARD_SHARED=poison VRAMGUARD_SHARED_LIMITS=100M
shp_send p1 init
shp_send p1 "alloc 10"
"$POKE" used "$HD/vramguard.poison" 0 $((1 << 62))
shp_expect "a poisoned total (2^62 bytes in use) refuses its member" p1 "alloc 1" '^= alloc 2 held 10485760$'
"${VGH[@]}" "$VG" region reset poison --dir "$HD" >"$HD/reset.out" 2>>"$LOG" &&
	grep -q "^vramguard: reset shared region 'poison' ($HD/vramguard.poison): 1 member; GPU-00000000 (0): in use 4.00 EiB -> 10.00 MiB (peaks" "$HD/reset.out" &&
	ok "  region reset rebuilds it from its live member, and says so" || bad "  region reset" "$(cat "$HD/reset.out")"
shp_expect "  the member allocates again" p1 "alloc 1" '^= alloc 0 held 11534336$'
"$POKE" used "$HD/vramguard.poison" 0 $((1 << 62))
shp_kill p1
shp_spawn p2 VRAMGUARD_SHARED=poison VRAMGUARD_SHARED_LIMITS=100M
shp_send p2 init
shp_expect "  poisoned again, its member killed: the next job finds no member and starts from nothing" p2 "alloc 100" \
	'^= alloc 0 held 104857600$'
shp_end p2
[ ! -e "$HD/vramguard.poison" ] && ok "  removed when that job exits" || bad "  the poisoned region's file is left"

"${VGH[@]}" "$VG" region create team --limit 64M --dir "$HD" >"$HD/cr.out" 2>>"$LOG" &&
	grep -q "^vramguard: created persistent shared region 'team' ($HD/vramguard.team): budget '64M', room for 1024 processes" "$HD/cr.out" &&
	ok "region create: a persistent region, 1024 slots by default" || bad "region create" "$(cat "$HD/cr.out")"
"${VGH[@]}" "$VG" region create team --limit 1G --dir "$HD" >>"$LOG" 2>"$HD/cr.err"
rc=$?
[ $rc = 1 ] && grep -q "shared region 'team' already exists ('$HD/vramguard.team', persistent, budget '64M'): change its budget with \`vramguard limit set SPEC --shared 'team'\`" "$HD/cr.err" &&
	ok "  again: refused, saying what exists and what to do" || bad "  create over an existing one: exit $rc" "$(cat "$HD/cr.err")"
shp_spawn t1 VRAMGUARD_SHARED=team VRAMGUARD_SHARED_LIMITS=1G
shp_send t1 init
shp_expect "  a member gets its budget" t1 "alloc 65" '^= alloc 2 held 0$'
"${VGH[@]}" "$VG" region rm team --dir "$HD" >>"$LOG" 2>"$HD/rm.err"
rc=$?
[ $rc = 1 ] && grep -q "shared region 'team' has 1 live member: ${SHP_PID[t1]} (.*); removing it would split the budget" "$HD/rm.err" &&
	ok "  region rm with a live member: refused, naming it" || bad "  region rm with a member: exit $rc" "$(cat "$HD/rm.err")"
shp_end t1
[ -e "$HD/vramguard.team" ] && ok "  it outlives its last member" || bad "  the persistent region was removed"
"${VGH[@]}" "$VG" region rm team --dir "$HD" >"$HD/rm.out" 2>>"$LOG" &&
	grep -q "^vramguard: removed persistent shared region 'team' ($HD/vramguard.team), budget '64M'; it had no member" "$HD/rm.out" &&
	[ ! -e "$HD/vramguard.team" ] && ok "  region rm removes it" || bad "  region rm" "$(cat "$HD/rm.out")"
"${VGH[@]}" "$VG" region rm team --dir "$HD" >>"$LOG" 2>"$HD/rm.err"
[ $? = 1 ] && grep -q "no shared region 'team' ('$HD/vramguard.team' does not exist)" "$HD/rm.err" && ok "  twice: no such region" ||
	bad "  region rm of nothing" "$(cat "$HD/rm.err")"
rm -f "$HD"/*.out "$HD"/*.err

# ---- 6. members in another PID namespace; members that cannot be verified ----
if [ $ASROOT = 1 ] && unshare --pid --fork --kill-child --mount-proc true 2>/dev/null; then
	shp_spawn k1 VRAMGUARD_SHARED=ns VRAMGUARD_SHARED_LIMITS=100M
	SHP_AS=(unshare --pid --fork --kill-child --mount-proc)
	shp_spawn k2 VRAMGUARD_SHARED=ns VRAMGUARD_SHARED_LIMITS=100M
	SHP_AS=()
	shp_send k2 init
	shp_expect "PID namespace: a member in its own namespace (it is pid ${SHP_PID[k2]} there) takes 60 of 100 MiB" k2 \
		"alloc 60" '^= alloc 0 '
	shp_send k1 init
	shp_expect "  the other member is denied 60 MiB" k1 "alloc 60" '^= alloc 2 held 0$'
	shp_top
	shp_json "  top: the member of the other namespace is alive (its liveness lock is held)" members ns \
		"${SHP_PID[k1]},${SHP_PID[k2]}" $((60 << 20))
	kill -9 "${SHP_JOB[k2]}"        # unshare; --kill-child takes the member with it
	wait "${SHP_JOB[k2]}" 2>/dev/null
	eval "exec ${SHP_FD[k2]}>&-"
	unset "SHP_FD[k2]"
	shp_until k1 "alloc 60" "= alloc 0 held 62914560" &&
		ok "  killed with -9 there: its share is reclaimed, the other gets 60 MiB" ||
		bad "  after the namespaced member was killed: '$SHP_R'"
	shp_top
	shp_json "  top: it is gone" members ns "${SHP_PID[k1]}" $((60 << 20))
	shp_end k1
else
	skip "a member in another PID namespace killed with -9" "needs root and unshare --pid"
fi
shp_spawn e1 VRAMGUARD_SHARED=ev VRAMGUARD_SHARED_LIMITS=100M
shp_send e1 init
shp_send e1 "alloc 1"
"$RTOOL" plant "$HD/vramguard.ev" 4242 30M >>"$LOG" 2>&1
shp_expect "unverifiable: a member nobody can check (another namespace, no liveness lock) holds 30 MiB" e1 "alloc 80" \
	'^= alloc 2 held 1048576$'
SHP_TOP=$("${VGH[@]}" "$VG" top --once --json 2>>"$LOG")
shp_json "  top --json: state unverifiable, alive null, counted, not reclaimed" unverifiable 4242
"${VGH[@]}" "$VG" top --once >"$HD/top.txt" 2>>"$LOG"
grep -q '^4242 .*(unverifiable) planted' "$HD/top.txt" && grep -q "^1 process shown as (unverifiable): .*'vramguard region evict NAME PID'" "$HD/top.txt" &&
	ok "  top: (unverifiable), with what to do" || bad "  top's text" "$(cat "$HD/top.txt")"
"${VGH[@]}" "$VG" region evict ev 4242 --dir "$HD" >"$HD/ev.out" 2>>"$LOG" &&
	grep -q "^vramguard: evicted process 4242 (planted, unverifiable) from shared region 'ev': released 30.00 MiB on GPU-00000000 (0)" "$HD/ev.out" &&
	ok "  region evict frees it and says what it released" || bad "  region evict" "$(cat "$HD/ev.out")"
shp_expect "  the member gets the memory" e1 "alloc 80" '^= alloc 0 held 84934656$'
"${VGH[@]}" "$VG" region evict ev "${SHP_PID[e1]}" --dir "$HD" >>"$LOG" 2>"$HD/ev.err"
[ $? = 1 ] && grep -q "process ${SHP_PID[e1]} (.*) of shared region 'ev' is alive (it holds its liveness lock): evicting it would stop counting the 81.00 MiB it holds; pass --force" "$HD/ev.err" &&
	ok "  a live member is not evicted without --force" || bad "  evicting a live member" "$(cat "$HD/ev.err")"
"${VGH[@]}" "$VG" region evict ev "${SHP_PID[e1]}" --force --dir "$HD" >>"$LOG" 2>&1 && ok "  with --force it is" ||
	bad "  region evict --force failed"
shp_expect "  the evicted member joins again at its next allocation" e1 "alloc 1" '^= alloc 0 held 85983232$'
shp_send e1 info                # the next call logs it
shp_top
shp_json "  and is counted for that allocation only" members ev "${SHP_PID[e1]}" $((1 << 20))
[ "$(shp_lines e1 "was evicted from the region .*joined it again")" -eq 1 ] && ok "  it said so once" ||
	bad "  the eviction line" "$(cat "$SHD/e1.err")"
# Two members of other PID namespaces that both record PID 4244 (two containers' processes, no liveness lock):
# 'region evict ev 4244' cannot tell which one is meant, so it evicts neither and says what to do; --slot (the slot
# top --json lists) picks one; then the one left is the only member with that PID, and evicted as before.
REGION_TOOL_PLANT=5:101 "$RTOOL" plant "$HD/vramguard.ev" 4244 1M planted-a >>"$LOG" 2>&1
REGION_TOOL_PLANT=6:102 "$RTOOL" plant "$HD/vramguard.ev" 4244 2M planted-b >>"$LOG" 2>&1
hslots() { # the slots of the members recording PID 4244, "SLOT:COMMAND" each, in slot order
	"${VGH[@]}" "$VG" top --once --json 2>>"$LOG" | python3 -c 'import json,sys
print(" ".join("%d:%s" % (p["slot"], p["command"]) for p in json.load(sys.stdin)["processes"] if p["pid"] == 4244))'
}
hs=$(hslots)
"${VGH[@]}" "$VG" region evict ev 4244 --dir "$HD" >"$HD/ev2.out" 2>"$HD/ev2.err"
hrc=$?
if [ "$hrc" = 1 ] && [ "$(hslots)" = "$hs" ] && [ "$(wc -l <"$HD/ev2.err")" = 1 ] && [ ! -s "$HD/ev2.out" ] &&
	grep -q "^vramguard: error: region evict: 2 members of shared region 'ev' record PID 4244 (slot ${hs%%:*} 'planted-a', slot .* 'planted-b'): which one is meant cannot be told; nothing was evicted (pick one with --slot N, the slot 'vramguard top --json' lists; a live one can be named by its PID on this host)$" "$HD/ev2.err"; then
	ok "  two members recording PID 4244 (other namespaces): 'region evict ev 4244' evicts neither, one line naming both slots and --slot"
else bad "  an ambiguous PID was evicted" "$(printf 'exit %s; slots before: %s, after: %s\n' "$hrc" "$hs" "$(hslots)"; cat "$HD/ev2.out" "$HD/ev2.err")"; fi
hb=${hs##* }
"${VGH[@]}" "$VG" region evict ev 4244 --slot "${hb%%:*}" --dir "$HD" >"$HD/ev3.out" 2>"$HD/ev3.err" &&
	grep -q "^vramguard: evicted process 4244 (planted-b, unverifiable) from shared region 'ev': released 2.00 MiB on GPU-00000000 (0)$" "$HD/ev3.out" &&
	[ "$(hslots)" = "${hs%% *}" ] && ok "  --slot ${hb%%:*} evicts that one (planted-b, 2 MiB), the other stays" ||
	bad "  region evict --slot" "$(cat "$HD/ev3.out" "$HD/ev3.err"; hslots)"
"${VGH[@]}" "$VG" region evict ev 4243 --slot "${hs%%:*}" --dir "$HD" >>"$LOG" 2>"$HD/ev4.err"
[ $? = 1 ] && grep -q "^vramguard: error: region evict: slot ${hs%%:*} of shared region 'ev' is not process 4243's (it records PID 4244 'planted-a'): nothing was evicted$" "$HD/ev4.err" &&
	ok "  --slot naming another PID's slot: refused, nothing evicted" || bad "  --slot of another PID" "$(cat "$HD/ev4.err")"
cli "  region evict --slot x: a usage error" 2 '^$' -- $VG region evict ev 4244 --slot x --dir "$HD"
expect_err_lines "  one line naming the value" "^vramguard: error: region evict: invalid --slot 'x' \(expected a slot number" 1
"${VGH[@]}" "$VG" region evict ev 4244 --dir "$HD" >"$HD/ev5.out" 2>>"$LOG" &&
	grep -q "^vramguard: evicted process 4244 (planted-a, unverifiable) from shared region 'ev': released 1.00 MiB" "$HD/ev5.out" &&
	[ -z "$(hslots)" ] && ok "  the one left is the only member with that PID: evicted by its PID, as before" ||
	bad "  evict the last one" "$(cat "$HD/ev5.out"; hslots)"
shp_end e1
rm -f "$HD"/*.out "$HD"/*.err "$HD/top.txt"

# ---- 7. capacity: more members than the old 128; a small region says how to get a bigger one ----
"$RTOOL" create "$HD/vramguard.big" big 1G >>"$LOG" 2>&1
bigs=()
for i in $(seq 130); do
	"$RTOOL" join "$HD/vramguard.big" dev=0 uuid=$G1 total=16G used=1M >"$HD/big.$i" 2>&1 &
	bigs+=($!)
done
n=0
end=$((SECONDS + 30))           # a bound on a hang, as wait_for's
while n=$(cat "$HD"/big.* 2>/dev/null | grep -c '^ready'); [ "$n" -lt 130 ] && [ "$SECONDS" -le "$end" ]; do
	sleep 0.02
done
[ "$n" -eq 130 ] && ok "capacity: 130 members in one region (the 129th was refused before)" ||
	bad "capacity: $n of 130 members joined" "$(grep -h -v '^ready' "$HD"/big.* | head -2)"
SHP_TOP=$("${VGH[@]}" "$VG" top --once --json 2>>"$LOG")
shp_json "  top: 1024 slots, 130 members, 130 MiB" slots big 1024 130 $((130 << 20))
kill -TERM "${bigs[@]}" 2>/dev/null
wait "${bigs[@]}" 2>/dev/null
[ ! -e "$HD/vramguard.big" ] && ok "  all left: the region is removed" || bad "  the region is left after its members left"
for n in q1 q2 q3; do shp_spawn $n VRAMGUARD_SHARED=small VRAMGUARD_SHARED_SLOTS=2; shp_send $n init; done
shp_send q3 "alloc 1"
[ "${SHP_R}" = "= alloc 800 held 0" ] && grep -q "vramguard\\.small' is full: 2 processes have joined it and all are alive (a region's process slots are set when it is made: .*VRAMGUARD_SHARED_SLOTS" "$SHD/q3.err" &&
	ok "  VRAMGUARD_SHARED_SLOTS=2: the third is refused with how to make a bigger region" || bad "  a full small region" "$(cat "$SHD/q3.err")"
shp_end q1 q2 q3
rm -f "$HD"/big.*

# ---- where a region lives: a file system that is not in memory works, and the member is told ----
fst=$(stat -f -c %T /tmp 2>/dev/null)
if [ -n "$fst" ] && [ "$fst" != tmpfs ] && [ "$fst" != ramfs ]; then
	SHD=$(mktemp -d /tmp/vg-disk.XXXXXX)
	shp_spawn fs1 VRAMGUARD_SHARED=disk VRAMGUARD_SHARED_LIMITS=10M
	shp_expect "a region on /tmp ($fst): the job runs" fs1 init '^= init 0$'
	shp_expect "  the budget holds" fs1 "alloc 11" '^= alloc 2 held 0$'
	[ "$(shp_lines fs1 "^vramguard: warning: shared region 'disk' \\('$SHD/vramguard\\.disk'\\): it is on a (disk-backed file system|file system of type)")" -eq 1 ] &&
		[ "$(shp_lines fs1 'warning')" -eq 1 ] && ok "  one warning names the file system and where regions belong" ||
		bad "  the file system warning" "$(cat "$SHD/fs1.err")"
	shp_end fs1
	rm -rf "$SHD"
	SHD=$HD
else
	skip "a region on a disk-backed file system" "/tmp is $fst here"
fi

for n in "${!SHP_FD[@]}"; do shp_kill "$n"; done
left=$(cd "$HD" && find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | grep -v -E '\.(in|out|err)$')
[ -z "$left" ] && ok "hostile: nothing left under the directory (regions, control segments, temporary files)" ||
	bad "hostile: files left" "$left"
rm -rf "$HD"
done_testing

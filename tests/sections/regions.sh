#!/usr/bin/env bash
# Section regions: `vramguard top`, `vramguard limit` and `run --shared`. Processes under the preload are stood in
# for by tests/integration/region_tool.c, which makes regions and holds a slot through accounting/region.h only (no
# CUDA): members of a shared region "job" and one process with its own control segment, all in a temporary
# VRAMGUARD_SHM_DIR. Needs: make test-bins (region_tool, vramguard); root and setpriv for the other-user checks.
source tests/lib/section.sh

RTOOL=$T/region_tool
RSD=$(mktemp -d /tmp/vg-regions.XXXXXX)
chmod 755 "$RSD"
RENV=(VRAMGUARD_SHM_DIR="$RSD" VRAMGUARD_SHARED=)
UA=GPU-aaaaaaaa-1111-2222-3333-444444444444
UB=GPU-bbbbbbbb-1111-2222-3333-444444444444
MEMBERS=()
MEMBER_AS=()    # a command to run region_tool through (setpriv ...: as another user)

member() { # OUTFILE ARGS...: start region_tool, wait for "ready"; its pid in $MEMBER
	local out=$1
	shift
	: >"$out"               # empty before wait_for looks: only this member's "ready" counts
	"${MEMBER_AS[@]}" "$RTOOL" "$@" >"$out" 2>>"$LOG" &
	MEMBER=$!
	MEMBERS+=("$MEMBER")
	wait_for "$out" '^ready' && return 0
	bad "region_tool $1 did not get ready" "$(cat "$out")"
}
reap() { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# Checks of top's and limit show's JSON ($CHK, tests/lib/report_check.py): one ok/not ok line each, counted by prog.
rcpy() { prog "$1" -- $CHK "${@:2}"; } # NAME MODE TOP ARGS...

cli "help top documents its options" 0 '--interval SECONDS' -- $VG help top
cli "help limit documents set and show" 0 '^usage: vramguard limit set \[SPEC\] \[--compute PCT\]' -- $VG help limit
cli "--help lists top and limit" 0 '^  limit +change .* show the limits in force' -- $VG --help
cli "top: an empty directory" 0 "^no process under vramguard in $RSD\$" "${RENV[@]}" -- $VG top --once
# The variables are read as the library reads them (trimmed), so the command looks where the jobs look.
cli "top: VRAMGUARD_SHM_DIR with blanks around it is the same directory" 0 "^no process under vramguard in $RSD\$" \
	VRAMGUARD_SHM_DIR=" $RSD " VRAMGUARD_SHARED= -- $VG top --once
cli "top: VRAMGUARD_SHARED with a trailing blank names the region" 0 "vramguard\.team does not exist" \
	"${RENV[@]}" VRAMGUARD_SHARED="team " -- $VG top --once

"$RTOOL" create "$RSD/vramguard.job" job 8G >/dev/null
member "$RSD/a.out" join "$RSD/vramguard.job" dev=0 uuid=$UA total=16G quota=4G used=1G peak=2G denied=1 report=5 hold=1
PA=$MEMBER
member "$RSD/b.out" join "$RSD/vramguard.job" dev=0 uuid=$UA total=16G used=3G
PB=$MEMBER
member "$RSD/c.out" control "$RSD" dev=0 uuid=$UB total=80G quota=2G used=512M
PC=$MEMBER

cli "top --once --json" 0 '^\{"schema": "vramguard.top/1"' "${RENV[@]}" -- $VG top --once --json
rcpy "  its processes, quotas and totals" top "$CO" $PA $PB $PC $UA $UB
cli "top --once: the table" 0 '^PID +COMMAND +GPU +IN USE +ALLOCATED +PEAK +QUOTA +DENIED +LAST REPORT +REGION$' \
	"${RENV[@]}" -- $VG top --once
if grep -Eq "^$PA +region_tool join +GPU-aaaaaaaa \\(0\\) +1\\.00 GiB +- +2\\.00 GiB +4\\.00 GiB +1 +[0-9]+s ago +job\$" <<<"$CO" &&
	grep -Eq "^$PB +region_tool join +GPU-aaaaaaaa \\(0\\) +3\\.00 GiB +- +3\\.00 GiB +8\\.00 GiB +0 +- +job\$" <<<"$CO" &&
	grep -Eq "^$PC +region_tool control +GPU-bbbbbbbb \\(0\\) +512\\.00 MiB +- +512\\.00 MiB +2\\.00 GiB +0 +- +-\$" <<<"$CO"; then
	ok "  one aligned row per process and GPU"; else bad "  the rows" "$CO"; fi
if grep -Eq '^GPU +MEMORY +IN USE +PROCESSES +BUDGETS$' <<<"$CO" &&
	grep -Eq '^GPU-aaaaaaaa \(0\) +16\.00 GiB +4\.00 GiB +2 +job 4\.00 GiB of 8\.00 GiB$' <<<"$CO"; then
	ok "  totals per GPU with the region's budget"; else bad "  the totals" "$CO"; fi
# ALLOCATED and the driver's part are the member's sampler's figures of its last round (each VRAMGUARD_DEVICE_POLL),
# IN USE is live: a round published 896 MiB allocated and 64 MiB of the driver's, then 224 MiB were freed. The parts
# must not exceed the whole in top's table, its JSON or the exporter (the table once showed 896 MiB allocated of 736
# MiB in use): the allocations give way (672 MiB), the driver's part stays.
mkdir "$RSD/stale"
"$RTOOL" create "$RSD/stale/vramguard.st" st "" >/dev/null
member "$RSD/st.out" join "$RSD/stale/vramguard.st" dev=0 uuid=$UA total=16G used=736M alloc=896M driver=64M
PST=$MEMBER
SENV=(VRAMGUARD_SHM_DIR="$RSD/stale" VRAMGUARD_SHARED=)
cli "top: a round published 896 + 64 MiB, 736 MiB in use since" 0 '' "${SENV[@]}" -- $VG top --once
grep -Eq "^$PST +region_tool join +GPU-aaaaaaaa \\(0\\) +736\\.00 MiB +672\\.00 MiB +" <<<"$CO" &&
	ok "  ALLOCATED is not above IN USE less the driver's part (672 of 736 MiB)" || bad "  ALLOCATED above IN USE" "$CO"
cli "top --json: the same" 0 '' "${SENV[@]}" -- $VG top --once --json
[ "$(python3 -c 'import json, sys; d = json.loads(sys.argv[1])["processes"][0]["devices"][0]
print(d["used_bytes"], d["allocated_bytes"], d["driver_bytes"])' "$CO" 2>&1)" = "$((736 << 20)) $((672 << 20)) $((64 << 20))" ] &&
	ok "  allocated_bytes + driver_bytes = used_bytes: the parts within the whole" || bad "  top --json" "$CO"
cli "exporter --once: the same" 0 '' "${SENV[@]}" -- $VG exporter --once --dir "$RSD/stale"
[ "$(grep -E '^vramguard_process_(used|allocated|driver)_bytes\{' <<<"$CO" | sed 's/.* //' | paste -sd' ')" = \
	"$((736 << 20)) $((672 << 20)) $((64 << 20))" ] && ok "  vramguard_process_allocated_bytes + driver_bytes = used_bytes" ||
	bad "  the exporter's figures" "$(grep -E '^vramguard_process_(used|allocated|driver)_bytes' <<<"$CO")"
reap $PST
rm -rf "$RSD/stale"

# A region outside the directory: seen when named (VRAMGUARD_SHARED in top's environment, or --shared).
mkdir "$RSD/elsewhere"
"$RTOOL" create "$RSD/elsewhere/team" team 2G >/dev/null
member "$RSD/t.out" join "$RSD/elsewhere/team" dev=0 uuid=$UA total=16G used=256M
PT=$MEMBER
cli "top: the region VRAMGUARD_SHARED names" 0 '' VRAMGUARD_SHM_DIR="$RSD" VRAMGUARD_SHARED="$RSD/elsewhere/team" -- \
	$VG top --once --json
rcpy "  is included" pids "$CO" $PA,$PB,$PC,$PT $UA $(((4 << 30) + (256 << 20)))
cli "top --shared PATH" 0 "^$PT +region_tool join .* team\$" "${RENV[@]}" -- $VG top --once --shared "$RSD/elsewhere/team"
cli "top: not named, not seen" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  (only the directory)" pids "$CO" $PA,$PB,$PC $UA $((4 << 30))
kill $PT && wait $PT
cli "top: an invalid VRAMGUARD_SHARED" 2 '^$' VRAMGUARD_SHM_DIR="$RSD" VRAMGUARD_SHARED=a/b -- $VG top --once
expect_err "  names the variable" "^vramguard: error: invalid VRAMGUARD_SHARED 'a/b': "
cli "top --dir beats VRAMGUARD_SHM_DIR" 0 "^$PA " VRAMGUARD_SHM_DIR=/nonexistent -- $VG top --once --dir "$RSD"
# -k: a top that does not end on SIGINT is killed 10 s later (status 137: this check fails) instead of hanging the
# suite; once, under ASan, LeakSanitizer's exit check deadlocked here and nothing else ended it.
cli "top --json --interval: one document per line" 124 '' "${RENV[@]}" -- \
	timeout -k 10 -s INT 1.3 $VG top --json --interval 0.5
ndoc=$(grep -c '^{"schema": "vramguard.top/1"' <<<"$CO")
[ "$ndoc" -ge 2 ] && [ "$ndoc" -eq "$(wc -l <<<"$CO")" ] && ok "  $ndoc lines, each a document" || bad "  $ndoc documents" "$CO"

cli "limit set --shared: lower the budget below what is in use" 0 \
	"^vramguard: shared region 'job' \\($RSD/vramguard\\.job\\): limit 8G -> 2G; 2 processes apply it at their next allocation; GPU-aaaaaaaa \\(0\\) has 4\\.00 GiB in use, over the new 2\\.00 GiB: new allocations there are denied until usage drops\$" \
	"${RENV[@]}" -- $VG limit set 2G --shared job
cli "limit show --json" 0 '"vramguard.limits/1"' "${RENV[@]}" -- $VG limit show --shared job --json
rcpy "  says 2G in force" limits "$CO" job 2G 8G $((2 << 30))
cli "limit set --shared: raise it" 0 "limit 2G -> 12G; 2 processes apply it at their next allocation\$" \
	"${RENV[@]}" -- $VG limit set 12G --shared job
# A spec with keys only changes the GPUs it names; the region keeps its bare default for GPUs registered later.
cli "limit set --shared: keys only" 0 \
	"limit 12G -> 12G,0:13G \\(keys only: GPUs registered later still get 12G\\); 2 processes apply it at their next allocation\$" \
	"${RENV[@]}" -- $VG limit set 0:13G --shared job
cli "limit show --json" 0 '' "${RENV[@]}" -- $VG limit show --shared job --json
rcpy "  the region stores 12G,0:13G: 13 GiB on ordinal 0" limits "$CO" job 12G,0:13G 8G $((13 << 30))
cli "limit set --shared: keys only again" 0 "limit 12G,0:13G -> 12G,0:14G \\(keys only: " \
	"${RENV[@]}" -- $VG limit set 0:14G --shared job
cli "limit show: the spec in force" 0 '^  in force      12G,0:14G$' "${RENV[@]}" -- $VG limit show --shared job

# A request from limit set --pid is pending until the process takes it (region_tool hold=1: until SIGUSR1).
cli "limit set --pid: a member of a shared region" 0 \
	"^vramguard: process $PA \\(region_tool join\\) in shared region 'job' .*: own limit 4\\.00 GiB -> 3G; it applies it at its next allocation" \
	"${RENV[@]}" -- $VG limit set 3G --pid $PA
cli "limit set --pid again before it applied the first" 0 \
	"own limit 4\\.00 GiB \\(3G requested, not applied yet\\) -> 1G; " "${RENV[@]}" -- $VG limit set 1G --pid $PA
cli "limit show: the request is pending" 0 \
	"^  $PA +region_tool join +GPU-aaaaaaaa \\(0\\) +4\\.00 GiB +1\\.00 GiB +2\\.00 GiB +1G \\(pending\\)\$" "${RENV[@]}" -- $VG limit show
grep -q "^REQUESTED: a 'vramguard limit set --pid' the process has not applied yet" <<<"$CO" &&
	ok "  and a line says what REQUESTED means" || bad "  no REQUESTED line" "$CO"
cli "limit show --json: the request is stored in its slot" 0 '' "${RENV[@]}" -- $VG limit show --json
rcpy "  requested 1G, not applied" requested "$CO" $PA 1G shared false $((4 << 30))
cli "top --json: the pending request" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  requested 1G, not applied, own quota still 4 GiB" toprequest "$CO" $PA 1G false $((4 << 30))
kill -USR1 $PA
wait_for "$RSD/a.out" '^applied 1G$' && ok "  the process picked it up" || bad "  the process did not apply it"
grep -q '^applied 3G$' "$RSD/a.out" && bad "  it applied the superseded request" || ok "  only the last request applied"
cli "limit show: applied, its own quota is now 1 GiB" 0 \
	"^  $PA +region_tool join +GPU-aaaaaaaa \\(0\\) +1\\.00 GiB +1\\.00 GiB +2\\.00 GiB +-\$" "${RENV[@]}" -- $VG limit show
grep -Eq '^  0 +GPU-aaaaaaaa-1111-2222-3333-444444444444 +0 +16\.00 GiB +14\.00 GiB +4\.00 GiB' <<<"$CO" &&
	ok "  the region's GPU: index, UUID, ordinal, memory, limit, used" || bad "  the device table" "$CO"
grep -q '^REQUESTED:' <<<"$CO" && bad "  a REQUESTED line with nothing pending" "$CO" || ok "  no REQUESTED line"
cli "limit show --json: applied" 0 '' "${RENV[@]}" -- $VG limit show --json
rcpy "  requested 1G, applied, own quota 1 GiB" requested "$CO" $PA 1G shared true $((1 << 30))
cli "top --json: applied" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  applied, own quota 1 GiB" toprequest "$CO" $PA 1G true $((1 << 30))
cli "limit set --pid: the old limit is the applied request" 0 "own limit 1G -> 1G; " "${RENV[@]}" -- \
	$VG limit set 1G --pid $PA
cli "limit set --pid: a process with a control segment, below its usage" 0 \
	"^vramguard: process $PC \\(region_tool control\\), control segment $RSD/vramguard\\.proc\\.$PC\\.[0-9]+: limit 2\\.00 GiB -> 256M; .*its new allocations there are denied until usage drops\$" \
	"${RENV[@]}" -- $VG limit set 256M --pid $PC
cli "limit show --pid --json" 0 '' "${RENV[@]}" -- $VG limit show --pid $PC --json
wait_for "$RSD/c.out" '^applied 256M$'
cli "limit show --pid --json (after it applied it)" 0 '' "${RENV[@]}" -- $VG limit show --pid $PC --json
rcpy "  only that process, in its control segment, quota 256 MiB" requested "$CO" $PC 256M control true $((256 << 20))

reap $PB
cli "top after SIGKILL of a member" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  its share is reclaimed" pids "$CO" $PA,$PC $UA $((1 << 30)) reclaimed=1
reap $PC
cli "top after SIGKILL of a process with a control segment" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  it is gone and its segment removed" pids "$CO" $PA $UB 0 removed=1
ls "$RSD"/vramguard.proc.* >/dev/null 2>&1 && bad "  a control segment is left" "$(ls "$RSD")" || ok "  no control segment left"

cli "limit set: an invalid SPEC" 2 '^$' "${RENV[@]}" -- $VG limit set 4XB --shared job
expect_err "  quotes the token" "^vramguard: error: invalid limit '4XB': unknown unit 'XB' \\(expected e.g. "
cli "limit set: a blank SPEC is invalid too" 2 '^$' "${RENV[@]}" -- $VG limit set ' ' --shared job
expect_err "  says so" '^vramguard: error: empty limit \(expected e.g. '
cli "limit set: no such process" 1 '^$' "${RENV[@]}" -- $VG limit set 1G --pid 999999999
expect_err "  says so" '^vramguard: error: no process 999999999$'
sleep 30 &
PS=$!
cli "limit set: a process not under vramguard" 1 '^$' "${RENV[@]}" -- $VG limit set 1G --pid $PS
expect_err "  says how to start it" "process $PS \\(sleep 30\\) is not under vramguard: .*'vramguard run -- COMMAND' \\(or LD_PRELOAD="
reap $PS
cli "limit set: neither --shared nor --pid" 2 '^$' "${RENV[@]}" -- $VG limit set 1G
expect_err "  says what is missing" 'say what to change: --shared NAME .* or --pid PID'
cli "limit set: no SPEC" 2 '^$' "${RENV[@]}" -- $VG limit set --shared job
cli "limit set: no such shared region" 1 '^$' "${RENV[@]}" -- $VG limit set 1G --shared nosuch
expect_err "  says which file and how it is made" "no shared region 'nosuch' \\('$RSD/vramguard\\.nosuch' does not exist\\)"
cli "limit: unknown subcommand" 2 '^$' -- $VG limit frob
cli "top: invalid --interval" 2 '^$' -- $VG top --interval 0
cli "top: a directory that does not exist" 1 '^$' -- $VG top --once --dir /nonexistent/vg

# Permissions (region.h's vg_region_trust): reading checks only the layout; writing needs the file to be ours, our
# group's, or -- for root, who administers every user's regions -- anyone's, but never one every user can write.
# In a directory of their own. Refusals are checked as a user other than the file's owner: as uid 65534 (setpriv)
# on a file of root's when the suite runs as root, else on a file of ours made unreadable (chmod 000).
PD=$RSD/perm
mkdir "$PD" && chmod 755 "$PD"
PENV=(VRAMGUARD_SHM_DIR="$PD" VRAMGUARD_SHARED=)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
	NOBODY=()
fi
"$RTOOL" create "$PD/vramguard.locked" locked 1G >/dev/null
[ ${#NOBODY[@]} -eq 0 ] && chmod 000 "$PD/vramguard.locked"
echo partial >"$PD/.vramguard.tmp.1.2"      # not a region (a temporary name): skipped silently
cli "top: another user's region is counted, not an error" 0 \
	"^note: 1 region file could not be opened for lack of permission \\($PD/vramguard\\.locked belongs to .*mode 0[0-7]+\\)\\): run as its owner or root to see it\$" \
	"${PENV[@]}" -- "${NOBODY[@]}" $VG top --once
cli "top --json: the count" 0 '' "${PENV[@]}" -- "${NOBODY[@]}" $VG top --once --json
expect_err "  and a note on stderr" '^vramguard: note: 1 region file could not be opened'
rcpy "  unreadable 1, the temporary file ignored" pids "$CO" "" $UA 0 unreadable=1 skipped=0
cli "limit set --shared: a region that is not ours" 1 '^$' "${PENV[@]}" -- "${NOBODY[@]}" $VG limit set 2G --shared locked
expect_err "  permission denied, naming the owner" \
	"^vramguard: error: permission denied: $PD/vramguard\\.locked belongs to .*mode 0[0-7]+\\): run this as that user or root\$"
cli "limit show --shared: a region that is not ours" 0 '^note: 1 region file could not be opened for lack of permission' \
	"${PENV[@]}" -- "${NOBODY[@]}" $VG limit show --shared locked

# Root sees and changes every user's region: make the region uid 65534's, with a member running as that user.
if [ ${#NOBODY[@]} -gt 0 ]; then
	chown 65534:65534 "$PD/vramguard.locked"
	MEMBER_AS=("${NOBODY[@]}")
	member "$PD/n.out" join "$PD/vramguard.locked" dev=0 uuid=$UA total=16G used=256M hold=1
	PN=$MEMBER
	MEMBER_AS=()
	cli "root: top sees another user's process" 0 \
		"^$PN +region_tool join +GPU-aaaaaaaa \\(0\\) +256\\.00 MiB +- +256\\.00 MiB +1\\.00 GiB +0 +- +locked\$" \
		"${PENV[@]}" -- $VG top --once
	grep -q 'could not be opened' <<<"$CO" && bad "  a permission note" "$CO" || ok "  and no permission note"
	cli "root: top --json" 0 '' "${PENV[@]}" -- $VG top --once --json
	rcpy "  the region is writable for root" writable "$CO" locked true
	cli "root: limit set --shared on another user's region" 0 \
		"^vramguard: shared region 'locked' \\($PD/vramguard\\.locked\\): limit 1G -> 2G; 1 process applies it at its next allocation\$" \
		"${PENV[@]}" -- $VG limit set 2G --shared locked
	cli "root: limit set --pid on another user's process" 0 \
		"^vramguard: process $PN \\(region_tool join\\) in shared region 'locked' \\($PD/vramguard\\.locked\\): own limit unlimited -> 128M; " \
		"${PENV[@]}" -- $VG limit set 128M --pid $PN
	cli "  pending until the process takes it" 0 "^  $PN +region_tool join +GPU-aaaaaaaa \\(0\\) +unlimited +256\\.00 MiB +256\\.00 MiB +128M \\(pending\\)\$" \
		"${PENV[@]}" -- $VG limit show --pid $PN
	kill -USR1 $PN
	wait_for "$PD/n.out" '^applied 128M$' && ok "  the other user's process applied it" || bad "  it did not apply it" "$(cat "$PD/n.out")"
	cli "  limit show --pid --json" 0 '' "${PENV[@]}" -- $VG limit show --pid $PN --json
	rcpy "  applied, own quota 128 MiB" requested "$CO" $PN 128M shared true $((128 << 20))
	cli "  its owner may change it too" 0 "own limit 128M -> 64M; " "${PENV[@]}" -- "${NOBODY[@]}" $VG limit set 64M --pid $PN
	reap $PN
else
	skip "root: top and limit on another user's region" "needs root and setpriv"
fi
rm -f "$PD/vramguard.locked" "$PD/.vramguard.tmp.1.2"

# A region every user can write is never written, not even by root: limit set refuses it, top lists it read-only.
"$RTOOL" create "$PD/vramguard.open" open 4G >/dev/null
member "$PD/w.out" join "$PD/vramguard.open" dev=0 uuid=$UA total=16G used=1G
PW=$MEMBER
chmod 666 "$PD/vramguard.open"
cli "limit set --shared: a world-writable region is refused" 1 '^$' "${PENV[@]}" -- $VG limit set 8G --shared open
expect_err "  says why and what to do" \
	"^vramguard: error: permission denied: '$PD/vramguard\\.open' is writable by every user \\(mode 0666\\): refusing it; remove it and let vramguard create it"
cli "limit set --pid: a member of a world-writable region is refused" 1 '^$' "${PENV[@]}" -- $VG limit set 1G --pid $PW
expect_err "  says why" "^vramguard: error: permission denied: process $PW is in $PD/vramguard\\.open, which is writable by every user \\(mode 0666\\)"
cli "top: a world-writable region is listed read-only" 0 "^$PW +region_tool join +GPU-aaaaaaaa \\(0\\) +1\\.00 GiB .* open\$" \
	"${PENV[@]}" -- $VG top --once
grep -q "^note: 1 region file shown read-only, not trusted for writing ($PD/vramguard.open is writable by every user, mode 0666): nothing is reclaimed" <<<"$CO" &&
	ok "  with a note saying why" || bad "  no read-only note" "$CO"
cli "top --json: a world-writable region" 0 '' "${PENV[@]}" -- $VG top --once --json
rcpy "  writable false" writable "$CO" open false
cli "limit show: a world-writable region" 0 "^shared region 'open' \\($PD/vramguard\\.open\\) \\(read-only here\\)\$" \
	"${PENV[@]}" -- $VG limit show
reap $PW
rm -rf "$PD"

# A region we may read but not write: a member killed there is shown as exited and left out of the totals.
member "$RSD/e.out" join "$RSD/vramguard.job" dev=0 uuid=$UA total=16G used=100M
PE=$MEMBER
reap $PE
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 644 "$RSD/vramguard.job"
	ASUSER=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
	chmod 444 "$RSD/vramguard.job"
	ASUSER=()
fi
cli "top on a read-only region" 0 "^$PE +\\(exited\\) region_tool join " "${RENV[@]}" -- "${ASUSER[@]}" $VG top --once
grep -q '^1 exited process shown as (exited), not counted' <<<"$CO" && ok "  and says why" || bad "  no exited line" "$CO"
cli "top --json on a read-only region" 0 '' "${RENV[@]}" -- "${ASUSER[@]}" $VG top --once --json
rcpy "  the exited member" readonly "$CO" $PA $PE $UA
if [ ${#ASUSER[@]} -gt 0 ]; then
	cli "limit set --pid as another user" 1 '^$' "${RENV[@]}" -- "${ASUSER[@]}" $VG limit set 3G --pid $PA
	expect_err "  permission denied, naming the owner" "permission denied: process $PA is in $RSD/vramguard\\.job, which belongs to root \\(uid 0"
fi
chmod 600 "$RSD/vramguard.job"
cli "top as the owner reclaims it" 0 '' "${RENV[@]}" -- $VG top --once --json
rcpy "  only the live member is left" pids "$CO" $PA $UA $((1 << 30)) reclaimed=1

cli "run --shared passes VRAMGUARD_SHARED" 0 '^X$' "${RENV[@]}" -- $VG run --shared X -- sh -c 'echo $VRAMGUARD_SHARED'
cli "run --shared-limit passes VRAMGUARD_SHARED_LIMITS" 0 '^job 8G$' "${RENV[@]}" -- \
	$VG run --shared job --shared-limit 8G -- sh -c 'echo $VRAMGUARD_SHARED $VRAMGUARD_SHARED_LIMITS'
cli "run --shared: an invalid name is refused before the command starts" 2 '^$' "${RENV[@]}" -- \
	$VG run --shared a/b -- sh -c 'echo ran'
expect_err "  naming VRAMGUARD_SHARED" "^vramguard: error: invalid VRAMGUARD_SHARED 'a/b'"

for mpid in "${MEMBERS[@]}"; do kill "$mpid" 2>/dev/null; done
for mpid in "${MEMBERS[@]}"; do wait "$mpid" 2>/dev/null; done
rm -rf "$RSD"
done_testing

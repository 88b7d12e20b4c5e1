#!/usr/bin/env bash
# Section compute_live: the compute share changed while processes run (docs/compute.md, "Live changes"): `vramguard
# limit set --compute` on one process, and a shared region's share divided among its members, against the test
# double's simulated GPU (tests/integration/launcher.c). Split from section compute, whose runs it shares
# (tests/lib/compute.sh), so that the two run side by side. Needs: make test-bins (launcher, vramguard).
source tests/lib/section.sh
source tests/lib/compute.sh

echo "== live changes: limit set --compute --pid on a process started with no compute limit"
# expo_until PID REGEX [absent]: poll the exporter (at most 6 s) until PID's compute lines match REGEX (with absent:
# until no line matches it); the lines seen last in $EXPO.
expo_until() {
	local pid=$1 re=$2 absent=${3:-}
	for _ in $(seq 60); do
		EXPO=$($VG exporter --once 2>/dev/null | grep -E "^vramguard_process_(compute_limit_ratio|gpu_time_seconds_total)\{pid=\"$pid\"")
		if [ -z "$absent" ]; then grep -Eq -- "$re" <<<"$EXPO" && return 0
		else grep -q "gpu_time_seconds_total" <<<"$EXPO" && ! grep -Eq -- "$re" <<<"$EXPO" && return 0; fi
		sleep 0.1
	done
	return 1
}
# set_compute PCT PID: `limit set --compute` until the process's control segment exists (at most 5 s).
set_compute() {
	for _ in $(seq 50); do
		$VG limit set --compute "$1" --pid "$2" >"$CD/set.out" 2>"$ERR" && return 0
		sleep 0.1
	done
	return 1
}
# Meanwhile, in a directory of its own (no activity file shared with the run below), 2 s of kernels given 40 % at
# once: its report names the share and where it came from (checked after the run below).
mkdir -p "$CD/shm40"
env $FAKEENV $PRE VRAMGUARD_SHM_DIR="$CD/shm40" VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$CD/live40.json" "$LN" \
	kernels 2000 1000 10 >"$CD/live40.out" 2>"$CD/live40.err" &
L40=$!
VRAMGUARD_SHM_DIR="$CD/shm40" set_compute 40% "$L40" || bad "  limit set --compute 40% --pid" "$(cat "$ERR")"
# 4 s of kernels, uncapped: launched with no limit, given 50 %, then 20 %, then none.
env $FAKEENV $PRE VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$CD/live.json" "$LN" kernels 2000 2000 10 \
	>"$CD/live.out" 2>"$CD/live.err" &
LNPID=$!
if set_compute 50% "$LNPID" && grep -q "^vramguard: process $LNPID (.*), control segment .*: compute share none -> 50%; it applies it within a second\$" "$CD/set.out"; then
	ok "  limit set --compute 50% --pid: one line, none -> 50%"
else bad "  limit set --compute 50% --pid" "$(cat "$CD/set.out" "$ERR")"; fi
if expo_until "$LNPID" 'compute_limit_ratio\{.*gpu="0".*\} 0\.500$'; then ok "  the process applied it live: the exporter shows 0.500"
else bad "  the exporter shows the new share 0.500" "$EXPO"; fi
cli "  50% -> 20%" 0 "compute share 50% -> 20%" -- $VG limit set --compute 20% --pid "$LNPID"
if expo_until "$LNPID" 'compute_limit_ratio\{.*gpu="0".*\} 0\.200$'; then ok "  ... applied: 0.200"
else bad "  the exporter shows the lowered share 0.200" "$EXPO"; fi
cli "  a bad share is refused (exit 2)" 2 '^$' -- $VG limit set --compute 5O% --pid "$LNPID"
expect_err_lines "  ... with one line that quotes it" "^vramguard: error: invalid compute share '5O%': not a percentage" 1
cli "  0% too (no limit is 'unlimited')" 2 '^$' -- $VG limit set --compute 0% --pid "$LNPID"
cli "  and SPEC plus a bad --compute changes neither" 2 '^$' -- $VG limit set 1G --compute 101% --pid "$LNPID"
req=$($VG limit show --json --pid "$LNPID" 2>&1 | python3 -c 'import json,sys
p = json.load(sys.stdin)["regions"][0]["processes"][0]
print(p["requested_compute"], p["compute_applied"], [d["compute_limit_permille"] for d in p["devices"]])' 2>&1)
if [ "$req" = "20% True [200]" ]; then ok "  nothing was written: limit show --json still has 20%, applied, 200 per mille"
else bad "  a refused share changes nothing (limit show --json)" "$req"; fi
if $VG limit show --pid "$LNPID" | grep -Eq "^  $LNPID +.* - +20%\$"; then ok "  limit show: a COMPUTE column, 20%"
else bad "  limit show shows the process's compute share" "$($VG limit show --pid "$LNPID" 2>&1)"; fi
cli "  unlimited removes it" 0 "compute share 20% -> unlimited" -- $VG limit set --compute unlimited --pid "$LNPID"
if expo_until "$LNPID" 'compute_limit_ratio' absent; then ok "  ... applied: no limit ratio, the GPU time still counted"
else bad "  the exporter shows no limit after unlimited" "$EXPO"; fi
wait "$LNPID"
FIG=$(grep -h '^figures:' "$CD/live.out")
judge "  its report: launches waited under the live shares, no limit at the end, the time since the first share charged" live \
	'd["compute_waits"] > 0 and d["compute_limit_permille"] is None and d["gpu_time_ns"] >= 0.5 * gpu_us * 1000'
cli "  a process that exited: the existing message" 1 '^$' -- $VG limit set --compute 50% --pid "$LNPID"
expect_err "  ... names it" "^vramguard: error: no process $LNPID\$"
wait "$L40"
FIG=$(grep -h '^figures:' "$CD/live40.out")
judge "  the report: 40 % from 'vramguard limit set', launches waited" live40 \
	'd["compute_limit_permille"] == 400 and d["compute_limit_source"] == "vramguard limit set" and d["compute_waits"] > 0'
if grep -q "^vramguard: warning: compute share set to '40%' by \`vramguard limit set\`\$" "$CD/live40.err"; then
	ok "  the process says so on stderr, once"
else bad "  the process's line on the change" "$(cat "$CD/live40.err")"; fi

echo "== a region-wide share: limit set --compute --shared, divided among the members that want the GPU"
# Two members of region cs, each with 3 s of kernels and no limit of its own: given 40 % for the region, each gets
# 20 % while both want the GPU (both are held back, so both always do).
pids=()
for i in 1 2; do
	env $FAKEENV $PRE VRAMGUARD_SHARED=cs VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$CD/cs$i.json" "$LN" kernels 2000 1500 10 \
		>"$CD/cs$i.out" 2>"$CD/cs$i.err" &
	pids+=($!)
done
for _ in $(seq 50); do [ "$($VG limit show --shared cs --json 2>/dev/null | grep -o '"pid"' | wc -l)" -ge 2 ] && break; sleep 0.1; done
cli "  limit set --compute 40% --shared: one line" 0 \
	"^vramguard: shared region 'cs' \(.*\): compute share none -> 40%, divided on each GPU among the members that use it at the same time; 2 processes apply it within a second\$" \
	-- $VG limit set --compute 40% --shared cs
both=
for _ in $(seq 60); do
	EXPO=$($VG exporter --once 2>/dev/null | grep '^vramguard_process_compute_limit_ratio')
	n=0
	for p in "${pids[@]}"; do grep -q "^vramguard_process_compute_limit_ratio{pid=\"$p\".*gpu=\"0\".*} 0\.200\$" <<<"$EXPO" && n=$((n + 1)); done
	[ "$n" = 2 ] && both=1 && break
	sleep 0.1
done
if [ -n "$both" ]; then ok "  both members want the GPU: each one's share is half the region's, 0.200"
else bad "  each member's share is 0.200 while both run" "$EXPO"; fi
shown=
for _ in $(seq 30); do
	CO=$($VG limit show --shared cs 2>&1)
	[ "$(grep -Ec ' - +20%$' <<<"$CO")" = 2 ] && shown=1 && break
	sleep 0.1
done
if [ -n "$shown" ] && grep -q '^  compute       40% (divided among the members that want a GPU at the same time)$' <<<"$CO"; then
	ok "  limit show: the region's 40%, and 20% in each member's COMPUTE"
else bad "  limit show shows the region's share and each member's part" "$CO"; fi
js=$($VG limit show --shared cs --json 2>&1 | python3 -c 'import json,sys
r = json.load(sys.stdin)["regions"][0]
print(r["compute_limit"], sorted(p["requested_compute"] is None for p in r["processes"]))' 2>&1)
if [ "$js" = "40% [True, True]" ]; then ok "  limit show --json: compute_limit 40%, no share of their own asked for"
else bad "  limit show --json has the region's compute_limit" "$js"; fi
cli "  a member's own share below its part wins: 10 % for the first" 0 "compute share .* -> 10%" \
	-- $VG limit set --compute 10% --pid "${pids[0]}"
if expo_until "${pids[0]}" 'compute_limit_ratio\{.*gpu="0".*\} 0\.100$'; then ok "  ... the exporter shows 0.100 for it"
else bad "  min(own 10 %, region 40 % / 2) = 0.100" "$EXPO"; fi
wait "${pids[@]}"
for i in 1 2; do
	FIG=$(grep -h '^figures:' "$CD/cs$i.out")
	judge "  member $i's report: launches waited" cs$i 'd["compute_waits"] > 0 and d["compute_limit_permille"] is not None'
done
FIG=$(grep -h '^figures:' "$CD/cs2.out")
judge "  the second member's share at its exit came from the region's (20 % or 40 %)" cs2 \
	'd["compute_limit_permille"] in (200, 400) and d["compute_limit_source"] == "vramguard limit set --shared"'
# The activity file is every user's to write: a member alone in region ca, given 40 %, with every other slot of the
# file planted to name its region and want the GPU (no process holds those slots' locks), then with garbage, then
# the file cut to nothing: its share stays 0.400 (never above what the region set, never divided by ghosts), and it
# ends normally.
env $FAKEENV $PRE VRAMGUARD_SHARED=ca VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$CD/ca.json" "$LN" kernels 2000 1800 10 \
	>"$CD/ca.out" 2>"$CD/ca.err" &
LNPID=$!
for _ in $(seq 50); do $VG limit set --compute 40% --shared ca >/dev/null 2>&1 && break; sleep 0.1; done
GSF=$(ls "$VRAMGUARD_SHM_DIR"/vramguard-gpu.* | head -n 1)
planted=
if expo_until "$LNPID" 'compute_limit_ratio\{.*gpu="0".*\} 0\.400$'; then
	planted=$(python3 - "$GSF" "$VG" "$LNPID" <<'PY' 2>&1
import struct, subprocess, sys, time
path, vg, pid = sys.argv[1:4]
def ratio():  # the member's share as the exporter shows it, a second after the file changed
    time.sleep(1.2)
    out = subprocess.run([vg, "exporter", "--once"], capture_output=True, text=True).stdout
    return [l.rsplit(" ", 1)[1] for l in out.splitlines()
            if l.startswith('vramguard_process_compute_limit_ratio{pid="%s"' % pid)]
with open(path, "r+b") as f:
    data = f.read(64 + 64 * 8)
    words = [struct.unpack_from("<II", data, 64 + 8 * i) if 64 + 8 * i + 8 <= len(data) else (0, 0) for i in range(64)]
    tag = next((w1 & 0x7fffffff for (_, w1) in words if w1), 0)
    if not tag:
        sys.exit("no slot names a region")
    seen = []
    for w in ((1, tag | 0x80000000), (0xffffffff, 0xffffffff)):
        for i in range(64):
            if words[i][1] & 0x7fffffff != tag:
                f.seek(64 + 8 * i); f.write(struct.pack("<II", *w))
        f.flush()
        seen.append(ratio())
    f.truncate(0)
    seen.append(ratio())
print(" ".join(",".join(r) or "none" for r in seen))
PY
)
fi
if [ "$planted" = "0.400 0.400 0.400" ]; then
	ok "  the activity file planted with ghosts of its region, then garbage, then cut: the share stays 0.400"
else bad "  a hostile activity file changes no share" "$planted"; fi
wait "$LNPID"
rc=$?
FIG=$(grep -h '^figures:' "$CD/ca.out")
judge "  ... and the member ends normally with the region's 40 %" ca \
	"$rc == 0 and d[\"compute_limit_permille\"] == 400 and d[\"compute_limit_source\"] == \"vramguard limit set --shared\""
# A process that joins a region whose share was set before it came: it reads the share at its start.
$VG region create late --limit unlimited >/dev/null 2>&1 && $VG limit set --compute 30% --shared late >/dev/null 2>&1 ||
	bad "  region create late; limit set --compute 30% --shared late" "$($VG limit show --shared late 2>&1)"
prog "late: launcher kernels 2000 200 10 (VRAMGUARD_SHARED=late)" $PRE VRAMGUARD_SHARED=late VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$CD/late.json" -- "$LN" kernels 2000 200 10
FIG=$(grep -h '^figures:' "$LOG" | tail -n 1)
judge "  a member started after the share was set gets it from its start (300 per mille, the region's source)" late \
	'd["compute_limit_permille"] == 300 and d["compute_limit_source"] == "vramguard limit set --shared" and d["compute_waits"] > 0'
$VG region rm late >/dev/null 2>&1
cli "  a region that does not exist: the existing message" 1 '^$' -- $VG limit set --compute 40% --shared nosuch
expect_err "  ... names it" "^vramguard: error: .*nosuch"


done_testing

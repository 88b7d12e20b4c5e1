#!/usr/bin/env bash
# Section attack: a local user against root's operations plane (docs/RELIABILITY.md, "Local users"). The commands
# root runs over a whole node (the exporter, the receiver, top, limit, region) read files that other users own and
# may change at any moment. First the worst moments, every run: tests/integration/shrink/shim.c truncates a region
# file right after the command maps it, before it reads it, before and after it takes the region's lock. Then a real
# second user, made for the section and removed after, truncating and restoring their region in a loop while root's
# commands run. Every check here failed on main before issue 25 (the commands died of SIGBUS, exit 135).
# Needs: make test-bins (region_tool, libvgshrink.so, shared_alloc, nvml_smi, srclines, waiter, vramguard); root, useradd/userdel and
# setpriv for the user.
source tests/lib/section.sh

AD=$W/shm
mkdir -p "$AD"
chmod 1777 "$AD"        # like /dev/shm: every user may create files there
RT=$PWD/$T/region_tool
SHIM=$PWD/$T/libvgshrink.so
KIDS=()
akill() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; KIDS=(); }
at_exit akill
ACURL=(curl -sS --max-time 10 --noproxy '*')

# A region NAME of SPEC in $AD with one member (a process that stays until the section ends), and a copy of its file
# to restore it from: $AD/NAME.saved.
amember() { # NAME SPEC [RUN-AS...]
	"${@:3}" "$RT" create "$AD/vramguard.$1" "$1" "$2" >>"$LOG" 2>&1
	: >"$AD/$1.member"
	"${@:3}" "$RT" join "$AD/vramguard.$1" dev=0 uuid=GPU-00000000-0000-0000-0000-0000000000a1 total=8G used=10M \
		>"$AD/$1.member" 2>&1 &
	KIDS+=($!)
	disown $!       # a member of a cut file dies of it (its own region, its owner's to lose): not news for the log
	wait_for "$AD/$1.member" '^ready' 10 || bad "attack: member of $1 did not start" "$(cat "$AD/$1.member")"
	cp "$AD/vramguard.$1" "$AD/$1.saved" && chmod 0644 "$AD/$1.saved"
}
# Written back in place, in one write and never truncated: cp's O_TRUNC would itself cut the file under its member.
restore() { dd if="$AD/$1.saved" of="$AD/vramguard.$1" bs=64M conv=notrunc status=none; }
# The command cut short: shrunk NAME FILE AT WANT_RC STDOUT_RE -- CMD...: the file is cut to 0 bytes at AT
shrunk() {
	local name=$1 file=$2 at=$3 want=$4 re=$5
	shift 6
	restore "$file"
	cli "$name" "$want" "$re" VG_SHRINK_FILE="$AD/vramguard.$file" VG_SHRINK_AT="$at" LD_PRELOAD="$SP$SHIM" -- "$@"
}

amember team 1G
amember other 2G
EXP=(--dir "$AD")

# ---- 1. the worst moments, every run ----
shrunk "exporter --once: a region cut right after it is mapped is skipped as changed" team map 0 \
	'segments_skipped_total\{reason="changed"\} 1$' -- "$VG" exporter --once "${EXP[@]}"
expect_err_lines "exporter --once: one line says which file and why" \
	"^vramguard: warning: exporter: skipped: .*vramguard\.team' was truncated while it was being read" 1
if grep -q 'region="other"' <<<"$CO"; then ok "exporter --once: the other region is still exported"
else bad "exporter --once: the other region is gone" "$(head -c 300 <<<"$CO")"; fi
for at in map lock locked; do
	shrunk "top --once: a region cut at '$at' is skipped, the rest shown" team $at 0 \
		'skipped this time, changed under vramguard' -- "$VG" top --once "${EXP[@]}"
	grep -Eq ' other *$' <<<"$CO" || bad "top --once ($at): the other region's member is not shown" "$CO"
	shrunk "limit set --shared: a region cut at '$at' fails with one line" team $at 1 '^$' -- \
		"$VG" limit set 3G --shared team "${EXP[@]}"
	expect_err_lines "limit set --shared ($at): the line says what to do" \
		"^vramguard: error: .*vramguard\.team.*(truncated while it was being checked|changed while the limit was being set.*run the command again)" 1
	shrunk "limit show: a region cut at '$at' is skipped, the rest shown" team $at 0 'shared region .other.' -- \
		"$VG" limit show "${EXP[@]}"
done
# `region`'s changes: cut while the command holds the lock (or, for map, as it opens the file).
for at in map locked; do
	for c in "rm team --force" "reset team" "evict team 4242 --force"; do
		# shellcheck disable=SC2086 # c is the command's words
		shrunk "region $c: the file cut at '$at' fails with one line" team $at 1 '^$' -- "$VG" region $c "${EXP[@]}"
		expect_err_lines "region ${c%% *} ($at): the line names the region and says what to do" \
			"^vramguard: error: (shared region .team. .*truncated or replaced by its owner|.*vramguard\.team' was truncated while it was being checked.*try again)" 1
	done
done
# With the lock held when the fault comes, the robust-mutex list of the thread points into the lost file: the next
# region's lock (other, cleaned after team) must still be taken and given back.
shrunk "top --once --shared team --shared other: team cut with its lock held, other cleaned and shown after it" \
	team locked 0 ' other *$' -- "$VG" top --once --shared team --shared other "${EXP[@]}"
restore team

# A process's own quota, through its control segment: cut while `limit set --pid` works on it (a new process each
# time: the cut takes the process's own file from it too).
for at in map locked; do
	: >"$AD/ctl.out"
	"$RT" control "$AD" dev=0 uuid=GPU-00000000-0000-0000-0000-0000000000a1 total=8G used=10M >"$AD/ctl.out" 2>&1 &
	CTL=$!
	KIDS+=("$CTL")
	disown $CTL
	if ! wait_for "$AD/ctl.out" '^ready' 10; then
		bad "attack: the control-segment member did not start" "$(cat "$AD/ctl.out")"
		continue
	fi
	CF=$(basename "$(ls "$AD"/vramguard.proc."$CTL".*)")
	cp "$AD/$CF" "$AD/${CF#vramguard.}.saved"
	shrunk "limit set --pid: its control segment cut at '$at' fails with one line" "${CF#vramguard.}" $at 1 '^$' -- \
		"$VG" limit set 1G --pid "$CTL" "${EXP[@]}"
	expect_err_lines "limit set --pid ($at): the line names the file" "^vramguard: error: .*vramguard\.proc\.$CTL" 1
	kill "$CTL" 2>/dev/null
	rm -f "$AD/$CF"
done

# The library reads the control segments of the other processes of its container (what NVML is told under the
# preload: docs/nvml.md); one cut at the first touch is skipped, the process lives.
source tests/integration/shp_lib.sh
SHD=$(shp_dir attack)
at_exit 'rm -rf "$SHD"'
shp_spawn n1 NVIDIA_GPU_MEMORY_LIMITS=1G
shp_send n1 init
shp_expect "a process of the container holds 300 MiB" n1 "alloc 300" '^= alloc 0 held 314572800$'
N1F=$(ls "$SHD"/vramguard.proc."${SHP_PID[n1]}".* 2>/dev/null | head -1)
prog "  nvidia-smi's way in the container, its control segment cut at the first touch: skipped (used 0), no crash" \
	"LD_PRELOAD=$SP$SHIM:$LIB" VRAMGUARD_SHM_DIR="$SHD" NVIDIA_GPU_MEMORY_LIMITS=1G VG_SHRINK_FILE="$N1F" \
	VG_SHRINK_AT=first -- "$T/nvml_smi" --cuda no 1024 0
{ kill -9 "${SHP_PID[n1]}"; wait; } 2>/dev/null

# Long-running: the exporter serves scrape after scrape while every read of team is cut; the receiver is cut while
# it raises team's budget, and answers the next alert.
if ! command -v curl >/dev/null; then
	skip "attack: the exporter and the receiver, serving" "curl is not installed (scripts/setup.sh installs it)"
else
	restore team
	: >"$AD/exp.err"
	env VG_SHRINK_FILE="$AD/vramguard.team" VG_SHRINK_AT=map VG_SHRINK_ONCE=0 LD_PRELOAD="$SP$SHIM" \
		"$VG" exporter --listen 127.0.0.1:0 "${EXP[@]}" 2>"$AD/exp.err" &
	EXPID=$!
	KIDS+=("$EXPID")
	URL=
	wait_for "$AD/exp.err" 'http://127\.0\.0\.1:[0-9]+' 10 && URL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+' "$AD/exp.err" | head -1)
	n=0
	for i in 1 2 3 4 5; do
		restore team
		"${ACURL[@]}" -o "$AD/scrape.$i" "$URL/metrics" 2>>"$LOG" && grep -q 'region="other"' "$AD/scrape.$i" && n=$((n + 1))
	done
	if [ "$n" = 5 ] && kill -0 "$EXPID" 2>/dev/null &&
		grep -q 'segments_skipped_total{reason="changed"} 5$' "$AD/scrape.5"; then
		ok "exporter --listen: 5 scrapes answered while team is cut under each read; 5 skipped as changed"
	else
		bad "exporter --listen under a cut region" "$n of 5 answered; $(grep changed "$AD/scrape.5" 2>/dev/null); $(tail -3 "$AD/exp.err")"
	fi
	if [ "$(grep -c 'was truncated' "$AD/exp.err")" = 1 ]; then ok "exporter --listen: the reason said once, not per scrape"
	else bad "exporter --listen: the reason said $(grep -c 'was truncated' "$AD/exp.err") times" "$(tail -3 "$AD/exp.err")"; fi

	restore team
	(umask 077 && echo "tok-$RANDOM$RANDOM" >"$AD/token")
	: >"$AD/rcv.err"
	env VG_SHRINK_FILE="$AD/vramguard.team" VG_SHRINK_AT=locked LD_PRELOAD="$SP$SHIM" "$VG" autoscale --dir "$AD" \
		--listen 127.0.0.1:0 --token-file "$AD/token" --ceiling 4G --step 1G --cooldown 0s 2>"$AD/rcv.err" &
	RPID=$!
	KIDS+=("$RPID")
	RURL=
	wait_for "$AD/rcv.err" 'listening on http://127\.0\.0\.1:[0-9]+/' 10 &&
		RURL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+' "$AD/rcv.err" | head -1)
	apost() {
		"${ACURL[@]}" -o "$AD/resp" -w '%{http_code}' -H "Authorization: Bearer $(cat "$AD/token")" \
			-H 'Content-Type: application/json' --data-binary "$1" "$RURL/"
	}
	PAY='{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"VramguardRegionNearBudget","region":"team","gpu":"0"}}]}'
	s1=$(apost "$PAY")
	restore team
	s2=$(apost "$PAY")
	# Read without cleaning (the member of team may have died of the cut: its region is its own to lose).
	limit=$("$VG" exporter --once "${EXP[@]}" 2>>"$LOG" | sed -n 's/^vramguard_region_budget_bytes{region="team".*} //p')
	if kill -0 "$RPID" 2>/dev/null && [ -n "$s1" ] && [ "$s2" = 200 ] && [ "$limit" = $((2 << 30)) ]; then
		ok "autoscale: cut while raising team (status $s1), alive, and the next alert raises it 1G -> 2G"
	else
		bad "autoscale under a cut region" "statuses '$s1' '$s2', limit '$limit'; $(tail -3 "$AD/rcv.err"; head -c 300 "$AD/resp")"
	fi
fi

# ---- 2. a real second user, made for the section (useradd) and removed after, against root's commands ----
ATK=vgatk$$
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
	skip "attack: a second user against root's commands" "needs root, useradd and setpriv"
elif ! { userdel "$ATK" 2>/dev/null; useradd --system --no-create-home --shell /usr/sbin/nologin "$ATK" 2>>"$LOG"; }; then
	skip "attack: a second user against root's commands" "useradd failed: $(tail -1 "$LOG")"
else
	at_exit "userdel $ATK 2>/dev/null"
	AU=$(id -u "$ATK")
	AG=$(id -g "$ATK")
	AS=(setpriv --reuid="$AU" --regid="$AG" --clear-groups)
	# The system's interpreter: the user may not reach the caller's (a pyenv under /root).
	APY=/usr/bin/python3

	# 2a. Their region, cut to nothing and written back as fast as it goes while root runs its commands.
	amember mine 1G "${AS[@]}"
	rm -f "$AD/stop"
	"${AS[@]}" "$APY" -c '
import os, sys
path, saved, stop = sys.argv[1:4]
data = open(saved, "rb").read()
n = 0
fd = os.open(path, os.O_RDWR)
while not os.path.exists(stop):
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    n += 1
print(n)' "$AD/vramguard.mine" "$AD/mine.saved" "$AD/stop" >"$AD/attack.count" 2>>"$LOG" &
	APID=$!
	deaths=0 runs=0
	for i in $(seq 1 40); do
		for c in "exporter --once" "top --once" "limit show" "limit set 2G --shared mine"; do
			# shellcheck disable=SC2086 # c is the command's words
			timeout 30 "$VG" $c "${EXP[@]}" >/dev/null 2>>"$W/attack.err"
			rc=$?
			runs=$((runs + 1))
			[ "$rc" -ge 124 ] && { deaths=$((deaths + 1)); echo "run $i '$c': exit $rc" >>"$LOG"; }
		done
	done
	touch "$AD/stop"
	wait "$APID"
	cuts=$(cat "$AD/attack.count")
	if [ "$deaths" = 0 ] && [ "${cuts:-0}" -gt 0 ]; then
		ok "$ATK cut their region $cuts times under $runs of root's commands: none died or hung"
	else
		bad "root's commands under $ATK's truncation loop" "$deaths of $runs died or hung; cuts '$cuts'"
	fi

	# 2b. Names that are not UTF-8: a job of theirs whose command line is Japanese text cut by the slot's 79 bytes,
	# and a region of theirs named with a stray byte. Root's exposition stays one Prometheus accepts.
	UD=$W/utf8
	mkdir -p "$UD" && chown "$AU:$AG" "$UD"
	"${AS[@]}" "$RT" create "$UD/vramguard.odd" "$(printf 'te\xffam')" 1G >>"$LOG" 2>&1
	: >"$UD/w.out" && chown "$AU" "$UD/w.out"
	"${AS[@]}" env "LD_LIBRARY_PATH=$PWD/$T" VRAMGUARD_SHM_DIR="$UD" VRAMGUARD_REPORT=off "$APY" -c 'import os, sys
os.execve(sys.argv[2], sys.argv[3:], dict(os.environ, LD_PRELOAD=sys.argv[1]))' "$SP$LIB" "$PWD/$T/waiter" \
		"xx$(printf '日本語%.0s' $(seq 10))" "$UD/stop" ctx 60 >"$UD/w.out" 2>>"$LOG" &
	UW=$!
	if wait_for "$UD/w.out" ready 30; then
		"$VG" exporter --once --dir "$UD" >"$UD/m.prom" 2>>"$LOG"
		ubad=
		if command -v promtool >/dev/null && ! uo=$(promtool check metrics <"$UD/m.prom" 2>&1); then ubad="promtool: $uo"; fi
		python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$UD/m.prom" 2>>"$LOG" || ubad="$ubad not UTF-8"
		if [ -z "$ubad" ] && grep -aq "command=\"xx$(printf '日本語%.0s' $(seq 8))日\"" "$UD/m.prom" &&
			grep -aq "region=\"te$(printf '\xef\xbf\xbd')am\"" "$UD/m.prom"; then
			ok "$ATK's Japanese command line and \\xff region name: root's exposition is UTF-8 (cut at a character; U+FFFD)${ubad:+}$(command -v promtool >/dev/null && echo ', promtool check metrics clean')"
		else
			bad "root's exposition with $ATK's names" "$ubad $(grep -a -o 'command="[^"]*"\|region="[^"]*"' "$UD/m.prom" | sort -u | head -4)"
		fi
	else
		bad "attack: $ATK's job did not get ready" "$(tail -3 "$LOG")"
	fi
	touch "$UD/stop"
	wait "$UW" 2>/dev/null

	# 2d. A report of theirs whose module is a FIFO of theirs: root's `report --lines` ends, with one line.
	RD2=$W/theirs
	mkdir -p "$RD2" && chown "$AU:$AG" "$RD2"
	env "LD_LIBRARY_PATH=$PWD/$T" "LD_PRELOAD=$SP$LIB" VRAMGUARD_REPORT_FORMAT=json VRAMGUARD_REPORT="$W/r.json" \
		"$T/srclines" >>"$LOG" 2>&1
	chmod 0644 "$W/r.json"
	"${AS[@]}" mkfifo "$RD2/lib.fifo"
	"${AS[@]}" "$APY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
old = r["modules"][0]["path"]
r["modules"][0]["path"] = sys.argv[2]
for s in r["sites"]:
    for f in s["frames"]:
        if f["module"] == old:
            f["module"] = sys.argv[2]
json.dump(r, open(sys.argv[3], "w"))' "$W/r.json" "$RD2/lib.fifo" "$RD2/r.json" 2>>"$LOG"
	cli "$ATK's report naming their FIFO as a module: root's report --lines ends, exit 0" 0 'lib\.fifo' -- \
		timeout 20 "$VG" report --lines "$RD2/r.json"
	expect_err_lines "  one line says why" "^vramguard: warning: --lines reads only regular files: 1 file refused \(.*lib\.fifo.* is a FIFO\)" 1

	# 2e. Connections of theirs that idle, trickle or never read, at root's exporter and receiver: a scrape and an
	# alert's POST are still answered within 5 s (tests/integration/http_clients.py, as tests/sections/http.sh).
	if command -v curl >/dev/null && [ -n "${URL:-}" ] && [ -n "${RURL:-}" ] && kill -0 "$EXPID" "$RPID" 2>/dev/null; then
		cp tests/integration/http_clients.py "$W/http_clients.py" && chmod 0644 "$W/http_clients.py"
		"${AS[@]}" "$APY" "$W/http_clients.py" flood 127.0.0.1 "${URL##*:}" --idle 24 --trickle 24 --noread 16 \
			--within 5 >"$W/flood.out" 2>&1
		frc=$?
		if [ "$frc" = 0 ]; then ok "$ATK's 64 idle, trickling and unread connections: root's exporter answers a scrape: $(head -1 "$W/flood.out")"
		else bad "root's exporter under $ATK's connections" "$(cat "$W/flood.out")"; fi
		"${AS[@]}" "$APY" "$W/http_clients.py" flood 127.0.0.1 "${RURL##*:}" --idle 32 --trickle 32 --within 5 \
			>"$W/flood.out" 2>&1
		frc=$?
		if [ "$frc" = 0 ]; then ok "$ATK's 64 idle and trickling connections: root's receiver answers a GET /metrics: $(head -1 "$W/flood.out")"
		else bad "root's receiver under $ATK's connections" "$(cat "$W/flood.out")"; fi
	else
		skip "attack: $ATK's connections at root's servers" "curl missing, or the exporter or the receiver of part 1 is not running"
	fi

	# 2c. A collector directory their group may write: a symlink at every temporary name root's --textfile could
	# pick by its PID (the old name was TEXTFILE.PID.tmp), pointing at a file of root's.
	TD=$W/collector
	mkdir -p "$TD" && chgrp "$AG" "$TD" && chmod 0775 "$TD"
	printf "root's\n" >"$W/secret" && chmod 0600 "$W/secret"
	NEXT=$(sh -c 'echo $$')
	"${AS[@]}" "$APY" -c 'import os, sys
for p in range(int(sys.argv[3]), int(sys.argv[3]) + 2000):
    os.symlink(sys.argv[1], "%s/vg.prom.%d.tmp" % (sys.argv[2], p))' "$W/secret" "$TD" "$NEXT" 2>>"$LOG"
	cli "$ATK's symlinks at root's --textfile temporary names: written" 0 '^$' -- "$VG" exporter --dir "$AD" \
		--textfile "$TD/vg.prom" --once
	if [ "$(cat "$W/secret")" = "root's" ] && [ "$(stat -c %a "$W/secret")" = 600 ] && [ ! -L "$TD/vg.prom" ]; then
		ok "  root's file kept its content and mode 0600; vg.prom is a file of its own"
	else bad "  root's file was written through a planted link" "$(stat -c '%a %s' "$W/secret"; ls -la "$TD" | head -5)"; fi
fi

done_testing

#!/usr/bin/env bash
# Section pidns: jobs in PID namespaces of their own, as in containers (needs root and `unshare --pid`): each
# registers the PID it sees, 1, so the node's tools must find it by its PID here and its start time. `limit set
# --pid` and `limit show --pid` with the PID here reach that job and no other; `--pid 1` reaches none of them; the
# exporter's pid label is the PID here; the autoscale receiver raises the job a process alert names; and a job whose
# control segment's name is taken by another namespace's PID 1 that started in the same clock tick gets one of its
# own. Needs: make test-bins (grower, vramguard), curl.
source tests/lib/section.sh

if [ "$(id -u)" != 0 ] || ! unshare --pid --fork --kill-child --mount-proc true 2>/dev/null || ! command -v curl >/dev/null; then
	skip "PID namespaces: limit set/show, the exporter, autoscale" "needs root, unshare --pid and curl"
else
	ND=$(mktemp -d /tmp/vg-pidns.XXXXXX)
	NJD=$ND/shm
	mkdir "$NJD"
	NPIDS=()
	ncleanup() { touch "$ND/stop"; for p in "${NPIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; NPIDS=(); }
	at_exit 'ncleanup; rm -rf "$ND"'
	# nhost NSPID-OF-UNSHARE: the PID here of the namespace's PID 1 (unshare --fork's child)
	nhost() { pgrep -P "$1" | head -1; }
	# njob NAME [ENV...]: a job that is PID 1 of its own PID namespace; after it starts, $NH is its PID here. It
	# waits for $ND/go.NAME before it execs the preloaded job (exec keeps its PID and start time).
	njob() {
		unshare --pid --fork --kill-child --mount-proc sh -c 'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"' \
			"$ND/go.$1" env "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T" VRAMGUARD_SHM_DIR="$NJD" \
			VRAMGUARD_REPORT=off NVIDIA_GPU_MEMORY_LIMITS=100M "${@:2}" "$T/grower" "$ND/stop" 90 20 60 \
			>"$ND/$1.out" 2>"$ND/$1.err" &
		NPIDS+=($!)
		NH=
		local end=$((SECONDS + 30))      # a bound on a hang
		until NH=$(nhost $!); [ -n "$NH" ] || [ "$SECONDS" -gt "$end" ]; do sleep 0.025; done
	}
	nquota() { # PID-HERE: how many processes limit show --pid shows, the PID it records, its quota on GPU 0 (bytes)
		"$VG" limit show --json --pid "$1" --dir "$NJD" 2>>"$LOG" | python3 -c 'import json,sys
p=[p for r in json.load(sys.stdin)["regions"] for p in r["processes"]]
print(len(p), p[0]["pid"], p[0]["devices"][0]["quota_bytes"])'
	}
	njob d
	ND_=$NH
	touch "$ND/go.d"
	wait_for "$ND/d.out" '^denied' || bad "PID namespaces: job d did not start" "$(cat "$ND/d.err")"
	sleep 0.05      # not in d's clock tick: that case is the last check's
	njob e
	NE=$NH
	touch "$ND/go.e"
	wait_for "$ND/e.out" '^denied' || bad "PID namespaces: job e did not start" "$(cat "$ND/e.err")"
	if [ -n "$ND_" ] && [ -n "$NE" ] && [ "$(nquota "$ND_")" = "1 1 104857600" ] &&
		"$VG" limit set 150M --pid "$ND_" --dir "$NJD" >"$ND/set.out" 2>>"$LOG" &&
		wait_for "$ND/d.out" '^granted 20 MiB more' && [ "$(nquota "$ND_")" = "1 1 157286400" ] &&
		[ "$(nquota "$NE")" = "1 1 104857600" ] && ! grep -q '^granted' "$ND/e.out"; then
		ok "PID namespaces: two jobs, each PID 1 in its own: 'limit set 150M --pid $ND_' (its PID here) raises that one (its refused allocation succeeds), not the other; limit show --pid shows each its own row"
	else bad "PID namespaces: limit set --pid with the PID here" "d $ND_ e $NE; $(nquota "$ND_") / $(nquota "$NE"); $(cat "$ND/set.out" "$ND/d.out")"; fi
	"$VG" limit set 1G --pid 1 --dir "$NJD" >"$ND/set1.out" 2>"$ND/set1.err"
	[ $? = 1 ] && grep -q '^vramguard: error: process 1 (.*) is not under vramguard' "$ND/set1.err" &&
		[ "$(nquota "$NE")" = "1 1 104857600" ] &&
		ok "  'limit set --pid 1' names this namespace's PID 1, which is not under vramguard: refused, neither job changed" ||
		bad "  --pid 1" "$(cat "$ND/set1.err")"
	"$VG" exporter --once --dir "$NJD" >"$ND/m.prom" 2>>"$LOG"
	grep -q "^vramguard_process_quota_bytes{pid=\"$ND_\",.*} 157286400$" "$ND/m.prom" &&
		grep -q "^vramguard_process_quota_bytes{pid=\"$NE\",.*} 104857600$" "$ND/m.prom" &&
		! grep -q '^vramguard_process_quota_bytes{pid="1",' "$ND/m.prom" &&
		ok "  the exporter's pid labels are their PIDs here ($ND_, $NE), not 1" ||
		bad "  exporter pid labels" "$(grep quota_bytes "$ND/m.prom")"
	# The receiver beside the exporter takes the alert's pid label as the exporter wrote it.
	"$VG" autoscale --dir "$NJD" --socket "$ND/as.sock" --ceiling 1G --step 50M 2>"$ND/as.err" &
	NPIDS+=($!)
	wait_for "$ND/as.err" 'listening on unix:'
	ncmd=$(sed -n "s/^vramguard_process_quota_bytes{pid=\"$NE\",command=\"\([^\"]*\)\".*/\1/p" "$ND/m.prom")
	curl -sS --max-time 10 --unix-socket "$ND/as.sock" -o "$ND/as.resp" --data-binary "{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$NE\",\"command\":\"$ncmd\",\"region\":\"\",\"gpu\":\"0\"}}]}" http://localhost/ 2>>"$LOG"
	wait_for "$ND/e.out" '^granted 20 MiB more' && grep -q "raised: .*process $NE (.*) GPU 0: limit 100.00 MiB -> 150.00 MiB" "$ND/as.err" &&
		[ "$(nquota "$ND_")" = "1 1 157286400" ] &&
		ok "  autoscale: a process alert with pid=\"$NE\" raises that job 100 -> 150 MiB; it gets its memory" ||
		bad "  autoscale with PID namespaces" "$(cat "$ND/as.resp" "$ND/as.err" "$ND/e.out")"
	# Two such jobs in one shared region: their slots both record PID 1; --pid with the PID here shows and sets one.
	njob g VRAMGUARD_SHARED=nsteam VRAMGUARD_SHARED_LIMITS=1G
	NG=$NH
	touch "$ND/go.g"
	wait_for "$ND/g.out" '^(denied|granted)'
	sleep 0.05
	njob h VRAMGUARD_SHARED=nsteam VRAMGUARD_SHARED_LIMITS=1G
	NHH=$NH
	touch "$ND/go.h"
	wait_for "$ND/h.out" '^(denied|granted)'
	nreq() { # PID-HERE: how many rows limit show --pid shows, and the requested limit of the first
		"$VG" limit show --json --pid "$1" --dir "$NJD" 2>>"$LOG" | python3 -c 'import json,sys
p=[p for r in json.load(sys.stdin)["regions"] for p in r["processes"]]
print(len(p), p[0]["requested_limit"])'
	}
	if "$VG" limit set 80M --pid "$NG" --dir "$NJD" >"$ND/setg.out" 2>>"$LOG" && [ "$(nreq "$NG")" = "1 80M" ] &&
		[ "$(nreq "$NHH")" = "1 None" ] && grep -q "process $NG (PID 1 in its own PID namespace) .* in shared region 'nsteam'" "$ND/setg.out"; then
		ok "  two of them in one shared region (both slots record PID 1): limit set/show --pid $NG reach that one's slot only"
	else bad "  one shared region" "$(nreq "$NG") / $(nreq "$NHH"); $(cat "$ND/setg.out")"; fi
	# region evict: PID 1 is recorded by both slots (and names this namespace's init, no member): even with --force
	# it evicts neither; the PID here of one (as limit set --pid takes it) names that one only.
	"$VG" region evict nsteam 1 --force --dir "$NJD" >"$ND/ev1.out" 2>"$ND/ev1.err"
	nrc=$?
	if [ "$nrc" = 1 ] && [ ! -s "$ND/ev1.out" ] && [ "$(wc -l <"$ND/ev1.err")" = 1 ] &&
		grep -q "^vramguard: error: region evict: 2 members of shared region 'nsteam' record PID 1 (slot .*): which one is meant cannot be told; nothing was evicted (pick one with --slot N" "$ND/ev1.err" &&
		[ "$(nreq "$NG" 2>>"$LOG")" = "1 80M" ] && [ "$(nreq "$NHH" 2>>"$LOG")" = "1 None" ]; then
		ok "  region evict nsteam 1 --force (both slots record PID 1): evicts neither, one line saying what to do"
	else bad "  region evict of an ambiguous PID 1" "exit $nrc; $(cat "$ND/ev1.out" "$ND/ev1.err"; nreq "$NG" 2>&1 | tail -1; nreq "$NHH" 2>&1 | tail -1)"; fi
	"$VG" region evict nsteam "$NHH" --force --dir "$NJD" >"$ND/ev2.out" 2>"$ND/ev2.err"
	nrc=$?
	if [ "$nrc" = 0 ] && grep -q "^vramguard: evicted process $NHH (PID 1 in its own PID namespace; .*, alive) from shared region 'nsteam'" "$ND/ev2.out" &&
		[ "$(nreq "$NG" 2>>"$LOG")" = "1 80M" ]; then
		ok "  region evict nsteam $NHH --force (its PID here): that member is evicted, the other keeps its slot"
	else bad "  region evict by the PID here" "exit $nrc; $(cat "$ND/ev2.out" "$ND/ev2.err"; nreq "$NG" 2>&1 | tail -1)"; fi
	# Same tick: a live member of another namespace holds vramguard.proc.1.START for the job's own start time
	# (region_tool as PID 1 with that start); the job takes vramguard.proc.1.START.NS instead and is reachable.
	njob f
	NF=$NH
	nstart=$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$NF/stat")
	REGION_TOOL_AS=1:$nstart "$T/region_tool" control "$NJD" dev=0 total=1G quota=64M used=1M >"$ND/squat.out" 2>&1 &
	NPIDS+=($!)
	wait_for "$ND/squat.out" '^ready'
	touch "$ND/go.f"
	wait_for "$ND/f.out" '^denied'
	nns=$(readlink "/proc/$NF/ns/pid" | tr -dc 0-9)
	if [ -e "$NJD/vramguard.proc.1.$nstart" ] && [ -e "$NJD/vramguard.proc.1.$nstart.$nns" ] &&
		! grep -q 'no control segment' "$ND/f.err" &&
		"$VG" limit set 150M --pid "$NF" --dir "$NJD" >>"$LOG" 2>&1 && wait_for "$ND/f.out" '^granted 20 MiB more' &&
		! grep -q '^applied' "$ND/squat.out"; then
		ok "  same clock tick: the job finds vramguard.proc.1.$nstart taken by another namespace's PID 1 and makes vramguard.proc.1.$nstart.$nns; limit set --pid $NF reaches it, not the other"
	else bad "  same clock tick" "$(ls "$NJD"; cat "$ND/f.err" "$ND/f.out" "$ND/squat.out")"; fi
fi
done_testing

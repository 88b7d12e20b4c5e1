#!/usr/bin/env bash
# Section exporter: `vramguard exporter`: the exposition's format and escaping (promtool check metrics), OpenMetrics
# negotiation, HTTP (404, a stuck client), members appearing and vanishing during scrapes, a corrupt file ignored
# with one line, the textfile written atomically, and a real Prometheus server scraping it while processes under the
# preload allocate against the test double. Members are region_tool (no CUDA) or the waiter under the preload.
# Needs: make test-bins (region_tool, waiter, vramguard); prometheus, promtool and curl (skipped without them).
source tests/lib/section.sh

XT=$T/region_tool
XSD=$(mktemp -d /tmp/vg-exporter.XXXXXX)
chmod 755 "$XSD"
XU=GPU-cccccccc-1111-2222-3333-444444444444
XPIDS=()
xcleanup() { for p in "${XPIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; XPIDS=(); }
xmember() { # OUTFILE ARGS...: a region_tool member, ready; its pid in $XM
	: >"$1"                 # empty before wait_for looks: only this member's "ready" counts
	"$XT" "${@:2}" >"$1" 2>>"$LOG" &
	XM=$!
	XPIDS+=("$XM")
	wait_for "$1" '^ready' || bad "exporter: region_tool $2 did not get ready" "$(cat "$1")"
}
# Start the exporter on a free port of 127.0.0.1 (port 0; it says which): its pid in $XE, the URL in $XURL.
xserve() { # ERRFILE [ARGS...]
	: >"$1"
	env -u VRAMGUARD_SHARED "$VG" exporter --listen 127.0.0.1:0 "${@:2}" 2>"$1" &
	XE=$!
	XPIDS+=("$XE")
	XURL=
	if wait_for "$1" 'listening on http://127\.0\.0\.1:[0-9]+/metrics'; then
		XURL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+/metrics' "$1" | head -1)
	else bad "exporter: did not start" "$(cat "$1")"; fi
}
XCURL=(curl -sS --max-time 10 --noproxy '*')
# Every sample's family has HELP and TYPE before it (text format: the family of name_total is name_total).
xhelp_type() { # FILE
	awk '/^# HELP /{h[$3]=1} /^# TYPE /{t[$3]=1} /^[a-z]/{n=$0; sub(/[{ ].*/, "", n);
		if (!h[n] || !t[n]) { print "no HELP/TYPE before " n; bad=1 } } END { exit bad }' "$1"
}

"$XT" create "$XSD/vramguard.job" job 8G >/dev/null
xmember "$XSD/a.out" join "$XSD/vramguard.job" dev=0 uuid=$XU total=16G quota=4G used=1G peak=2G denied=3
XA=$XM
xmember "$XSD/c.out" control "$XSD" dev=0 uuid=$XU total=16G quota=2G used=512M
# A member of another PID namespace whose command has a quote, a backslash and a newline.
"$XT" plant "$XSD/vramguard.job" 999999 64M "$(printf 'we"ird\\tool\nline2')" >/dev/null

cli "help exporter documents its options and the default address" 0 '127\.0\.0\.1:9847' -- $VG help exporter
cli "exporter --once: the exposition" 0 '^vramguard_up 1$' VRAMGUARD_SHM_DIR="$XSD" VRAMGUARD_SHARED= -- \
	$VG exporter --once
printf '%s\n' "$CO" >"$XSD/m.prom"
if grep -Eq "^vramguard_process_used_bytes\\{pid=\"$XA\",command=\"region_tool join\",region=\"job\",gpu=\"0\",gpu_uuid=\"$XU\",container=\"[0-9a-f]*\",pod=\"[^\"]*\"\\} 1073741824\$" "$XSD/m.prom" &&
	grep -q "^vramguard_process_quota_bytes{pid=\"$XA\",.*} 4294967296\$" "$XSD/m.prom" &&
	grep -q "^vramguard_process_denials_total{pid=\"$XA\",command=\"region_tool join\",region=\"job\",container=\"[0-9a-f]*\",pod=\"[^\"]*\"} 3\$" "$XSD/m.prom" &&
	grep -q '^vramguard_region_budget_bytes{region="job",gpu="0",gpu_uuid="'$XU'"} 8589934592$' "$XSD/m.prom" &&
	grep -q '^vramguard_region_members{region="job"} 2$' "$XSD/m.prom" &&
	grep -q '^vramguard_process_used_bytes{pid="[0-9]*",command="region_tool control",region="",.*} 536870912$' "$XSD/m.prom"; then
	ok "  used, quota, denials per process; budget and members per region; a control segment with region \"\""
else bad "  the samples" "$(grep -v '^#' "$XSD/m.prom" | head -8)"; fi
# No fake zeros: nothing published the allocations' share yet (region_tool does not), so no sample at all.
if ! grep -q '^vramguard_process_allocated_bytes{' "$XSD/m.prom"; then ok "  a figure not published is absent, not 0"
else bad "  allocated_bytes should be absent" "$(grep allocated "$XSD/m.prom")"; fi
if grep -qF 'command="we\"ird\\tool\nline2",region="job"' "$XSD/m.prom"; then
	ok "  a command with a quote, a backslash and a newline is escaped"
else bad "  escaping" "$(grep -a 999999 "$XSD/m.prom" | head -2)"; fi
if xo=$(xhelp_type "$XSD/m.prom"); then ok "  HELP and TYPE before every family's samples"
else bad "  HELP/TYPE" "$xo"; fi
if command -v promtool >/dev/null; then
	if xo=$(promtool check metrics <"$XSD/m.prom" 2>&1); then ok "  promtool check metrics: clean"
	else bad "  promtool check metrics" "$xo"; fi
	# The check can fail: the same exposition with the command's quote left unescaped is refused.
	if ! sed 's/we\\"ird/we"ird/' "$XSD/m.prom" | promtool check metrics >/dev/null 2>&1; then
		ok "  (promtool refuses the same exposition with the quote unescaped: the check can fail)"
	else bad "  promtool accepted an unescaped quote"; fi
else skip "  promtool check metrics" "promtool is not installed (scripts/setup.sh installs prometheus)"; fi
# ---- labels that are not UTF-8 (Prometheus refuses the whole scrape for one): the library cuts a command line at a
# character boundary where it stores it, and the exporter writes every other byte that is not UTF-8 as U+FFFD ----
XUD=$(mktemp -d /tmp/vg-exporter-utf8.XXXXXX)
# A job under the preload whose command line is 'xx' and 30 three-byte characters (argv[0], set by execve): its slot
# keeps 79 bytes, which would end 2 bytes into the 26th character; its POD_NAME (the pod label) has 60 of them and a
# stray byte \xff. A region whose stored name has a \xff, a member whose command has one, a GPU UUID with one.
xja=xx$(printf '日本語%.0s' $(seq 10))
env -u NVIDIA_GPU_MEMORY_LIMITS -u VRAMGUARD_SHARED "LD_LIBRARY_PATH=$PWD/$T" VRAMGUARD_SHM_DIR="$XUD" \
	VRAMGUARD_REPORT=off POD_NAME="$(printf '日本語%.0s' $(seq 20))$(printf '\xff')" python3 -c 'import os, sys
os.execve(sys.argv[2], sys.argv[3:], dict(os.environ, LD_PRELOAD=sys.argv[1]))' "$SP$LIB" "$T/waiter" "$xja" \
	"$XUD/stop" ctx 60 >"$XUD/w.out" 2>>"$LOG" &
xuw=$!
wait_for "$XUD/w.out" ready || bad "exporter: the job with a Japanese command line did not get ready"
"$XT" create "$XUD/vramguard.odd" "$(printf 'te\xffam')" 1G >>"$LOG" 2>&1
xmember "$XUD/o.out" join "$XUD/vramguard.odd" dev=0 "uuid=$(printf 'GPU-\xff')" total=16G used=1M
xuo=$XM
"$XT" plant "$XUD/vramguard.odd" 999998 2M "$(printf 'odd\xffcmd')" >>"$LOG" 2>&1
VRAMGUARD_SHM_DIR="$XUD" VRAMGUARD_SHARED='' "$VG" exporter --once >"$XUD/m.prom" 2>>"$LOG"
"$VG" exporter --dir "$XUD" --textfile "$XUD/tf.prom" --once 2>>"$LOG"
xbad=
for f in m.prom tf.prom; do
	if command -v promtool >/dev/null && ! xo=$(promtool check metrics <"$XUD/$f" 2>&1); then xbad="$xbad$f: $xo"$'\n'; fi
	python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$XUD/$f" 2>>"$LOG" ||
		xbad="$xbad$f: not UTF-8"$'\n'
done
xfd=$(printf '\xef\xbf\xbd')
if [ -z "$xbad" ]; then ok "exporter: labels with bytes that are not UTF-8 (command, region, gpu_uuid, pod): promtool check metrics clean, --once and --textfile"
else bad "exporter: an exposition Prometheus would refuse whole" "$xbad$(grep -a 'vramguard_process_used_bytes{' "$XUD/m.prom")"; fi
if grep -aq "command=\"xx$(printf '日本語%.0s' $(seq 8))日\"" "$XUD/m.prom" && grep -aq "region=\"te${xfd}am\"" "$XUD/m.prom" &&
	grep -aq "command=\"odd${xfd}cmd\"" "$XUD/m.prom" && grep -aq "gpu_uuid=\"GPU-${xfd}\"" "$XUD/m.prom" &&
	grep -aq "pod=\"$(printf '日本語%.0s' $(seq 14))\"" "$XUD/m.prom"; then
	ok "  the command line cut where the library stores it, at the last whole character (79 bytes: 'xx' and 25 of 30); a stray byte as U+FFFD; POD_NAME cut at a whole character"
else bad "  the labels" "$(grep -a -o 'command="[^"]*"\|region="[^"]*"\|gpu_uuid="[^"]*"\|pod="[^"]*"' "$XUD/m.prom" | sort -u)"; fi
touch "$XUD/stop"
kill "$xuo"
wait "$xuw" "$xuo" 2>/dev/null
rm -rf "$XUD"

cli "exporter: bad --listen" 1 '^$' -- $VG exporter --listen nope
expect_err_lines "  one line naming the option and the value" "^vramguard: error: exporter: invalid --listen 'nope' " 1
cli "exporter: --interval without --textfile" 2 '^$' -- $VG exporter --interval 1

# ---- HTTP ----
if ! command -v curl >/dev/null; then
	skip "exporter: HTTP" "curl is not installed (scripts/setup.sh installs it)"
	XURL=
else xserve "$XSD/e1.err" --dir "$XSD"; fi
if [ -n "$XURL" ]; then
	xo=$("${XCURL[@]}" -D "$XSD/h1" "$XURL")
	if grep -qi '^Content-Type: text/plain; version=0\.0\.4' "$XSD/h1" && grep -q '^vramguard_up 1$' <<<"$xo" &&
		! grep -q '^# EOF' <<<"$xo"; then ok "exporter: GET /metrics: text format 0.0.4"
	else bad "exporter: GET /metrics" "$(cat "$XSD/h1"; head -3 <<<"$xo")"; fi
	xo=$("${XCURL[@]}" -D "$XSD/h2" -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5' "$XURL")
	if grep -qi '^Content-Type: application/openmetrics-text; version=1\.0\.0' "$XSD/h2" &&
		[ "$(tail -n 1 <<<"$xo")" = "# EOF" ] && grep -q '^# TYPE vramguard_process_denials counter$' <<<"$xo" &&
		grep -q '^vramguard_process_denials_total{' <<<"$xo"; then
		ok "  Accept: application/openmetrics-text: OpenMetrics 1.0.0, counters' families without _total, # EOF"
	else bad "  OpenMetrics negotiation" "$(cat "$XSD/h2"; tail -3 <<<"$xo")"; fi
	xo=$("${XCURL[@]}" -o /dev/null -w '%{http_code}' "${XURL%/metrics}/other")
	[ "$xo" = 404 ] && ok "  GET /other: 404" || bad "  GET /other: $xo, want 404"
	# A client that connects and sends nothing holds up no scrape (each connection has its own 2 s: docs/http.md).
	xhost=${XURL#http://}
	xhost=${xhost%%/*}
	exec 7<>"/dev/tcp/${xhost%:*}/${xhost#*:}"
	SECONDS=0
	xo=$("${XCURL[@]}" -o /dev/null -w '%{http_code}' "$XURL")
	xt=$SECONDS
	exec 7>&-
	if [ "$xo" = 200 ] && [ "$xt" -le 4 ]; then ok "  a stuck client delays the next scrape ${xt}s at most (it has its own deadline)"
	else bad "  stuck client: code $xo after ${xt}s"; fi
	# A client that trickles its request a byte every 0.5 s is dropped when the whole request has taken the 2 s,
	# not served after 12 s (a per-recv timeout alone never fires on it).
	xo=$(python3 - "${xhost%:*}" "${xhost#*:}" <<'PY'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
for i, c in enumerate(req):
    try:
        s.send(bytes([c]))
    except OSError:
        print(f"dropped after {i} of {len(req)} bytes"); sys.exit()
    s.settimeout(0.5)
    try:
        if s.recv(1 << 16) == b"":
            print(f"dropped after {i + 1} of {len(req)} bytes"); sys.exit()
        print("answered"); sys.exit()
    except socket.timeout:
        pass
    except OSError:
        print(f"dropped after {i + 1} of {len(req)} bytes"); sys.exit()
print("answered")
PY
)
	[[ $xo == dropped* ]] && ok "  a client trickling its request a byte per 0.5 s: $xo (2 s for a whole request)" ||
		bad "  a trickling client was not dropped: $xo"
	# A client that ends its lines with a bare LF (RFC 9112 lets a server accept it): answered, its Accept read.
	xo=$(python3 - "${xhost%:*}" "${xhost#*:}" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"GET /metrics HTTP/1.1\nHost: x\nAccept: application/openmetrics-text; version=1.0.0\n\n")
d = b""
while True:
    c = s.recv(1 << 16)
    if not c:
        break
    d += c
head = d.split(b"\r\n\r\n")[0].decode()
print(head.splitlines()[0], "openmetrics" if "application/openmetrics-text" in head and d.rstrip().endswith(b"# EOF") else "text")
PY
)
	[ "$xo" = "HTTP/1.1 200 OK openmetrics" ] && ok "  a request whose lines end with a bare LF: 200, its Accept header read (OpenMetrics)" ||
		bad "  a bare-LF request" "$xo"
	# Members appearing and vanishing (exit, SIGKILL) during scrapes: every scrape answers, each clean.
	xbad=0
	xn=0
	for i in $(seq 12); do
		"$XT" join "$XSD/vramguard.job" dev=0 uuid=$XU total=16G used=${i}M >/dev/null 2>>"$LOG" &
		xp=$!
		"$XT" control "$XSD" dev=0 uuid=$XU total=16G used=${i}M >/dev/null 2>>"$LOG" &
		xq=$!
		for _ in 1 2 3; do
			xn=$((xn + 1))
			"${XCURL[@]}" -f "$XURL" >"$XSD/churn.prom" 2>>"$LOG" || { xbad=$((xbad + 1)); continue; }
			if command -v promtool >/dev/null && ! promtool check metrics <"$XSD/churn.prom" >>"$LOG" 2>&1; then
				xbad=$((xbad + 1))
			fi
			grep -q '^vramguard_up 1$' "$XSD/churn.prom" || xbad=$((xbad + 1))
		done
		if [ $((i % 2)) = 0 ]; then kill -9 $xp $xq; else kill $xp $xq; fi
		wait $xp $xq 2>/dev/null
	done
	[ "$xbad" = 0 ] && ok "  members appearing and vanishing (exit, SIGKILL): $xn scrapes, all answered and clean" ||
		bad "  churn: $xbad of $xn scrapes failed"
	"${XCURL[@]}" "$XURL" >"$XSD/after.prom"
	if [ "$(grep -c '^vramguard_process_used_bytes{' "$XSD/after.prom")" = 3 ]; then
		ok "  the processes that left (or were killed) are not exported"
	else bad "  after the churn" "$(grep '^vramguard_process_used_bytes{' "$XSD/after.prom")"; fi
	# A corrupt file and a foreign one: skipped, counted, said once however many scrapes.
	head -c 4096 /dev/urandom >"$XSD/vramguard.corrupt"
	for _ in 1 2 3; do "${XCURL[@]}" "$XURL" >"$XSD/bad.prom"; done
	xn=$(grep -c 'vramguard: warning: exporter: skipped: .*vramguard\.corrupt' "$XSD/e1.err")
	if [ "$xn" = 1 ] && grep -q '^vramguard_exporter_segments_skipped_total{reason="invalid"} 3$' "$XSD/bad.prom" &&
		grep -q '^vramguard_up 1$' "$XSD/bad.prom" && grep -q "pid=\"$XA\"" "$XSD/bad.prom"; then
		ok "  a corrupt file: one line on stderr over 3 scrapes, counted in segments_skipped_total, the rest exported"
	else bad "  corrupt file: $xn lines" "$(cat "$XSD/e1.err"; grep skipped "$XSD/bad.prom")"; fi
	rm -f "$XSD/vramguard.corrupt"
	kill "$XE" && wait "$XE" 2>/dev/null
	[ $? = 0 ] && ok "  SIGTERM: exits 0" || bad "  SIGTERM: exit status not 0"
fi

# ---- the textfile: written atomically (every read sees a whole file), no temporary file left ----
"$VG" exporter --dir "$XSD" --textfile "$XSD/vg.prom" --interval 0.1 2>>"$LOG" &
xtf=$!
XPIDS+=("$xtf")
wait_for "$XSD/vg.prom" 'scrape_duration' || true
xbad=0
for _ in $(seq 300); do
	[ "$(tail -n 1 "$XSD/vg.prom")" = "" ] && xbad=$((xbad + 1))
	tail -n 1 "$XSD/vg.prom" | grep -q '^vramguard_exporter_scrape_duration_seconds ' || xbad=$((xbad + 1))
done
kill "$xtf"
wait "$xtf" 2>/dev/null
if [ "$xbad" = 0 ] && [ -z "$(find "$XSD" -name 'vg.prom.*')" ]; then
	ok "exporter --textfile --interval 0.1: 300 reads while it rewrites, each a whole file; no temporary left"
else bad "exporter --textfile: $xbad torn reads" "$(ls "$XSD")"; fi
cli "exporter --textfile --once" 0 '^$' -- $VG exporter --dir "$XSD" --textfile "$XSD/once.prom" --once
grep -q '^vramguard_up 1$' "$XSD/once.prom" && ok "  writes the file" || bad "  no file"
# A collector directory other users may write (group-writable, as node_exporter's textfile directory often is):
# uid 65534 plants a symlink at the temporary name root's exporter would use (its PID is known here; an attacker
# plants a range), pointing to a file of root's. Root's --textfile must write its own file, never through the link:
# root's file keeps its content and its mode 0600.
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	skip "exporter --textfile: a symlink planted by another user" "needs root and setpriv (uid 65534)"
else
	XTD=$XSD/collector
	mkdir "$XTD" && chgrp 65534 "$XTD" && chmod 0775 "$XTD"
	printf "root's\n" >"$XSD/secret" && chmod 0600 "$XSD/secret"
	rm -f "$XSD/go" && mkfifo "$XSD/go" && : >"$XSD/tf.pid"
	( echo "$BASHPID" >"$XSD/tf.pid"; read -r _ <"$XSD/go"; exec "$VG" exporter --dir "$XSD" --textfile \
		"$XTD/vg.prom" --once ) 2>"$XSD/tf.err" &
	xtp=$!
	wait_for "$XSD/tf.pid" '^[0-9]+$'
	xpid=$(cat "$XSD/tf.pid")
	setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$XSD/secret" "$XTD/vg.prom.$xpid.tmp" 2>>"$LOG"
	[ -L "$XTD/vg.prom.$xpid.tmp" ] || bad "  the symlink was not planted" "$(ls -la "$XTD")"
	echo go >"$XSD/go"
	wait "$xtp"
	xrc=$?
	if [ "$(cat "$XSD/secret")" = "root's" ] && [ "$(stat -c %a "$XSD/secret")" = 600 ] && [ "$xrc" = 0 ] &&
		[ ! -L "$XTD/vg.prom" ] && grep -q '^vramguard_up 1$' "$XTD/vg.prom"; then
		ok "exporter --textfile as root in a group-writable directory: a symlink planted at its temporary name (by uid 65534) is not written through; root's file keeps its content and mode 0600"
	else
		bad "exporter --textfile followed a planted symlink" "$(printf 'exit %s; root'"'"'s file now mode %s, first line: %s\n' \
			"$xrc" "$(stat -c %a "$XSD/secret")" "$(head -1 "$XSD/secret")"; ls -la "$XTD"; cat "$XSD/tf.err")"
	fi
fi
xcleanup

# ---- the process counters each job's sampler publishes (region layout 4) ----
# Two waiters under the preload in a region of 100 MiB: the first makes 64 MiB and 1 MiB (freed), under a soft
# limit of 80 MiB, and destroys a stream with work queued; the second is denied its 64 MiB, then makes and frees 1 MiB. Their sampler (every 50 ms)
# publishes what they did.
XCD=$(mktemp -d /tmp/vg-exporter-counts.XXXXXX)
XW=(env -u NVIDIA_GPU_MEMORY_LIMITS -u NVIDIA_GPU_MEMORY_REQUEST "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T"
	VRAMGUARD_SHM_DIR="$XCD" VRAMGUARD_SHARED=counts VRAMGUARD_SHARED_LIMITS=100M VRAMGUARD_DEVICE_POLL=50
	VRAMGUARD_REPORT=off)
"${XW[@]}" NVIDIA_GPU_MEMORY_REQUEST=80M "$T/waiter" "$XCD/stop" busy 60 >"$XCD/w1.out" 2>>"$LOG" &
XPIDS+=($!)
xw1=$!
wait_for "$XCD/w1.out" ready || bad "exporter: the first counting job did not get ready"
"${XW[@]}" "$T/waiter" "$XCD/stop" ctx 60 >"$XCD/w2.out" 2>>"$LOG" &
XPIDS+=($!)
xw2=$!
wait_for "$XCD/w2.out" ready || bad "exporter: the second counting job did not get ready"
xcount() { # FILE FAMILY PID: the sample's value, "" if absent
	sed -n "s/^vramguard_process_$2{pid=\"$3\",.*} \([0-9]*\)\$/\1/p" "$1"
}
xgot_all() { # FILE: what the two jobs' samples say
	local f
	xgot=
	for f in allocations_total live_allocations denied_bytes_total streams_destroyed_pending_total; do
		xgot="$xgot $f=$(xcount "$1" "$f" "$xw1")/$(xcount "$1" "$f" "$xw2")"
	done
	xgot="$xgot soft=$(sed -n "s/^vramguard_process_soft_limit_bytes{pid=\"$xw1\",.*} \([0-9]*\)\$/\1/p" "$1")"
	xgot="$xgot/$(grep -c "^vramguard_process_soft_limit_bytes{pid=\"$xw2\"," "$1")"
}
xwant=" allocations_total=2/1 live_allocations=1/0 denied_bytes_total=0/67108864"
xwant="$xwant streams_destroyed_pending_total=1/0 soft=83886080/0"
# A round may have run before a job's allocations: poll until the figures settle (a bound of 30 s on a hang).
xend=$((SECONDS + 30))
while :; do
	VRAMGUARD_SHM_DIR="$XCD" VRAMGUARD_SHARED="" "$VG" exporter --once >"$XCD/c.prom" 2>>"$LOG"
	xgot_all "$XCD/c.prom"
	[ "$xgot" = "$xwant" ] || [ "$SECONDS" -gt "$xend" ] && break
	sleep 0.1
done
if [ "$xgot" = "$xwant" ]; then
	ok "exporter: published counters: allocations 2 and 1, live 1 and 0, the denied job's 64 MiB in denied bytes, the first job's busy stream destroyed pending, the soft limit (absent without one)"
else bad "exporter: published counters" "$(printf "got: %s\nwant:%s" "$xgot" "$xwant")"; fi
if xo=$(xhelp_type "$XCD/c.prom") && { ! command -v promtool >/dev/null || promtool check metrics <"$XCD/c.prom" >>"$LOG" 2>&1; }; then
	ok "  the new families: HELP and TYPE, promtool clean"
else bad "  the new families" "$xo"; fi
# top --json shows the same published counters per process.
xtop=$(VRAMGUARD_SHM_DIR="$XCD" VRAMGUARD_SHARED="" "$VG" top --once --json 2>>"$LOG" | python3 -c '
import json, sys
procs = {p["pid"]: p for p in json.load(sys.stdin)["processes"]}
keys = ("allocations", "live_allocations", "denied_bytes", "streams_destroyed_pending")
print(" ".join("%s=%s" % (k, "/".join(str(procs.get(int(x), {}).get(k)) for x in sys.argv[1:])) for k in keys))
' "$xw1" "$xw2")
if [ "$xtop" = "allocations=2/1 live_allocations=1/0 denied_bytes=0/67108864 streams_destroyed_pending=1/0" ]; then
	ok "  top --json shows the same counters per process"
else bad "  top --json: the published counters" "got: $xtop"; fi
touch "$XCD/stop"
xcleanup
rm -rf "$XCD"

# ---- a real Prometheus server scraping the exporter while jobs under the preload allocate ----
if ! command -v prometheus >/dev/null || ! command -v curl >/dev/null; then
	skip "exporter: a real Prometheus scrape" "prometheus or curl is not installed (scripts/setup.sh installs them)"
else
	XPD=$(mktemp -d /tmp/vg-prom.XXXXXX)
	xserve "$XPD/e.err" --dir "$XPD"
	xport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	xtarget=${XURL#http://}
	# The static job's relabelling is examples/prometheus/prometheus.yml's, so the instance label the alerts print
	# is the one a real Prometheus gives the target 127.0.0.1:PORT (check_prometheus.py checks more addresses).
	XPY=python3
	python3 -c 'import yaml' 2>/dev/null || XPY=/usr/bin/python3
	xrelabel=$($XPY -c 'import json, sys, yaml
jobs = yaml.safe_load(open(sys.argv[1]))["scrape_configs"]
print(json.dumps([j for j in jobs if j["job_name"] == "vramguard"][0]["relabel_configs"]))' \
		examples/prometheus/prometheus.yml 2>>"$LOG") || bad "exporter: the relabelling of examples/prometheus/prometheus.yml"
	cat >"$XPD/prometheus.yml" <<YML
global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: vramguard
    static_configs: [ { targets: ['${xtarget%/metrics}'] } ]
    relabel_configs: ${xrelabel:-[]}
YML
	prometheus --config.file="$XPD/prometheus.yml" --storage.tsdb.path="$XPD/data" \
		--web.listen-address="127.0.0.1:$xport" >"$XPD/prom.log" 2>&1 &
	XPROM=$!
	XPIDS+=("$XPROM")
	# Jobs: 64 MiB each in a shared region of 100 MiB, each under a 1 GiB quota; the second is denied later,
	# so the region's denial counter rises while Prometheus watches.
	XJ=(env -u NVIDIA_GPU_MEMORY_LIMITS "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T" VRAMGUARD_SHM_DIR="$XPD"
		VRAMGUARD_SHARED=team VRAMGUARD_SHARED_LIMITS=100M NVIDIA_GPU_MEMORY_LIMITS=1G VRAMGUARD_REPORT=off)
	"${XJ[@]}" "$T/waiter" "$XPD/stop" cuda 60 >"$XPD/w1.out" 2>>"$LOG" &
	XPIDS+=($!)
	wait_for "$XPD/w1.out" ready || bad "exporter: the first job did not get ready"
	xq() { # PROMQL: the first result's value ("" if none)
		"${XCURL[@]}" --data-urlencode "query=$1" "http://127.0.0.1:$xport/api/v1/query" 2>>"$LOG" |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>>"$LOG"
	}
	xuntil() { # PROMQL WANT: poll Prometheus until the query gives WANT (a bound of 30 s on a hang)
		local end=$((SECONDS + 30))
		while [ "$SECONDS" -le "$end" ]; do [ "$(xq "$1")" = "$2" ] && return 0; sleep 0.25; done
		return 1
	}
	xuntil 'vramguard_region_denials_total{region="team"}' 0 &&
		xuntil 'sum(vramguard_process_used_bytes{region="team"})' $((64 << 20)) &&
		ok "prometheus: scraped the job's 64 MiB in use and the region's 0 denials" ||
		bad "prometheus: first scrape" "$(tail -5 "$XPD/prom.log"; xq 'vramguard_up')"
	xuntil 'count(vramguard_up{job="vramguard", instance="127.0.0.1"})' 1 &&
		ok "prometheus: examples/prometheus's relabelling gives the target 127.0.0.1:PORT instance=\"127.0.0.1\"" ||
		bad "prometheus: the instance label of 127.0.0.1:PORT" "$(xq 'count by (instance) (vramguard_up)')"
	"${XJ[@]}" "$T/waiter" "$XPD/stop" cuda 60 >"$XPD/w2.out" 2>>"$LOG" &
	XPIDS+=($!)
	wait_for "$XPD/w2.out" ready || bad "exporter: the second job did not get ready"
	xuntil 'vramguard_region_denials_total{region="team"}' 1 &&
		xuntil 'sum(vramguard_process_denials_total{region="team"})' 1 &&
		xuntil 'max(vramguard_process_quota_bytes{region="team"})' $((100 << 20)) &&
		ok "prometheus: the second job's denial (process and region counters) and the quota that applies (100 MiB)" ||
		bad "prometheus: after the denial" "$(xq 'vramguard_region_denials_total')"
	[ "$(xq 'max_over_time(vramguard_region_denials_total{region="team"}[1m]) - min_over_time(vramguard_region_denials_total{region="team"}[1m])')" = 1 ] &&
		ok "prometheus: the denial counter increased (0 then 1 over the last minute)" ||
		bad "prometheus: counter increase" "$(xq 'min_over_time(vramguard_region_denials_total[1m])')"
	touch "$XPD/stop"
	xcleanup
	rm -rf "$XPD"
fi
rm -rf "$XSD"
done_testing

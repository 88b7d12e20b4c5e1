#!/usr/bin/env bash
# Section autoscale: `vramguard autoscale`: its flags refused with one line; the receiver's refusals over HTTP (wrong
# token, bad payloads, unknown targets, over the ceiling, cool-down), dry run, resolved alerts, --shrink-after
# (tests/integration/autoscale_shrink.sh), one target under several spellings of its label (autoscale_spell.sh),
# another user's targets (autoscale_owner.sh), the counters at /metrics;
# then the whole loop (autoscale_loop.sh) with Debian's prometheus and prometheus-alertmanager on 127.0.0.1: a job
# under the preload is refused memory in a region near its budget, Prometheus scrapes the exporter and fires the
# alert, Alertmanager posts it, the receiver raises the budget, and the job's next allocation succeeds. The payload
# Alertmanager sent is kept (tests/gpu/alertmanager-payload.json is one, for the GPU check).
# Needs: make test-bins (grower, vramguard), curl; prometheus and prometheus-alertmanager for the loop.
source tests/lib/section.sh

AD=$(mktemp -d /tmp/vg-autoscale.XXXXXX)
AJD=$AD/regions         # where the jobs' regions live (the loop has its own)
mkdir "$AJD"
APIDS=()
acleanup() { for p in "${APIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; APIDS=(); }
at_exit 'acleanup; rm -rf "$AD"'
# wait_for FILE REGEX: wait up to 30 s (a loaded machine) for the line
(umask 077 && echo "tok-$RANDOM$RANDOM" >"$AD/token")
ATOK=$(cat "$AD/token")
ACURL=(curl -sS --max-time 10 --noproxy '*')
# A job under the preload: ajob NAME HOLD_MIB MORE_MIB [ENV...]; its pid in $AJ, its output in $AD/NAME.out and
# $AD/NAME.err (named before it starts: a file renamed after the fork could be opened by the child after the rename);
# it frees the MORE_MIB it was granted once $AD/NAME.free exists
ajob() {
	: >"$AD/$1.out"         # empty before wait_for looks: a line from an earlier job of that name is not this one's
	env -u NVIDIA_GPU_MEMORY_LIMITS -u VRAMGUARD_SHARED "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T" \
		VRAMGUARD_SHM_DIR="$AJD" VRAMGUARD_REPORT=off "${@:4}" "$T/grower" "$AD/stop" "$2" "$3" 60 "$AD/$1.free" \
		>"$AD/$1.out" 2>"$AD/$1.err" &
	AJ=$!
	APIDS+=("$AJ")
	wait_for "$AD/$1.out" '^denied' || bad "autoscale: job $1 was not refused its allocation" "$(cat "$AD/$1.out")"
}
# The receiver: ERRFILE ARGS...; its pid in $AR, its URL in $AURL
aserve() {
	: >"$1"
	"$VG" autoscale --dir "$AJD" "${@:2}" 2>"$1" &
	AR=$!
	APIDS+=("$AR")
	AURL=
	if wait_for "$1" 'listening on http://127\.0\.0\.1:[0-9]+/'; then
		AURL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+' "$1" | head -1)
	else bad "autoscale: the receiver did not start" "$(cat "$1")"; fi
}
apost() { # BODY [TOKEN]: the HTTP status; the response in $AD/resp
	"${ACURL[@]}" -o "$AD/resp" -w '%{http_code}' -H "Authorization: Bearer ${2-$ATOK}" -H 'Content-Type: application/json' \
		--data-binary "$1" "$AURL/"
}
# A payload of one alert: STATUS LABELS-JSON
apay() { printf '{"version":"4","status":"%s","receiver":"vramguard","groupKey":"{}:{}","truncatedAlerts":0,"alerts":[{"status":"%s","labels":%s,"annotations":{"summary":"x"},"startsAt":"2026-01-01T00:00:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"f"}],"groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://x"}' "$1" "$1" "$2"; }
acount() { # RESULT: the counter's value at /metrics
	"${ACURL[@]}" "$AURL/metrics" | sed -n "s/^vramguard_autoscale_actions_total{result=\"$1\"} //p"
}

# ---- flags ----
cli "help autoscale documents the ceiling, the step and the token" 0 'token-file' -- $VG help autoscale
cli "autoscale: no --ceiling is refused" 2 '^$' -- $VG autoscale --token-file "$AD/token"
expect_err_lines "  one line: say how far it may raise" '^vramguard: error: autoscale: no --ceiling: ' 1
cli "autoscale: --listen without --token-file is refused" 2 '^$' -- $VG autoscale --ceiling 1G
expect_err_lines "  one line naming --socket as the alternative" '^vramguard: error: autoscale: --listen needs --token-file: .*--socket' 1
cp "$AD/token" "$AD/token.644" && chmod 644 "$AD/token.644"
cli "autoscale: a token file others can read is refused" 2 '^$' -- $VG autoscale --ceiling 1G --token-file "$AD/token.644"
expect_err_lines "  one line: chmod 600" "chmod 600" 1
cli "autoscale: --step 0%" 2 '^$' -- $VG autoscale --ceiling 1G --step 0% --token-file "$AD/token"
cli "autoscale: --step 4XB" 2 '^$' -- $VG autoscale --ceiling 1G --step 4XB --token-file "$AD/token"
expect_err_lines "  one line naming the value" "^vramguard: error: autoscale: invalid --step '4XB'" 1
cli "autoscale: --cooldown 5x" 2 '^$' -- $VG autoscale --ceiling 1G --cooldown 5x --token-file "$AD/token"
cli "autoscale: --ceiling team=1G (no kind)" 2 '^$' -- $VG autoscale --ceiling team=1G --token-file "$AD/token"
cli "autoscale: --ceiling region:PATH=SIZE (alerts name regions by NAME)" 2 '^$' -- timeout 5 $VG autoscale \
	--ceiling region:/dev/shm/vramguard.team=1G --token-file "$AD/token" --listen 127.0.0.1:0
expect_err_lines "  one line: name it by its NAME" "^vramguard: error: autoscale: invalid --ceiling 'region:/dev/shm/vramguard\.team=1G': a region is named by its NAME" 1
cli "autoscale: --shrink-after 10x" 2 '^$' -- $VG autoscale --ceiling 1G --shrink-after 10x --token-file "$AD/token"
expect_err_lines "  one line naming the value" "^vramguard: error: autoscale: invalid --shrink-after '10x'" 1
cli "autoscale: a non-loopback address without --allow-remote" 2 '^$' -- timeout 5 $VG autoscale --ceiling 1G \
	--token-file "$AD/token" --listen 0.0.0.0:0
expect_err_lines "  one line: add --allow-remote" 'is not a loopback address: add --allow-remote' 1

# ---- --config FILE: the same options, `name = value` lines; strict ----
mkdir "$AD/cfg"
cp -p "$AD/token" "$AD/cfg/token"
cat >"$AD/cfg/good.conf" <<'CONF'
# the receiver's policy (the token stays in its own file, relative to this one's directory)
ceiling = 1G
ceiling = region:full=80M   # one target's
step = 40M
cooldown = 1s

shrink-after = 10m
alert = VramguardRegionNearBudget
alert = VramguardProcessNearQuota
listen = 127.0.0.1:0
token-file = token
dry-run = false
CONF
acfg() { printf '%b' "$2" >"$AD/cfg/$1.conf"; }
acfg unknown 'ceiling = 1G\n# a comment\nfrobnicate = 1\n'
acfg noeq 'ceiling = 1G\nstep 40M\n'
acfg badval 'step = 4XB\nceiling = 1G\n'
acfg badbool 'ceiling = 1G\ndry-run = yes\n'
acfg twice 'ceiling = 1G\nstep = 1G\nstep = 2G\n'
for c in unknown:3:"unknown option 'frobnicate'" noeq:2:"expected 'name = value', got 'step 40M'" \
	badval:1:"invalid --step '4XB'" badbool:2:"invalid dry-run 'yes' \(expected true or false\)" \
	twice:3:"step given twice"; do
	f=${c%%:*} r=${c#*:}
	cli "autoscale --config: $f" 2 '^$' -- $VG autoscale --config "$AD/cfg/$f.conf" --token-file "$AD/token"
	expect_err_lines "  one line: FILE:${r%%:*}: ${r#*:}" "^vramguard: error: autoscale: $AD/cfg/$f.conf:${r%%:*}: ${r#*:}" 1
done
cli "autoscale --config: a file that cannot be read" 2 '^$' -- $VG autoscale --config "$AD/cfg/nosuch.conf"
expect_err_lines "  one line naming the file" "^vramguard: error: autoscale: $AD/cfg/nosuch.conf: cannot read --config: " 1
aserve "$AD/c1.err" --config "$AD/cfg/good.conf"
wait_for "$AD/c1.err" 'autoscale: step ' && kill "$AR" && wait "$AR" 2>/dev/null
aserve "$AD/c2.err" --ceiling 1G --ceiling region:full=80M --step 40M --cooldown 1s --shrink-after 10m \
	--alert VramguardRegionNearBudget --alert VramguardProcessNearQuota --listen 127.0.0.1:0 --token-file "$AD/token"
wait_for "$AD/c2.err" 'autoscale: step ' && kill "$AR" && wait "$AR" 2>/dev/null
c1=$(grep 'autoscale: step ' "$AD/c1.err") c2=$(grep 'autoscale: step ' "$AD/c2.err")
[ -n "$c1" ] && [ "$c1" = "$c2" ] &&
	ok "autoscale --config FILE: the same policy as its flags (the startup line; token-file relative to the file)" ||
	bad "autoscale --config: not the flags' policy" "$c1 / $c2"
aserve "$AD/c3.err" --config "$AD/cfg/good.conf" --step 10M --ceiling 2G --alert Other
wait_for "$AD/c3.err" 'autoscale: step ' && kill "$AR" && wait "$AR" 2>/dev/null
grep -q 'autoscale: step 10M, ceiling 2.00 GiB (1 per target), cool-down 1s, lowered again 600s after resolved, 3 alert names$' "$AD/c3.err" &&
	ok "  the command line's --step and --ceiling replace the file's, --alert adds to its two (3 alert names), its region ceiling kept" ||
	bad "  command line over the file" "$(cat "$AD/c3.err")"
# examples/kubernetes/autoscale.yaml's ConfigMap, as the receiver there reads it, with its three paths and its
# address made local (token-file, dir, listen): the rest of the file is read as it is.
python3 - examples/kubernetes/autoscale.yaml "$AD" >"$AD/cfg/k8s.conf" 2>>"$LOG" <<'PY'
import re, sys, yaml
conf = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "ConfigMap"
            and "autoscale.conf" in (d.get("data") or {}))["data"]["autoscale.conf"]
local = {"token-file": sys.argv[2] + "/token", "dir": sys.argv[2] + "/regions", "listen": "127.0.0.1:0"}
for line in conf.splitlines():
    m = re.match(r"\s*([a-z-]+)\s*=", line)
    print(f"{m.group(1)} = {local[m.group(1)]}" if m and m.group(1) in local else line)
PY
aserve "$AD/c4.err" --config "$AD/cfg/k8s.conf"
wait_for "$AD/c4.err" 'autoscale: step ' && kill "$AR" && wait "$AR" 2>/dev/null
grep -q 'autoscale: step 2G, ceiling 16.00 GiB (0 per target), cool-down 600s, 2 alert names$' "$AD/c4.err" &&
	ok "autoscale --config: examples/kubernetes/autoscale.yaml's ConfigMap is read (step 2G, ceiling 16G, cool-down 10m, 2 alerts)" ||
	bad "autoscale --config: the Kubernetes example's ConfigMap" "$(cat "$AD/cfg/k8s.conf" "$AD/c4.err")"

# ---- the receiver over HTTP: refusals, raises, cool-down, ceilings, dry run, metrics ----
if ! command -v curl >/dev/null; then
	skip "autoscale: HTTP checks" "curl is not installed (scripts/setup.sh installs it)"
else
	# A region 'team' of 80 MiB whose job holds 70 and wants 20 more; a region 'full' at its ceiling; a process
	# with its own quota of 100 MiB (a control segment), holding 90 and wanting 20 more.
	ajob team 70 20 VRAMGUARD_SHARED=team VRAMGUARD_SHARED_LIMITS=80M
	ajob full 70 20 VRAMGUARD_SHARED=full VRAMGUARD_SHARED_LIMITS=80M
	ajob proc 90 20 NVIDIA_GPU_MEMORY_LIMITS=100M
	APROC=$AJ
	APCMD=$("$VG" exporter --once --dir "$AJD" | sed -n "s/^vramguard_process_used_bytes{pid=\"$APROC\",command=\"\([^\"]*\)\".*/\1/p")
	aserve "$AD/r1.err" --listen 127.0.0.1:0 --token-file "$AD/token" --ceiling 1G --ceiling region:full=80M \
		--step 40M --alert VramguardRegionNearBudget --alert VramguardProcessNearQuota
	AREG='{"alertname":"VramguardRegionNearBudget","region":"team","gpu":"0","instance":"127.0.0.1:9847","job":"vramguard","severity":"warning"}'
	[ "$(apost "$(apay firing "$AREG")" wrong)" = 401 ] && [ "$(acount refused_auth)" = 1 ] &&
		grep -q 'refused_auth: a POST without the bearer token' "$AD/r1.err" &&
		ok "autoscale: a wrong token: 401, refused_auth counted, one line" ||
		bad "autoscale: wrong token" "$(cat "$AD/resp" "$AD/r1.err")"
	[ "$(apost 'not json')" = 400 ] && [ "$(apost '{"version":"3","alerts":[]}')" = 400 ] &&
		grep -q 'version "4"' "$AD/resp" && ok "autoscale: not JSON, version 3: 400" ||
		bad "autoscale: bad payloads" "$(cat "$AD/resp")"
	[ "$(apost '{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"A","pid":42}}]}')" = 400 ] &&
		grep -q '^refused: alerts\[0\]\.labels\.pid: expected a string$' "$AD/resp" &&
		ok "  a label of the wrong type: 400, one line naming alerts[0].labels.pid" ||
		bad "  wrong type" "$(cat "$AD/resp")"
	head -c $((1100 * 1024)) /dev/zero | tr '\0' ' ' >"$AD/big"
	[ "$("${ACURL[@]}" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ATOK" --data-binary @"$AD/big" "$AURL/")" = 413 ] &&
		ok "  a body over 1 MiB: 413" || bad "  big body"
	[ "$(acount refused_payload)" = 4 ] && ok "  refused_payload counted 4 times" ||
		bad "  refused_payload $(acount refused_payload), want 4"
	# One rule for the whole payload (issue 25, item 7): UTF-8 JSON whose strings are text. A byte that is not
	# UTF-8, a \u0000, or a \u escape of a lone surrogate (no character, so no UTF-8 for it) refuses the payload
	# whole, 400 and refused_payload, wherever it is: in a label the receiver reads, in one it ignores, in a label's
	# name, in a field it passes over.
	before=$(acount refused_payload)
	for b in 'a byte that is not UTF-8:\xff' 'an escaped NUL:\\u0000' 'a lone surrogate:\\ud800'; do
		x=$(printf '%b' "${b#*:}") got=
		for where in "read:{\"alertname\":\"VramguardRegionNearBudget\",\"region\":\"te${x}am\",\"gpu\":\"0\"}" \
			"ignored:{\"alertname\":\"VramguardRegionNearBudget\",\"region\":\"nosuch\",\"note\":\"n${x}o\"}" \
			"name:{\"alertname\":\"VramguardRegionNearBudget\",\"region\":\"nosuch\",\"n${x}o\":\"v\"}"; do
			got="$got ${where%%:*}=$(apost "$(apay firing "${where#*:}")")/$(wc -l <"$AD/resp")"
		done
		got="$got passed-over=$(apost "{\"version\":\"4\",\"receiver\":\"r${x}x\",\"alerts\":[]}")/$(wc -l <"$AD/resp")"
		[ "$got" = " read=400/1 ignored=400/1 name=400/1 passed-over=400/1" ] &&
			ok "autoscale: ${b%%:*} anywhere in the payload: 400, one line (the label read, one ignored, a label's name, a field passed over)" ||
			bad "autoscale: ${b%%:*}: not one rule for the whole payload (STATUS/LINES of the answer)" "$got"
	done
	# The reason is one line whatever the payload held (found by tests/fuzz/fuzz_webhook.c): a version with a newline.
	[ "$(apost '{"version":"4\n5","alerts":[]}')" = 400 ] && [ "$(wc -l <"$AD/resp")" = 1 ] &&
		grep -q "^refused: not Alertmanager's webhook payload version \"4\" (version '4?5')$" "$AD/resp" &&
		ok "autoscale: a version with a newline in it: 400, the reason one line (the newline shown as '?')" ||
		bad "autoscale: the reason for a version with a newline is not one line" "$(cat "$AD/resp")"
	[ "$(acount refused_payload)" = $((before + 13)) ] && ok "  each counted in refused_payload (13)" ||
		bad "  refused_payload went from $before to $(acount refused_payload), want +13"
	# Unknown targets: a region that does not exist, an alert naming nothing, a pid whose command is not the one
	# the alert named (reused).
	apost "$(apay firing '{"alertname":"VramguardRegionNearBudget","region":"nosuch","gpu":"0"}')" >/dev/null
	apost "$(apay firing '{"alertname":"VramguardProcessNearQuota","instance":"x"}')" >/dev/null
	apost "$(apay firing "{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$APROC\",\"command\":\"other\",\"gpu\":\"0\"}")" >/dev/null
	[ "$(acount refused_unknown)" = 3 ] && grep -q "region 'nosuch'" "$AD/r1.err" &&
		grep -q "names no vramguard region or process" "$AD/r1.err" && grep -q "(a PID reused?)" "$AD/r1.err" &&
		ok "autoscale: unknown targets (no such region, no pid/region label, a PID whose command changed): refused_unknown, nothing changed" ||
		bad "autoscale: unknown targets" "$(grep refused_unknown "$AD/r1.err")"
	# An alert name not in --alert, and a resolved alert: nothing changed, not counted.
	apost "$(apay firing '{"alertname":"Other","region":"team","gpu":"0"}')" >/dev/null
	apost "$(apay resolved "$AREG")" >/dev/null
	grep -q "ignored: alert 'Other' is not one of --alert's names" "$AD/r1.err" &&
		grep -q "ignored: alert 'VramguardRegionNearBudget' resolved: nothing changed" "$AD/r1.err" &&
		grep -q '^denied' "$AD/team.out" && ! grep -q '^granted' "$AD/team.out" &&
		ok "autoscale: an alert not in --alert and a resolved alert change nothing" ||
		bad "autoscale: ignored alerts" "$(tail -3 "$AD/r1.err")"
	# The region's budget raised by the step: its job gets its memory.
	[ "$(apost "$(apay firing "$AREG")")" = 200 ] && grep -q '^raised 1$' "$AD/resp" &&
		wait_for "$AD/team.out" '^granted 20 MiB more' &&
		grep -q "raised: alert 'VramguardRegionNearBudget' firing: region 'team' GPU 0: limit 80.00 MiB -> 120.00 MiB" "$AD/r1.err" &&
		ok "autoscale: region 'team' raised 80 -> 120 MiB; its job's next allocation, refused before, succeeds" ||
		bad "autoscale: region raise" "$(cat "$AD/resp" "$AD/team.out"; tail -2 "$AD/r1.err")"
	apost "$(apay firing "$AREG")" >/dev/null
	[ "$(acount refused_cooldown)" = 1 ] && grep -q "refused_cooldown: .*region 'team' GPU 0 was raised [0-9]*s ago, cool-down 300s: stays 120.00 MiB" "$AD/r1.err" &&
		ok "  the same alert again within the cool-down (default 5m): refused_cooldown, stays 120 MiB" ||
		bad "  cool-down" "$(tail -2 "$AD/r1.err")"
	apost "$(apay firing '{"alertname":"VramguardRegionNearBudget","region":"full","gpu":"0"}')" >/dev/null
	[ "$(acount refused_ceiling)" = 1 ] && grep -q "refused_ceiling: .*region 'full' GPU 0 is at 80.00 MiB, its ceiling is 80.00 MiB" "$AD/r1.err" &&
		ok "autoscale: a region at its own ceiling (region:full=80M): refused_ceiling" ||
		bad "autoscale: ceiling" "$(tail -2 "$AD/r1.err")"
	# A process's own quota, named by the exporter's labels: 100 -> 140 MiB.
	apost "$(apay firing "{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$APROC\",\"command\":\"$APCMD\",\"region\":\"\",\"gpu\":\"0\",\"gpu_uuid\":\"GPU-00000000-0000-0000-0000-000000000000\",\"container\":\"\",\"pod\":\"\"}")" >/dev/null
	wait_for "$AD/proc.out" '^granted' && grep -q "raised: .*process $APROC (.*) GPU 0: limit 100.00 MiB -> 140.00 MiB" "$AD/r1.err" &&
		ok "autoscale: a process's quota (pid, command, gpu labels) raised 100 -> 140 MiB; it gets its memory" ||
		bad "autoscale: pid raise" "$(cat "$AD/proc.out"; tail -3 "$AD/r1.err")"
	"${ACURL[@]}" "$AURL/metrics" >"$AD/m.prom"
	if [ "$(grep -c '^vramguard_autoscale_actions_total{result="[a-z_]*"} [0-9]*$' "$AD/m.prom")" = 9 ] &&
		grep -q '^vramguard_autoscale_actions_total{result="raised"} 2$' "$AD/m.prom" &&
		{ ! command -v promtool >/dev/null || promtool check metrics <"$AD/m.prom" >>"$LOG" 2>&1; }; then
		ok "autoscale: GET /metrics: the 9 results (raised 2), promtool clean"
	else bad "autoscale: /metrics" "$(cat "$AD/m.prom")"; fi
	# The payload the real Alertmanager sent (kept for the GPU check) is read as such: its region is not here.
	[ "$(apost "$(cat tests/gpu/alertmanager-payload.json)")" = 200 ] && grep -q '^refused_unknown 1$' "$AD/resp" &&
		ok "autoscale: tests/gpu/alertmanager-payload.json (captured from Alertmanager) is read: its region 'loop' is unknown here" ||
		bad "autoscale: the captured payload" "$(cat "$AD/resp")"
	kill "$AR" && wait "$AR" 2>/dev/null
	[ $? = 0 ] && ok "  SIGTERM: exits 0" || bad "  SIGTERM: exit status not 0"
	# Dry run, on a Unix socket (mode 0600, no token needed): decides and logs, changes nothing.
	"$VG" autoscale --dir "$AJD" --socket "$AD/as.sock" --ceiling 1G --dry-run --shrink-after 1s 2>"$AD/r2.err" &
	AR=$!
	APIDS+=("$AR")
	wait_for "$AD/r2.err" 'listening on unix:' || bad "autoscale: --socket did not start" "$(cat "$AD/r2.err")"
	before=$("$VG" limit show --shared full --dir "$AJD" 2>&1 | grep 'in force')
	"${ACURL[@]}" --unix-socket "$AD/as.sock" -o "$AD/resp" --data-binary \
		"$(apay firing '{"alertname":"VramguardRegionNearBudget","region":"full","gpu":"0"}')" http://localhost/
	if [ "$(stat -c %a "$AD/as.sock")" = 600 ] && grep -q '^dry_run 1$' "$AD/resp" &&
		grep -q "dry_run: alert 'VramguardRegionNearBudget' firing: would raise region 'full' GPU 0: 80.00 MiB -> 100.00 MiB" "$AD/r2.err" &&
		[ "$("$VG" limit show --shared full --dir "$AJD" 2>&1 | grep 'in force')" = "$before" ]; then
		ok "autoscale --dry-run on a Unix socket (mode 0600): logs what it would do (80 -> 100 MiB, step 25%), changes nothing"
	else bad "autoscale --dry-run" "$(cat "$AD/resp" "$AD/r2.err")"; fi
	"${ACURL[@]}" --unix-socket "$AD/as.sock" -o "$AD/resp" --data-binary \
		"$(apay resolved '{"alertname":"VramguardRegionNearBudget","region":"full","gpu":"0"}')" http://localhost/
	if wait_for "$AD/r2.err" "dry_run: would lower region 'full' GPU 0: 100.00 MiB -> 80.00 MiB \(alert resolved [0-9]+s ago, --shrink-after 1s; would set 0:80M\)" &&
		[ "$("$VG" limit show --shared full --dir "$AJD" 2>&1 | grep 'in force')" = "$before" ]; then
		ok "autoscale --dry-run --shrink-after 1s: the alert resolved, logs 'would lower 100 -> 80 MiB', changes nothing"
	else bad "autoscale --dry-run --shrink-after" "$(cat "$AD/r2.err")"; fi
	kill "$AR"
	wait "$AR" 2>/dev/null
	[ ! -e "$AD/as.sock" ] && ok "  its socket is removed when it stops" || bad "  socket left behind"
	source tests/integration/autoscale_shrink.sh
	# shellcheck source=tests/integration/autoscale_spell.sh
	source tests/integration/autoscale_spell.sh
	touch "$AD/stop"
	acleanup
	rm -f "$AD/stop"
	# shellcheck source=tests/integration/autoscale_owner.sh
	source tests/integration/autoscale_owner.sh
fi

# ---- the closed loop: the job, the exporter, Prometheus, Alertmanager, the receiver; all on 127.0.0.1 ----
AMBIN=$(command -v prometheus-alertmanager || command -v alertmanager || true)
if ! command -v prometheus >/dev/null || [ -z "$AMBIN" ] || ! command -v curl >/dev/null; then
	skip "autoscale: the closed loop with Prometheus and Alertmanager" \
		"prometheus, prometheus-alertmanager or curl is not installed (scripts/setup.sh installs them)"
else
	source tests/integration/autoscale_loop.sh
fi
done_testing

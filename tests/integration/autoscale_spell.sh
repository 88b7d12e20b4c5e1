# shellcheck shell=bash
# One target, one spelling (sourced by tests/sections/autoscale.sh inside its HTTP checks, whose helpers ajob, aserve,
# apost, apay and acount it uses). The exporter's labels are a region's NAME and a PID in decimal; a region reached
# through other spellings of its path (DIR/vramguard.NAME, DIR//vramguard.NAME, DIR/./vramguard.NAME) would be one
# file and several targets: a ceiling and a cool-down each. Five alerts within the cool-down (1h) must raise region
# 'spell' once (80 -> 100 MiB, under its own ceiling of 120 MiB); and a process under other spellings of its PID (0PID, +PID,
# " PID") is one target too: raised once. Last, a job whose command line is not UTF-8: its label as the exporter
# writes it (U+FFFD) names it.

ajob spell 70 20 VRAMGUARD_SHARED=spell VRAMGUARD_SHARED_LIMITS=80M
ajob spellp 90 20 NVIDIA_GPU_MEMORY_LIMITS=100M
ASPP=$AJ
aserve "$AD/r5.err" --listen 127.0.0.1:0 --token-file "$AD/token" --ceiling 1G --ceiling region:spell=120M \
	--step 20M --cooldown 1h
for r in spell "$AJD/vramguard.spell" "$AJD//vramguard.spell" "$AJD/./vramguard.spell" spell; do
	apost "$(apay firing "{\"alertname\":\"VramguardRegionNearBudget\",\"region\":\"$r\",\"gpu\":\"0\"}")" >/dev/null
done
sp_force=$("$VG" limit show --shared spell --dir "$AJD" 2>&1 | grep 'in force')
if [ "$(acount raised)" = 1 ] && [[ $sp_force == *0:100M* ]] && [ "$(acount refused_cooldown)" = 1 ] &&
	[ "$(acount refused_unknown)" = 3 ] &&
	[ "$(grep -c "refused_unknown: alert 'VramguardRegionNearBudget': label region='$AJD/.*vramguard\.spell' is not a region NAME (the exporter's labels are names): nothing changed" "$AD/r5.err")" = 3 ]; then
	ok "autoscale: region 'spell' named five times (its NAME, three spellings of its path, its NAME again) within the cool-down: raised once, 80 -> 100 MiB (its ceiling 120 MiB); the paths refused, one line each; the NAME again: refused_cooldown"
else
	bad "autoscale: one region under several spellings is several targets" \
		"$(printf 'limit show: %s\nraised %s, refused_cooldown %s, refused_unknown %s\n' "$sp_force" \
			"$(acount raised)" "$(acount refused_cooldown)" "$(acount refused_unknown)"; grep autoscale: "$AD/r5.err")"
fi
for p in "$ASPP" "0$ASPP" "+$ASPP" " $ASPP"; do
	apost "$(apay firing "{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$p\",\"region\":\"\",\"gpu\":\"0\"}")" >/dev/null
done
wait_for "$AD/spellp.out" '^granted' || true
sp_q=$("$VG" limit show --pid "$ASPP" --json --dir "$AJD" 2>>"$LOG" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print([g["quota_bytes"] for r in d["regions"] for p in r["processes"] for g in p["devices"]])' 2>>"$LOG")
if [ "$(acount raised)" = 2 ] && [ "$sp_q" = "[$((120 << 20))]" ] && [ "$(acount refused_unknown)" = 6 ] &&
	[ "$(grep -c "label pid='[0+ ]$ASPP' is not a process id as the exporter writes it" "$AD/r5.err")" = 3 ]; then
	ok "  process $ASPP named as $ASPP, 0$ASPP, +$ASPP and ' $ASPP': raised once (100 -> 120 MiB); the other spellings refused"
else
	bad "  one process under several spellings of its PID" \
		"$(printf 'quota %s, raised %s, refused_unknown %s\n' "$sp_q" "$(acount raised)" "$(acount refused_unknown)"
			tail -4 "$AD/r5.err")"
fi
# A job whose command line has a byte that is not UTF-8: the exporter's command label has U+FFFD for it (else
# Prometheus would refuse the scrape), and the receiver compares the label with the slot's command the same way.
: >"$AD/badcmd.out"
env -u VRAMGUARD_SHARED "LD_LIBRARY_PATH=$PWD/$T" VRAMGUARD_SHM_DIR="$AJD" VRAMGUARD_REPORT=off \
	NVIDIA_GPU_MEMORY_LIMITS=100M python3 -c 'import os, sys
os.execve(sys.argv[2], sys.argv[3:], dict(os.environ, LD_PRELOAD=sys.argv[1]))' "$SP$LIB" "$T/grower" \
	"$(printf 'grower\xff')" "$AD/stop" 90 20 60 "$AD/badcmd.free" >"$AD/badcmd.out" 2>"$AD/badcmd.err" &
ASPB=$!
APIDS+=("$ASPB")
wait_for "$AD/badcmd.out" '^denied' || bad "autoscale: the job with a byte that is not UTF-8 was not refused" "$(cat "$AD/badcmd.err")"
sp_cmd=$("$VG" exporter --once --dir "$AJD" 2>>"$LOG" | grep -a "^vramguard_process_used_bytes{pid=\"$ASPB\"," |
	sed 's/^[^{]*{pid="[0-9]*",command="\([^"]*\)".*/\1/')
sp_code=$(apost "$(apay firing "{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$ASPB\",\"command\":\"$sp_cmd\",\"region\":\"\",\"gpu\":\"0\"}")")
if [[ $sp_cmd == grower$(printf '\xef\xbf\xbd')\ * ]] && [ "$sp_code" = 200 ] && wait_for "$AD/badcmd.out" '^granted' &&
	grep -aq "raised: alert 'VramguardProcessNearQuota' firing: process $ASPB (.*) GPU 0: limit 100.00 MiB -> 120.00 MiB" "$AD/r5.err"; then
	ok "autoscale: a job whose command line has a byte that is not UTF-8 (the exporter's label: U+FFFD): its alert's command label matches, raised 100 -> 120 MiB"
else bad "autoscale: a command label with U+FFFD" "$(printf 'label %q, HTTP %s\n' "$sp_cmd" "$sp_code"; cat "$AD/resp"; tail -2 "$AD/r5.err")"; fi
kill "$AR"
wait "$AR" 2>/dev/null

# shellcheck shell=bash
# `vramguard autoscale --shrink-after` (sourced by tests/sections/autoscale.sh, whose helpers it uses): what the
# receiver raised goes back to its original limit after the alert resolved: a region (s1) and a process (sp) whose
# jobs freed what they were granted are lowered; a region whose alert fires again first (s2) is not; one whose job
# still uses more than its original (s3) is deferred (one line), then lowered once the job frees; one changed by hand
# with `limit set` meanwhile (s4) is forgotten; a resolved alert for a target the receiver never raised changes
# nothing. No assertion on time beyond wait_for's 30 s: --shrink-after 1s, --cooldown 1s (the deferred retry).

ajob s1 70 20 VRAMGUARD_SHARED=s1 VRAMGUARD_SHARED_LIMITS=80M
ajob s2 70 20 VRAMGUARD_SHARED=s2 VRAMGUARD_SHARED_LIMITS=80M
ajob s3 70 20 VRAMGUARD_SHARED=s3 VRAMGUARD_SHARED_LIMITS=80M
ajob s4 70 20 VRAMGUARD_SHARED=s4 VRAMGUARD_SHARED_LIMITS=80M
ajob sp 70 20 NVIDIA_GPU_MEMORY_LIMITS=80M
ASP=$AJ
aserve "$AD/r3.err" --listen 127.0.0.1:0 --token-file "$AD/token" --ceiling 1G --step 40M --cooldown 1s \
	--shrink-after 1s
sreg() { printf '{"alertname":"VramguardRegionNearBudget","region":"%s","gpu":"0"}' "$1"; }
SPL="{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$ASP\",\"region\":\"\",\"gpu\":\"0\"}"
for r in s1 s2 s3 s4; do apost "$(apay firing "$(sreg $r)")" >/dev/null; done
apost "$(apay firing "$SPL")" >/dev/null
granted=0
for j in s1 s2 s3 s4 sp; do wait_for "$AD/$j.out" '^granted' && granted=$((granted + 1)); done
touch "$AD/s1.free" "$AD/sp.free"
wait_for "$AD/s1.out" '^freed' && wait_for "$AD/sp.out" '^freed' && [ "$granted" = 5 ] &&
	ok "autoscale --shrink-after: 4 regions and a process raised 80 -> 120 MiB; two of the jobs freed the 20 MiB" ||
	bad "autoscale --shrink-after: the raises" "$(cat "$AD/r3.err")"
"$VG" limit set 0:100M --shared s4 --dir "$AJD" >>"$LOG" 2>&1
# s2: resolved, then firing again, in one payload (so that no timer can be due in between).
printf -v both '{"version":"4","alerts":[{"status":"resolved","labels":%s},{"status":"firing","labels":%s}]}' \
	"$(sreg s2)" "$(sreg s2)"
apost "$both" >/dev/null
apost "$(apay resolved "$(sreg full)")" >/dev/null
for r in s1 s3 s4; do apost "$(apay resolved "$(sreg $r)")" >/dev/null; done
apost "$(apay resolved "$SPL")" >/dev/null
grep -q "ignored: alert 'VramguardRegionNearBudget' resolved: region 's1' GPU 0 goes back to 80.00 MiB after 1s unless it fires again" "$AD/r3.err" &&
	grep -q "ignored: alert 'VramguardRegionNearBudget' resolved: region 'full' GPU 0 was not raised by this receiver: nothing changed" "$AD/r3.err" &&
	ok "  resolved: one line each (goes back to 80 MiB after 1s; 'full', never raised here: nothing changed)" ||
	bad "  resolved lines" "$(cat "$AD/r3.err")"
wait_for "$AD/r3.err" "lowered: region 's1' GPU 0: limit 120.00 MiB -> 80.00 MiB \(alert resolved [0-9]+s ago, --shrink-after 1s" &&
	"$VG" limit show --shared s1 --dir "$AJD" 2>&1 | grep -q 'in force.*0:80M' &&
	ok "  region s1: lowered 120 -> 80 MiB (limit show: in force 0:80M)" ||
	bad "  region s1 not lowered" "$(cat "$AD/r3.err"; "$VG" limit show --shared s1 --dir "$AJD" 2>&1)"
wait_for "$AD/r3.err" "lowered: process $ASP \(.*\) GPU 0: limit 120.00 MiB -> 80.00 MiB" &&
	ok "  process $ASP (its own quota): lowered 120 -> 80 MiB" || bad "  the process not lowered" "$(cat "$AD/r3.err")"
wait_for "$AD/r3.err" "region 's4' GPU 0 is 100.00 MiB now, not the 120.00 MiB this receiver set .*forgotten, stays 100.00 MiB" &&
	"$VG" limit show --shared s4 --dir "$AJD" 2>&1 | grep -q 'in force.*0:100M' &&
	ok "  region s4, set to 100 MiB by hand meanwhile: forgotten, stays 100 MiB" ||
	bad "  region s4" "$(cat "$AD/r3.err")"
wait_for "$AD/r3.err" "lower_deferred: region 's3' GPU 0 uses 90.00 MiB, more than the 80.00 MiB it had before the raise: stays 120.00 MiB, tried again every 1s" &&
	"$VG" limit show --shared s3 --dir "$AJD" 2>&1 | grep -q 'in force.*0:120M' &&
	ok "  region s3, its job using 90 MiB: lower_deferred, stays 120 MiB" || bad "  region s3 deferred" "$(cat "$AD/r3.err")"
touch "$AD/s3.free"
wait_for "$AD/s3.out" '^freed' && wait_for "$AD/r3.err" "lowered: region 's3' GPU 0: limit 120.00 MiB -> 80.00 MiB" &&
	[ "$(grep -c "lower_deferred: region 's3'" "$AD/r3.err")" = 1 ] &&
	ok "  region s3: lowered once its job freed 20 MiB; the deferral said once" || bad "  region s3 lowered" "$(cat "$AD/r3.err")"
grep -q "ignored: alert 'VramguardRegionNearBudget' fires again: region 's2' GPU 0 is not lowered" "$AD/r3.err" &&
	! grep -q "lowered: region 's2'" "$AD/r3.err" &&
	ok "  region s2, its alert firing again before the timer: not lowered" || bad "  region s2" "$(cat "$AD/r3.err")"
[ "$(acount lowered)" = 3 ] && [ "$(acount lower_deferred)" = 1 ] &&
	ok "  /metrics: lowered 3, lower_deferred 1" || bad "  counters" "$("${ACURL[@]}" "$AURL/metrics")"
kill "$AR"
wait "$AR" 2>/dev/null

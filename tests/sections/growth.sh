#!/usr/bin/env bash
# Section growth: per-site growth under the preload (tests/integration/growth.c), with a 2 s VRAMGUARD_GROWTH_WINDOW
# and a 50 ms sampler. A site that gains 1 MiB every 20 ms beside a steady one, under a 544 MiB quota: the growing
# site flagged at its rate and the steady one never, the forecast against when the quota really refused, growth
# reports one per window at most, each after one warning line naming the site; the exporter's forecast while it
# grows, none for a steady process; `vramguard report` and `diff` say it; without `growth` in VRAMGUARD_REPORT_ON no
# growth report; a Python loop's growing line named; the HTML page draws the growing site, and on the usage timeline
# where growth started and the projection to the quota (headless Chromium where installed); VRAMGUARD_GROWTH_WINDOW
# parsed strictly. Needs: make test-bins (growth, direct, vramguard); chromium for the rendering check.
source tests/lib/section.sh

GR=$T/growth
GRD=$RD/growth
rm -rf "$GRD" && mkdir -p "$GRD/leak" "$GRD/steady" "$GRD/quiet" "$GRD/python"
GENV=(LD_LIBRARY_PATH="$PWD/$T" "$PRE" VRAMGUARD_COUNT=allocations VRAMGUARD_DEVICE_POLL=50 VRAMGUARD_GROWTH_WINDOW=2s
	VRAMGUARD_REPORT_FORMAT=json)

# Beside the leak, in the background: a steady process (for the exporter: no forecast), and a leak without `growth`
# in VRAMGUARD_REPORT_ON (1 MiB every 25 ms to a 192 MiB quota: it grows for about 4 s, past one window).
: >"$W/steady.out"
env "${GENV[@]}" NVIDIA_GPU_MEMORY_LIMIT=544 VRAMGUARD_REPORT_ON=growth,exit \
	"VRAMGUARD_REPORT=$GRD/steady/r-%r-%n.json" timeout 60 "$GR" steady 9 >"$W/steady.out" 2>"$W/steady.err" &
GS=$!
env "${GENV[@]}" NVIDIA_GPU_MEMORY_LIMIT=192 VRAMGUARD_REPORT_ON=exit VRAMGUARD_LOG=info \
	"VRAMGUARD_REPORT=$GRD/quiet/r-%r-%n.json" timeout 60 "$GR" leak 25 >"$W/quiet.out" 2>"$W/quiet.err" &
GQ=$!
# And a Python loop that keeps one more buffer every step (1 MiB every 20 ms to a 384 MiB quota): the growth report
# names its line (tests/integration/python/leak.py).
PYL=tests/integration/python/leak.py
PYSAN=
[ "$SAN" = asan ] && PYSAN="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0"
if command -v python3 >/dev/null; then
	env "${GENV[@]}" $PYSAN NVIDIA_GPU_MEMORY_LIMIT=384 VRAMGUARD_REPORT_ON=growth,exit \
		"VRAMGUARD_REPORT=$GRD/python/r-%r-%n.json" timeout 60 python3 "$PYL" "$PWD/$T/libcuda.so.1" 20 \
		>"$W/python.out" 2>"$W/python.err" &
	GP=$!
fi
wait_for "$W/steady.out" '^ready' || bad "growth: the steady process did not start" "$(cat "$W/steady.err")"
# The exporter, once the leak has been growing for a window (its warning line): the leak's forecast, none for the
# steady process.
: >"$ERR"
(wait_for "$ERR" 'has kept growing' 20 && "$VG" exporter --once >"$W/m.prom" 2>>"$LOG") &
GX=$!
prog "growth: a site gains 1 MiB every 20 ms beside a steady one, under a 544 MiB quota" "${GENV[@]}" \
	NVIDIA_GPU_MEMORY_LIMIT=544 VRAMGUARD_REPORT_ON=growth,exit "VRAMGUARD_REPORT=$GRD/leak/r-%r-%n.json" -- \
	"$GR" leak 20
DENIED=$(sed -n 's/^denied at \([0-9]*\) .*/\1/p' "$LOG" | tail -n 1)
NGROWTH=$(find "$GRD/leak" -name 'r-growth-*.json' | wc -l)
expect_err_lines "  one warning line per growth report, naming the site, its rate and the forecast" \
	'^vramguard: warning: GPU 0: call site [0-9]+ \(grow_one\+0x[0-9a-f]+\) has kept growing for [0-9]+ s, by [0-9.]+ GiB/h; at the current rate its quota \(544\.00 MiB\) is reached (in [0-9]+ s|already); a report follows \(reason growth\): free what that site keeps, or raise the quota in time$' \
	"$NGROWTH"
prog "  its reports: grow_one flagged at 1 MiB / 20 ms, hold_steady never; the forecast; one per window" -- \
	$CHK growth leak "$GRD/leak" 20 "${DENIED:-0}"
wait "$GX"
if grep -Eq '^vramguard_process_quota_forecast_seconds\{pid="[0-9]+",command="[^"]*growth leak 20",region="",gpu="0",gpu_uuid="[^"]*",container="[^"]*",pod="[^"]*"\} ([1-9]|1[0-2])$' "$W/m.prom" &&
	grep -Eq '^vramguard_process_used_bytes\{pid="[0-9]+",command="[^"]*growth steady 9",.*\} 33554432$' "$W/m.prom" &&
	! grep -q '^vramguard_process_quota_forecast_seconds{pid="[0-9]*",command="[^"]*growth steady 9"' "$W/m.prom"; then
	ok "  exporter: the leak's quota forecast in seconds; none for the steady process (its usage only)"
else bad "  exporter: a forecast sample for the leak, none for the steady process" "$(grep -E 'forecast|growth' "$W/m.prom" | head -6)"; fi
if command -v promtool >/dev/null; then
	if xo=$(promtool check metrics <"$W/m.prom" 2>&1); then ok "  promtool check metrics: clean"
	else bad "  promtool check metrics" "$xo"; fi
else skip "  promtool check metrics" "promtool is not installed (scripts/setup.sh installs prometheus)"; fi

G1=$(find "$GRD/leak" -name 'r-growth-1.json')
cli "  vramguard report: the growing site, its rate and the forecast in one line" 0 \
	'^       growing: \+[0-9.]+ GiB/h at site [0-9]+ \(grow_one\+0x[0-9a-f]+\); at the current rate the quota is reached in [0-9]+ s$' \
	-- "$VG" report "$G1"
G2=$(find "$GRD/leak" -name 'r-growth-*.json' | sort | sed -n 2p)
cli "  vramguard diff: the site's rate in both reports and between them, the forecasts" 0 \
	'^      site [0-9]+ \(grow_one\+0x[0-9a-f]+\): \+[0-9.]+ GiB/h \(was \+[0-9.]+ GiB/h\); \+[0-9.]+ GiB/h between the reports$' \
	-- "$VG" diff "$G1" "$G2"
if grep -Eq '^      at the current rate the quota is reached in [0-9]+ s; the first report said [0-9]+ s$' <<<"$CO"; then
	ok "  and the forecast now and then"
else bad "  the forecast line of diff" "$(grep -A4 growing <<<"$CO")"; fi
cli "  report --html: the growing site drawn under the timeline, with its rate and the forecast" 0 '^$' -- \
	"$VG" report --html "$G2" -o "$W/growth.html"
prog "  the page: well-formed, self-contained, the chart and its legend" -- python3 tests/lib/view_check.py html \
	"$W/growth.html" "GPU 0: growing call sites" "GiB/h" "at the current rate the quota is reached in"
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	prog "  in headless Chromium: the line of grow_one and the legend; on the timeline, where growth started and the projection to the quota; no script errors" -- \
		python3 tests/lib/view_check.py browser "$W/growth.html" "$W/chromium" 'class="gsite" data-site="' \
		'grow_one+0x' 'at the current rate the quota is reached in' '<g class="gstart" data-site="' \
		'<g class="proj" data-forecast-s="' ' at this rate</text>'
else skip "  in headless Chromium" "chromium not installed (bash scripts/setup.sh installs Debian's chromium)"; fi
if grep -Eq '<polyline class="gsite" data-site="[0-9]+" [^>]*points="[0-9.]+,[0-9.]+( [0-9.]+,[0-9.]+){10,}"><title>site [0-9]+ \(grow_one\+0x[0-9a-f]+\): \+[0-9.]+ GiB/h</title>' "$W/growth.html" &&
	[ "$(grep -c 'class="gsite"' "$W/growth.html")" = 1 ]; then
	ok "  one line, for grow_one (hold_steady does not grow), through its 11 points or more"
else bad "  one gsite polyline for grow_one expected" "$(grep -o '<polyline class="gsite"[^>]*>' "$W/growth.html" | head -3)"; fi

wait "$GS"
if [ "$(grep -c '^ok' "$W/steady.out")" -gt 0 ] && ! grep -q '^not ok' "$W/steady.out"; then
	ok "growth: the steady process held 32 MiB"
else bad "growth: the steady process" "$(cat "$W/steady.out" "$W/steady.err" | head -5)"; fi
prog "  its exit report: the site followed, never growing, no forecast, no growth report" -- \
	$CHK growth steady "$GRD/steady"
wait "$GQ"
if [ "$(ls "$GRD/quiet")" = "r-exit-1.json" ] &&
	grep -Eq '^vramguard: info: GPU 0: call site [0-9]+ \(grow_one\+0x[0-9a-f]+\) has kept growing .*; VRAMGUARD_REPORT_ON=growth writes a report naming its frames$' "$W/quiet.err"; then
	ok "growth: without growth in VRAMGUARD_REPORT_ON no growth report, one info line saying how to get one"
else bad "growth: only r-exit-1.json and the info line expected" "$(ls "$GRD/quiet"; grep growing "$W/quiet.err")"; fi

if [ -n "${GP:-}" ]; then
	wait "$GP"
	cat "$W/python.out" "$W/python.err" >>"$LOG"
	PDENIED=$(sed -n 's/^denied at \([0-9]*\) .*/\1/p' "$W/python.out")
	if grep -q '^ok - the loop kept' "$W/python.out" &&
		grep -Eq '^vramguard: warning: GPU 0: call site [0-9]+ \(/.*/tests/integration/python/leak\.py:[0-9]+ in train_step\) has kept growing for ' "$W/python.err"; then
		ok "growth: a Python loop keeping a buffer a step: the warning names its line in train_step"
	else bad "growth: the Python loop's warning line" "$(cat "$W/python.out"; grep -m2 vramguard "$W/python.err")"; fi
	prog "  its growth report: that line grows at its rate, the steady one does not; the forecast" -- \
		$CHK growth python "$GRD/python" "$PYL" 20 "${PDENIED:-0}"
else skip "growth: a Python loop" "no python3 (apt-get install python3)"; fi

for bv in "5x" "0" "1.5m" "10M" "8d"; do
	prog "invalid VRAMGUARD_GROWTH_WINDOW '$bv' fails closed" $PRE "VRAMGUARD_GROWTH_WINDOW=$bv" -- $D badconfig
	expect_err_lines "  one line naming the variable and the token, and what it takes" \
		"^vramguard: error: invalid VRAMGUARD_GROWTH_WINDOW '$bv': expected a duration such as 600 \(seconds\), 90s, 10m, 2h or 1d, from 1 s to 7 days" 1
done
done_testing

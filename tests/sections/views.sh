#!/usr/bin/env bash
# Section views: `vramguard report --html / --format folded|speedscope` and `vramguard diff --html`. The page is
# opened in headless Chromium when it is installed (Debian's chromium, from scripts/setup.sh): tests/lib/view_check.py
# reads the rendered DOM back, checks that its script ran without errors and that a screenshot is not blank.
# Needs: make test-bins (vramguard, leaky); chromium for the rendering checks (skipped with the reason without it).
source tests/lib/section.sh
VC="python3 tests/lib/view_check.py"
VR=$RD/views
rm -rf "$VR"
mkdir -p "$VR"
PYJ=tests/cli/python.json
CHROME=$(command -v chromium || command -v chromium-browser || true)
# A report with Python frames, a timeline with quota, soft limit and denials, streams, a hostile file name.
PY_TEXTS=("train.py:42 in leak_here" "train.py:131 in &lt;module&gt;" "/work/model.py:57 in Net.forward"
	"at::native::empty_cuda (libtorch_cuda.so)" "1.50 GiB" "quota 4.00 GiB" "soft limit 3.00 GiB" "+5 min"
	"time since 21:05:03 UTC" "python3 train.py --epochs 3 --batch-size 64" "gpu-node-7"
	"&lt;script&gt;alert(1)&lt;/script&gt;&amp;" 'class="denial" data-denials="1"' 'class="quota"' 'class="soft"'
	'<svg class="icicle"' 'id="site-7"' "1 destroyed with work still queued"
	'<span class="k quota"></span>quota (dashed line)' '<span class="k denial"></span>denied allocations (marks: '
	'<dt>CUDA driver</dt><dd><span class="hint" title="The state of the CUDA driver when the report was written'
	'>working when the report was written</span>' '<span class="hint" title="Set by VRAMGUARD_COUNT (here allocations)'
	'>only the memory the process allocated (not pools, graphs or the driver'"'"'s own memory)</span>'
	'<span class="hint" title="The usage is recorded at least this often' '>usage recorded 40 times, at least every 40 s<'
	'!one at least every' '!(VRAMGUARD_COUNT)' '!<dd>alive</dd>'
	'<g class="fr unres" data-x=' '<li class="unres">libcudnn_engines_precompiled.so.9+0x200 <span'
	'>native frames without a name (module+offset)' '!?? (' '!start_thread (libc.so.6)'
	'<p>Held at exit: 75 allocations, 2.43 GiB, from 5 call sites' '>PyTorch (c10 CUDACachingAllocator)</span>'
	'>stream-ordered pool (cuMemAllocAsync)</span>' '>only grew</span>' '>churn (12 of 60 freed)</span>'
	'!All of it is in' '!75 live allocations'
	'!class="gstart"' '!class="proj"' '!growth started' '!at this rate' '!+50 min')
browser() { # NAME HTML OUTDIR TEXT...
	local name=$1
	shift
	if [ -z "$CHROME" ]; then skip "$name" "chromium not installed (bash scripts/setup.sh installs Debian's chromium)"
	else prog "$name" -- $VC browser "$@"; fi
}

cli "report --html: a page from a report with Python frames" 0 '^$' -- $VG report --html "$PYJ" -o "$VR/py.html"
prog "  well-formed, self-contained, the expected figures and frames" -- $VC html "$VR/py.html" \
	"train.py:42 in leak_here" "1.50 GiB" "at::native::empty_cuda (libtorch_cuda.so)" "gpu-node-7"
browser "  in headless Chromium: DOM, no script errors, sort and zoom work, a screenshot not blank" \
	"$VR/py.html" "$VR/chromium-py" "${PY_TEXTS[@]}"
# The byte axis in one unit with round ticks, whatever the scale: the report's figures (usage, peaks, quota, soft
# limit) scaled so that the highest is each of these; 2.3 GiB drew 0, 500 MiB, 1000.00 MiB, 1.46 GiB... before.
for top in 12 5000 734003200 1048576000 2469606195 3377699720527872; do
	python3 - "$PYJ" "$VR/scale-$top.json" "$top" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for d in r["devices"]:
    pts = d["timeline"]["points"]
    hi = max([d["quota_bytes"], d["soft_limit_bytes"]] + [p["peak_bytes"] for p in pts] + [p["used_bytes"] for p in pts])
    f = lambda v: v * int(sys.argv[3]) // hi
    for p in pts:
        p["used_bytes"], p["peak_bytes"] = f(p["used_bytes"]), f(p["peak_bytes"])
    d["quota_bytes"], d["soft_limit_bytes"] = f(d["quota_bytes"]), f(d["soft_limit_bytes"])
json.dump(r, open(sys.argv[2], "w"))
PY
	cli "report --html, figures up to $top bytes" 0 '^$' -- $VG report --html "$VR/scale-$top.json" -o "$VR/scale-$top.html"
	prog "  the byte axis: one unit, round ticks" -- $VC yticks "$VR/scale-$top.html"
done
browser "  in headless Chromium (up to 2.3 GiB): the byte axis as drawn" "$VR/scale-2469606195.html" \
	"$VR/chromium-scale" '>0 GiB</text>' '>0.5 GiB</text>' '>2.5 GiB</text>'
# What a PyTorch user sees is not taken for a leak (issue 29 item 3): the same report without its one site outside
# PyTorch's caching allocator (the stream-ordered one) says that all of it is the cache, at exit, in the page and the
# text; written before exit (a denial) it says "live" and "outstanding", and gives no verdict.
python3 - "$PYJ" "$VR/torch.json" "$VR/torch-denial.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["sites"]:
    if s["api"] == "cuMemAllocAsync":
        r["allocations"]["live"] -= s["live_count"]
        s["live_count"] = s["live_bytes"] = 0
json.dump(r, open(sys.argv[2], "w"))
r["reason"] = "denial"
json.dump(r, open(sys.argv[3], "w"))
PY
cli "report --html: a report whose memory is all in PyTorch's caching allocator" 0 '^$' -- \
	$VG report --html "$VR/torch.json" -o "$VR/torch.html"
browser "  in headless Chromium: held at exit, all of it the allocator's cache, not a leak by itself" \
	"$VR/torch.html" "$VR/chromium-torch" '<p>Held at exit: 74 allocations, 2.31 GiB, from 4 call sites' \
	"All of it is in PyTorch's caching allocator, which keeps freed memory for reuse instead of giving it back to the driver: not a leak by itself." \
	'>all freed</td>' '!74 live allocations'
cli "  the text form says so under the headline" 0 \
	"^    all of it in PyTorch's caching allocator, which keeps freed memory for reuse instead of giving it back to the driver: not a leak by itself\$" \
	-- $VG report "$VR/torch.json"
cli "  a denial report of the same: outstanding, no verdict" 0 \
	"^    all of it in PyTorch's caching allocator, which keeps freed memory for reuse instead of giving it back to the driver\$" \
	-- $VG report "$VR/torch-denial.json"
if grep -qE '^  outstanding: 74 allocations' <<<"$CO" && ! grep -qE 'held at exit|not a leak' <<<"$CO"; then
	ok "  its headline says outstanding, not held at exit"; else bad "  its headline" "$(grep -E 'outstanding|held' <<<"$CO")"; fi
cli "  as a page" 0 '^$' -- $VG report --html "$VR/torch-denial.json" -o "$VR/torch-denial.html"
prog "  the page: live allocations, all of it the allocator's" -- $VC html "$VR/torch-denial.html" \
	"74 live allocations, 2.31 GiB" \
	"All of it is in PyTorch's caching allocator, which keeps freed memory for reuse instead of giving it back to the driver."
if grep -qE 'Held at exit|driver: not a leak by itself' "$VR/torch-denial.html"; then bad "  no verdict before exit" \
	"$(grep -oE '.{60}(Held at exit|driver: not a leak).{20}' "$VR/torch-denial.html" | head -2)"; else ok "  no verdict before exit"; fi
# The growth on the timeline (revision 5): the same report with site 7 growing since its 21st point and a forecast of
# 2 h 40 min (past twice the 29 min observed: the axis stops at 58.5 min, the projection at its edge) or of 10 min
# (the axis reaches the quota's time, the projection the quota line), or of 2^64-1 s (a hostile file: the line to the
# edge, no wrap, no NaN). The flat report above shows neither.
for fc in 9600 600 18446744073709551615; do
	python3 - "$PYJ" "$VR/grow-$fc.json" "$fc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d, fc = r["devices"][0], int(sys.argv[3])
pts = d["timeline"]["points"][20:]
rate = max(1, (d["quota_bytes"] - d["used_bytes"]) * 3600 // fc)
d["forecast_seconds"] = fc
d["growth"] = {"window_ms": 600000, "step_ms": 60000, "bytes_per_hour": rate, "sites": [
    {"site": 7, "growing": True, "bytes_per_hour": rate, "growing_since_ns": pts[0]["time_ns"],
     "points": [{"time_ns": p["time_ns"], "live_bytes": p["used_bytes"]} for p in pts]},
    {"site": 3, "growing": False, "bytes_per_hour": None, "growing_since_ns": 0,
     "points": [{"time_ns": p["time_ns"], "live_bytes": 1048576} for p in pts]}]}
json.dump(r, open(sys.argv[2], "w"))
PY
	cli "report --html: a report whose site 7 grows, the quota reached in $fc s at its rate" 0 '^$' -- \
		$VG report --html "$VR/grow-$fc.json" -o "$VR/grow-$fc.html"
done
if grep -Eqi 'nan|inf' <<<"$(grep -o '<g class="proj".*</g>' "$VR/grow-18446744073709551615.html")" ||
	! grep -q 'data-reaches="edge"' "$VR/grow-18446744073709551615.html"; then
	bad "  a forecast of 2^64-1 s: the projection to the edge, finite coordinates" \
		"$(grep -o '<g class="proj".*</g>' "$VR/grow-18446744073709551615.html")"
else ok "  a forecast of 2^64-1 s: the projection to the edge, finite coordinates"; fi
GROW_TEXTS=('<g class="gstart" data-site="7"><title>growth started by 21:20:03 UTC: site 7 (train.py:42 in leak_here) +'
	'growth started (black line: hover for the call site)' 'projection at the growth rate (green dashed line)')
prog "  the page: the growth's start and the projection" -- $VC html "$VR/grow-9600.html" \
	"growth started by 21:20:03 UTC: site 7 (train.py:42 in leak_here) +" "quota reached in 2 h 40 min at this rate" \
	"growth started (black line: hover for the call site)"
browser "  in headless Chromium: growth started at site 7's line, the projection to the axis's edge at 58.5 min" \
	"$VR/grow-9600.html" "$VR/chromium-grow-9600" "${GROW_TEXTS[@]}" 'data-forecast-s="9600" data-reaches="edge"' \
	'>quota reached in 2 h 40 min at this rate</text>' '>+50 min</text>' '!>+60 min</text>'
browser "  in headless Chromium: a forecast of 10 min: the projection meets the quota line" \
	"$VR/grow-600.html" "$VR/chromium-grow-600" "${GROW_TEXTS[@]}" 'data-forecast-s="600" data-reaches="quota"' \
	'>quota reached in 10 min 0 s at this rate</text>' '>+35 min</text>' '!>+40 min</text>'
cli "report --format html -o -: the same page on stdout" 0 '^<!DOCTYPE html>$' -- $VG report --format html -o - "$PYJ"
if [ "$CO" = "$(cat "$VR/py.html")" ]; then ok "  identical to --html -o FILE"; else bad "  differs from --html -o FILE"; fi
cli "report --format folded: collapsed stacks of live bytes" 0 '^train\.py:131 in <module>;train\.py:120 in main;' \
	-- $VG report --format folded "$PYJ"
printf '%s\n' "$CO" >"$VR/py.folded"
prog "  by the folded format's rules (root first, one line per live site, sums)" -- $VC folded "$VR/py.folded" "$PYJ"
cli "report --format speedscope -o FILE" 0 '^$' -- $VG report --format speedscope "$PYJ" -o "$VR/py.speedscope.json"
prog "  speedscope's file format, field by field" -- $VC speedscope "$VR/py.speedscope.json" "$PYJ"
cli "report --format text: the text form" 0 '^vramguard: report \(exit #2\) pid 48213' -- $VG report --format text "$PYJ"
cli "report: an unknown --format is a usage error" 2 '^$' -- $VG report --format pdf "$PYJ"
expect_err "  naming it and the formats" "^vramguard: error: report: unknown --format 'pdf' \(expected text, html, folded or speedscope\)"
cli "report: --html with another --format is a usage error" 2 '^$' -- $VG report --html --format folded "$PYJ"
cli "report -o: an unwritable file is one error naming it" 1 '^$' -- $VG report --html "$PYJ" -o /nonexistent/r.html
expect_err "  naming the file" "^vramguard: error: cannot write '/nonexistent/r\.html': No such file or directory$"
cli "diff --html: what grew between two reports of one process" 0 '^$' -- \
	$VG diff --html tests/cli/python-old.json "$PYJ" -o "$VR/diff.html"
prog "  well-formed and self-contained" -- $VC html "$VR/diff.html" "What grew, by call stack" "Between the reports" \
	"+896.00 MiB" "train.py:42 in leak_here"
browser "  in headless Chromium" "$VR/diff.html" "$VR/chromium-diff" "Between the reports" "old report" \
	"2 denials (4.00 GiB), the first by 21:25:18 UTC" 'class="before"' "Grew: 1 call site" "New: 1 call site" \
	"Shrank: 1 call site"
cli "diff -o without --html is a usage error" 2 '^$' -- $VG diff -o "$VR/x" tests/cli/old.json tests/cli/new.json

# A report written by the library under the preload (native frames only), as a page.
prog "a leaking program's JSON report" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$VR/leaks.json" -- $L leaks
cli "  as a page" 0 '^$' -- $VG report --html "$VR/leaks.json" -o "$VR/leaks.html"
browser "  in headless Chromium: the leaking function, its bytes, the streams" "$VR/leaks.html" "$VR/chromium-leaks" \
	"leak_buffers (leaky)" "192.00 MiB" "Destroyed with work queued" "make_stream (leaky)" \
	'<p>Held at exit: 3 allocations, 192.00 MiB, from 1 call site' '>only grew</span>' '!All of it is in' \
	'<span class="hint" title="Set by VRAMGUARD_COUNT (here device)' '>all the GPU memory the process holds (its' \
	'data-d="1"><title>main (leaky)' '!_start (leaky)' '!__libc_start_main (libc.so.6)' '!libc.so.6+0x'
cli "  its folded stacks: from main (the start-up frames folded) to the leaking function" 0 \
	'^main \(leaky\);leak_buffers \(leaky\) 201326592$' -- $VG report --format folded "$VR/leaks.json"

# --lines reaches the flame views too: the leaky program is built with -g (TEST_CFLAGS); its allocating call, the
# call in t_leaks (inlined into main) and main's call of t_leaks are found in the source by their text.
lk=tests/integration/leaky.c
L_ALLOC=$(grep -n 'IT_RC(cuMemAlloc_v2(&kept\[i\], 64 \* MiB)' $lk | cut -d: -f1)
L_CALL=$(sed -n '/^static void t_leaks(void)$/,/^}/{/^	leak_buffers();/=}' $lk) L_MAIN=$(grep -n '^		t_leaks();' $lk | cut -d: -f1)
LK='tests/integration/leaky\.c'
cli "report --format folded --lines: the frames with their source lines" 0 \
	"^main $LK:$L_MAIN > t_leaks $LK:$L_CALL \(leaky\);leak_buffers $LK:$L_ALLOC \(leaky\) 201326592\$" \
	-- $VG report --format folded --lines "$VR/leaks.json"
cli "report --html --lines: a page" 0 '^$' -- $VG report --html --lines "$VR/leaks.json" -o "$VR/leaks-lines.html"
browser "  in headless Chromium: the frames with their source lines, in the stacks and the icicle graph" \
	"$VR/leaks-lines.html" "$VR/chromium-leaks-lines" \
	"<li>leak_buffers tests/integration/leaky.c:$L_ALLOC (leaky) <span" \
	"<li>main tests/integration/leaky.c:$L_MAIN &gt; t_leaks tests/integration/leaky.c:$L_CALL (leaky) <span" \
	"<title>leak_buffers tests/integration/leaky.c:$L_ALLOC (leaky)"
done_testing

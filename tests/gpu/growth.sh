# shellcheck shell=bash
# tests/gpu/growth.sh: issue 29's GPU acceptance (docs/report-format.md, *Growth and forecast*), sourced by
# tests/gpu/run.sh, whose helpers (run, result, verdict, ...) and variables they use. VG_ONLY=growth runs only
# library_loads and this.
#
# growth_torch: a PyTorch training loop that appends one 32 MiB activation per 0.5 s step to a list
# (tests/gpu/growth_torch.py), under a 6144 MiB quota with VRAMGUARD_REPORT_ON=growth,denial,exit and a 20 s growth
# window, until torch.OutOfMemoryError. The first "growth" report must name the appending line as the fastest growing
# site, no other line of the step may grow, and its forecast must be within 20 % of when the OutOfMemoryError came.
# The library's warning line must name the line too. The reports (JSON), their text and HTML are kept in $OUT for
# the screenshot (docs/report-html.md).
growth_torch() {
	local name=growth_torch dir=$BUILD/growth why="" fig_job warn line vgc=${VG_CMD:-${VG_LIB%/*}/vramguard} f r
	mkdir -p "$dir"
	LIMITS=6144 T=${VG_GROWTH_TIMEOUT:-300} run "$name" vg env VRAMGUARD_REPORT_ON=growth,denial,exit \
		VRAMGUARD_GROWTH_WINDOW=20s VRAMGUARD_REPORT_FORMAT=json VRAMGUARD_REPORT="$dir/r-%p-%n-%r.json" \
		"$PY" -u "$HERE/growth_torch.py" run 0.5
	cp "$BUILD/o" "$OUT/growth-job.txt"
	cp "$BUILD/e" "$OUT/growth-job-stderr.txt"
	fig_job="$(grep -h '^steps \|^kept_mib \|^oom_message ' "$BUILD/o" | paste -sd ' ')"
	[ "$RC" -eq 0 ] || why="job: $(why_rc)$(stderr_tail)"
	line=$(sed -n 's/^leak_line //p' "$BUILD/o")
	warn=$(grep -m1 'has kept growing' "$BUILD/e")
	if [ -z "$warn" ]; then
		why="${why:+$why; }no 'has kept growing' line on stderr"
	elif [ -n "$line" ] && ! printf '%s' "$warn" | grep -q "growth_torch\.py:$line in run"; then
		why="${why:+$why; }the warning line does not name growth_torch.py:$line: $warn"
	fi
	cp "$BUILD/o" "$dir/job.out"
	run "$name.check" "$PY" "$HERE/growth_torch.py" check "$dir" "$dir/job.out"
	verdict
	[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
	for f in "$dir"/*.json; do
		[ -e "$f" ] || continue
		r=$(basename "$f" .json)
		r=${r#r-*-}
		cp "$f" "$OUT/growth-$r.json"
		"$vgc" report "$f" >"$OUT/growth-$r.txt" 2>&1
		"$vgc" report --html "$f" -o "$OUT/growth-$r.html" 2>>"$LOG" || why="${why:+$why; }report --html $r failed"
	done
	if [ -z "$why" ]; then
		result PASS "$name" "job: $fig_job; $FIG; library said: $warn"
	else
		result FAIL "$name" "$why; job: $fig_job${FIG:+; $FIG}"
	fi
}

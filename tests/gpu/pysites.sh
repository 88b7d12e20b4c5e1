# shellcheck shell=bash
# tests/gpu/pysites.sh: Python frames in call sites on a real GPU (docs/python.md), sourced by tests/gpu/run.sh,
# whose helpers (run, result, verdict, figures, ...) and variables they use. VG_ONLY=python runs only library_loads
# and these. PyTorch (caching off, so that each tensor is a driver allocation) and CuPy (no memory pool) leak
# 3 x 64 MiB from leak_here() and ask for a report by signal while they are held (the interpreter's teardown frees
# them before the exit report); that JSON report must name leak_here with this suite's file and the line, and so
# must the text report and the HTML page (`vramguard report --html`, kept in $OUT).

# pysites_check NAME FRAMEWORK ENV...: one framework's leak and its report.
pysites_check() {
	local name=$1 which=$2 dir=$BUILD/$1 f fig_job why=""
	shift 2
	mkdir -p "$dir"
	run "$name" vg env "$@" VRAMGUARD_REPORT_FORMAT=json VRAMGUARD_REPORT="$dir/r-%p-%n-%r.json" \
		"$PY" -u "$HERE/pysites.py" "$which"
	if [ "$RC" -eq 3 ] && grep -q '^skip: ' "$BUILD/o"; then
		result SKIP "$name" "$(grep -m1 '^skip: ' "$BUILD/o" | sed 's/^skip: //')"
		return
	fi
	fig_job=$(figures)
	[ "$RC" -eq 0 ] || why="job: $(why_rc)$(stderr_tail)"
	f=$(find "$dir" -name 'r-*-signal.json' | head -1)
	FIG=""
	if [ -n "$f" ]; then
		run "$name.check" "$PY" "$CHECK" pyleak "$f" "$HERE/pysites.py" "$which"
		verdict
		[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
		cp "$f" "$OUT/$name.json" 2>/dev/null
		local vgc=${VG_CMD:-${VG_LIB%/*}/vramguard} want
		"$vgc" report "$f" >"$dir/report.txt" 2>&1 && log_quote "$name: vramguard report" "$dir/report.txt"
		# The HTML page names the same Python frame as the text report.
		want=$(grep -o 'pysites\.py:[0-9]* in leak_here' "$dir/report.txt" | head -1)
		if ! "$vgc" report --html "$f" -o "$OUT/$name.html" 2>>"$LOG"; then
			why="${why:+$why; }vramguard report --html failed"
		elif [ -z "$want" ]; then
			why="${why:+$why; }the text report names no 'pysites.py:N in leak_here'"
		elif ! grep -qF "$want" "$OUT/$name.html"; then
			why="${why:+$why; }the HTML page lacks '$want'"
		else
			FIG="$FIG; text and HTML ($(stat -c %s "$OUT/$name.html") bytes) show '$want'"
		fi
	else
		why="${why:+$why; }no signal report written"
	fi
	if [ -z "$why" ]; then
		result PASS "$name" "job: $fig_job; report: $FIG"
	else
		result FAIL "$name" "$why; job: $fig_job${FIG:+; report: $FIG}"
	fi
}

pysites_checks() {
	pysites_check pysites_torch torch PYTORCH_NO_CUDA_MEMORY_CACHING=1
	pysites_check pysites_cupy cupy
}

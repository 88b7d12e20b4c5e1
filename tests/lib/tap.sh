# shellcheck shell=bash
# The tests' output protocol (docs/TESTING.md), for the shell suites (the sections of tests/run.sh,
# tests/containers/run.sh): TAP that `prove` reads. One line per check, "ok N - name", "not ok N - name" with the
# detail on "# " lines after it, "ok N - name # SKIP reason"; at the end the plan, "1..N" (tap_plan), and the total
# "N passed, N failed[, N skipped]" (tap_total), which is the last line.
pass=0
fail=0
skipped=0
seq=0
ok() { pass=$((pass + 1)) seq=$((seq + 1)); printf 'ok %d - %s\n' "$seq" "$1"; } # NAME
bad() { # NAME [DETAIL]: the detail's lines follow as "# " lines
	fail=$((fail + 1)) seq=$((seq + 1))
	printf 'not ok %d - %s\n' "$seq" "$1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /'
	return 0
}
skip() { skipped=$((skipped + 1)) seq=$((seq + 1)); printf 'ok %d - %s # SKIP %s\n' "$seq" "$1" "$2"; } # NAME REASON
tap_plan() { printf '1..%d\n' "$seq"; }
tap_total() { # "N passed, N failed" and ", N skipped" when some were
	if [ "$skipped" -gt 0 ]; then printf '%d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skipped"
	else printf '%d passed, %d failed\n' "$pass" "$fail"; fi
}

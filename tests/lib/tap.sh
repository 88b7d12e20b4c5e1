# shellcheck shell=bash
# The tests' output protocol (docs/TESTING.md), for the shell suites (tests/run.sh, tests/containers/run.sh): one
# line per check, "ok N - name", "not ok N - name" with the detail on "# " lines after it, "ok N - name # SKIP
# reason". The caller prints the closing "N passed, N failed" from pass and fail.
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

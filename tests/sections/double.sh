#!/usr/bin/env bash
# Section double: the test double's own checks (tests/fakecuda/selftest.c, its checks in the log): a check like any
# other, so that a double that misbehaves, or a foreign libcuda.so.1 loaded in its place, fails the suite and the
# total says so. Needs: make test-bins (fakecuda_selftest, libcuda.so.1).
source tests/lib/section.sh

out=$("$T/fakecuda_selftest" 2>&1)
rc=$?
printf '%s\n' "$out" >>"$LOG"
if [ "$rc" -eq 0 ] && grep -Eq '^[0-9]+ passed, 0 failed$' <<<"$(tail -n 1 <<<"$out")"; then
	ok "the test double's self-test (tests/fakecuda/selftest.c): $(tail -n 1 <<<"$out")"
else
	bad "the test double's self-test (tests/fakecuda/selftest.c): exit $rc" \
		"$(grep -A1 '^not ok\|^# .*not ok' <<<"$out" | head -8; tail -n 2 <<<"$out")"
fi
done_testing

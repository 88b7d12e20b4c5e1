#!/usr/bin/env bash
# Section env: the suite's result does not depend on the caller's environment, and its last line counts every
# failure. tests/run.sh runs four sections under a hostile environment (a stranger's libcuda.so.1 and
# libnvidia-ml.so.1 on LD_LIBRARY_PATH and in LD_PRELOAD, as CUDA images set them; quotas, devices, faults and a
# shared region in NVIDIA_*, CUDA_*, VRAMGUARD_*, FAKECUDA_*; a Python path whose json module is broken; another
# locale, umask and TMPDIR), each shown first to break what it aims at; and on tests/lib/runner-fixtures, sections
# that fail, stop early, exit non-zero with all checks passing, are killed, skip: its total and exit status count
# each, and prove agrees. Needs: make test-bins (foreign/, fakecuda_selftest), perl's prove.
source tests/lib/section.sh

# The hostile environment.
mkdir -p "$W/py"
printf 'raise ImportError("a broken json module on PYTHONPATH (tests/sections/env.sh)")\n' >"$W/py/json.py"
FOREIGN=$PWD/$T/foreign
HOSTILE=(LD_LIBRARY_PATH="$FOREIGN" LD_PRELOAD="$FOREIGN/libcuda.so.1" NVIDIA_GPU_MEMORY_LIMITS=1
	NVIDIA_GPU_MEMORY_LIMIT=1M CUDA_DEVICE_MEMORY_LIMIT=1 CUDA_VISIBLE_DEVICES=3 NVIDIA_VISIBLE_DEVICES=none
	VRAMGUARD_REPORT=/nonexistent/r.json VRAMGUARD_LOG=debug VRAMGUARD_SHM_DIR=/nonexistent VRAMGUARD_SHARED=hostile
	VRAMGUARD_DRIVER_HEADROOM=1G FAKECUDA_DEVICES=5 FAKECUDA_FAIL=cuMemAlloc_v2:1+ PYTHONPATH="$W/py"
	LANG=tr_TR.UTF-8 LC_ALL=C.UTF-8 TMPDIR=/nonexistent POSIXLY_CORRECT=1)

# Controls: each part of it breaks what it aims at when nothing protects a check from it.
out=$(env LD_LIBRARY_PATH="$FOREIGN" "$T/fakecuda_selftest" 2>&1)
if grep -q 'undefined symbol: fakecuda_' <<<"$out"; then
	ok "control: with the stranger's libcuda.so.1 on LD_LIBRARY_PATH the test double's self-test cannot even start"
else bad "control: the self-test should fail under LD_LIBRARY_PATH=$FOREIGN" "$(tail -n 3 <<<"$out")"; fi
out=$(env PYTHONPATH="$W/py" $CHK 2>&1)
if grep -q 'a broken json module' <<<"$out"; then ok "control: with that PYTHONPATH the report checker cannot start"
else bad "control: the report checker should fail under PYTHONPATH=$W/py" "$(tail -n 3 <<<"$out")"; fi
out=$(env "${HOSTILE[@]}" "$D" quota 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "control: a quota check run in that environment fails"
else bad "control: the quota check should fail in the hostile environment" "$(head -n 5 <<<"$out")"; fi

# The suite in it: four sections that load the double, preload the library, read NVML and check reports with
# Python; the same results as here.
out=$(umask 077 && env "${HOSTILE[@]}" VG_TEST_RUN="$W/nested" bash tests/run.sh -j 2 double quota nvml reports 2>&1)
rc=$?
printf '== nested run in a hostile environment (exit %d)\n%s\n' "$rc" "$out" >>"$LOG"
last=$(tail -n 1 <<<"$out")
if [ "$rc" -eq 0 ] && grep -Eq '^[0-9]+ passed, 0 failed(, [0-9]+ skipped)?$' <<<"$last" && ! grep -q '^not ok' <<<"$out" &&
	grep -q "^ok [0-9]* - the test double's self-test" <<<"$out"; then
	ok "tests/run.sh double quota nvml reports in that environment (umask 077): $last, exit 0"
else
	bad "tests/run.sh in a hostile environment: '$last', exit $rc" "$(grep -A3 '^not ok' <<<"$out" | head -12)"
fi
if prove -e cat <(printf '%s\n' "$out") 2>&1 | grep -q '^Result: PASS$'; then ok "  prove reads its output: PASS"
else bad "  prove does not read the nested run's output as a pass" "$(prove -e cat <(printf '%s\n' "$out") 2>&1 | tail -3)"; fi

# The closing line counts every failure: the fixtures fail once, stop before their end, exit 1 with every check
# passing, are killed, skip one.
out=$(VG_SECTIONS_DIR=tests/lib/runner-fixtures VG_TEST_RUN="$W/fixtures" bash tests/run.sh -j 3 2>&1)
rc=$?
printf '== the runner on its fixtures (exit %d)\n%s\n' "$rc" "$out" >>"$LOG"
last=$(tail -n 1 <<<"$out")
if [ "$rc" -eq 1 ] && [ "$last" = "5 passed, 4 failed, 1 skipped" ] &&
	[ "$(grep -c '^not ok' <<<"$out")" -eq 4 ] && grep -q '^1\.\.10$' <<<"$out"; then
	ok "the runner on failing fixture sections: '$last', exit 1 (a failed check, a section stopped early, one that exited 1, one killed)"
else bad "the runner on its fixtures: '$last', exit $rc, want '5 passed, 4 failed, 1 skipped', exit 1" "$(grep -A1 '^not ok' <<<"$out")"; fi
for f in stops status killed; do
	grep -q "^not ok [0-9]* - section $f " <<<"$out" && ok "  the $f fixture is named in a failed check" ||
		bad "  no failed check names the $f fixture"
done
pv=$(prove -e cat <(printf '%s\n' "$out") 2>&1)
if grep -q '^Result: FAIL$' <<<"$pv" && grep -q 'Tests: 10 Failed: 4)' <<<"$pv"; then
	ok "  prove reads it: 10 tests, 4 failed"
else bad "  prove's reading of the fixtures' run" "$(tail -n 6 <<<"$pv")"; fi
done_testing

#!/usr/bin/env bash
# Section softlimit: NVIDIA's variable names, soft limits (NVIDIA_GPU_MEMORY_REQUEST[S]), VRAMGUARD_WARN_AT and
# VRAMGUARD_REPORT_ON: crossings, their warnings and reports. Needs: make test-bins (direct, softlimit, reporton).
source tests/lib/section.sh

echo "== NVIDIA's variable names, soft limits"
prog "NVIDIA_GPU_MEMORY_LIMIT=4096: one quota for every device" $PRE NVIDIA_GPU_MEMORY_LIMIT=4096 -- $D quota
expect_err "  the denial names NVIDIA_GPU_MEMORY_LIMIT" '^vramguard: denied .*\(NVIDIA_GPU_MEMORY_LIMIT\)$'
prog "NVIDIA_GPU_MEMORY_LIMITS wins over NVIDIA_GPU_MEMORY_LIMIT" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	NVIDIA_GPU_MEMORY_LIMIT=8G VRAMGUARD_LOG=info -- $D quota
expect_err_lines "  one info line names the one ignored" \
	"^vramguard: info: NVIDIA_GPU_MEMORY_LIMIT '8G' is ignored \(NVIDIA_GPU_MEMORY_LIMITS '4096' takes precedence\)\$" 1
prog "NVIDIA_GPU_MEMORY_LIMIT wins over HAMi's variables" $PRE NVIDIA_GPU_MEMORY_LIMIT=4G CUDA_DEVICE_MEMORY_LIMIT=1g \
	CUDA_DEVICE_MEMORY_LIMIT_0=2g -- $D quota
prog "a request at or above the quota" $PRE NVIDIA_GPU_MEMORY_LIMIT=4096 NVIDIA_GPU_MEMORY_REQUEST=8G VRAMGUARD_LOG=info \
	VRAMGUARD_REPORT=off -- $D quota
expect_err_lines "  is allowed, and one info line says it never triggers" \
	'^vramguard: info: GPU 0: soft limit 8\.00 GiB \(NVIDIA_GPU_MEMORY_REQUEST\) is not below its quota 4\.00 GiB \(NVIDIA_GPU_MEMORY_LIMIT\): it never triggers$' 1
prog "invalid NVIDIA_GPU_MEMORY_REQUEST (a list in the one-value name) fails closed" $PRE NVIDIA_GPU_MEMORY_REQUEST=0:1G \
	-- $D badconfig
expect_err_lines "  one line naming the variable and the token, pointing at the list variable" \
	"^vramguard: error: invalid NVIDIA_GPU_MEMORY_REQUEST '0:1G': a device key is not allowed here \(expected e\.g\. .*NVIDIA_GPU_MEMORY_REQUESTS=0:4G,1:2G\)\$" 1
SL=$T/softlimit
SLD=$RD/soft
rm -rf "$SLD" && mkdir -p "$SLD/cross" "$SLD/threads" "$SLD/exit"
SOFTWARN='^vramguard: warning: GPU 0 crossed its soft limit: 3\.25 GiB of 3\.00 GiB requested \(NVIDIA_GPU_MEMORY_REQUEST\); nothing is denied; '
# The crossing is seen where memory is charged: the hot path calls vg_soft_limit_check after each charge.
if grep -rl --include='*.c' 'vg_soft_limit_check(' interposer | grep -qv 'interposer/softlimit\.c'; then
	prog "soft limit: NVIDIA_GPU_MEMORY_REQUEST=3072 crossed by allocations, hovering after (VRAMGUARD_SIGNAL=off)" \
		$PRE NVIDIA_GPU_MEMORY_LIMIT=4096 NVIDIA_GPU_MEMORY_REQUEST=3072 VRAMGUARD_SIGNAL=off \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$SLD/cross/r-%r-%n.json" -- $SL cross "$SLD/cross"
	expect_err_lines "  exactly one warning line, saying a report follows" "${SOFTWARN}a report follows \(reason soft-limit\)\$" 1
	expect_err_lines "  and nothing else from vramguard (nothing denied)" '^vramguard: ' 1
	prog "  its reports: one soft-limit report (sequence 1), the exit report" -- $CHK soft "$SLD/cross" crossed \
		$(((3 * 1024 + 768) * 1024 * 1024))
	cli "  vramguard report reads the soft-limit report" 0 '^vramguard: report \(soft-limit\) pid [0-9]+' -- \
		$VG report "$SLD/cross/r-soft-limit-1.json"
	if grep -q '^  soft limits from NVIDIA_GPU_MEMORY_REQUEST (GPU 0)$' <<<"$CO"; then ok "  ... and names the soft limit's variable"
	else bad "  the text report should name the soft limit's variable" "$(head -5 <<<"$CO")"; fi
	cli "  vramguard diff compares it with the exit report" 0 '^vramguard: diff' -- \
		$VG diff "$SLD/cross/r-soft-limit-1.json" "$SLD/cross/r-exit-2.json"
	prog "soft limit: 8 threads cross it at once" $PRE NVIDIA_GPU_MEMORY_LIMIT=8G NVIDIA_GPU_MEMORY_REQUEST=3G \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$SLD/threads/r-%r-%n.json" -- $SL threads "$SLD/threads"
	expect_err_lines "  one warning" '^vramguard: warning: GPU 0 crossed its soft limit: ' 1
	prog "soft limit with VRAMGUARD_REPORT=off" $PRE NVIDIA_GPU_MEMORY_LIMIT=4096 NVIDIA_GPU_MEMORY_REQUEST=3072 \
		VRAMGUARD_REPORT=off -- $SL cross -
	expect_err_lines "  one warning, saying that no report comes" "${SOFTWARN}no report \(VRAMGUARD_REPORT=off\)\$" 1
else
	skip "soft limit crossings under the preload" "no charge path calls vg_soft_limit_check yet"
	prog "soft limit: the exit report shows it" $PRE NVIDIA_GPU_MEMORY_LIMIT=4096 NVIDIA_GPU_MEMORY_REQUEST=3072 \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$SLD/exit/r-%r-%n.json" -- $SL cross -
	prog "  its exit report" -- $CHK soft "$SLD/exit" none $(((3 * 1024 + 768) * 1024 * 1024))
fi
# VRAMGUARD_WARN_AT and VRAMGUARD_REPORT_ON (tests/integration/reporton.c); a 1 s interval shows the rate bound.
RO=$T/reporton
ROD=$RD/reporton
rm -rf "$ROD" && mkdir -p "$ROD/threshold" "$ROD/denial" "$ROD/dies" "$ROD/off"
ROENV=(NVIDIA_GPU_MEMORY_LIMIT=4096 VRAMGUARD_REPORT_INTERVAL=1 VRAMGUARD_REPORT_FORMAT=json VRAMGUARD_SIGNAL=off)
prog "threshold: VRAMGUARD_WARN_AT=75% of a 4G quota (below the request), crossed, hovering, re-crossed within and after the interval" \
	$PRE "${ROENV[@]}" VRAMGUARD_WARN_AT=75% NVIDIA_GPU_MEMORY_REQUEST=3584 "VRAMGUARD_REPORT=$ROD/threshold/r-%r-%n.json" -- \
	$RO threshold "$ROD/threshold"
ROWARN='^vramguard: warning: GPU 0 crossed its warning threshold: 3\.[23][15] GiB above 3\.00 GiB \(VRAMGUARD_WARN_AT\); nothing is denied; a report follows \(reason threshold\)'
expect_err_lines "  two warning lines (three crossings)" "$ROWARN" 2
expect_err_lines "  the second names the crossing the interval held back" "${ROWARN}; 1 more crossing since the last message\$" 1
prog "threshold: the lower of VRAMGUARD_WARN_AT and NVIDIA_GPU_MEMORY_REQUEST applies (the request here)" \
	$PRE "${ROENV[@]}" VRAMGUARD_WARN_AT=90% NVIDIA_GPU_MEMORY_REQUEST=3G VRAMGUARD_REPORT_ON=exit -- $SL cross -
expect_err_lines "  one soft-limit warning naming the request, no report (threshold not in VRAMGUARD_REPORT_ON)" \
	"${SOFTWARN}no report \(VRAMGUARD_REPORT_ON has no threshold\)\$" 1
prog "denial: VRAMGUARD_REPORT_ON=denial, a burst of denials, another after the interval" \
	$PRE "${ROENV[@]}" VRAMGUARD_REPORT_ON=denial "VRAMGUARD_REPORT=$ROD/denial/r-%r-%n.json" -- \
	$RO denial "$ROD/denial"
n=$(find "$ROD/denial" -name 'r-*' | wc -l); m=$(find "$ROD/denial" -name 'r-exit-*' | wc -l)
if [ "$n" -eq 2 ] && [ "$m" -eq 0 ]; then ok "  two reports, no exit report (exit not in VRAMGUARD_REPORT_ON)"
else bad "  two denial reports and no exit report expected" "$(ls "$ROD/denial")"; fi
cli "  vramguard report reads the denial report" 0 '^vramguard: report \(denial\) pid [0-9]+' -- \
	$VG report "$ROD/denial/r-denial-1.json"
prog "denial: a job that exits right after its denial leaves the denial report, then the exit report" \
	$PRE "${ROENV[@]}" VRAMGUARD_REPORT_ON=denial,exit "VRAMGUARD_REPORT=$ROD/dies/r-%r-%n.json" -- $RO dies -
if [ -e "$ROD/dies/r-denial-1.json" ] && [ -e "$ROD/dies/r-exit-2.json" ]; then ok "  both, in that order"
else bad "  r-denial-1.json and r-exit-2.json expected" "$(ls "$ROD/dies")"; fi
prog "denial: not in the default VRAMGUARD_REPORT_ON" $PRE "${ROENV[@]}" \
	"VRAMGUARD_REPORT=$ROD/off/r-%r-%n.json" -- $RO dies -
if [ "$(ls "$ROD/off")" = "r-exit-1.json" ]; then ok "  only the exit report"
else bad "  only r-exit-1.json expected" "$(ls "$ROD/off")"; fi
for bv in "VRAMGUARD_REPORT_ON=exit,oom|unknown word 'oom' \(expected a list of exit, signal, denial, threshold, growth, e\.g\. exit,signal,denial\)" \
	"VRAMGUARD_REPORT_ON=exit,,denial|empty item" "VRAMGUARD_REPORT_ON=exit,EXIT|repeated word 'EXIT'" \
	"VRAMGUARD_WARN_AT=80x|unknown unit" "VRAMGUARD_REPORT_ON=never|unknown word \(expected" "VRAMGUARD_WARN_AT=120%|percentage above 100%" "VRAMGUARD_REPORT_INTERVAL=0|expected seconds"; do
	var=${bv%%|*}
	prog "invalid ${var%%=*} '${var#*=}' fails closed" $PRE "$var" -- $D badconfig
	expect_err_lines "  one line naming the variable and the token" "^vramguard: error: invalid ${var%%=*} '${var#*=}': .*${bv#*|}" 1
done
cli "check: the request per device next to the quota, and what the quota counts" 0 \
	'request 1\.00 GiB \(NVIDIA_GPU_MEMORY_REQUESTS\)' $FAKEENV FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMIT=4G \
	NVIDIA_GPU_MEMORY_REQUESTS=0:1G VRAMGUARD_COUNT=allocations -- $VG check
if grep -q 'GPU 1 .*' <<<"$CO" && grep -q 'quota 4\.00 GiB (NVIDIA_GPU_MEMORY_LIMIT), request: none' <<<"$CO" &&
	grep -q 'the quota counts the bytes a process asks for (VRAMGUARD_COUNT=allocations)' <<<"$CO"; then
	ok "  GPU 1 has the quota and no request; the count mode is allocations"
else bad "  check output" "$(tail -8 <<<"$CO")"; fi
cli "check: VRAMGUARD_WARN_AT next to the request, and which of the two applies" 0 \
	'quota 4\.00 GiB \(NVIDIA_GPU_MEMORY_LIMIT\), request 1\.00 GiB \(NVIDIA_GPU_MEMORY_REQUESTS\), warn at 3\.19 GiB \(VRAMGUARD_WARN_AT\): the request is lower and applies$' \
	$FAKEENV NVIDIA_GPU_MEMORY_LIMIT=4G NVIDIA_GPU_MEMORY_REQUESTS=0:1G VRAMGUARD_WARN_AT=80% -- $VG check
if grep -q 'request: none, warn at 3\.19 GiB (VRAMGUARD_WARN_AT)$' <<<"$(env $FAKEENV FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMIT=4G NVIDIA_GPU_MEMORY_REQUESTS=0:1G VRAMGUARD_WARN_AT=80% $VG check 2>&1)"; then
	ok "  GPU 1: no request, warns at 80 % of its quota"
else bad "  GPU 1: no 'warn at 3.19 GiB' line without a request"; fi

done_testing

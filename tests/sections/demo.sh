#!/usr/bin/env bash
# Section demo: the README's first command, `bash scripts/demo.sh`, as a newcomer runs it: it says which driver it
# ran on, shows the quota refusing an allocation and explains the figures, and every command it then offers to try
# works as printed, from the repository's root; so does `make try`'s environment (scripts/try.sh CMD).
# Needs: the default build directory (build/), which the demo uses.
source tests/lib/section.sh

if [ "$B" != build ]; then
	skip "the demo and its commands" "the demo uses build/, this run $B"
	done_testing
	exit
fi
# As a newcomer's shell has it: none of the settings the sections make for their own checks.
NEW=(env -u VRAMGUARD_DRIVER_HEADROOM -u VRAMGUARD_SHM_DIR)
out=$("${NEW[@]}" timeout 120 bash scripts/demo.sh 2>&1)
rc=$?
printf '== demo (exit %d)\n%s\n' "$rc" "$out" >>"$LOG"
if [ "$rc" -eq 0 ] && grep -q '^demo: \(running against the real NVIDIA driver\|no NVIDIA GPU here\)' <<<"$out" &&
	grep -q '^vramguard: denied 512.00 MiB on GPU 0 (cuMemAlloc_v2)' <<<"$out" &&
	grep -q '^allocated 3 x 512 MiB = 1536 MiB' <<<"$out" &&
	grep -q 'VRAMGUARD_DRIVER_HEADROOM (192 MiB by default)' <<<"$out"; then
	ok "scripts/demo.sh: names its driver, 3 pieces of 512 MiB under the 2 GiB quota and the 4th refused, explained"
else bad "scripts/demo.sh (exit $rc)" "$(tail -n 8 <<<"$out")"; fi
mapfile -t tries < <(sed -n 's/^  \$ //p' <<<"$out")
[ "${#tries[@]}" -ge 3 ] || bad "the demo offers fewer than 3 commands to try" "$(tail -n 6 <<<"$out")"
for cmd in "${tries[@]}"; do
	o=$("${NEW[@]}" timeout 60 bash -c "$cmd" 2>&1)
	r=$?
	printf '== try: %s (exit %d)\n%s\n' "$cmd" "$r" "$o" >>"$LOG"
	case $cmd in
	*quota_demo*) want='^allocated [0-9]+ x 512 MiB = [0-9]+ MiB, then cuMemAlloc returned 2' ;;
	*check*) want='quota|GPU 0' ;;
	*) want='.' ;;
	esac
	if [ "$r" -eq 0 ] && grep -Eq -- "$want" <<<"$o"; then ok "as printed by the demo: $cmd"
	else bad "as printed by the demo: $cmd (exit $r)" "$(head -n 4 <<<"$o")"; fi
done
o=$("${NEW[@]}" timeout 60 bash scripts/try.sh vramguard run --limit 2G -- quota_demo 2>&1)
if grep -q '^allocated 3 x 512 MiB' <<<"$o"; then ok "make try's environment: vramguard run --limit 2G -- quota_demo"
else bad "make try's environment: vramguard run --limit 2G -- quota_demo" "$(head -n 4 <<<"$o")"; fi
done_testing

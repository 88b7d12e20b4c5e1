#!/usr/bin/env bash
# Section secure: programs with elevated privileges (AT_SECURE): the variables that name files, directories and
# modes are ignored, one line says which, the quota holds. Needs root and setpriv; make test-bins (dl_secure).
source tests/lib/section.sh

# Secure mode (AT_SECURE): a setuid-root copy of a probe, run as nobody with variables that name files,
# directories and modes. They are ignored, one line names those that were set, and the quota still holds. The same
# probe not setuid, run as root with the same variables, is the control: there they are honoured, so each check
# below is seen to tell the difference.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	SD=$(mktemp -d /tmp/vg-secure.XXXXXX)
	chmod 755 "$SD"
	cp "$T/dl_secure" "$T/libcuda.so.1" "$LIB" "$SD/" && chmod 755 "$SD"/*.so* &&
		cp "$SD/dl_secure" "$SD/dl_plain" && chmod 4755 "$SD/dl_secure" && chmod 755 "$SD/dl_plain"
	mkdir -m 0700 "$SD/root-only" "$SD/shm"
	probe() { # secure|plain VAR=value ... -- DIR...: stdout and stderr of the probe in $out (DIRs: where it looks
		# for its own control segment while it runs)
		local how=$1 as=() envs=()
		shift
		while [ "$1" != "--" ]; do envs+=("$1"); shift; done
		shift
		[ "$how" = secure ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		# Without the section's VRAMGUARD_SHM_DIR: what is checked here is the default, /dev/shm.
		out=$(cd /tmp && "${as[@]}" env -u VRAMGUARD_SHM_DIR NVIDIA_GPU_MEMORY_LIMITS=4096 "${envs[@]}" \
			"$SD/dl_$how" "$SD/libcuda.so.1" "$SD/libvramguard.so" "$@" 2>&1)
		echo "== secure mode ($how): ${envs[*]}: $out" >>"$LOG"
	}
	out_lines() { # NAME EXTENDED-REGEX COUNT: how many lines of $out must match
		local n
		n=$(grep -Ec -- "$2" <<<"$out")
		if [ "$n" -eq "$3" ]; then ok "$1"; else
			bad "$1" "$n matching lines, want $3: $(head -6 <<<"$out" | tr '\n' '|')"; fi
	}
	ELEV='this program runs with elevated privileges \(setuid/setgid or capabilities\)'
	QUOTA='^cuInit 0, cuMemAlloc_v2 0, over quota 2$'
	SAFE='no shared region, no control segment, reports go to stderr'
	echo "-- secure mode"
	probe secure "VRAMGUARD_SHARED=$SD/root-only/x" VRAMGUARD_SHARED_MODE=0660 --
	out_lines "setuid: AT_SECURE=1" '^AT_SECURE=1$' 1
	out_lines "  VRAMGUARD_SHARED, VRAMGUARD_SHARED_MODE: an allocation within the quota works, the quota holds" \
		"$QUOTA" 1
	if [ -z "$(ls -A "$SD/root-only")" ]; then ok "  no file is created in the root-only directory"; else
		bad "  a file was created in the root-only directory" "$(ls -l "$SD/root-only" | tail -n +2)"; fi
	out_lines "  one line, naming exactly the two variables" "$ELEV" 1
	out_lines "  ... as a warning: ignored, no shared region, no control segment, reports to stderr" \
		"^vramguard: warning: $ELEV: VRAMGUARD_SHARED, VRAMGUARD_SHARED_MODE ignored: $SAFE\$" 1
	probe plain "VRAMGUARD_SHARED=$SD/root-only/x" VRAMGUARD_SHARED_MODE=0660 --
	m=$(sed -n 's/^shared region file: mode //p' <<<"$out")    # while it ran: its last member's exit removes it
	if grep -q '^AT_SECURE=0$' <<<"$out" && grep -Eq "$QUOTA" <<<"$out" && [ "$m" = 660 ]; then
		ok "  control: not setuid, the same variables make the region file (mode $m)"
	else
		bad "  control: not setuid, the region file is not there (mode '$m')" \
			"$(head -4 <<<"$out" | tr '\n' '|')"
	fi
	rm -f "$SD/root-only/x"

	probe secure "VRAMGUARD_SHM_DIR=$SD/shm" -- "$SD/shm" /dev/shm
	out_lines "setuid, VRAMGUARD_SHM_DIR: the quota holds" "$QUOTA" 1
	out_lines "  no control segment, in VRAMGUARD_SHM_DIR or in /dev/shm" '^control segment: ' 0
	out_lines "  one warning naming VRAMGUARD_SHM_DIR" "^vramguard: warning: $ELEV: VRAMGUARD_SHM_DIR ignored: " 1
	probe plain "VRAMGUARD_SHM_DIR=$SD/shm" -- "$SD/shm" /dev/shm
	out_lines "  control: not setuid, the control segment is in VRAMGUARD_SHM_DIR" \
		"^control segment: $SD/shm/vramguard\.proc\." 1
	probe secure VRAMGUARD_LOG=info -- /dev/shm
	out_lines "setuid, nothing set: no control segment in /dev/shm" '^control segment: ' 0
	out_lines "  one info line, saying only that" "^vramguard: info: $ELEV: no control segment$" 1
	out_lines "  ... and no warning" "^vramguard: warning: " 0
	probe plain VRAMGUARD_LOG=info -- /dev/shm
	out_lines "  control: not setuid, the control segment is in /dev/shm" \
		'^control segment: /dev/shm/vramguard\.proc\.' 1
	probe secure --
	out_lines "setuid, nothing set, default VRAMGUARD_LOG: quiet" "$ELEV" 0

	probe secure "VRAMGUARD_REPORT=$SD/r-%p.txt" VRAMGUARD_REPORT_MODE=0666 --
	out_lines "setuid, VRAMGUARD_REPORT: one warning naming it and VRAMGUARD_REPORT_MODE" \
		"^vramguard: warning: $ELEV: VRAMGUARD_REPORT, VRAMGUARD_REPORT_MODE ignored: $SAFE\$" 1
	out_lines "  the report goes to stderr" '^vramguard: report \(exit\)' 1
	if ls "$SD"/r-* >/dev/null 2>&1; then bad "  a report file was written"; else ok "  no report file"; fi

	probe secure VRAMGUARD_SHARED=no/such VRAMGUARD_SHARED_MODE=0777 VRAMGUARD_SHM_DIR=relative \
		VRAMGUARD_CONTROL=maybe VRAMGUARD_SHARED_LIMITS=4XB VRAMGUARD_REPORT=%q VRAMGUARD_REPORT_MODE=9 \
		VRAMGUARD_SHARED_SLOTS=0 -- /dev/shm
	out_lines "setuid, invalid values of ignored variables: not parsed, the process runs under its quota" "$QUOTA" 1
	all="VRAMGUARD_REPORT, VRAMGUARD_REPORT_MODE, VRAMGUARD_SHM_DIR, VRAMGUARD_SHARED, VRAMGUARD_SHARED_LIMITS"
	out_lines "  one warning naming all eight, in the table's order" \
		"^vramguard: warning: $ELEV: $all, VRAMGUARD_SHARED_MODE, VRAMGUARD_SHARED_SLOTS, VRAMGUARD_CONTROL ignored: $SAFE\$" 1
	out_lines "  and no error" '^vramguard: error: ' 0
	out_lines "  no control segment (VRAMGUARD_CONTROL=maybe)" '^control segment: ' 0
	probe secure NVIDIA_GPU_MEMORY_LIMITS=4XB --
	out_lines "setuid, an invalid quota still fails closed" \
		"^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB'" 1
	rm -rf "$SD"
else
	skip "secure mode (setuid probe)" "needs root and setpriv"
fi
done_testing

# shellcheck shell=bash
# Helpers for the tests that drive processes under the preload one command at a time (shared_preload.sh,
# hostile.sh): tests/integration/shared_alloc.c reads one command per line from a FIFO and answers one line, so
# several of them can be made to take turns deterministically. Sourced; uses tests/lib/section.sh's ok, bad and $T $LIB $SP $LOG
# $VG $CHK, and the caller's $SHD (the VRAMGUARD_SHM_DIR of the processes it starts). SHP_AS=(setpriv ...) runs the
# next spawned process as another user.

# A fresh directory for regions, in memory where there is one: shp_dir NAME.
shp_dir() { mktemp -d "/dev/shm/vg-$1.XXXXXX" 2>/dev/null || mktemp -d "/tmp/vg-$1.XXXXXX"; }

SA=$PWD/$T/shared_alloc
# shellcheck disable=SC2034 # MIB, G1 and SHP_FE are for the files that source this one
MIB=$((1 << 20))
declare -A SHP_JOB SHP_FD SHP_N SHP_PID
SHP_AS=()
SHP_R=
# shellcheck disable=SC2034 # for the files that source this one
SHP_FE=${FORKENV:-}     # TSan: forking needs its deadlock detector off (tests/lib/section.sh says why)

# shp_spawn NAME [VAR=value...]: start shared_alloc under the preload with its stdin on the FIFO $SHD/NAME.in; its
# stdout in NAME.out, its stderr in NAME.err; its pid in ${SHP_PID[NAME]}. SHP_VIA_SLEEP=1: as the child of a
# process that never waits for it (so that it stays a zombie when killed). NAME.out and .err are emptied first: the
# child's own redirection truncates them only once it runs, and a name spawned again (exec, exitrace) would have its
# pid read from the last process's answers (seen under stress-ng: 2 spawns in 900).
shp_spawn() {
	local n=$1 fd f
	shift
	mkfifo "$SHD/$n.in"
	: >"$SHD/$n.out"
	: >"$SHD/$n.err"
	local cmd=(env -u NVIDIA_GPU_MEMORY_LIMITS -u CUDA_DEVICE_MEMORY_LIMIT -u VRAMGUARD_SHARED
		-u VRAMGUARD_SHARED_LIMITS -u VRAMGUARD_SHARED_MODE -u VRAMGUARD_CONTROL -u VRAMGUARD_LOG -u FAKECUDA_DEVICES
		-u FAKECUDA_UUID_BASE -u FAKECUDA_FORK_OK -u FAKECUDA_FAIL
		LD_LIBRARY_PATH="$PWD/$T" LD_PRELOAD="$SP$LIB" VRAMGUARD_SHM_DIR="$SHD" VRAMGUARD_REPORT=off "$@")
	(
		for f in "${SHP_FD[@]}"; do eval "exec $f>&-"; done     # the other processes' FIFOs: theirs alone
		[ ${#SHP_AS[@]} -gt 0 ] && cmd=("${SHP_AS[@]}" "${cmd[@]}")
		if [ "${SHP_VIA_SLEEP:-}" = 1 ]; then
			exec sh -c 'exec 3<&0; "$@" <&3 3<&- & exec sleep 60 <&-' sh "${cmd[@]}" "$SA" repl
		fi
		exec "${cmd[@]}" "$SA" repl
	) <"$SHD/$n.in" >"$SHD/$n.out" 2>"$SHD/$n.err" &
	SHP_JOB[$n]=$!
	exec {fd}>"$SHD/$n.in"
	SHP_FD[$n]=$fd
	SHP_N[$n]=0
	shp_send "$n" pid
	# shellcheck disable=SC2034 # read by the files that source this one
	SHP_PID[$n]=${SHP_R#= pid }
}
# shp_post NAME CMD...: send a command without waiting for its answer. A subshell writes it: a process that died
# must not take the suite down with SIGPIPE.
shp_post() {
	local n=$1
	shift
	(trap '' PIPE; printf '%s\n' "$*" >&"${SHP_FD[$n]}") 2>/dev/null
	SHP_N[$n]=$((SHP_N[$n] + 1))
}
# shp_wait NAME: the answer to the last command posted, in $SHP_R (empty after 60 s: a bound on a hang; a churn of
# 3000 operations took more than the old 10 s on a loaded machine).
shp_wait() {
	local n=$1 end=$((SECONDS + 60))
	while :; do
		SHP_R=$(grep '^= ' "$SHD/$n.out" | sed -n "${SHP_N[$n]}p")
		[ -n "$SHP_R" ] && return 0
		[ "$SECONDS" -le "$end" ] || break
		sleep 0.02
	done
	echo "== shared_preload: no answer from $n to command ${SHP_N[$n]}" >>"$LOG"
	return 1
}
shp_send() { shp_post "$@"; shp_wait "$1"; }
# shp_expect CHECK NAME CMD REGEX: send CMD, the answer must match REGEX.
shp_expect() {
	local what=$1 n=$2 req=$3 re=$4
	shp_send "$n" "$req"
	if grep -Eq -- "$re" <<<"$SHP_R"; then ok "$what"; else bad "$what" "$n: '$req' -> '$SHP_R', want /$re/"; fi
}
# shp_until NAME CMD ANSWER: send CMD until its answer is ANSWER (polled every 20 ms; after 30 s, a bound on a hang,
# false), for what another process brings about (a member killed, its share reclaimed). The last answer in $SHP_R.
shp_until() {
	local n=$1 req=$2 want=$3 end=$((SECONDS + 30))
	while shp_send "$n" "$req"; do
		[ "$SHP_R" = "$want" ] && return 0
		[ "$SECONDS" -le "$end" ] || break
		sleep 0.02
	done
	return 1
}
# shp_end NAME...: normal exit (the process leaves its region), or SIGKILL if it does not answer.
shp_end() {
	local n
	for n in "$@"; do
		[ -n "${SHP_FD[$n]:-}" ] || continue
		shp_send "$n" exit || kill -9 "${SHP_JOB[$n]}" 2>/dev/null
		eval "exec ${SHP_FD[$n]}>&-"
		wait "${SHP_JOB[$n]}" 2>/dev/null
		cat "$SHD/$n.err" >>"$LOG"
		unset "SHP_FD[$n]"
	done
}
shp_kill() { # NAME: SIGKILL (the job itself: with SHP_VIA_SLEEP the caller kills SHP_PID)
	local n=$1
	{ kill -9 "${SHP_JOB[$n]}"; wait "${SHP_JOB[$n]}"; } 2>/dev/null      # no "Killed" notice from bash
	eval "exec ${SHP_FD[$n]}>&-"
	unset "SHP_FD[$n]"
}
shp_lines() { grep -Ec -- "$2" "$SHD/$1.err"; } # NAME REGEX: matching lines on its stderr
shp_top() { # the JSON of `vramguard top --once --json` in $SHP_TOP
	SHP_TOP=$(env -u LD_PRELOAD -u VRAMGUARD_SHARED VRAMGUARD_SHM_DIR="$SHD" timeout 30 "$VG" top --once --json 2>>"$LOG")
	echo "== top: $SHP_TOP" >>"$LOG"
}
shp_limit() { # vramguard limit set ARGS... (exit status returned, output in the log)
	env -u LD_PRELOAD -u VRAMGUARD_SHARED VRAMGUARD_SHM_DIR="$SHD" timeout 30 "$VG" limit set "$@" >>"$LOG" 2>&1
}
# shp_json CHECK MODE ARGS...: $CHK's checks of top's JSON (tests/lib/report_check.py: members, proc, once, absent,
# noregion, range, gpus, unverifiable, slots) on $SHP_TOP, as one check.
shp_json() {
	local what=$1 out
	shift
	out=$($CHK "$1" "$SHP_TOP" "${@:2}" 2>&1)
	if [ $? -eq 0 ]; then ok "$what"; else bad "$what" "$(grep -v '^ok' <<<"$out" | head -3)"; fi
}
shp_region_check() { # CHECK NAME REGEX: a process naming region NAME (a file set up by the caller) refuses it
	local what=$1 name=$2 re=$3
	shp_spawn "ref-$name" VRAMGUARD_SHARED="$name"
	shp_send "ref-$name" init
	local ri=$SHP_R
	shp_send "ref-$name" "alloc 1"
	local ra=$SHP_R
	shp_send "ref-$name" used
	local ru=$SHP_R
	shp_end "ref-$name"
	local nerr
	nerr=$(shp_lines "ref-$name" '^vramguard: error: ')
	if [ "$ri" = "= init 800" ] && [ "$ra" = "= alloc 800 held 0" ] && [ "$ru" = "= used 0 0" ] && [ "$nerr" -eq 1 ] &&
		grep -Eq -- "^vramguard: error: shared region '$name': .*$re" "$SHD/ref-$name.err" &&
		grep -q '^= exit$' "$SHD/ref-$name.out"; then
		ok "$what"
	else
		bad "$what" "init '$ri', alloc '$ra', $ru, $nerr error lines: $(head -c 300 "$SHD/ref-$name.err")"
	fi
}
segs() { ls "$SHD"/vramguard.proc."$1".* 2>/dev/null | wc -l; } # PID: its control segments
# shellcheck disable=SC2034 # for the files that source this one
G1=GPU-00000001-0000-0000-0000-000000000001


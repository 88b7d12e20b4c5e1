# shellcheck shell=bash
# The common start of every section of the CPU suite (tests/sections/NAME.sh; docs/TESTING.md). Sourced first
# thing; a section is then a script of its own: `bash tests/sections/nvml.sh` runs it alone, tests/run.sh runs
# them all in parallel, `prove -e bash tests/sections/*.sh` reads them. What it sets up:
# - an environment of its own: whatever the caller exported that changes what a check sees (LD_LIBRARY_PATH,
#   LD_PRELOAD, NVIDIA_*, CUDA_*, VRAMGUARD_*, FAKECUDA_*, the locale, the umask, BASH_ENV...) is dropped or set;
# - a work directory ($W, under $B/tests/run/NAME: the log, the last stderr, reports), a VRAMGUARD_SHM_DIR and a
#   range of TCP ports of its own, so that two sections never meet;
# - the output protocol (tests/lib/tap.sh) and the helpers every section uses (prog, cli, expect_err...);
# - at exit: every process the section left running stopped, its files removed, then the plan line "1..N" and the
#   total "N passed, N failed[, N skipped]"; a section that stops before `done_testing` fails.
# shellcheck disable=SC2034 # the variables set here are for the sections that source this file
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
VG_SECTION=$(basename "$0" .sh)

# ---- the environment: nothing of the caller's that a check depends on (tests/lib/env.sh) ----
source tests/lib/env.sh
vg_clean_env

B=${BUILD:-build}
T=$B/tests
LIB=$PWD/$B/libvramguard.so
VG=$PWD/$B/vramguard
# The checker of reports, `top` and `limit show` JSON (tests/lib/report_check.py): one line per assertion.
CHK="python3 tests/lib/report_check.py"
# Sanitizer builds (make test-asan / test-tsan): VG_SAN_PRELOAD (the sanitizer's runtime) goes in front of every
# LD_PRELOAD set here, and SAN names the sanitizer so that checks which cannot run under it are skipped.
SP=${VG_SAN_PRELOAD:+$VG_SAN_PRELOAD:}
case ${VG_SAN:-} in *address*) SAN=asan ;; *thread*) SAN=tsan ;; *) SAN= ;; esac
PRE="LD_PRELOAD=$SP$LIB"
FAKEENV="LD_LIBRARY_PATH=$PWD/$T"
D=$T/direct
L=$T/leaky
# Forking tests. TSan: the fork handler holds every table shard's lock at once (more than 64), past the deadlock
# detector's limit (a CHECK failure, not a finding). ASan: a child forked while threads allocate inherits their
# in-flight allocations and a thread list it cannot stop; LeakSanitizer at its exit reports false leaks or hangs.
FORKENV=
[ "$SAN" = tsan ] && FORKENV="TSAN_OPTIONS=${TSAN_OPTIONS:-}:detect_deadlocks=0"
[ "$SAN" = asan ] && FORKENV="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0"
# Two copies of the library export the same vg_instance_marker on purpose: ASan's ODR check would stop exactly what
# is tested.
COPYENV=
[ "$SAN" = asan ] && COPYENV="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_odr_violation=0"
# The fake NVML next to the double measures the process's memory, so device counting charges the driver's headroom
# (VRAMGUARD_DRIVER_HEADROOM) beyond it; the checks count bytes exactly and set it to 0, except the headroom's own.
export VRAMGUARD_DRIVER_HEADROOM=0

# ---- what is this section's own ----
# Its index among the sections (a stable number: the sorted file names), for its ports.
VG_SECTIONS_DIR=${VG_SECTIONS_DIR:-tests/sections}
VG_INDEX=0
for f in "$VG_SECTIONS_DIR"/*.sh; do
	[ "$(basename "$f" .sh)" = "$VG_SECTION" ] && break
	VG_INDEX=$((VG_INDEX + 1))
done
# The work directory: VG_TEST_RUN (tests/run.sh's, or a nested run's) or $T/run.
W=${VG_TEST_RUN:-$PWD/$T/run}/$VG_SECTION
rm -rf "$W" && mkdir -p "$W/reports" || exit 1
LOG=$W/log
ERR=$W/last.stderr
RD=$W/reports
: >"$LOG"
# Regions and control segments of every process the section starts (in memory, where they belong), unless a check
# names another directory. Removed at exit.
VG_SHM=$(mktemp -d "/dev/shm/vg-test.$VG_SECTION.XXXXXX" 2>/dev/null || mktemp -d "/tmp/vg-test.$VG_SECTION.XXXXXX")
export VRAMGUARD_SHM_DIR=$VG_SHM
# TCP ports: 40 per section from 21000, below Linux's ephemeral range (32768-60999), so that a port the kernel hands
# out elsewhere (port 0) is never one of them. vg_port prints the next one that is free.
VG_PORT_NEXT=$((21000 + 40 * VG_INDEX))
VG_PORT_END=$((VG_PORT_NEXT + 40))
vg_port() { # -> a free port of the section's range, on stdout; sets nothing (call it as $(vg_port) once per port)
	local p
	for ((p = VG_PORT_NEXT; p < VG_PORT_END; p++)); do
		[ -e "$W/port.$p" ] && continue
		: >"$W/port.$p"
		if python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" \
			2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "section $VG_SECTION: no free port left in its range" >&2
	return 1
}

# ---- the output protocol ----
source tests/lib/tap.sh

# Commands to run when the section ends, however it ends (at_exit CMD...): stopping what a part started.
VG_AT_EXIT=()
at_exit() { VG_AT_EXIT+=("$*"); }
VG_DONE=0
done_testing() { VG_DONE=1; }
vg_section_end() {
	local rc=$? c
	trap - EXIT INT TERM
	for c in "${VG_AT_EXIT[@]}"; do eval "$c"; done
	# Anything still running that this shell started (a check that failed before stopping its job).
	local left
	left=$(jobs -p)
	[ -n "$left" ] && { kill $left; wait $left; } 2>/dev/null
	[ "$VG_DONE" = 1 ] || bad "section $VG_SECTION stopped before its end (exit status $rc)" \
		"$(tail -n 5 "$LOG" 2>/dev/null)"
	rm -rf "$VG_SHM"
	tap_plan
	tap_total
	[ "$fail" -eq 0 ]
	exit
}
trap vg_section_end EXIT
trap 'exit 130' INT TERM

# ---- helpers ----
# A unit binary: its own last line is "N passed, N failed".
unit() {
	local name=$1 out
	out=$("$T/$name" 2>&1)
	local rc=$? last p f
	last=$(printf '%s\n' "$out" | tail -n 1)
	p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$last")
	f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$last")
	printf '%s\n' "$out" >>"$LOG"
	if [ "$rc" -eq 0 ] && [ -n "$p" ] && [ "$f" = 0 ]; then
		ok "unit $name ($p checks)"
	else
		bad "unit $name" "$(printf '%s\n' "$out" | grep -A2 '^not ok' | head -6)"
	fi
}

# An integration program: each "ok - ..." / "not ok - ..." line it prints is one check; stderr is kept in $ERR.
# usage: prog NAME [VAR=value ...] -- CMD ARGS...
prog() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local out rc
	out=$(env LD_LIBRARY_PATH="$PWD/$T" "${envs[@]}" timeout 120 "$@" 2>"$ERR")
	rc=$?
	{ echo "== $name: ${envs[*]} $*"; printf '%s\n' "$out"; cat "$ERR"; } >>"$LOG"
	local n_ok n_bad
	n_ok=$(grep -Ec '^ok ([0-9]+ )?- ' <<<"$out")
	n_bad=$(grep -Ec '^not ok ([0-9]+ )?- ' <<<"$out")
	if [ "$rc" -eq 0 ] && [ "$n_bad" -eq 0 ] && [ "$n_ok" -gt 0 ]; then
		ok "$name ($n_ok checks)"
	else
		bad "$name (exit $rc, $n_ok ok, $n_bad not ok)" "$(grep '^not ok' <<<"$out" | head -5; head -3 "$ERR")"
	fi
}

# A check on the stderr of the last prog or cli.
expect_err() { # NAME EXTENDED-REGEX
	if grep -Eq -- "$2" "$ERR"; then ok "$1"; else bad "$1" "stderr: $(head -3 "$ERR")"; fi
}
expect_err_lines() { # NAME REGEX COUNT
	local n
	n=$(grep -Ec -- "$2" "$ERR")
	if [ "$n" -eq "$3" ]; then ok "$1"; else bad "$1" "$n matching lines, want $3: $(head -3 "$ERR")"; fi
}
expect_quiet() { # NAME
	if [ ! -s "$ERR" ]; then ok "$1"; else bad "$1" "stderr: $(head -3 "$ERR")"; fi
}

# The command: cli NAME WANT_RC EXPECTED_STDOUT_REGEX [VAR=value ...] -- CMD...   (stdout in $CO, stderr in $ERR)
CO=
cli() {
	local name=$1 want=$2 re=$3
	shift 3
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	CO=$(env "${envs[@]}" timeout 60 "$@" 2>"$ERR")
	local rc=$?
	{ echo "== cli $name: ${envs[*]} $*"; printf '%s\n' "$CO"; cat "$ERR"; } >>"$LOG"
	if [ "$rc" -eq "$want" ] && grep -Eq -- "$re" <<<"$CO"; then ok "$name"; else
		bad "$name (exit $rc, want $want)" "$(head -c 400 <<<"$CO"; head -3 "$ERR")"; fi
}

# The figures line of the last prog (from the log), shown under its result.
figures() { # REGEX
	local line
	line=$(grep -E -- "$1" "$LOG" | tail -n 1)
	[ -n "$line" ] && sed -E 's/^(not )?ok [0-9]+ - /# /' <<<"$line"
}

# Wait for an event another process makes: a line matching REGEX in FILE (a ready line, a port it printed), polled
# every 20 ms for at most SECONDS (default 30): a bound on a hang, never on how fast the machine is. FILE must hold
# no earlier line that matches: empty it (: >FILE) before starting the process with `cmd >FILE &`, whose
# redirection truncates it only once the child runs (dump's waiter was seen "ready" before it had even started).
wait_for() { # FILE REGEX [SECONDS]
	local end=$((SECONDS + ${3:-30}))
	while [ "$SECONDS" -le "$end" ]; do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}

# Long input: a 5 000-character PATH, NAME, SPEC, PID or COMMAND wherever one is taken. Every line on stderr stays
# within 300 characters and still names what was wrong. long_case REGEX [VAR=value...] -- CMD...
LONG=$(printf 'x%.0s' $(seq 5000))
nlong=0
nlongbad=0
long_case() {
	local re=$1 envs=() out width
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	nlong=$((nlong + 1))
	out=$(env -u VRAMGUARD_SHARED -u VRAMGUARD_SHM_DIR "${envs[@]}" timeout 60 "$@" 2>&1 >/dev/null)
	printf '== long input: %.300s\n%s\n' "$*" "$out" >>"$LOG"
	width=$(awk '{ print length }' <<<"$out" | sort -n | tail -1)
	if ! grep -Eq -- "$re" <<<"$out" || [ "${width:-0}" -gt 300 ]; then
		nlongbad=$((nlongbad + 1))
		bad "long input: $(cut -c1-60 <<<"$*" | tr -s x)...: widest stderr line $width, want /$re/" \
			"$(cut -c1-200 <<<"$out" | head -3)"
	fi
}

# `make install` into DIR (PREFIX /opt/vg), of the library and the command as they are built: make's -o keeps it
# from rebuilding them (after a change to the Makefile it would), which would pull the library from under the
# processes of the sections running meanwhile.
vg_install() { # DIR
	make -s install BUILD="$B" DESTDIR="$1" PREFIX=/opt/vg -o "$B/libvramguard.so" -o "$B/vramguard" >/dev/null 2>&1
}

#!/usr/bin/env bash
# The CPU suite (`make test`): unit tests, then programs run under the preload against the test double of
# libcuda.so.1. Output (docs/TESTING.md): one line per check, "ok N - name", "not ok N - name" with the detail on
# "# " lines after it, or "ok N - name # SKIP reason"; "== " lines name the sections; the last line is the total,
# "N passed, N failed" (a skipped check is neither).
set -u
cd "$(dirname "$0")/.." || exit 1
B=${BUILD:-build}
T=$B/tests
LIB=$PWD/$B/libvramguard.so
LOG=$T/run.log
: >"$LOG"
source tests/lib/tap.sh
# Sanitizer builds (make test-asan / test-tsan): VG_SAN_PRELOAD (the sanitizer's runtime) goes in front of every
# LD_PRELOAD set here, and SAN names the sanitizer so that checks which cannot run under it are skipped.
SP=${VG_SAN_PRELOAD:+$VG_SAN_PRELOAD:}
case ${VG_SAN:-} in *address*) SAN=asan ;; *thread*) SAN=tsan ;; *) SAN= ;; esac

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
ERR=$T/last.stderr
prog() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local out rc
	out=$(env -u NVIDIA_GPU_MEMORY_LIMITS -u CUDA_DEVICE_MEMORY_LIMIT LD_LIBRARY_PATH="$PWD/$T" \
		"${envs[@]}" timeout 120 "$@" 2>"$ERR")
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

# A check on the stderr of the last prog.
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

# The fake NVML next to the double measures the process's memory, so device counting charges the driver's headroom
# (VRAMGUARD_DRIVER_HEADROOM) beyond it; the checks count bytes exactly and set it to 0, except the headroom's own.
export VRAMGUARD_DRIVER_HEADROOM=0
PRE="LD_PRELOAD=$SP$LIB"
D=$T/direct

# The test double's own checks first: not counted in the total (they are not vramguard's), but a failure fails the
# suite (the exit status), and its lines say what failed.
out=$("$T/fakecuda_selftest" 2>&1)
selftest_rc=$?
printf '%s\n' "$out" >>"$LOG"
printf '# fakecuda selftest (the test double): %s\n' "$(tail -n 1 <<<"$out")"
[ "$selftest_rc" -eq 0 ] || grep -A1 '^not ok\|^# .*not ok' <<<"$out" | sed 's/^/# /'

echo "== unit"
unit test_config
unit test_accounting
unit test_region
# These find the fake NVML through their rpath, but a sanitizer's dlopen interceptor is not the executable: it
# searches without the executable's RUNPATH. LD_LIBRARY_PATH names the same directories.
LD_LIBRARY_PATH="$PWD/$T" unit test_nvml
LD_LIBRARY_PATH="$PWD/$T/nvml-r580:$PWD/$T" unit test_nvml_r580
unit test_nvml_missing
unit test_report
unit test_symbolize
unit test_json_read
unit test_diff
unit test_timeline
unit test_unwind
unit test_lockorder
for t in config json path diff; do
	if [ "$SAN" = tsan ]; then skip "unit fuzz_${t}_replay" "built with ASan+UBSan, which cannot be combined with TSan"
	else unit fuzz_${t}_replay; fi
done

echo "== quota on the direct-link route"
prog "quota 4096 MiB" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D quota
expect_err "denial message names size, GPU, entry point, usage and variable" \
	'^vramguard: denied 2\.00 GiB on GPU 0 \(cuMemAlloc_v2\): 3\.00 GiB of 4\.00 GiB quota in use \(NVIDIA_GPU_MEMORY_LIMITS\)$'
expect_err_lines "denials are rate-limited (2 denials within a second: 1 line)" '^vramguard: denied' 1
prog "quota 4G spelled with a unit" $PRE NVIDIA_GPU_MEMORY_LIMITS=4GiB -- $D quota
prog "quota as 25% of a 16 GiB device" $PRE NVIDIA_GPU_MEMORY_LIMITS=25% -- $D quota
prog "quota from HAMi's CUDA_DEVICE_MEMORY_LIMIT (bytes)" $PRE CUDA_DEVICE_MEMORY_LIMIT=4294967296 -- $D quota
expect_err "the message names the variable the limit came from" '\(CUDA_DEVICE_MEMORY_LIMIT\)$'
prog "NVIDIA_GPU_MEMORY_LIMITS wins over HAMi's variables" $PRE NVIDIA_GPU_MEMORY_LIMITS=4G \
	CUDA_DEVICE_MEMORY_LIMIT=1g CUDA_DEVICE_MEMORY_LIMIT_0=2g -- $D quota
prog "no limit: pass-through" $PRE VRAMGUARD_REPORT=off -- $D unlimited
expect_quiet "no limit: nothing printed"
prog "empty NVIDIA_GPU_MEMORY_LIMITS means unset" $PRE NVIDIA_GPU_MEMORY_LIMITS= -- $D unlimited
# Control: the same checks without the preload must fail, or they prove nothing.
out=$(LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=4096 timeout 60 $D quota 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "control: without the preload the quota checks fail"; else
	bad "control: without the preload the quota checks should fail"; fi

echo "== charging rules"
prog "pitch and managed" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D pitch_managed
prog "VRAMGUARD_MANAGED=ignore" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_MANAGED=ignore -- $D managed_ignore
prog "arrays (estimate)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D arrays
prog "VMM: refs + maps, NCCL order, HOST_NUMA, retry after 800" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	FAKECUDA_FAIL=cuMemCreate:1=800 -- $D vmm
prog "async, pools, capture" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D async
prog "device counting: pools charged by their reserve (threshold 0 and max, trim before refusing, created pools)" \
	$PRE NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 -- $T/physical pools
prog "device counting: graph memory charged, cuDeviceGraphMemTrim gives it back" $PRE NVIDIA_GPU_MEMORY_LIMITS=1024 \
	FAKECUDA_AUTOCTX=0 -- $T/physical graphs
prog "device counting: the driver's own memory (context, modules) measured through NVML and charged" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=0 FAKECUDA_AUTOCTX=0 FAKECUDA_CTX_BYTES=300M \
	FAKECUDA_MODULE_BYTES=64M -- $T/physical driver
prog "device counting: VRAMGUARD_DRIVER_HEADROOM is charged beyond the first measurement until growth uses it" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 VRAMGUARD_DRIVER_HEADROOM=100M FAKECUDA_AUTOCTX=0 FAKECUDA_CTX_BYTES=300M \
	FAKECUDA_MODULE_BYTES=64M -- $T/physical headroom
prog "VRAMGUARD_COUNT=allocations: logical bytes, pools' kept memory and graphs not counted" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 -- $T/physical allocations
prog "context destroy and primary reset release" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D ctx
prog "driver failure rolls the reservation back" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FAIL=cuMemAlloc_v2:2 \
	-- $D fault

echo "== per-device limits"
prog "per-device list 0:2G,1:1G" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=0:2G,1:1G -- $D perdevice 2048 1024
prog "MPS style 1=1536 leaves device 0 unlimited" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=1=1536 \
	-- $D perdevice -1 1536
prog "bare default plus one device" $PRE FAKECUDA_DEVICES=2 NVIDIA_GPU_MEMORY_LIMITS=3G,1:1G -- $D perdevice 3072 1024
prog "UUID key" $PRE FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMITS=GPU-00000001-0000-0000-0000-000000000001:512M -- $D perdevice -1 512
prog "HAMi per-device CUDA_DEVICE_MEMORY_LIMIT_1" $PRE FAKECUDA_DEVICES=2 CUDA_DEVICE_MEMORY_LIMIT_1=1g \
	-- $D perdevice -1 1024

echo "== routes"
prog "dlopen + dlsym, cudart's cuGetProcAddress pattern, _ptsz" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/dl_route
expect_err_lines "an unwrapped legacy entry point is reported once" 'does not wrap' 1
prog "RTLD_NEXT stays the caller's (second preload library)" "LD_PRELOAD=$SP$LIB $PWD/$T/libnext.so" -- $T/rtld_next
expect_err "libnext got libc's getppid, not itself" '^libnext: RTLD_NEXT ok$'
if objdump -d --no-show-raw-insn "$LIB" | awk '/<dlsym>:/,/^$/' | grep -Eq 'jmp +\*'; then
	ok "dlsym's pass-through is a jump (disassembly)"
else
	bad "dlsym's pass-through is a jump (disassembly)"
fi

echo "== configuration errors fail closed"
for bad_value in 4XB -1 0 '0:4G,0:2G' 'x:1G' '4 G' 99999999999T MIG-x:1G MIG-GPU-00000001-0000-0000-0000-000000000001/1:1G; do
	prog "invalid NVIDIA_GPU_MEMORY_LIMITS='$bad_value'" $PRE "NVIDIA_GPU_MEMORY_LIMITS=$bad_value" -- $D badconfig
	expect_err_lines "  one line naming the variable and the value" \
		"^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '[^']*': .* \\(expected e\\.g\\. " 1
done
prog "invalid VRAMGUARD_LOG" $PRE VRAMGUARD_LOG=loud -- $D badconfig
expect_err_lines "  one line naming VRAMGUARD_LOG" "^vramguard: error: invalid VRAMGUARD_LOG 'loud'" 1
prog "invalid HAMi CUDA_DEVICE_MEMORY_LIMIT" $PRE CUDA_DEVICE_MEMORY_LIMIT=lots -- $D badconfig
expect_err_lines "  one line naming CUDA_DEVICE_MEMORY_LIMIT" "^vramguard: error: invalid CUDA_DEVICE_MEMORY_LIMIT 'lots'" 1

# Every variable of the options table (docs/env.md) with huge, long, negative, overflowing, non-ASCII and garbage
# values: one error line naming it, at most 300 characters however long the value (5 000 characters here), and the
# process gets no GPU memory. (Empty means unset: checked above for NVIDIA_GPU_MEMORY_LIMITS.)
HUGE=$(printf '9%.0s' $(seq 5000))
LONGPATH=/$(printf 'a%.0s' $(seq 4999))
VARS=$("$B/gen-env-doc" | sed -n 's/^| `\([A-Z0-9_]*\)\(<i>\)\{0,1\}`.*/\1\2/p' | sed 's/<i>$/3/')
nbad=0
nvars=0
for var in $VARS; do
	nvars=$((nvars + 1))
	for val in "$HUGE" "$LONGPATH" "-5" "18446744073709551616" "4Gé" $'bad\x01\x7fvalue' "%q"; do
		# a path template accepts most text, a region name some: only their invalid forms apply
		case $var:$val in
		VRAMGUARD_REPORT:"$HUGE" | VRAMGUARD_REPORT:"$LONGPATH" | VRAMGUARD_REPORT:%q) ;;
		VRAMGUARD_REPORT:*) continue ;;
		VRAMGUARD_SHARED:-5 | VRAMGUARD_SHARED:18446744073709551616) continue ;;
		esac
		out=$(env -u NVIDIA_GPU_MEMORY_LIMITS LD_LIBRARY_PATH="$PWD/$T" $PRE "$var=$val" timeout 60 $D badconfig 2>&1)
		rc=$?
		nbad=$((nbad + 1))
		lines=$(grep -c '^vramguard: error: invalid '"$var"' ' <<<"$out")
		width=$(grep '^vramguard: ' <<<"$out" | awk '{ print length }' | sort -n | tail -1)
		if [ "$rc" -ne 0 ] || [ "$lines" -ne 1 ] || grep -q '^not ok' <<<"$out" || [ "${width:-0}" -gt 300 ]; then
			bad "bad input $var='${val:0:20}': rc=$rc, $lines error lines, widest $width" "$(head -3 <<<"$out" | cut -c1-300)"
		fi
	done
done
[ "$nvars" -ge 16 ] || bad "bad input: only $nvars variables read from the options table"
ok "bad input: $nbad values across $nvars variables each give one error line (<= 300 chars) and fail closed"

echo "== processes that never touch CUDA"
prog "no CUDA: dlsym works, libcuda not loaded, no thread" $PRE NVIDIA_GPU_MEMORY_LIMITS=4XB -- $T/nocuda
expect_quiet "no CUDA: nothing printed even with an invalid limit"
prog "no CUDA, valid config: no exit report" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/nocuda
expect_quiet "no CUDA: no report at exit"
out=$(LD_PRELOAD="$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4XB sh -c 'echo hi; exit 3' 2>&1)
rc=$?
if [ "$rc" -eq 3 ] && [ "$out" = hi ]; then ok "sh -c under the preload: same output and exit code"; else
	bad "sh -c under the preload" "rc=$rc out=$out"; fi

echo "== fork, threads, second copy"
# Forking tests. TSan: the fork handler holds every table shard's lock at once (more than 64), past the deadlock
# detector's limit (a CHECK failure, not a finding). ASan: a child forked while threads allocate inherits their
# in-flight allocations and a thread list it cannot stop; LeakSanitizer at its exit reports false leaks or hangs.
FORKENV=
[ "$SAN" = tsan ] && FORKENV="TSAN_OPTIONS=${TSAN_OPTIONS:-}:detect_deadlocks=0"
[ "$SAN" = asan ] && FORKENV="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0"
prog "fork: child starts with empty tables" $PRE $FORKENV NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FORK_OK=1 -- $D fork
prog "8 threads racing alloc/free against 1 GiB" $PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 -- $D stress
mkdir -p "$T/copy" && cp "$LIB" "$T/copy/libvramguard.so"
# Two copies export the same vg_instance_marker on purpose: ASan's ODR check would stop exactly what is tested.
COPYENV=
[ "$SAN" = asan ] && COPYENV="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_odr_violation=0"
prog "two copies preloaded: the quota holds exactly once" "LD_PRELOAD=$SP$LIB $PWD/$T/copy/libvramguard.so" \
	$COPYENV NVIDIA_GPU_MEMORY_LIMITS=4096 -- $D quota
prog "a second copy dlopened late stays passive" $PRE $COPYENV NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_LOG=debug \
	-- $T/dl_copy "$PWD/$T/copy/libvramguard.so"
expect_err "the second copy says it is passive" 'another copy of vramguard is loaded first'

echo "== reports: leaks, streams, signals"
L=$T/leaky
# The one checker of reports and of top's / limit show's JSON (tests/lib/report_check.py), here and in the scripts
# sourced below: its subcommands print one "ok - "/"not ok - " line per assertion.
CHK="python3 tests/lib/report_check.py"
RD=$T/reports
rm -rf "$RD" && mkdir -p "$RD"
prog "leaks and a busy stream, text report at exit" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $L leaks
expect_err "text report header" '^vramguard: report \(exit\) pid [0-9]+'
expect_err "text report names the leaking function and its bytes" '192\.00 MiB in 3 allocations'
expect_err "text report shows the leak_buffers frame" '^ +leak_buffers\+0x'
expect_err "one warning for the busy stream, with both sites" \
	'^vramguard: warning: stream 0x[0-9a-f]+ destroyed with work still queued \(created at make_stream\+0x[0-9a-f]+ \(leaky\), destroyed at finish\+0x[0-9a-f]+ \(leaky\)\)'
expect_err "the text report says how to get the JSON" 'VRAMGUARD_REPORT_FORMAT=json'
for mode in warn sync off; do
	prog "JSON report to a file (VRAMGUARD_STREAM_CHECK=$mode)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
		VRAMGUARD_STREAM_CHECK=$mode VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RD/leaks-$mode-%p.json" -- $L leaks
	prog "  its content (python json)" -- $CHK leaks "$(ls "$RD"/leaks-$mode-*.json | head -1)" $mode
done
prog "  sync says it waited" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_STREAM_CHECK=sync VRAMGUARD_REPORT=off \
	-- $L leaks
expect_err "  one 'waited for stream' warning" '^vramguard: warning: waited for stream 0x'
prog "VRAMGUARD_BACKTRACE=0: no call sites" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_BACKTRACE=0 -- $L leaks
expect_err "  the text report says so" 'VRAMGUARD_BACKTRACE=0'
prog "SIGUSR1 storm while 4 threads allocate" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RD/r-%p-%n-%r.json" -- $L storm 3
prog "  the reports (valid JSON, %p/%n/%r, coalesced storm, consistent counts)" -- $CHK storm "$RD/r-*.json" 3
prog "a capturing stream is never queried (destroy, signal report)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	"VRAMGUARD_REPORT=$RD/capture-%n.txt" -- $L capture
if grep -q 'capturing' "$RD/capture-1.txt" 2>/dev/null; then ok "  the signal report lists the stream as capturing"
else bad "  the signal report should list the capturing stream" "$(head -20 "$RD/capture-1.txt" 2>&1)"; fi
prog "the application's SIGUSR1 handler is kept" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $L own_handler
expect_err_lines "  vramguard says once that signal reports are off" \
	'^vramguard: warning: SIGUSR1 already has a handler in this process; reports on signal are off' 1
prog "a forked child does not print the parent's report" $PRE $FORKENV NVIDIA_GPU_MEMORY_LIMITS=4096 -- $L fork
expect_err_lines "  exactly one report (the parent's)" '^vramguard: report \(exit\)' 1
echo existing >"$RD/exists.json"
prog "an existing report file is never overwritten" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	"VRAMGUARD_REPORT=$RD/exists.json" -- $L leaks
expect_err "  one warning, the file untouched" \
	"report not written: cannot create '[^']*/exists\\.json': File exists \\(vramguard never overwrites a file; put %p and %n in VRAMGUARD_REPORT\\)"
if [ "$(cat "$RD/exists.json")" = existing ]; then ok "  exists.json still says 'existing'"; else
	bad "  exists.json was changed"; fi
# What is in the way, exactly: a directory; a file, when the template lacks only %p.
mkdir -p "$RD/d1"
prog "a directory where the report goes" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 "VRAMGUARD_REPORT=$RD/d%n" -- $L leaks
expect_err_lines "  one warning: it is a directory, VRAMGUARD_REPORT must name a file" \
	"^vramguard: warning: report not written: '[^']*/d1' is a directory \(VRAMGUARD_REPORT must name a file" 1
expect_err_lines "  and no advice to put %p or %n in it (it has %n)" 'put %p or %n' 0
echo existing >"$RD/e1.json"
prog "an existing file, the template has %n but not %p" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	"VRAMGUARD_REPORT=$RD/e%n.json" -- $L leaks
expect_err_lines "  one warning: put %p in it" \
	"^vramguard: warning: report not written: cannot create '[^']*/e1\.json': File exists \(vramguard never overwrites a file; put %p in VRAMGUARD_REPORT\)" 1
prog "VRAMGUARD_REPORT naming a directory (a trailing /) is refused when read" $PRE "VRAMGUARD_REPORT=$RD/" -- $D badconfig
expect_err_lines "  one error line saying so" \
	"^vramguard: error: invalid VRAMGUARD_REPORT '[^']*/': names a directory, not a file \(expected e\.g\. " 1
echo target >"$RD/target" && ln -sf "$RD/target" "$RD/link.json"
prog "a symlink in the report path is never followed" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	"VRAMGUARD_REPORT=$RD/link.json" -- $L leaks
expect_err "  refused with one warning" "report not written: '[^']*/link\\.json' is a symbolic link \\(vramguard never writes through one\\)"
if [ "$(cat "$RD/target")" = target ]; then ok "  the symlink's target is untouched"; else
	bad "  the symlink's target was written"; fi
prog "an unwritable report directory" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT=/nonexistent/dir/r.json \
	-- $L leaks
expect_err "  one warning naming the path" "report not written: cannot create '/nonexistent/dir/r\\.json': No such file"
prog "a report larger than the space left (RLIMIT_FSIZE)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_CONTROL=off \
	VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RD/full-%p.json" -- $L fsize
expect_err "  one warning, the partial file removed" \
	"report not written: '[^']*/full-[0-9]+\\.json': File too large \\(the partial file was removed\\)"
if ls "$RD"/full-*.json >/dev/null 2>&1; then bad "  a partial report file was left"; else
	ok "  no partial report file left"; fi
if ls "$RD"/full-*.vgtmp.* >/dev/null 2>&1; then bad "  a temporary report file was left"; else
	ok "  no temporary report file left"; fi
expect_err_lines "  exactly one line from vramguard" '^vramguard: ' 1
# Files at their size limit with SIGXFSZ at its default disposition (it kills): vramguard's own writes never raise it.
FX=$T/fsize_exec
prog "stderr a file at its size limit: the job survives its denial line and text report" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_CONTROL=off -- $FX 64 $L stderr_full
FSD=$(mktemp -d /tmp/vg-fsize.XXXXXX)
prog "a shared region created over RLIMIT_FSIZE fails closed" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT=off \
	VRAMGUARD_SHARED=fsz VRAMGUARD_SHM_DIR="$FSD" -- $FX 1024 $D badconfig
expect_err_lines "  one line from vramguard" '^vramguard: ' 1
expect_err "  an error naming the region and the cause" "^vramguard: error: shared region 'fsz': .*File too large"
prog "a control segment created over RLIMIT_FSIZE: one warning, the quota holds" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_REPORT=off VRAMGUARD_SHM_DIR="$FSD" -- $FX 1024 $D quota
expect_err_lines "  one warning naming the cause" '^vramguard: warning: no control segment: .*File too large' 1
expect_err_lines "  and one denial, nothing else" '^vramguard: ' 2
if [ -z "$(ls -A "$FSD")" ]; then ok "  nothing left in VRAMGUARD_SHM_DIR (no .vramguard.tmp.*)"; else
	bad "  files left in VRAMGUARD_SHM_DIR" "$(ls -A "$FSD" | head -3)"; fi
rm -rf "$FSD"

prog "report files are created 0600 by default" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RD/mode-default-%p.json" -- $L fsize_free
m=$(stat -c %a "$RD"/mode-default-*.json 2>/dev/null | head -1)
if [ "$m" = 600 ]; then ok "  mode $m"; else bad "  mode of the report file is '$m', want 600"; fi
prog "VRAMGUARD_REPORT_MODE=0640" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_MODE=0640 \
	"VRAMGUARD_REPORT=$RD/mode-640-%p.json" -- $L fsize_free
m=$(umask 0; stat -c %a "$RD"/mode-640-*.json 2>/dev/null | head -1)
want=$(printf '%o' $((0640 & ~0$(umask))))
if [ "$m" = "$want" ]; then ok "  mode $m (0640 less the umask)"; else bad "  mode '$m', want $want"; fi
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
		out=$(cd /tmp && "${as[@]}" env NVIDIA_GPU_MEMORY_LIMITS=4096 "${envs[@]}" \
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
if ls "$RD"/*.vgtmp.* >/dev/null 2>&1; then bad "temporary report files were left behind"; else
	ok "no temporary report files left behind"; fi

echo "== the vramguard command"
VG=$PWD/$B/vramguard
FAKEENV="LD_LIBRARY_PATH=$PWD/$T"
cli() { # NAME WANT_RC EXPECTED_STDOUT_REGEX [VAR=value ...] -- CMD...   (stdout in $CO, stderr in $ERR)
	local name=$1 want=$2 re=$3
	shift 3
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	CO=$(env -u LD_PRELOAD -u NVIDIA_GPU_MEMORY_LIMITS "${envs[@]}" timeout 60 "$@" 2>"$ERR")
	local rc=$?
	{ echo "== cli $name: ${envs[*]} $*"; printf '%s\n' "$CO"; cat "$ERR"; } >>"$LOG"
	if [ "$rc" -eq "$want" ] && grep -Eq -- "$re" <<<"$CO"; then ok "$name"; else
		bad "$name (exit $rc, want $want)" "$(head -c 400 <<<"$CO"; head -3 "$ERR")"; fi
}
cli "--version" 0 '^vramguard [0-9]+\.[0-9]+\.[0-9]+$' -- $VG --version
cli "--help lists every command" 0 'vramguard dump PID' -- $VG --help
cli "help run documents the options" 0 '--limit SPEC' -- $VG help run
cli "an unknown command is a usage error" 2 '' -- $VG frobnicate
cli "run: the quota holds in the job" 0 '^ok [0-9]+ - ' $FAKEENV -- $VG run --limit 4096 -- $D quota
cli "run: LD_PRELOAD gets the library first, the existing entry kept" 0 \
	"^$PWD/$B/libvramguard.so:/some/other.so\$" LD_PRELOAD=/some/other.so -- $VG run -- sh -c 'echo $LD_PRELOAD'
cli "run: the library is not added twice" 0 "^$PWD/$B/libvramguard.so:/x.so\$" \
	"LD_PRELOAD=$PWD/$B/libvramguard.so:/x.so" -- $VG run -- sh -c 'echo $LD_PRELOAD'
cli "run: flags override the environment" 0 '^2G json USR2 8$' NVIDIA_GPU_MEMORY_LIMITS=9G -- \
	$VG run --limit 2G --format json --signal USR2 --backtrace 8 -- \
	sh -c 'echo $NVIDIA_GPU_MEMORY_LIMITS $VRAMGUARD_REPORT_FORMAT $VRAMGUARD_SIGNAL $VRAMGUARD_BACKTRACE'
cli "run: the command's exit status passes through" 7 '' -- $VG run -- sh -c 'exit 7'
cli "run: death by signal passes through (143 = SIGTERM)" 143 '' -- $VG run -- sh -c 'kill -TERM $$'
cli "run: stdin passes through" 0 '^piped$' -- sh -c "echo piped | $VG run -- cat"
cli "run: a bad limit is rejected before the command starts" 2 '^$' -- $VG run --limit 4XB -- sh -c 'echo ran'
expect_err "  with the library's message" "^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB': unknown unit 'XB'"
cli "run: a bad format is rejected too" 2 '^$' -- $VG run --format yaml -- true
expect_err "  naming VRAMGUARD_REPORT_FORMAT" "invalid VRAMGUARD_REPORT_FORMAT 'yaml'"
cli "run: a missing command exits 127" 127 '' -- $VG run -- /nonexistent/cmd
cli "run: no command is a usage error" 2 '' -- $VG run --limit 1G
cli "report: renders the golden JSON as the golden text" 0 'vramguard: report \(exit\)' -- \
	$VG report tests/unit/golden/report.json
if diff <(printf '%s\n' "$CO") <(grep -v '^  full report: ' tests/unit/golden/report.txt) >/dev/null; then
	ok "  identical to tests/unit/golden/report.txt (but the JSON hint line)"; else
	bad "  differs from tests/unit/golden/report.txt" "$(diff <(printf '%s\n' "$CO") <(grep -v '^  full report: ' tests/unit/golden/report.txt) | head -5)"; fi
cli "report: a file that is not a report" 1 '^$' -- $VG report tests/run.sh
expect_err "  one error line naming the file" "^vramguard: error: 'tests/run.sh': line 1, column 1: "
cli "diff: golden pair" 0 'vramguard: diff' -- $VG diff tests/cli/old.json tests/cli/new.json
if diff <(printf '%s\n' "$CO") tests/cli/diff.golden.txt >/dev/null; then ok "  identical to tests/cli/diff.golden.txt"; else
	bad "  differs from tests/cli/diff.golden.txt" "$(diff <(printf '%s\n' "$CO") tests/cli/diff.golden.txt | head -5)"; fi
cli "diff --exit-code: 1 when memory grew" 1 'grew' -- $VG diff --exit-code tests/cli/old.json tests/cli/new.json
cli "diff --exit-code: 0 when it did not" 0 '' -- $VG diff --exit-code tests/cli/new.json tests/cli/new.json

W=$T/waiter
dump_case() { # NAME WANT_RC REGEX MODE [VAR=value...]: start the waiter under the preload, dump it
	local name=$1 want=$2 re=$3 mode=$4
	shift 4
	rm -f "$RD/stop"
	env LD_LIBRARY_PATH="$PWD/$T" LD_PRELOAD="$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4096 "$@" \
		$W "$RD/stop" $mode >"$RD/waiter.out" 2>"$RD/waiter.err" &
	local pid=$!
	for _ in $(seq 100); do grep -q ready "$RD/waiter.out" 2>/dev/null && break; sleep 0.05; done
	cli "$name" "$want" "$re" -- $VG dump "$pid" --wait 5
	touch "$RD/stop"
	wait "$pid"
	WAITER_RC=$?
}
dump_case "dump: prints the path of the new report" 0 "^$PWD/$RD/dump-[0-9]+-1\\.json\$" "" \
	"VRAMGUARD_REPORT=$PWD/$RD/dump-%p-%n.json" VRAMGUARD_REPORT_FORMAT=json
if [ -n "$CO" ] && dump_why=$($CHK dumped "$CO" 2>&1 >/dev/null); then
	ok "  the report it names is a complete JSON signal report"; else bad "  the dumped report is not valid JSON" "${dump_why:-}"; fi
[ "$WAITER_RC" -eq 0 ] && ok "  the process kept running and exited normally" || bad "  the process died ($WAITER_RC)"
dump_case "dump: a relative template resolves in the process's directory" 0 "^$PWD/$RD/rel-[0-9]+-1\\.txt\$" "" \
	"VRAMGUARD_REPORT=$RD/rel-%p-%n.txt"
dump_case "dump: refuses a process that reports to stderr only" 1 '^$' ""
expect_err "  and says so" 'writes its reports to its own stderr only'
dump_case "dump: refuses before vramguard's handler exists (no CUDA yet), does not kill" 1 '^$' nocuda \
	"VRAMGUARD_REPORT=$PWD/$RD/never-%p-%n.json"
expect_err "  and says why" 'does not catch SIGUSR1'
[ "$WAITER_RC" -eq 0 ] && ok "  the process survived" || bad "  the process was killed ($WAITER_RC)"
sleep 3 &
cli "dump: refuses a process not under vramguard" 1 '^$' -- $VG dump $!
expect_err "  and says so" 'is not running under vramguard'
kill %% 2>/dev/null; wait 2>/dev/null
cli "dump: no such process" 1 '^$' -- $VG dump 999999999
cli "check: devices, memory and quotas (test double, 2 GPUs)" 0 'GPU 1  Fake GPU 1' $FAKEENV FAKECUDA_DEVICES=2 \
	NVIDIA_GPU_MEMORY_LIMITS=0:2G,1:unlimited -- $VG check
if grep -q 'quota 2.00 GiB (NVIDIA_GPU_MEMORY_LIMITS)' <<<"$CO" && grep -q 'quota: unlimited' <<<"$CO" &&
	grep -q "library:  $PWD/$B/libvramguard.so" <<<"$CO"; then ok "  GPU 0 has 2 GiB, GPU 1 unlimited, library found"
else bad "  check output" "$(head -30 <<<"$CO")"; fi
cli "check: an invalid configuration exits 2 and says why" 2 "invalid NVIDIA_GPU_MEMORY_LIMITS '9Q'" $FAKEENV \
	NVIDIA_GPU_MEMORY_LIMITS=9Q -- $VG check
cli "check: no driver" 0 'libcuda.so.1: not found' LD_LIBRARY_PATH=/nonexistent -- $VG check
cli "check: run under the preload it still sees the whole device" 0 \
	'memory 16.00 GiB, (in use on the card 32.00 MiB, )?quota 4.00 GiB' $FAKEENV \
	"LD_PRELOAD=$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4G -- $VG check
expect_quiet "  and prints no exit report"
rm -rf "$T/inst"
if make -s install DESTDIR="$PWD/$T/inst" PREFIX=/opt/vg >/dev/null 2>&1; then ok "make install DESTDIR PREFIX"; else
	bad "make install DESTDIR PREFIX"; fi
cli "an installed, relocated command finds its library (../lib)" 0 "^$PWD/$T/inst/opt/vg/lib/libvramguard.so\$" \
	-- "$T/inst/opt/vg/bin/vramguard" run -- sh -c 'echo $LD_PRELOAD'
[ -f "$T/inst/opt/vg/share/man/man1/vramguard.1" ] && ok "  the man page is installed" || bad "  no man page installed"

# Messages say exactly what is wrong.
cli "help help: the usage of help itself" 0 '^usage: vramguard help \[COMMAND\]' -- $VG help help
cli "help of an unknown command: a usage error" 2 '^$' -- $VG help frobnicate
expect_err "  naming it and the commands there are" \
	"^vramguard: error: help: unknown command 'frobnicate' \(expected one of run, report, diff, dump, check, top, limit, exporter, autoscale, region, cdi, help\)"
cli "dump -1: an invalid PID, not an unknown option" 2 '^$' -- $VG dump -1
expect_err "  says so" "^vramguard: error: dump: invalid PID '-1' \(expected a process id"
cli "dump -- -1 too" 2 '^$' -- $VG dump -- -1
expect_err "  says so" "^vramguard: error: dump: invalid PID '-1'"
cli "limit set -1: an invalid SPEC, not an unknown option" 2 '^$' -- $VG limit set -1 --pid 1
expect_err "  says what is wrong with it" "^vramguard: error: invalid limit '-1': a sign is not allowed \(expected e\.g\. "

# Long input: a 5 000-character PATH, NAME, SPEC, PID or COMMAND wherever one is taken. Every line on stderr stays
# within 300 characters and still names what was wrong.
LONG=$(printf 'x%.0s' $(seq 5000))
LONGDIR=/nonexistent/$(printf 'd%.0s' $(seq 1000))
nlong=0
nlongbad=0
long_case() { # REGEX [VAR=value...] -- CMD...: stderr matches REGEX, no line of it over 300 characters
	local re=$1 envs=() out width
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	nlong=$((nlong + 1))
	out=$(env -u LD_PRELOAD -u NVIDIA_GPU_MEMORY_LIMITS -u VRAMGUARD_SHARED -u VRAMGUARD_SHM_DIR "${envs[@]}" \
		timeout 60 "$@" 2>&1 >/dev/null)
	printf '== long input: %.300s\n%s\n' "$*" "$out" >>"$LOG"
	width=$(awk '{ print length }' <<<"$out" | sort -n | tail -1)
	if ! grep -Eq -- "$re" <<<"$out" || [ "${width:-0}" -gt 300 ]; then
		nlongbad=$((nlongbad + 1))
		bad "long input: $(cut -c1-60 <<<"$*" | tr -s x)...: widest stderr line $width, want /$re/" \
			"$(cut -c1-200 <<<"$out" | head -3)"
	fi
}
long_case "unknown command 'x+\.\.\.x+' \(5000 bytes\)" -- $VG "$LONG"
long_case "help: unknown command 'x+\.\.\.x+' \(5000 bytes\)" -- $VG help "$LONG"
long_case "invalid NVIDIA_GPU_MEMORY_LIMITS" -- $VG run --limit "$LONG" -- true
long_case "invalid VRAMGUARD_REPORT '/x+" -- $VG run --report "/$LONG" -- true
long_case "invalid VRAMGUARD_REPORT_FORMAT" -- $VG run --format "$LONG" -- true
long_case "invalid VRAMGUARD_BACKTRACE" -- $VG run --backtrace "$LONG" -- true
long_case "invalid VRAMGUARD_SHARED" -- $VG run --shared "$LONG" -- true
long_case "invalid VRAMGUARD_SHARED_LIMITS" -- $VG run --shared job --shared-limit "$LONG" -- true
long_case "cannot run '/x+\.\.\.x+' \(5001 bytes\): File name too long" -- $VG run -- "/$LONG"
long_case "cannot read '/tmp/x+\.\.\.x+\.json' \(5010 bytes\): File name too long" -- $VG report "/tmp/$LONG.json"
long_case "cannot read '/tmp/x+\.\.\.x+' \(5005 bytes\)" -- $VG diff "/tmp/$LONG" tests/cli/new.json
long_case "cannot read '/tmp/x+\.\.\.x+' \(5005 bytes\)" -- $VG diff tests/cli/old.json "/tmp/$LONG"
long_case "diff: invalid --rows 'x+\.\.\.x+' \(5000 bytes\)" -- $VG diff --rows "$LONG" a b
long_case "dump: invalid PID 'x+\.\.\.x+' \(5000 bytes\)" -- $VG dump "$LONG"
long_case "dump: invalid --wait 'x+\.\.\.x+' \(5000 bytes\)" -- $VG dump 1 --wait "$LONG"
long_case "check: unexpected argument 'x+\.\.\.x+' \(5000 bytes\)" -- $VG check "$LONG"
long_case "top: invalid --shared 'x+\.\.\.x+' \(5000 bytes\)" -- $VG top --once --shared "$LONG"
long_case "invalid --dir '/x+\.\.\.x+' \(5001 bytes\)" -- $VG top --once --dir "/$LONG"
long_case "top: invalid --interval 'x+\.\.\.x+' \(5000 bytes\)" -- $VG top --interval "$LONG"
long_case "top: unexpected argument 'x+\.\.\.x+' \(5000 bytes\)" -- $VG top --once "$LONG"
long_case "invalid VRAMGUARD_SHM_DIR '/x+" VRAMGUARD_SHM_DIR="/$LONG" -- $VG top --once
long_case "invalid VRAMGUARD_SHARED 'x+" VRAMGUARD_SHARED="$LONG" -- $VG top --once
long_case "limit spec too long" -- $VG limit set "$LONG" --shared job
long_case "limit set: expected one SPEC, got 'x+\.\.\.x+' \(5000 bytes\) too" -- $VG limit set 1G "$LONG" --shared job
long_case "invalid --shared 'x+\.\.\.x+' \(5000 bytes\)" -- $VG limit set 1G --shared "$LONG"
long_case "invalid --shared '/x+\.\.\.x+' \(5001 bytes\)" -- $VG limit set 1G --shared "/$LONG"
long_case "limit: invalid --pid 'x+\.\.\.x+' \(5000 bytes\)" -- $VG limit set 1G --pid "$LONG"
long_case "invalid --dir '/x+\.\.\.x+' \(5001 bytes\)" -- $VG limit set 1G --shared job --dir "/$LONG"
long_case "invalid --shared 'x+\.\.\.x+' \(5000 bytes\)" -- $VG limit show --shared "$LONG"
long_case "limit show: unexpected argument 'x+\.\.\.x+' \(5000 bytes\)" -- $VG limit show "$LONG"
long_case "limit: unknown subcommand 'x+\.\.\.x+' \(5000 bytes\)" -- $VG limit "$LONG"
long_case "invalid region 'x+\.\.\.x+' \(5000 bytes\)" -- $VG region create "$LONG" --limit 1G
long_case "region: invalid --slots 'x+\.\.\.x+' \(5000 bytes\)" -- $VG region create job --slots "$LONG"
long_case "region evict: invalid PID 'x+\.\.\.x+' \(5000 bytes\)" -- $VG region evict job "$LONG"
long_case "region: unknown subcommand 'x+\.\.\.x+' \(5000 bytes\)" -- $VG region "$LONG"
# The library's own message: a report path of 1 000 characters (valid, its directory missing).
long_case "report not written: cannot create '/nonexistent/d+\.\.\.d+/r-[0-9]+\.json' \([0-9]+ bytes\): No such file" \
	$FAKEENV "LD_PRELOAD=$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4096 "VRAMGUARD_REPORT=$LONGDIR/r-%p.json" -- $L leaks
[ "$nlongbad" -eq 0 ] &&
	ok "long input: $nlong commands and settings with a 5 000-character argument: every stderr line bounded"

echo "== the HTML report and the exports (folded, speedscope)"
source tests/integration/report_views.sh

echo "== vramguard cdi: Container Device Interface specs"
source tests/integration/cdi_cli.sh

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
if grep -l 'vg_soft_limit_check(' interposer/*.c | grep -qv 'interposer/softlimit\.c'; then
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
# The usage timeline: its phases, report, diff, revisions and bound.
source tests/integration/timeline.sh
# Source lines for native frames (report --lines, diff --lines) and the report's modules.
source tests/integration/lines.sh
for bv in "VRAMGUARD_REPORT_ON=exit,oom|unknown word 'oom' \(expected a list of exit, signal, denial, threshold, e\.g\. exit,signal,denial\)" \
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

echo "== python frames in call sites"
source tests/integration/python.sh

echo "== regions: vramguard top, limit set/show, run --shared"
source tests/integration/region_cli.sh

echo "== vramguard exporter: Prometheus metrics, and a real Prometheus scraping them"
source tests/integration/exporter.sh

echo "== vramguard autoscale: Alertmanager's alerts raise limits within a ceiling; the loop with Prometheus"
source tests/integration/autoscale.sh
echo "== examples/kubernetes/annotation-sync.sh: vramguard.dev/limit as a live quota (kubectl is a test double)"
source tests/integration/annotation_sync.sh
source tests/integration/pidns.sh

echo "== shared regions under the preload: races, kill, exec, fork, live limits, hostile files"
source tests/integration/shared_preload.sh

echo "== shared state under attack: other users' files, stuck locks, poisoned regions, namespaces, capacity"
source tests/integration/hostile.sh

echo "== NVML and nvidia-smi under the preload: one answer to how much memory there is"
source tests/integration/nvml.sh

echo "== examples: container and Kubernetes recipes (static; no Docker engine or cluster here)"
# The checker needs PyYAML: the first python3 on PATH if it has it, else Debian's (python3-yaml).
PYY=python3
python3 -c 'import yaml' 2>/dev/null || PYY=/usr/bin/python3
prog "examples lint (yamllint, manifests, compose, Dockerfiles)" -- $PYY tests/lint/check_examples.py
prog "examples lint fails on broken fixtures (--self-test)" -- $PYY tests/lint/check_examples.py --self-test
# examples/prometheus: promtool (Debian's prometheus package) checks the config and rules and runs the rules' unit
# tests; without it, only the structural checks run.
PT=
if ! command -v promtool >/dev/null 2>&1; then
	PT=--no-promtool
	skip "prometheus: promtool check config / check rules / test rules" \
		"promtool missing: apt-get install prometheus (bash scripts/setup.sh)"
fi
prog "prometheus: scrape config, rules and their tests, Grafana dashboard" -- $PYY tests/lint/check_prometheus.py $PT
prog "prometheus: broken fixtures and mutated rules fail (--self-test)" -- \
	$PYY tests/lint/check_prometheus.py --self-test $PT

echo "== exports and docs"
want=$(sed -n '/^#define VG_HOOKS(X)/,/^$/s/^[[:space:]]*X(\([A-Za-z0-9_]*\),.*/\1/p' interposer/hooks.h
	sed -n '/^#define VG_NVML_HOOKS(X)/,/^$/s/^[[:space:]]*X(\([A-Za-z0-9_]*\),.*/\1/p' interposer/nvml.h
	echo dlsym; echo dlclose; echo vg_instance_marker)
got=$(nm -D --defined-only "$LIB" | awk '{print $3}')
# ASan adds one ODR indicator (__odr_asan.NAME) per exported variable; not ours.
[ "$SAN" = asan ] && got=$(grep -v '^__odr_asan\.' <<<"$got")
if [ "$(sort <<<"$want")" = "$(sort <<<"$got")" ]; then
	ok "exports are exactly the hook lists (CUDA, NVML) + dlsym + dlclose + vg_instance_marker ($(wc -l <<<"$got") symbols)"
else
	bad "exports differ from the hook list" "$(diff <(sort <<<"$want") <(sort <<<"$got") | head -5)"
fi
# Both run on glibc 2.17 and later although built here (config/glibc_compat.h, cli/start.c; run on glibc 2.31 by
# tests/containers/sections/30-glibc.sh): no symbol version newer than GLIBC_2.17, else the loader refuses them.
glibc_at_most() { # WHAT FILE
	local vs newest over
	# "VERSION SYMBOL" for every dynamic symbol with a GLIBC_ version, referenced or defined
	vs=$(objdump -T "$2" | awk 'match($0, /GLIBC_[0-9.]+/) { print substr($0, RSTART, RLENGTH), $NF }')
	newest=$(cut -d' ' -f1 <<<"$vs" | sort -uV | tail -n 1)
	over=$(while read -r v sym; do
		[ "$(printf '%s\nGLIBC_2.17\n' "$v" | sort -V | tail -n 1)" = GLIBC_2.17 ] || echo "$sym@$v"
	done <<<"$vs")
	if [ -n "$vs" ] && [ -z "$over" ]; then
		ok "$1: GLIBC_2.17 at most, $(wc -l <<<"$vs") symbols (newest $newest)"
	else
		bad "$1 needs a glibc newer than 2.17: it will not start on glibc 2.28 / 2.31 images" \
			"${over:-no GLIBC_ symbol versions found in $2}"
	fi
}
glibc_at_most library "$LIB"
glibc_at_most command "$VG"
if diff -q <("$B/gen-env-doc") docs/env.md >/dev/null; then ok "docs/env.md matches the options table"; else
	bad "docs/env.md is stale: run $B/gen-env-doc > docs/env.md"; fi
if diff -q <("$B/gen-hook-doc") docs/hooks.md >/dev/null; then ok "docs/hooks.md matches the hook list"; else
	bad "docs/hooks.md is stale: run $B/gen-hook-doc > docs/hooks.md"; fi
if "$B/gen-man" <docs/vramguard.1 | diff -q - docs/vramguard.1 >/dev/null; then
	ok "docs/vramguard.1 matches the options table (run options, ENVIRONMENT)"
else
	bad "docs/vramguard.1 is stale: run $B/gen-man < docs/vramguard.1 > $B/vramguard.1 && mv $B/vramguard.1 docs/"
fi
if ! command -v groff >/dev/null; then
	skip "the man page renders without warnings" "no groff here"
elif w=$(groff -man -Tutf8 -ww docs/vramguard.1 2>&1 >/dev/null) && [ -z "$w" ]; then
	ok "the man page renders without warnings"
else
	bad "groff warns about docs/vramguard.1" "$(head -3 <<<"$w")"
fi
# `run`'s --help is drawn from the same rows as the man page's run options: the same flags in both.
man_flags=$(sed -n 's/^.*\\fB\\-\\-\([a-z\\-]*\)\\fR \\fI.*$/\1/p' docs/vramguard.1 | sed 's/\\-/-/g' | sort)
help_flags=$("$VG" help run | sed -n 's/^  .*--\([a-z-]*\) [A-Z|][A-Z|]* .*/\1/p' | sort)
if [ -n "$man_flags" ] && [ "$man_flags" = "$help_flags" ]; then
	ok "help run and the man page list the same $(wc -l <<<"$man_flags") run flags"
else
	bad "help run and the man page disagree on run's flags" "$(diff <(echo "$man_flags") <(echo "$help_flags") | head -5)"
fi
if "$B/gen-report-doc" docs/report-format.md >"$T/report-format.md" && cmp -s "$T/report-format.md" docs/report-format.md
then ok "docs/report-format.md matches the report schema"; else
	bad "docs/report-format.md is stale: run $B/gen-report-doc -i docs/report-format.md"; fi
# The folders' arrows point one way: config <- accounting, report <- interposer, cli (scripts/check-layers.py).
if layers=$(python3 scripts/check-layers.py --objs "$B/obj" 2>&1); then ok "layers: $layers"; else
	bad "layers: back edges in the include graph" "$(head -5 <<<"$layers")"; fi

echo "== reliability: fault injection, stress, signal storm, lifecycle"
source tests/integration/reliability.sh

echo
[ "$skipped" -gt 0 ] && printf '# %d skipped%s\n' "$skipped" "${SAN:+ ($SAN)}"
[ "$selftest_rc" -eq 0 ] || printf '# the test double failed its own checks (fakecuda selftest)\n'
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ] && [ "$selftest_rc" -eq 0 ]

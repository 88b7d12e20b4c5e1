#!/usr/bin/env bash
# Section reports: reports at exit and on SIGUSR1 (leaks, busy streams, storms, capture), text and JSON, and
# where they go: existing files, directories, symlinks, full disks, modes. Needs: make test-bins (leaky, fsize_exec,
# direct).
source tests/lib/section.sh

echo "== reports: leaks, streams, signals"
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
if ls "$RD"/*.vgtmp.* >/dev/null 2>&1; then bad "temporary report files were left behind"; else
	ok "no temporary report files left behind"; fi
done_testing

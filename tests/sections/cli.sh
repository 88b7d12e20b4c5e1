#!/usr/bin/env bash
# Section cli: the vramguard command: run, report, diff, dump, check, install, help, and bounded messages for
# long input. Needs: make test-bins (vramguard, direct, leaky, waiter).
source tests/lib/section.sh

echo "== the vramguard command"
cli "--version" 0 '^vramguard [0-9]+\.[0-9]+\.[0-9]+$' -- $VG --version
cli "--help lists every command" 0 '^  dump +ask a running job for a report' -- $VG --help
# The columns of help: the summaries of --help's list start in one column (the list was once hand-aligned, and cdi's
# line was one column out), and so do the flags' descriptions and their continuation lines in every 'help COMMAND'.
help_columns() { # reads help text: "COLUMN<TAB>LINE" for each summary (the command list), flag description or its
	awk '/^usage: vramguard COMMAND / { list = 1 } /^$/ { blank++ } list && blank == 1 && /^  [a-z]+  +[^ ]/ { match($0, /^  [a-z]+  +/); print RLENGTH "\t" $0 }
		!/^ / { flag = 0 }
		flag && /^      +[^ -]/ { match($0, /^ +/); print RLENGTH "\t" $0 }
		/^  (-[a-zA-Z0-9], |    )--[^ ]+/ { flag = 1; match($0, /^  (-[a-zA-Z0-9], |    )--[^ ]+( [^ ]+)*  +/)
			if (RSTART) print RLENGTH "\t" $0 } # a long flag: its description begins on the next line'
}
hcols=$($VG --help | help_columns | cut -f1 | sort -u)
hnames=$($VG --help | help_columns | awk '{ print $2 }' | paste -sd, - | sed 's/,/, /g')
[ "$(printf '%s\n' "$hcols" | wc -l)" = 1 ] && [ -n "$hcols" ] &&
	[ "$hnames" = "$($VG help frobnicate 2>&1 | sed -n 's/.*(expected one of \(.*\))$/\1/p')" ] &&
	ok "--help: every command's summary starts in column $((hcols + 1))" ||
	bad "--help: the summaries are not in one column" "columns $(echo $hcols); commands $hnames"
hbad='' hall=''
for hc in run report diff dump check top limit exporter autoscale region cdi help; do
	hcols=$($VG help "$hc" | help_columns | cut -f1 | sort -u)
	[ "$(printf '%s\n' "$hcols" | grep -c .)" -le 1 ] || hbad="$hbad$hc: columns $(echo $hcols); "
	hall="$hall $hcols"
done
[ -z "$hbad" ] && [ "$(printf '%s\n' $hall | sort -u | wc -l)" = 1 ] &&
	ok "help COMMAND: every flag's description starts in column $(($(printf '%s\n' $hall | sort -u) + 1)), continuations too" ||
	bad "help COMMAND: descriptions out of column" "$hbad all:$(printf ' %s' $hall)"
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

WT=$T/waiter
REL=${RD#"$PWD"/}        # the reports' directory relative to here, where the waiter runs
dump_case() { # NAME WANT_RC REGEX MODE [VAR=value...]: start the waiter under the preload, dump it
	local name=$1 want=$2 re=$3 mode=$4
	shift 4
	rm -f "$RD/stop" "$RD/waiter.out"     # not the last waiter's "ready" line: this one's
	env LD_LIBRARY_PATH="$PWD/$T" LD_PRELOAD="$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4096 "$@" \
		$WT "$RD/stop" $mode >"$RD/waiter.out" 2>"$RD/waiter.err" &
	local pid=$!
	wait_for "$RD/waiter.out" ready
	cli "$name" "$want" "$re" -- $VG dump "$pid" --wait 5
	touch "$RD/stop"
	wait "$pid"
	WAITER_RC=$?
}
dump_case "dump: prints the path of the new report" 0 "^$RD/dump-[0-9]+-1\\.json\$" "" \
	"VRAMGUARD_REPORT=$RD/dump-%p-%n.json" VRAMGUARD_REPORT_FORMAT=json
if [ -n "$CO" ] && dump_why=$($CHK dumped "$CO" 2>&1 >/dev/null); then
	ok "  the report it names is a complete JSON signal report"; else bad "  the dumped report is not valid JSON" "${dump_why:-}"; fi
[ "$WAITER_RC" -eq 0 ] && ok "  the process kept running and exited normally" || bad "  the process died ($WAITER_RC)"
dump_case "dump: a relative template resolves in the process's directory" 0 "^$RD/rel-[0-9]+-1\\.txt\$" "" \
	"VRAMGUARD_REPORT=$REL/rel-%p-%n.txt"
dump_case "dump: refuses a process that reports to stderr only" 1 '^$' ""
expect_err "  and says so" 'writes its reports to its own stderr only'
dump_case "dump: refuses before vramguard's handler exists (no CUDA yet), does not kill" 1 '^$' nocuda \
	"VRAMGUARD_REPORT=$RD/never-%p-%n.json"
expect_err "  and says why" 'does not catch SIGUSR1'
[ "$WAITER_RC" -eq 0 ] && ok "  the process survived" || bad "  the process was killed ($WAITER_RC)"
sleep 600 &     # alive until killed below, however slow the machine
cli "dump: refuses a process not under vramguard" 1 '^$' -- $VG dump $!
expect_err "  and says so" 'is not running under vramguard'
kill $! 2>/dev/null; wait $! 2>/dev/null
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
if vg_install "$W/inst"; then ok "make install DESTDIR PREFIX"; else
	bad "make install DESTDIR PREFIX"; fi
cli "an installed, relocated command finds its library (../lib)" 0 "^$W/inst/opt/vg/lib/libvramguard.so\$" \
	-- "$W/inst/opt/vg/bin/vramguard" run -- sh -c 'echo $LD_PRELOAD'
[ -f "$W/inst/opt/vg/share/man/man1/vramguard.1" ] && ok "  the man page is installed" || bad "  no man page installed"

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
LONGDIR=/nonexistent/$(printf 'd%.0s' $(seq 1000))
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

done_testing

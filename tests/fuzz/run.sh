#!/usr/bin/env bash
# Fuzzing (tests/fuzz/README.md). From anywhere:
#   bash tests/fuzz/run.sh [TARGET...]          build with clang + libFuzzer and fuzz each target FUZZ_SECONDS (60)
#   bash tests/fuzz/run.sh replay [TARGET...]   build with gcc (-DVG_FUZZ_REPLAY) and replay corpus + regressions
# Targets: config json path diff (all by default). New inputs go to $BUILD/fuzz/corpus/TARGET (the checked-in seeds
# in tests/fuzz/corpus/TARGET are read, never written); crashes to $BUILD/fuzz/crashes/TARGET. Exits non-zero on a
# crash or a failed replay. Environment: CLANG (clang-14 or clang), CC (gcc), FUZZ_SECONDS, FUZZ_JOBS (1), BUILD.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
OUTD=$B/fuzz
ALL="config json path diff"
SECONDS_PER=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}

srcs() { # the library sources a target links: the Makefile's FUZZ_SRCS_<target>, the replays' list too
	case " $ALL " in
	*" $1 "*) make -s --no-print-directory "fuzz-srcs-$1" ;;
	*) echo "run.sh: unknown target '$1' (expected one of: $ALL)" >&2; return 1 ;;
	esac
}
dict() { case $1 in config | path) echo tests/fuzz/config.dict ;; *) echo tests/fuzz/json.dict ;; esac; }

mode=fuzz
if [ "${1:-}" = replay ]; then mode=replay; shift; fi
targets=${*:-$ALL}
mkdir -p "$OUTD"
rc=0

if [ $mode = replay ]; then
	CC=${CC:-gcc}
	for t in $targets; do
		s=$(srcs "$t") || exit 2
		bin=$OUTD/fuzz_${t}_replay
		$CC -std=gnu11 -Wall -Wextra -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
			-DVG_FUZZ_REPLAY -I. -o "$bin" "tests/fuzz/fuzz_$t.c" $s -ldl || exit 2
		if out=$("$bin" 2>&1); then echo "ok   fuzz replay $t: $(tail -n 1 <<<"$out")"; else
			echo "FAIL fuzz replay $t"; printf '%s\n' "$out" | tail -n 20; rc=1; fi
	done
	exit $rc
fi

CLANG=${CLANG:-$(command -v clang-14 || command -v clang)}
for t in $targets; do
	s=$(srcs "$t") || exit 2
	bin=$OUTD/fuzz_$t
	$CLANG -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I. -o "$bin" "tests/fuzz/fuzz_$t.c" $s -ldl || {
		echo "run.sh: cannot build with libFuzzer: install clang and libclang-rt-14-dev" >&2; exit 2; }
	mkdir -p "$OUTD/corpus/$t" "$OUTD/crashes/$t"
	seeds=tests/fuzz/corpus/$t
	regs=tests/fuzz/regressions/$t
	[ -d "$regs" ] || regs=
	echo "== fuzz $t: ${SECONDS_PER}s"
	par=() # -jobs=1 would fork one child logging to ./fuzz-0.log: one job runs in-process instead
	[ "$JOBS" -gt 1 ] && par=(-jobs="$JOBS" -workers="$JOBS")
	"$bin" -max_total_time="$SECONDS_PER" "${par[@]}" -dict="$(dict "$t")" \
		-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$OUTD/crashes/$t/" "$OUTD/corpus/$t" "$seeds" $regs \
		>"$OUTD/$t.log" 2>&1
	r=$?
	grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|INITED)' "$OUTD/$t.log" | tail -n 1
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$OUTD/$t.log"
	echo "corpus: $(ls "$OUTD/corpus/$t" | wc -l) files; crashes: $(ls "$OUTD/crashes/$t" | wc -l)"
	if [ $r -ne 0 ]; then
		echo "FAIL fuzz $t (exit $r): see $OUTD/$t.log"
		grep -E 'ERROR|FAIL|SUMMARY|Test unit written' "$OUTD/$t.log" | head -5
		rc=1
	fi
done
exit $rc

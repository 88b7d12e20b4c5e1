#!/usr/bin/env bash
# Fuzzing (tests/fuzz/README.md). From anywhere:
#   bash tests/fuzz/run.sh [TARGET...]          build with clang + libFuzzer and fuzz each target FUZZ_SECONDS (60)
#   bash tests/fuzz/run.sh replay [TARGET...]   build with gcc (-DVG_FUZZ_REPLAY) and replay corpus + regressions
# Targets: config json path diff http webhook (all by default). New inputs go to $BUILD/fuzz/corpus/TARGET (the checked-in seeds
# in tests/fuzz/corpus/TARGET are read, never written); crashes to $BUILD/fuzz/crashes/TARGET. Exits non-zero on a
# crash or a failed replay. Environment: CLANG (clang-14 or clang), CC (gcc), FUZZ_SECONDS, FUZZ_JOBS (libFuzzer's
# jobs per target, 1), FUZZ_PARALLEL (targets at a time, each on a core of its own: default one per core), BUILD.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
OUTD=$B/fuzz
ALL="config json path diff http webhook"
SECONDS_PER=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}

srcs() { # the library sources a target links: the Makefile's FUZZ_SRCS_<target>, the replays' list too
	case " $ALL " in
	*" $1 "*) env -u MAKEFLAGS make -s --no-print-directory "fuzz-srcs-$1" ;;
	*) echo "run.sh: unknown target '$1' (expected one of: $ALL)" >&2; return 1 ;;
	esac
}
dict() { case $1 in config | path) echo tests/fuzz/config.dict ;; http | webhook) echo "tests/fuzz/$1.dict" ;;
	*) echo tests/fuzz/json.dict ;; esac; }

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
	$CLANG -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I. -o "$OUTD/fuzz_$t" "tests/fuzz/fuzz_$t.c" $s -ldl || {
		echo "run.sh: cannot build with libFuzzer: install clang and libclang-rt-14-dev" >&2; exit 2; }
	mkdir -p "$OUTD/corpus/$t" "$OUTD/crashes/$t"
done
# fuzz_one TARGET: FUZZ_SECONDS of it, its exit status in $OUTD/TARGET.rc.
fuzz_one() {
	local t=$1 seeds=tests/fuzz/corpus/$1 regs=tests/fuzz/regressions/$1 par=()
	[ -d "$regs" ] || regs=
	# -jobs=1 would fork one child logging to ./fuzz-0.log: one job runs in-process instead
	[ "$JOBS" -gt 1 ] && par=(-jobs="$JOBS" -workers="$JOBS")
	"$OUTD/fuzz_$t" -max_total_time="$SECONDS_PER" "${par[@]}" -dict="$(dict "$t")" \
		-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$OUTD/crashes/$t/" "$OUTD/corpus/$t" "$seeds" $regs \
		>"$OUTD/$t.log" 2>&1
	echo $? >"$OUTD/$t.rc"
}
# FUZZ_PARALLEL targets at a time (default: one per core), each with a core of its own for its FUZZ_SECONDS.
PAR=${FUZZ_PARALLEL:-$(nproc)}
echo "== fuzz $targets: ${SECONDS_PER}s each, $PAR at a time"
n=0
for t in $targets; do
	if [ "$n" -ge "$PAR" ]; then wait -n; n=$((n - 1)); fi
	fuzz_one "$t" &
	n=$((n + 1))
done
wait
for t in $targets; do
	r=$(cat "$OUTD/$t.rc" 2>/dev/null || echo 2)
	echo "== fuzz $t"
	grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|INITED)' "$OUTD/$t.log" | tail -n 1
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$OUTD/$t.log"
	echo "corpus: $(ls "$OUTD/corpus/$t" | wc -l) files; crashes: $(ls "$OUTD/crashes/$t" | wc -l)"
	if [ "$r" -ne 0 ]; then
		echo "FAIL fuzz $t (exit $r): see $OUTD/$t.log"
		grep -E 'ERROR|FAIL|SUMMARY|Test unit written' "$OUTD/$t.log" | head -5
		rc=1
	fi
done
exit $rc

#!/usr/bin/env bash
# Issue 29, "big reports stay cheap": wall time and peak RSS of `vramguard report --html`, `vramguard report` (text)
# and `vramguard diff A B` on a report of 30 000 call sites x 64 frames (bench/gen_bigreport.py, ~231 MB), B being
# the same process's next report, a little different (matched by id), then another process's (matched by stack);
# each the best of RUNS runs, next to the targets: at most 5 s and at most twice the file's size (for diff: twice
# the larger of the two files). Prints one table; a copy goes to $BUILD/bench-bigreport.txt.
# Usage: make bench-bigreport   (or bash bench/run_bigreport.sh; SITES=3000 for a smoke run, RUNS=N; VG_CLI=PATH
# measures another build of the command, e.g. main's, in the same conditions)
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
CLI=${VG_CLI:-$PWD/$B/vramguard}
OUT=$B/bench-bigreport.txt
SITES=${SITES:-30000} FRAMES=${FRAMES:-64} RUNS=${RUNS:-3}
[ -x "$CLI" ] || { echo "run_bigreport.sh: $CLI is missing: run make" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run_bigreport.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 bench/gen_bigreport.py --sites "$SITES" --frames "$FRAMES" "$WORK/a.json"
python3 bench/gen_bigreport.py --sites "$SITES" --frames "$FRAMES" --variant 1 "$WORK/b.json"
sed '0,/"pid": 48213/s//"pid": 48214/' "$WORK/b.json" >"$WORK/other.json"      # another process's: by stack
size=$(stat -c %s "$WORK/a.json")
bsize=$(stat -c %s "$WORK/b.json")
[ "$bsize" -gt "$size" ] && big=$bsize || big=$size

# measure ARGS...: "SECONDS KIB", the best time and the highest peak RSS of RUNS runs (output to /dev/null).
measure() {
	local i best='' rss=0 t m
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -f '%e %M' -o "$WORK/t" "$CLI" "$@" >/dev/null
		read -r t m <"$WORK/t"
		best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN { print (a < b) ? a : b }')
		[ "$m" -gt "$rss" ] && rss=$m
	done
	echo "$best $rss"
}
row() { printf '%-28s %8s %8s %6s %10s %10s %6s\n' "$@"; }
verdict() { awk -v a="$1" -v t="$2" 'BEGIN { print (a <= t) ? "PASS" : "MISS" }'; }

{
	echo "vramguard big reports (issue 29): $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr) $(uname -m)"
	echo "command: $CLI (sha256 $(sha256sum "$CLI" | cut -c1-8); this tree: git $(git describe --always --dirty 2>/dev/null || echo '?'))"
	echo "report: $SITES sites x $FRAMES frames, $((size / 1000000)) MB (B: $((bsize / 1000000)) MB); best of $RUNS runs"
	echo
	row "command" "time s" "target" "" "peak MiB" "target" ""
	for cmd in "report --html" "report" "diff" "diff (by stack)"; do
		if [ "$cmd" = diff ]; then
			read -r t m < <(measure diff "$WORK/a.json" "$WORK/b.json")
			lim=$big
		elif [ "$cmd" = "diff (by stack)" ]; then
			read -r t m < <(measure diff "$WORK/a.json" "$WORK/other.json")
			lim=$big
		else
			# shellcheck disable=SC2086 # the command's words
			read -r t m < <(measure $cmd "$WORK/a.json")
			lim=$size
		fi
		mt=$((2 * lim / 1024))
		row "vramguard $cmd" "$t" "5" "$(verdict "$t" 5)" "$((m / 1024))" "$((mt / 1024))" "$(verdict "$m" "$mt")"
	done
} | tee "$OUT"

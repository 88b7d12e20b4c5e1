#!/usr/bin/env bash
# The CPU suite (`make test`; docs/TESTING.md): the sections of tests/sections/, each a script of its own (its own
# environment, work directory, VRAMGUARD_SHM_DIR and ports: tests/lib/section.sh), run in parallel over the cores.
#   tests/run.sh [-j N] [SECTION...]   all sections, or the ones named (nvml, or tests/sections/nvml.sh); N at
#                                      a time (default VG_TEST_JOBS, else twice the cores + 2: most sections wait)
#   tests/run.sh --list                the sections' names
# Output: TAP (prove reads it): each section's checks under a "== NAME (S s)" line, numbered through, as the sections
# end; then the slowest five, the plan "1..N" and the total, "N passed, N failed[, N skipped]", which counts every
# failure: a section that stopped early or exited non-zero without a failed check is one. Exit status 0 exactly
# when that line says 0 failed. Each section's log: $BUILD/tests/run/NAME/log (all of them: $BUILD/tests/run.log).
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib/env.sh
vg_clean_env
B=${BUILD:-build}
T=$B/tests
export VG_SECTIONS_DIR=${VG_SECTIONS_DIR:-tests/sections}
export VG_TEST_RUN=${VG_TEST_RUN:-$PWD/$T/run}

usage() { echo "usage: tests/run.sh [-j N] [--list] [SECTION...]" >&2; exit 2; }
all_sections() { for f in "$VG_SECTIONS_DIR"/*.sh; do basename "$f" .sh; done; }
JOBS=${VG_TEST_JOBS:-}
want=()
while [ $# -gt 0 ]; do
	case $1 in
	-j) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
	-j*) JOBS=${1#-j}; shift ;;
	--list) all_sections; exit 0 ;;
	-h | --help) usage ;;
	-*) echo "tests/run.sh: unknown option '$1'" >&2; usage ;;
	*) n=$(basename "$1" .sh); case " ${want[*]} " in *" $n "*) ;; *) want+=("$n") ;; esac; shift ;;
	esac
done
case $JOBS in
'') JOBS=$((2 * $(nproc) + 2)) ;;
*[!0-9]* | 0) echo "tests/run.sh: -j wants a number, got '$JOBS'" >&2; exit 2 ;;
esac
[ ${#want[@]} -gt 0 ] || mapfile -t want < <(all_sections)
for n in "${want[@]}"; do
	[ -f "$VG_SECTIONS_DIR/$n.sh" ] || { echo "tests/run.sh: no section '$n' (one of: $(all_sections | tr '\n' ' '))" >&2
		exit 2; }
done
mkdir -p "$VG_TEST_RUN" || exit 1
# One run at a time in a build directory: two would share each section's work directory. A second waits.
exec {lockfd}>"$VG_TEST_RUN/.lock"
if ! flock -n "$lockfd"; then
	echo "# another tests/run.sh is running in $VG_TEST_RUN: waiting for it (BUILD=another-dir runs beside it)"
	flock "$lockfd"
fi

# The longest first (their time in the last run; a section never timed yet: a second per KB of script), so that the
# run ends when its longest section does, not after it.
TIMES=$VG_TEST_RUN/.times
declare -A est
for n in "${want[@]}"; do est[$n]=$(($(stat -c %s "$VG_SECTIONS_DIR/$n.sh") / 1000)); done
if [ -f "$TIMES" ]; then
	while read -r n t; do [ -n "${est[$n]:-}" ] && est[$n]=$t; done <"$TIMES"
fi
mapfile -t queue < <(for n in "${want[@]}"; do echo "${est[$n]} $n"; done | sort -k1,1nr -k2 | cut -d' ' -f2)

source tests/lib/tap.sh
declare -A started took
nsec=0
# One section's output, renumbered into the whole: its ok/not ok lines counted here (not trusted from its total),
# its plan and total checked against them.
emit() { # NAME EXIT-STATUS
	local name=$1 rc=$2 line n=0 plan='' total='' f0=$fail
	printf '== %s (%s s)\n' "$name" "${took[$name]}"
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*)
			seq=$((seq + 1)) n=$((n + 1))
			line="ok $seq ${line#ok [0-9]* }"
			case $line in *" # SKIP "*) skipped=$((skipped + 1)) ;; *) pass=$((pass + 1)) ;; esac
			printf '%s\n' "$line" ;;
		"not ok "[0-9]*)
			seq=$((seq + 1)) n=$((n + 1)) fail=$((fail + 1))
			printf 'not ok %d %s\n' "$seq" "${line#not ok [0-9]* }" ;;
		1..[0-9]*) plan=${line#1..} ;;
		[0-9]*" passed, "[0-9]*" failed"*) total=$line ;;
		*) printf '%s\n' "$line" ;;
		esac
	done <"$VG_TEST_RUN/$name.tap"
	if [ "$plan" != "$n" ] || [ -z "$total" ]; then
		bad "section $name ended (exit status $rc) without its plan and total (plan '$plan', $n checks): it crashed" \
			"$(tail -n 3 "$VG_TEST_RUN/$name.tap")"
	elif [ "$rc" -ne 0 ] && [ "$fail" -eq "$f0" ]; then
		bad "section $name exited with status $rc, though none of its checks failed" "$(tail -n 3 "$VG_TEST_RUN/$name.tap")"
	fi
}

t0=$EPOCHREALTIME
running=()
while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
	while [ ${#queue[@]} -gt 0 ] && [ ${#running[@]} -lt "$JOBS" ]; do
		n=${queue[0]}
		queue=("${queue[@]:1}")
		started[$n]=$EPOCHREALTIME
		rm -f "$VG_TEST_RUN/$n.rc"
		# The section's exit status in NAME.rc when it ends, however it ends (a section killed by a signal too).
		{ bash "$VG_SECTIONS_DIR/$n.sh" </dev/null {lockfd}>&-; echo $? >"$VG_TEST_RUN/$n.rc"; } >"$VG_TEST_RUN/$n.tap" 2>&1 &
		running+=("$n")
	done
	wait -n
	still=()
	for n in "${running[@]}"; do
		if [ -s "$VG_TEST_RUN/$n.rc" ]; then
			took[$n]=$(awk -v a="${started[$n]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
			nsec=$((nsec + 1))
			emit "$n" "$(cat "$VG_TEST_RUN/$n.rc")"
		else
			still+=("$n")
		fi
	done
	running=("${still[@]}")
done
wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

for n in "${want[@]}"; do cat "$VG_TEST_RUN/$n/log" 2>/dev/null; done >"$T/run.log"
declare -A last
[ -f "$TIMES" ] && while read -r n t; do last[$n]=$t; done <"$TIMES"
for n in "${want[@]}"; do last[$n]=${took[$n]%.*}; done
for n in "${!last[@]}"; do echo "$n ${last[$n]}"; done | sort >"$TIMES"
echo
printf '# %d sections in %s s on %d cores, %d at a time; the slowest:' "$nsec" "$wall" "$(nproc)" "$JOBS"
for n in "${want[@]}"; do echo "${took[$n]} $n"; done | sort -rn | head -n 5 |
	while read -r s n; do printf ' %s %s s,' "$n" "$s"; done | sed 's/,$//'
echo
tap_plan
tap_total
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# The compute-share benchmark of issue 28 on one GPU, vramguard and HAMi-core side by side: for each workload of
# bench/compute_share.py (matmul: 4096² fp16 matmuls, synchronize every 10; mlp: a batch-1 training step of small
# kernels) the rows
#   alone, uncapped, no preload (the baseline: first and last, their mean divides every figure)
#   two processes together, uncapped, no preload
#   per system: alone capped at 10/30/50/70/90 %; two together capped 30+70, 50+50, 10+90
# achieved share = a process's iterations/s / the baseline; target = its cap. A system's cap:
#   vramguard  LD_PRELOAD=$VG_LIB VRAMGUARD_COMPUTE_LIMIT=N% (NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off)
#   hami       LD_PRELOAD=$HAMI_LIB CUDA_DEVICE_SM_LIMIT=N GPU_CORE_UTILIZATION_POLICY=force
#              CUDA_DEVICE_MEMORY_LIMIT=64g CUDA_DEVICE_MEMORY_SHARED_CACHE=<a new file per process>
# HAMi-core keeps its limits in the shared-region file of CUDA_DEVICE_MEMORY_SHARED_CACHE, written by the first
# process that opens it: each process gets a fresh file of its own, as each container has in Kubernetes (one file
# for two processes would give both the first one's cap). /tmp/vgpulock/ is created, as its README asks.
# Processes of a row start HAMI_STAGGER (2 s) apart, so that HAMi-core's host-PID detection (a diff of NVML's process
# list around its context creation, serialised only within one region file) sees one new process at a time, and
# measure the same interval (--start-at).
#
# Usage: bash bench/run_compute.sh [--dry-run]
#   --dry-run  no GPU, no torch: every process is simulated (a JSON line with ips = baseline x cap), which checks
#              the plan, the bookkeeping and the table; prints the plan and the estimate first
#   OUT        where compute-table.md, compute-raw.jsonl, compute-log.txt and compute-clocks.csv (nvidia-smi's SM clock
#              and power every 250 ms, GPU 0) go (default /tmp/vramguard-compute)
#   VG_LIB     vramguard's library (default $PWD/build/libvramguard.so)
#   HAMI_LIB   HAMi-core's libvgpu.so; default: built by bench/hami_build.sh from .gpu-cache/hami/hami-core.tar.gz
#   VG_COMPUTE_SYSTEMS    which systems (default "vramguard hami"); one whose library is missing is skipped, said so
#   VG_COMPUTE_WORKLOADS  default "matmul mlp" (also: graph, the matmul loop replayed as a CUDA graph)
#   VG_COMPUTE_CAPS       default "10 30 50 70 90"
#   VG_COMPUTE_PAIRS      default "30+70 50+50 10+90"
#   VG_COMPUTE_SECONDS    measured interval of each process (default 4); VG_COMPUTE_WARMUP (default 2)
#   VG_COMPUTE_DEADLINE   seconds (from the start, the build included) after which no further row starts (default
#                         490); each workload gets an equal part of what is left, its closing baseline always runs
#   VG_COMPUTE_HARD       no process runs past this many seconds from the start (default 560: the whole run ends
#                         within 9 minutes; a row that would need longer is not started)
# HAMi-core is built into build-hami/ (ignored by git, kept on a warm GPU machine between commands) and reused from
# there when it was built from the same commit.
#   PYTHON     the interpreter with torch (default python3)
# Every process runs under timeout; a failing one gives its row "no data" and its stderr in compute-log.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
DRY=0
[ "${1:-}" = --dry-run ] && DRY=1
OUT=${OUT:-/tmp/vramguard-compute}
VG_LIB=${VG_LIB:-$ROOT/build/libvramguard.so}
HAMI_LIB=${HAMI_LIB:-}
PY=${PYTHON:-python3}
SYSTEMS=${VG_COMPUTE_SYSTEMS:-vramguard hami}
WORKLOADS=${VG_COMPUTE_WORKLOADS:-matmul mlp}
CAPS=${VG_COMPUTE_CAPS:-10 30 50 70 90}
PAIRS=${VG_COMPUTE_PAIRS:-30+70 50+50 10+90}
MEAS=${VG_COMPUTE_SECONDS:-4}
WARM=${VG_COMPUTE_WARMUP:-2}
DEADLINE=${VG_COMPUTE_DEADLINE:-490}
HARD=${VG_COMPUTE_HARD:-560}
STAGGER=${HAMI_STAGGER:-2}
SETUP_GUESS=7 # seconds from a process's start to the end of its warm-up, until a baseline has measured it
RAW=$OUT/compute-raw.jsonl
LOG=$OUT/compute-log.txt
TABLE=$OUT/compute-table.md
CLOCKS=$OUT/compute-clocks.csv
W=$(mktemp -d /tmp/vramguard-compute.XXXXXX)
trap 'rm -rf "$W"' EXIT
SECONDS=0

bad_value() { echo "run_compute: error: invalid $1 '${!1}' ($2)" >&2; exit 2; }
for n in VG_COMPUTE_SECONDS VG_COMPUTE_WARMUP HAMI_STAGGER; do
	[[ ${!n:-1} =~ ^[0-9]+([.][0-9]+)?$ ]] || bad_value $n "seconds, e.g. 4 or 2.5"
done
[[ $MEAS =~ ^0*([.]0*)?$ ]] && bad_value VG_COMPUTE_SECONDS "more than 0 seconds"
for n in VG_COMPUTE_DEADLINE VG_COMPUTE_HARD; do
	[[ ${!n:-1} =~ ^[0-9]+$ ]] || bad_value $n "whole seconds"
done
for w in $WORKLOADS; do
	case $w in matmul | mlp | graph) ;; *) echo "run_compute: error: unknown workload '$w' (matmul, mlp, graph)" >&2; exit 2 ;; esac
done
# Inherited settings would change what is measured: each process gets its own.
unset LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS CUDA_DEVICE_MEMORY_LIMIT CUDA_DEVICE_SM_LIMIT GPU_CORE_UTILIZATION_POLICY \
	CUDA_DEVICE_MEMORY_SHARED_CACHE PYTORCH_CUDA_ALLOC_CONF 2>/dev/null
for v in $(env | sed -n 's/^\(CUDA_DEVICE_\(MEMORY\|SM\)_LIMIT_[0-9]*\|VRAMGUARD_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# The rows of one workload, one a line: "ROW SYSTEM CAPS" (CAPS: one cap per process, comma-separated, - for none),
# the most telling first (the issue's columns), the systems side by side, so that a run cut by the deadline still
# has them and has the same rows for both systems.
plan_rows() {
	local s c p
	echo "baseline-start none -"
	echo "uncapped-pair none -,-"
	for s in $SYSTEMS; do echo "alone-50 $s 50"; done
	for s in $SYSTEMS; do echo "pair-30+70 $s 30,70"; done
	for c in $CAPS; do
		[ "$c" = 50 ] || for s in $SYSTEMS; do echo "alone-$c $s $c"; done
	done
	for p in $PAIRS; do
		[ "$p" = 30+70 ] || for s in $SYSTEMS; do echo "pair-$p $s ${p/+/,}"; done
	done
	echo "baseline-end none -"
}

# estimate: seconds the whole run takes, from the rows' process counts (a row: the set-up, as run_row waits for it,
# the stagger between its processes, the interval, a second to exit).
estimate() {
	local total=0 n row sys caps
	while read -r row sys caps; do
		n=$(($(tr -cd , <<<"$caps" | wc -c) + 1))
		total=$(awk -v t="$total" -v n="$n" -v m="$MEAS" -v s="$SETUP_GUESS" -v g="$STAGGER" \
			'BEGIN { printf "%d", t + (n > 1 ? (n - 1) * g + s * 1.15 + 1 : s) + m + 1 }')
	done < <(plan_rows)
	echo $((total * $(wc -w <<<"$WORKLOADS")))
}

# env_of SYSTEM CAP CACHE: the VAR=VALUE words of one process.
env_of() {
	case $1 in
	none) ;;
	vramguard) echo "LD_PRELOAD=$VG_LIB NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off VRAMGUARD_COMPUTE_LIMIT=$2%" ;;
	hami) echo "LD_PRELOAD=$HAMI_LIB CUDA_DEVICE_SM_LIMIT=$2 GPU_CORE_UTILIZATION_POLICY=force CUDA_DEVICE_MEMORY_LIMIT=64g" \
		"CUDA_DEVICE_MEMORY_SHARED_CACHE=$3" ;;
	esac
}

# fake_proc: --dry-run's stand-in for compute_share.py: ips = 1000 (matmul) or 400 (mlp) x cap, or the fair
# share of two uncapped, as if every cap held exactly.
fake_proc() {
	local w=$1 label=$2 cap=$3 n=$4 base ips
	base=$([ "$w" = matmul ] && echo 1000 || echo 400)
	if [ "$cap" = - ]; then ips=$((base / n)); else ips=$((base * cap / 100)); fi
	printf '{"workload": "%s", "label": "%s", "pid": %d, "iters": %d, "seconds": %s, "ips": %d, "late_s": 0, "setup_s": 4.0, "nvml_sm_util": null, "nvml_samples": 0}\n' \
		"$w" "$label" "$$" "$((ips * ${MEAS%.*}))" "$MEAS" "$ips"
}

# run_row WORKLOAD ROW SYSTEM CAPS: the row's processes, staggered, one interval; their lines into $RAW.
run_row() {
	local w=$1 row=$2 sys=$3 caps n i start_at now pids=() label envs cap tmo
	IFS=, read -r -a cap_list <<<"$4"
	n=${#cap_list[@]}
	now=$(date +%s.%N)
	start_at=0
	[ "$n" -gt 1 ] && start_at=$(awk -v t="$now" -v s="$SETUP_GUESS" -v g="$STAGGER" -v n="$n" \
		'BEGIN { printf "%.3f", t + (n - 1) * g + s * 1.15 + 1 }')
	# Each process's time limit: generous, but never past the hard end of the whole run.
	tmo=$(awk -v m="$MEAS" -v w="$WARM" -v s="$SETUP_GUESS" -v g="$STAGGER" -v n="$n" -v left=$((HARD - SECONDS)) \
		'BEGIN { t = 2 * s + (n - 1) * g + m + w + 60; if (t > left) t = left; printf "%d", t }')
	if [ "$tmo" -lt $((${MEAS%.*} + 10)) ]; then
		for ((i = 0; i < n; i++)); do
			printf '{"workload": "%s", "label": "system=%s;row=%s;slot=%d;cap=%s", "error": "not run: past the hard end (%s s)"}\n' \
				"$w" "$sys" "$row" "$i" "${cap_list[$i]}" "$HARD" >>"$RAW"
		done
		return
	fi
	for ((i = 0; i < n; i++)); do
		cap=${cap_list[$i]}
		label="system=$sys;row=$row;slot=$i;cap=$cap"
		read -r -a envs <<<"$(env_of "$sys" "$cap" "$W/hami-$w-$row-$i.cache")"
		echo "== $w $label: ${envs[*]:-no preload} (start-at $start_at)" >>"$LOG"
		if [ "$DRY" = 1 ]; then
			fake_proc "$w" "$label" "$cap" "$n" >"$W/p$i.out" &
		else
			timeout -k 5 "$tmo" env ${envs[@]+"${envs[@]}"} "$PY" bench/compute_share.py "$w" --seconds "$MEAS" \
				--warmup "$WARM" --start-at "$start_at" --label "$label" >"$W/p$i.out" 2>"$W/p$i.err" </dev/null &
		fi
		pids+=($!)
		[ "$i" -lt $((n - 1)) ] && [ "$DRY" = 0 ] && sleep "$STAGGER"
	done
	for ((i = 0; i < n; i++)); do
		wait "${pids[$i]}"
		record "$w" "system=$sys;row=$row;slot=$i;cap=${cap_list[$i]}" $? "$W/p$i"
	done
}

# record WORKLOAD LABEL RC FILES: the process's JSON line into $RAW (and a setup time learnt from it), or an error
# line; its stderr into the log.
record() {
	local line why setup
	line=$(grep -m1 '^{' "$4.out" 2>/dev/null)
	[ -s "$4.err" ] && { echo "-- stderr ($2):"; head -c 20000 "$4.err"; echo; } >>"$LOG"
	if [ "$3" -eq 0 ] && [ -n "$line" ]; then
		echo "$line" >>"$RAW"
		echo "$line" >>"$LOG"
		setup=$(sed -n 's/.*"setup_s": \([0-9.]*\).*/\1/p' <<<"$line")
		[ -n "$setup" ] && SETUP_GUESS=$(awk -v a="$SETUP_GUESS" -v b="$setup" -v f="$SETUP_SEEN" \
			'BEGIN { printf "%.1f", (f == 0 || b > a) ? b : a }') && SETUP_SEEN=1
	else
		why="exit $3$([ "$3" -eq 124 ] || [ "$3" -eq 137 ] && echo " (timed out)")"
		why="$why: $(grep -h -m1 '^skip:' "$4.out" 2>/dev/null || tail -n 2 "$4.err" 2>/dev/null | tr '\n"\\' '  ' | cut -c1-200)"
		printf '{"workload": "%s", "label": "%s", "error": "%s"}\n' "$1" "$2" "${why//\"/}" >>"$RAW"
		echo "no figure: $why" >>"$LOG"
	fi
}
SETUP_SEEN=0

header() {
	local smi
	echo "# Compute share: vramguard and HAMi-core, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	if [ "$DRY" = 1 ]; then
		echo "- GPU: none (--dry-run: every process simulated as if its cap held exactly; the figures mean nothing)"
	elif smi=$(timeout 30 nvidia-smi -i 0 --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null); then
		echo "- GPU: $smi (name, driver, memory); CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"
	else
		echo "- GPU: nvidia-smi failed"
	fi
	echo "- CPU: $(nproc) CPUs; $(uname -sr); git $(git describe --always --dirty 2>/dev/null || echo unknown)"
	[ "$DRY" = 1 ] || echo "- $(timeout 60 "$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -n 1)"
	for s in $SYSTEMS; do
		case $s in
		vramguard) echo "- vramguard: $(lib_line "$VG_LIB")" ;;
		hami) echo "- HAMi-core: $(lib_line "$HAMI_LIB"), commit $(cat .gpu-cache/hami/COMMIT 2>/dev/null || echo unknown)" ;;
		esac
	done
	echo "- each process: ${WARM} s warm-up (at least), then ${MEAS} s measured; processes of a row ${STAGGER} s apart," \
		"measuring the same interval; systems: $SYSTEMS; workloads: $WORKLOADS"
}
lib_line() { if [ -f "$1" ]; then echo "$1 (sha256 $(sha256sum "$1" | cut -c1-16))"; else echo "${1:-no library}: missing"; fi; }

# Systems whose library is missing are said so and dropped; HAMi-core is built first when it is not given.
prepare() {
	local s keep=""
	local built=build-hami/hami-core/build/libvgpu.so
	if [[ " $SYSTEMS " == *" hami "* ]] && [ -z "$HAMI_LIB" ]; then
		if [ "$DRY" = 1 ]; then
			HAMI_LIB=$ROOT/$built
		elif [ -f "$built" ] && cmp -s build-hami/COMMIT .gpu-cache/hami/COMMIT; then
			HAMI_LIB=$ROOT/$built
			echo "HAMi-core: reusing $built (commit $(cat build-hami/COMMIT))"
		else
			echo "building HAMi-core (bench/hami_build.sh; its log in compute-log.txt)"
			HAMI_LIB=$(bash bench/hami_build.sh .gpu-cache/hami/hami-core.tar.gz "$ROOT/build-hami" 2>>"$LOG" | tail -n 1)
			[ -n "$HAMI_LIB" ] || echo "HAMi-core did not build: $(grep '^hami_build: error' "$LOG" | tail -n 1)"
		fi
	fi
	for s in $SYSTEMS; do
		case $s in
		vramguard) [ -f "$VG_LIB" ] || [ "$DRY" = 1 ] || { echo "skipping vramguard: no library $VG_LIB"; continue; } ;;
		hami)
			if [ -z "$HAMI_LIB" ] || { [ ! -f "$HAMI_LIB" ] && [ "$DRY" = 0 ]; }; then
				echo "skipping hami: no libvgpu.so${HAMI_LIB:+ at $HAMI_LIB}"
				continue
			fi
			;;
		*) echo "skipping unknown system '$s' (vramguard, hami)"; continue ;;
		esac
		keep="$keep $s"
	done
	SYSTEMS=${keep# }
	[ "$DRY" = 1 ] || mkdir -p /tmp/vgpulock
}

main() {
	local w left n_left=0 wend row sys caps n
	mkdir -p "$OUT"
	: >"$RAW"
	: >"$LOG"
	prepare
	echo "plan per workload (row, system, caps), for $WORKLOADS:"
	plan_rows | sed 's/^/  /'
	echo "estimate: about $(estimate) s of rows (${MEAS} s intervals, ~${SETUP_GUESS} s set-up per process) after" \
		"${SECONDS} s of build; no row starts after ${DEADLINE} s (those left are listed as not run)"
	for w in $WORKLOADS; do n_left=$((n_left + 1)); done
	# The GPU's SM clock and power every 250 ms, for the table's clock column: a GPU busy only part of the time
	# boosts higher than one busy all the time, and does more per second of GPU time.
	local smi=""
	if [ "$DRY" = 0 ] && command -v nvidia-smi >/dev/null; then
		nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 250 \
			>"$CLOCKS" 2>/dev/null &
		smi=$!
	fi
	for w in $WORKLOADS; do
		left=$((DEADLINE - SECONDS))
		wend=$((SECONDS + left / n_left))
		n_left=$((n_left - 1))
		while read -r row sys caps; do
			if [ "$row" != baseline-end ] && [ "$row" != baseline-start ] && [ "$SECONDS" -ge "$wend" ]; then
				printf '{"workload": "%s", "label": "system=%s;row=%s;slot=0;cap=-", "error": "not run: time budget spent"}\n' \
					"$w" "$sys" "$row" >>"$RAW"
				continue
			fi
			echo "[$SECONDS s] $w $row $sys $caps"
			run_row "$w" "$row" "$sys" "$caps"
		done < <(plan_rows)
	done
	[ -n "$smi" ] && kill "$smi" 2>/dev/null
	{
		header
		echo
		python3 bench/compute_table.py ${smi:+--clocks "$CLOCKS"} "$RAW" 2>&1
		echo
		# Without its host PID, HAMi-core never calls its rate limiter (cuLaunchKernel tests pidfound): say so.
		n=$(grep -c 'SET_TASK_PID FAILED' "$LOG")
		[ "$n" -gt 0 ] && echo "HAMi-core said 'SET_TASK_PID FAILED' $n times: its throttle was off in those processes."
		echo "(raw lines: compute-raw.jsonl; processes' stderr: compute-log.txt; took ${SECONDS} s)"
	} >"$TABLE"
	cat "$TABLE"
	echo "written to $TABLE"
}

main

#!/usr/bin/env bash
# The GPU benchmarks of the performance issue, each figure next to its target (PASS / MISS), with and without the
# prebuilt library preloaded (never rebuilt here: no uthash needed), on one H100 / H200:
#   0. alloc+free pairs through vramguard and straight into the driver, interleaved in one process (target <= 1.01)
#   1. alloc+free pair time, cudaMalloc+cudaFree at 4K / 1M / 64M: ratio with / without (target <= 1.01);
#      stream-ordered and driver-API pairs as information; a VRAMGUARD_BACKTRACE sweep (0/4/8/16/32) at 1M
#   2. PyTorch training step time, a small MLP and a small CNN: ratio (target: indistinguishable from 1.00)
#   3. JAX jitted MLP training step time: ratio (same target)
#   4. start-up, exec to the return of the first allocation, runtime and driver API (target: <= 5 ms added)
#   5. the compute share's cost: GPT-2 small and the MLP step, without / with the preload / with a 100 % compute
#      limit (issue 28: <= 1.005 and <= 1.01)
# Every comparison runs whole processes, alternating without / with (ABBA ABBA ...), so that drift of the GPU,
# the driver and the machine reaches both sides alike; each process gives one figure (its median round or step),
# and a row shows the median of those per-process figures on each side, their range (min..max), and the paired
# comparison of the processes that ran back to back, on which the pair and start-up verdicts rest (236 s in all on
# an H200, 2026-11-22).
# The side with the preload: LD_PRELOAD=$VG_LIB NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off, call-site capture
# at its default depth (VRAMGUARD_BACKTRACE unset) except in the sweep.
#
# Usage: bash bench/run_gpu.sh [OUTPUT-FILE]      (make bench-gpu writes build/bench-gpu.txt; output also on stdout)
#   VG_LIB         library to preload (default $PWD/build/libvramguard.so)
#   PYTHON         interpreter with torch and jax (default python3); NVCC (default: nvcc on PATH, or CUDA's)
#   QUICK=1        smoke run: few processes and pairs (figures only indicative)
#   VG_BENCH_DEADLINE  seconds after which no further process is started (default 330); rows show what ran
#   VG_BENCH_PAIR_PROCS, VG_BENCH_SWEEP_REPS, VG_BENCH_START_RUNS, VG_BENCH_FW_PROCS, VG_BENCH_IL_PROCS,
#   VG_BENCH_IL_BLOCKS, VG_BENCH_CS_PROCS  override the counts
#   VG_BENCH_SECTIONS  which sections run (default: interleaved pairs torch_steps jax_steps startup compute_steps)
#   VG_BENCH_CPU   CPU the pair programs are pinned to (default 2 where there are 4 or more; none: not pinned)
#   VG_BENCH_FAKE=DIR  check the script without a GPU: the driver-API programs are linked against the test double
#                  DIR/libcuda.so.1 (make test BUILD=...: DIR=$BUILD/tests); cudart builds are skipped
#   VG_GIT_REV     revision to print where the tree has no .git
# Failing programs never stop the script: their rows say "no data" and their stderr is printed at the end.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUTFILE=${1:-}
VG_LIB=${VG_LIB:-$ROOT/build/libvramguard.so}
PY=${PYTHON:-python3}
FAKE=${VG_BENCH_FAKE:+$(cd "$VG_BENCH_FAKE" && pwd)}
DEADLINE=${VG_BENCH_DEADLINE:-330}
STATS=$ROOT/bench/gpu_stats.py
SPY=python3     # runs gpu_stats.py (standard library only); PYTHON runs the framework loops
W=$(mktemp -d /tmp/vramguard-bench-gpu.XXXXXX)
trap 'rm -rf "$W"' EXIT
SECONDS=0

if [ "${QUICK:-0}" = 1 ]; then
	PAIR_PROCS=2 PAIRS=50 ROUNDS=3 SWEEP_REPS=1 START_RUNS=3 FW_PROCS=1 FW_WARMUP=10 FW_STEPS=50 IL_PROCS=1
	IL_BLOCKS=50 CS_PROCS=1 CS_WARMUP=5 CS_STEPS=10
else
	PAIR_PROCS=10 PAIRS=200 ROUNDS=9 SWEEP_REPS=3 START_RUNS=30 FW_PROCS=4 FW_WARMUP=30 FW_STEPS=300 IL_PROCS=4
	IL_BLOCKS=1000 CS_PROCS=4 CS_WARMUP=15 CS_STEPS=60
fi
IL_PAIRS=10
# Any count may be set from the environment (VG_BENCH_PAIR_PROCS=6 ...), e.g. to fit a device-time budget.
PAIR_PROCS=${VG_BENCH_PAIR_PROCS:-$PAIR_PROCS} SWEEP_REPS=${VG_BENCH_SWEEP_REPS:-$SWEEP_REPS}
START_RUNS=${VG_BENCH_START_RUNS:-$START_RUNS} FW_PROCS=${VG_BENCH_FW_PROCS:-$FW_PROCS}
IL_PROCS=${VG_BENCH_IL_PROCS:-$IL_PROCS} IL_BLOCKS=${VG_BENCH_IL_BLOCKS:-$IL_BLOCKS}
CS_PROCS=${VG_BENCH_CS_PROCS:-$CS_PROCS}
SIZES=4K,1M,64M
# The pair programs are pinned to one CPU: in a test on the H200 VM (16 vCPUs), 12 unpinned processes gave 54-79 us
# per pair and 12 pinned ones 55-65. Slow spells of the whole machine remain (the paired columns deal with those).
# Pinning did not narrow the framework loops or the start-up, which are left unpinned.
PIN=()
if [ "${VG_BENCH_CPU:-}" != none ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then
	PIN=(taskset -c "${VG_BENCH_CPU:-2}")
fi
KEYS=()

# Inherited settings would change what is measured: each side sets its own.
unset LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS CUDA_DEVICE_MEMORY_LIMIT PYTORCH_CUDA_ALLOC_CONF \
	XLA_PYTHON_CLIENT_PREALLOCATE XLA_PYTHON_CLIENT_MEM_FRACTION XLA_PYTHON_CLIENT_ALLOCATOR 2>/dev/null
for v in $(env | sed -n 's/^\(CUDA_DEVICE_MEMORY_LIMIT_[0-9]*\|VRAMGUARD_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# The two sides, as VAR=VALUE lists (given to env, or to the start-up launcher for the measured program only).
BASE=()
[ -n "$FAKE" ] && BASE=(FAKECUDA_MEM=64T LD_LIBRARY_PATH="$FAKE")
# shellcheck disable=SC2034  # NO, VG and BT* are read through side()'s name reference
NO=(${BASE[@]+"${BASE[@]}"})
VG=(${BASE[@]+"${BASE[@]}"} LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_REPORT=off)
# shellcheck disable=SC2034  # read through side()'s name reference
CAP=("${VG[@]}" VRAMGUARD_COMPUTE_LIMIT=100%)

main() {
	echo "vramguard GPU benchmarks: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	header
	[ -f "$VG_LIB" ] || { echo "error: no library $VG_LIB (build it on a CPU machine and ship build/, or set VG_LIB)"; return 1; }
	build
	local sec t
	for sec in ${VG_BENCH_SECTIONS:-interleaved pairs torch_steps jax_steps startup compute_steps}; do
		echo
		t=$SECONDS
		"$sec"
		echo "   (${sec}: $((SECONDS - t)) s)"
	done
	echo
	echo "raw per-process figures (each value: one process's median round or step, in the order they ran)"
	for f in ${KEYS[@]+"${KEYS[@]}"}; do
		[ -s "$W/data/$f" ] && "$SPY" "$STATS" raw "$f=$W/data/$f"
	done
	if [ -s "$W/failures" ]; then
		echo
		echo "failures (command, exit status, last lines of stderr)"
		cat "$W/failures"
	fi
	echo
	echo "(took ${SECONDS}s)"
}

header() {
	local smi
	if [ -n "$FAKE" ]; then
		echo "GPU: none: test double $FAKE/libcuda.so.1 (VG_BENCH_FAKE): checks the script, the figures mean nothing"
	elif smi=$(timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,persistence_mode \
		--format=csv,noheader 2>/dev/null); then
		echo "$smi" | sed 's/^/GPU: /'
		echo "  (index, name, driver, memory, persistence mode); CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"
	else
		echo "GPU: nvidia-smi failed"
	fi
	echo "CPU: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(uname -sr) $(uname -m)"
	echo "git: $(git describe --always --dirty 2>/dev/null || echo "${VG_GIT_REV:-unknown (no .git here; set VG_GIT_REV)}")"
	if [ -f "$VG_LIB" ]; then
		echo "library: $VG_LIB ($(stat -c %s "$VG_LIB") bytes, sha256 $(sha256sum "$VG_LIB" | cut -c1-16), built" \
			"$(date -u -r "$VG_LIB" '+%Y-%m-%d %H:%M UTC'))"
	fi
	echo "with preload: ${VG[*]}; VRAMGUARD_BACKTRACE unset (default depth) except in 1b"
	echo "pair programs pinned: ${PIN[*]:-no}"
	echo "counts: pairs $PAIR_PROCS processes/side x $ROUNDS rounds x $PAIRS pairs/row; frameworks $FW_PROCS" \
		"processes/side x $FW_STEPS steps (after $FW_WARMUP); start-up $START_RUNS runs/side; in-process" \
		"$IL_PROCS processes x $IL_BLOCKS blocks x $IL_PAIRS pairs${QUICK:+ (QUICK=$QUICK)}"
}

# ---- building (nvcc for the runtime variants, cc for the driver-only ones); failures are reported, not fatal
build() {
	local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)} cuda stubs="" drvlink
	mkdir -p "$W/bin" "$W/data"
	[ -x "$nvcc" ] || nvcc=""
	[ -n "$FAKE" ] && nvcc=""
	cuda=${CUDA_HOME:-$([ -n "$nvcc" ] && dirname "$(dirname "$(readlink -f "$nvcc")")" || echo /usr/local/cuda)}
	for d in "$cuda/lib64/stubs" "$cuda/targets/$(uname -m)-linux/lib/stubs"; do
		[ -f "$d/libcuda.so" ] && { stubs=$d; break; }
	done
	if [ -n "$FAKE" ]; then
		# shellcheck disable=SC2054  # a linker flag, not a list
		drvlink=(-L"$FAKE" -l:libcuda.so.1 -Wl,-rpath,"$FAKE")
	else
		drvlink=(${stubs:+-L"$stubs"} -lcuda)
	fi
	local ccf=(-std=gnu11 -O2 -g -Wall -Wextra -I"$cuda/include")
	echo "compilers: cc $(cc -dumpfullversion 2>/dev/null); nvcc: ${nvcc:-none}${nvcc:+ $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')}"
	compile() { # compile NAME COMMAND...
		local name=$1
		shift
		timeout 300 "$@" -o "$W/bin/$name" >"$W/bin/$name.log" 2>&1 ||
			{ echo "compile of $name failed: $*" >>"$W/failures"; tail -5 "$W/bin/$name.log" >>"$W/failures"; }
	}
	compile startup_drv cc "${ccf[@]}" bench/gpu_startup.c "${drvlink[@]}" &
	if [ -n "$nvcc" ]; then
		# A .c file: nvcc hands it to the host compiler and links the static cudart (nvcc's default).
		compile alloc_cost "$nvcc" -O2 -g -DVG_BENCH_CUDART bench/gpu_alloc_cost.c -lcuda -lm &
		compile startup_rt "$nvcc" -O2 -g -DVG_BENCH_CUDART bench/gpu_startup.c &
	else
		compile alloc_cost cc "${ccf[@]}" bench/gpu_alloc_cost.c "${drvlink[@]}" -lm &
	fi
	wait
	HAVE_RT=${nvcc:+1}
	[ -n "$nvcc" ] || echo "note: no nvcc${FAKE:+ (VG_BENCH_FAKE)}: runtime rows (cudaMalloc) skipped, driver-API rows only"
}

past_deadline() { [ "$SECONDS" -ge "$DEADLINE" ]; }

# runp FILE COMMAND...: one process of a comparison; appends "proc ..." and its figure lines to FILE. PAIR numbers
# the processes that run back to back on the two sides.
# Returns 1 when the time budget is spent and 2 when the program says it cannot run here (skip): stop the section.
runp() {
	local f=$1 rc
	shift
	if past_deadline; then
		echo "proc skipped (time budget of ${DEADLINE}s spent)" >>"$f"
		return 1
	fi
	timeout -k 5 "${TMO:-60}" "$@" >"$W/o" 2>"$W/e" </dev/null
	rc=$?
	if grep -q '^skip ' "$W/o"; then
		echo "proc $(grep -m1 '^skip ' "$W/o")" >>"$f"
		return 2
	fi
	if [ "$rc" -eq 0 ]; then
		echo "proc ok ${PAIR:-}" >>"$f"
		grep -E '^(preload|info|figure|interleave) ' "$W/o" >>"$f"
	else
		echo "proc failed (exit $rc$([ "$rc" -ge 124 ] && [ "$rc" -le 137 ] && echo ", time limit ${TMO:-60}s?"))" >>"$f"
		{ echo "- $(basename "$f"): exit $rc: $*"; tail -n 5 "$W/e" | sed 's/^/    /'; } >>"$W/failures"
	fi
	return 0
}

# side NAME: the command prefix of that side (env, or the start-up launcher with LAUNCH=1) in array CMD.
side() {
	local -n vars=$1
	if [ -n "${LAUNCH:-}" ]; then CMD=("$SPY" "$STATS" launch ${vars[@]+"${vars[@]}"} --); else
		CMD=(env ${vars[@]+"${vars[@]}"}); fi
}

# ab KEY N COMMAND...: N processes per side, in the order ABBA ABBA ..., into data/KEY.without and KEY.with. The
# sides are AB_SIDES (default "NO VG"; with CAP too, each round runs them in turn, the next round in reverse), each
# side's file named by side_file.
side_file() { case $1 in NO) echo without ;; VG) echo with ;; CAP) echo cap100 ;; esac; }
ab() {
	local key=$1 n=$2 i s sides=${AB_SIDES:-NO VG}
	shift 2
	for s in $sides; do
		: >"$W/data/$key.$(side_file "$s")"
		KEYS+=("$key.$(side_file "$s")")
	done
	for ((i = 0; i < n; i++)); do
		for s in $( ((i % 2)) && tr ' ' '\n' <<<"$sides" | tac | tr '\n' ' ' || echo "$sides"); do
			side "$s"
			PAIR=$i runp "$W/data/$key.$(side_file "$s")" "${CMD[@]}" "$@" || return 0
		done
	done
}

# compare KEY UNIT RULE TARGET-REGEX: the table of one comparison.
compare() {
	"$SPY" "$STATS" table --unit "$2" --rule "$3" --targets "$4" "without=$W/data/$1.without" "with=$W/data/$1.with"
}

interleaved() {
	local bin=$W/bin/alloc_cost
	echo "0. alloc+free pairs in one process, through vramguard and straight into the driver, interleaved"
	echo "   cuMemAlloc_v2+cuMemFree_v2 under the preload, 48 frames deep, default capture depth: blocks of"
	echo "   $IL_PAIRS pairs through vramguard's exports and through the driver's own functions (found in libcuda's symbol"
	echo "   table), alternating W R, R W, ... for $IL_BLOCKS blocks per size, in $IL_PROCS processes. Both sides share every"
	echo "   slow spell, so this resolves what the whole-process comparison (1) cannot: its processes differ by"
	echo "   +-20%. cudaMalloc reaches the same wrappers (through cuGetProcAddress), so the time added is the same."
	echo "   ratio = median over the processes of each one's median block ratio; 95% = the extremes of the processes'"
	echo "   confidence intervals for their median; added = median time added per pair; slower = blocks in which"
	echo "   the pairs through vramguard were slower. Target (issue): pair ratio <= 1.01.${PIN[*]:+ Pinned: ${PIN[*]}.}"
	if [ ! -x "$bin" ]; then
		echo "skipped: gpu_alloc_cost did not build (see failures)"
		return
	fi
	local i
	: >"$W/data/interleave"
	for ((i = 0; i < IL_PROCS; i++)); do
		side VG
		PAIR=$i runp "$W/data/interleave" "${CMD[@]}" ${PIN[@]+"${PIN[@]}"} "$bin" interleave "$IL_PAIRS" \
			"$IL_BLOCKS" "$SIZES" || break
	done
	"$SPY" "$STATS" interleave --target 1.01 "$W/data/interleave"
}

pairs() {
	local bin=$W/bin/alloc_cost
	echo "1. alloc+free pairs, µs per pair: with / without the preload"
	echo "   $PAIR_PROCS processes per side (ABBA...); each: warm-up round, then $ROUNDS rounds of $PAIRS pairs per row"
	echo "   (stream-ordered rows: 10x the pairs, synchronized at the end of the round), every row in turn, 48 frames"
	echo "   deep; a process's figure is its median round. ratio = median(with)/median(without); range ="
	echo "   min(with)/max(without)..max(with)/min(without): if it holds 1.000, the two sides overlap; best = best round"
	echo "   with / best round without; paired = median of with/without over the pairs of processes that ran back to"
	echo "   back; slower = in how many of those pairs the one with the preload was slower (a sign test: under 'no"
	echo "   difference', 10/10 or 0/10 has odds of 1 in 512, >=9/10 or <=1/10 about 2%). Target (issue):"
	echo "   cudaMalloc+cudaFree ratio <= 1.01, verdict on the paired ratio: the machine has slow spells lasting"
	echo "   several processes (every pair ~35% slower for a minute, both sides alike), which move the medians over"
	echo "   all processes but not the back-to-back pairs.${PIN[*]:+ Pinned: ${PIN[*]}.}"
	if [ ! -x "$bin" ]; then
		echo "skipped: gpu_alloc_cost did not build (see failures)"
		return
	fi
	ab pairs "$PAIR_PROCS" ${PIN[@]+"${PIN[@]}"} "$bin" "$PAIRS" "$ROUNDS" "$SIZES"
	compare pairs µs le:1.01 '^cudaMalloc\+cudaFree:'

	echo
	echo "1b. call-site capture depth sweep at 1M: bt N = VRAMGUARD_BACKTRACE=N (16 is the default); µs per pair"
	echo "   $SWEEP_REPS round(s) of one process per setting, settings in turn; ratio against 'without'; paired: same round"
	local apis=drv,drv-async reps d sets=(NO) key specs=()
	[ -n "$HAVE_RT" ] && apis=rt,rt-async
	for d in 0 4 8 16 32; do
		eval "BT$d=(\${VG[@]+\"\${VG[@]}\"} VRAMGUARD_BACKTRACE=$d)"
		sets+=("BT$d")
	done
	for key in "${sets[@]}"; do
		: >"$W/data/sweep.$key"
		KEYS+=("sweep.$key")
	done
	for ((reps = 0; reps < SWEEP_REPS; reps++)); do
		for key in "${sets[@]}"; do
			side "$key"
			PAIR=$reps runp "$W/data/sweep.$key" "${CMD[@]}" ${PIN[@]+"${PIN[@]}"} "$bin" "$PAIRS" "$ROUNDS" 1M "$apis" || break 2
		done
	done
	for key in "${sets[@]}"; do
		if [ "$key" = NO ]; then specs+=("without=$W/data/sweep.NO"); else specs+=("bt ${key#BT}=$W/data/sweep.$key"); fi
	done
	"$SPY" "$STATS" table --unit µs --rule none "${specs[@]}"
}

compute_steps() {
	echo "5. the compute share's cost (issue 28): PyTorch training steps, ms per step (synchronized), without the"
	echo "   preload, with it and no compute limit (the launch hooks' one branch), and with VRAMGUARD_COMPUTE_LIMIT=100%"
	echo "   (every launch measured, none held). GPT-2 small (124M, batch 4 x 1024 tokens, bf16) and the MLP of 2"
	echo "   (launch-bound: many small kernels). $CS_PROCS processes per side, the sides in turn (A B C, C B A, ...),"
	echo "   median step of $CS_STEPS after $CS_WARMUP warm-up steps; columns as in 1, paired = the median ratio of the"
	echo "   processes of one round. Targets: no limit <= 1.005, a 100 % limit <= 1.01 (PASS on the paired ratio)."
	AB_SIDES="NO VG CAP" TMO=240 ab csteps "$CS_PROCS" "$PY" bench/gpu_torch_step.py "$CS_WARMUP" "$CS_STEPS" gpt2 mlp
	"$SPY" "$STATS" table --unit ms --rule le:1.005 "without=$W/data/csteps.without" "with=$W/data/csteps.with"
	"$SPY" "$STATS" table --unit ms --rule le:1.01 "without=$W/data/csteps.without" "cap100=$W/data/csteps.cap100"
	grep -h '^info' "$W/data/csteps.without" | sort -u | sed 's/^info /   (/; s/$/)/'
}

torch_steps() {
	echo "2. PyTorch training step, ms per step (synchronized), with / without the preload"
	echo "   $FW_PROCS processes per side (ABBA...), both models in each; a process's figure is its median step of"
	echo "   $FW_STEPS after $FW_WARMUP warm-up steps; columns as in 1. Target: indistinguishable from 1.00 (PASS: the"
	echo "   range min(with)/max(without)..max(with)/min(without) holds 1.000; read it with paired and slower)"
	TMO=180 ab torch "$FW_PROCS" "$PY" bench/gpu_torch_step.py "$FW_WARMUP" "$FW_STEPS"
	compare torch ms overlap .
	grep -h -m1 '^info' "$W/data/torch.without" | sed 's/^info /   (/; s/$/)/'
}

jax_steps() {
	echo "3. JAX jitted MLP training step, ms per step (block_until_ready), with / without the preload"
	echo "   XLA_PYTHON_CLIENT_PREALLOCATE=false on both sides (with preallocation JAX sizes its pool from"
	echo "   cuMemGetInfo, which under vramguard reports the quota: the sides would start from different pools);"
	echo "   $FW_PROCS processes per side (ABBA...), median step of $FW_STEPS after $FW_WARMUP. Target: as 2."
	TMO=180 ab jax "$FW_PROCS" env XLA_PYTHON_CLIENT_PREALLOCATE=false JAX_PLATFORMS=cuda \
		"$PY" bench/gpu_jax_step.py "$FW_WARMUP" "$FW_STEPS"
	compare jax ms overlap .
	grep -h -m1 '^info' "$W/data/jax.without" | sed 's/^info /   (/; s/$/)/'
}

startup() {
	echo "4. start-up: ms from execve (CLOCK_MONOTONIC read by the launcher just before it) to main and to the"
	echo "   return of the first 1 MiB allocation; $START_RUNS runs per side (ABBA...) after one unrecorded run each."
	echo "   added = median(with) - median(without); range = min(with)-max(without)..max(with)-min(without);"
	echo "   best = min(with) - min(without); paired = median of with - without over back-to-back runs."
	echo "   Target: paired added <= 5 ms up to the first allocation. The driver's context creation alone varies by"
	echo "   tens of ms from run to run, and vramguard does nothing in it: the driver-API verdict rests on the time"
	echo "   to the first allocation less the context creation (exec to the end of cuInit, plus the allocation),"
	echo "   which holds all of vramguard's own start-up; the runtime cannot be split so and keeps the whole."
	local v s
	for v in rt drv; do
		if [ ! -x "$W/bin/startup_$v" ]; then
			echo "startup-$v: skipped ($([ "$v" = rt ] && echo "no nvcc" || echo "did not build"))"
			continue
		fi
		# Unrecorded: the first run after the build reads the program and libraries from disk.
		for s in NO VG; do
			LAUNCH=1 side "$s"
			runp "$W/warm" "${CMD[@]}" "$W/bin/startup_$v"
		done
		LAUNCH=1 ab "startup-$v" "$START_RUNS" "$W/bin/startup_$v"
		compare "startup-$v" ms added:5 'exec-to-(cudaMalloc|cuMemAlloc-no-ctx)$'
	done
}

if [ -n "$OUTFILE" ]; then
	mkdir -p "$(dirname "$OUTFILE")"
	main 2>&1 | tee "$OUTFILE.tmp"
	mv "$OUTFILE.tmp" "$OUTFILE"
	echo "written to $OUTFILE"
else
	main 2>&1
fi

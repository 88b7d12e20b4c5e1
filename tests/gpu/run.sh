#!/usr/bin/env bash
# tests/gpu/run.sh: vramguard's suite for a real GPU. Run from the repo root: bash tests/gpu/run.sh
#   VG_LIB  the library to preload (default $PWD/build/libvramguard.so)
#   OUT     where gpu-results.txt (the checks' lines) and gpu-log.txt (full output) go (default /tmp/vramguard-gpu)
#   PYTHON  the interpreter with torch, jax and cupy (default python3); VG_TIMEOUT per check (default 120 s)
#   CUPY_TESTS  CuPy's tests for cupy_suite: a folder holding cupy_tests/cuda_tests and conftest.py (default
#               .gpu-cache/cupy-tests if there, made by scripts/fetch-cupy-tests.sh; "off" skips); CUPY_SUITE_TIMEOUT
#               bounds each of its two pytest runs (default 240 s)
#   VG_CMD  the vramguard command, for cdi_torch (default: the one next to VG_LIB)
#   VG_ONLY=physical  only library_loads and the physical-memory checks at the end (phys_*, nvml_view, cupy_suite);
#               VG_ONLY=cupy: only library_loads and cupy_suite; VG_ONLY=cdi: only library_loads and cdi_torch;
#               VG_ONLY=python: only library_loads and tests/gpu/pysites.sh (Python frames: leak_here named by
#               file and line under PyTorch and CuPy);
#               VG_ONLY=accounting: only library_loads and the accounting checks (tests/gpu/accounting.cu: 10 000
#               short-lived threads, the driver's memory measured while a thread allocates and frees);
#               VG_ONLY=ops: only library_loads and the operations checks (tests/gpu/ops.sh: denial and threshold
#               reports, the exporter); VG_ONLY=autoscale: only library_loads and tests/gpu/autoscale.sh (the
#               receiver raises a PyTorch job's quota from 2 to 4 GiB on Alertmanager's payload, no restart; and
#               the whole loop with Prometheus and Alertmanager when VG_PROM_TAR, default
#               .gpu-cache/prom/prom.tar.xz, holds their binaries: see the file's header).
#               VG_ONLY=install: only library_loads and tests/gpu/install.sh (the .deb and the wheel of
#               docs/install.md installed, used under PyTorch with a quota, and removed; VG_DEB, VG_WHL).
#               VG_ONLY=compute: only library_loads and tests/gpu/compute.sh (VRAMGUARD_COMPUTE_LIMIT's share
#               within 5 points at 50 % alone and 30 % + 70 % together, matmuls, small kernels, a CUDA graph;
#               DDP over NCCL with caps on both ranks where there are 2 GPUs); VG_ONLY=ddp: only that DDP check.
#               VG_ONLY=growth: only library_loads and tests/gpu/growth.sh (a PyTorch loop's slow leak: the growth
#               report names its line, its forecast within 20 % of the OutOfMemoryError); VG_ONLY=allocators: only
#               library_loads and tests/gpu/allocators.sh (PyTorch's, CuPy's and XLA's allocators and the
#               stream-ordered pools named in the report).
#               CUPY_SUITE_WORKERS=N (default 8): pytest-xdist
#               workers for cupy_suite where pytest-xdist is installed (the cuda_tests take ~10 min each way on one)
# Each check prints the protocol of the CPU suite (docs/TESTING.md): "ok N - name" with its figures on a "# " line,
# "not ok N - name" with what went wrong on "# " lines, or "ok N - name # SKIP reason"; the last line
# "N passed, N failed[, N skipped]". No check can stop or hang the others (no set -e, every command under timeout).
# Exit status 1 when anything failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VG_LIB=${VG_LIB:-$PWD/build/libvramguard.so}
OUT=${OUT:-/tmp/vramguard-gpu}
PY=${PYTHON:-python3}
CHECK=$HERE/../lib/report_check.py     # the tests' one checker of reports and top's JSON
T=${VG_TIMEOUT:-120}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
QUOTA=4096
mkdir -p "$OUT"
RES=$OUT/gpu-results.txt
LOG=$OUT/gpu-log.txt
: >"$RES"
: >"$LOG"
BUILD=$(mktemp -d /tmp/vramguard-gpu-build.XXXXXX)
trap 'rm -rf "$BUILD"' EXIT
NP=0 NF=0 NS=0

# Inherited settings would change what the checks measure; each check sets its own.
unset LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS CUDA_DEVICE_MEMORY_LIMIT PYTORCH_CUDA_ALLOC_CONF VRAMGUARD_COUNT \
	XLA_PYTHON_CLIENT_PREALLOCATE XLA_PYTHON_CLIENT_MEM_FRACTION 2>/dev/null
for v in $(env | sed -n 's/^\(CUDA_DEVICE_MEMORY_LIMIT_[0-9]*\)=.*/\1/p'); do unset "$v"; done

result() { # result PASS|FAIL|SKIP NAME TEXT: the check's lines, on stdout and in $RES
	local n=$((NP + NF + NS + 1)) lines
	case $1 in
	PASS) NP=$((NP + 1)) lines=$(printf 'ok %d - %s\n' "$n" "$2"; printf '%s\n' "$3" | sed 's/^/# /') ;;
	FAIL) NF=$((NF + 1)) lines=$(printf 'not ok %d - %s\n' "$n" "$2"; printf '%s\n' "$3" | sed 's/^/# /') ;;
	SKIP) NS=$((NS + 1)) lines=$(printf 'ok %d - %s # SKIP %s' "$n" "$2" "$3" | tr '\n' ' ') ;;
	esac
	printf '%s\n' "$lines" | tee -a "$RES"
}

# run NAME CMD...: runs CMD under the timeout; stdout in $BUILD/o, stderr in $BUILD/e, both logged; sets RC.
# CMD starting with the word vg runs under the preload with the quota $LIMITS (default 4096 MiB).
run() {
	local name=$1
	shift
	[ "$1" = vg ] && { shift; set -- env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS="${LIMITS:-$QUOTA}" "$@"; }
	printf '\n===== %s: %s\n' "$name" "$*" >>"$LOG"
	timeout -k 5 "$T" "$@" >"$BUILD/o" 2>"$BUILD/e" </dev/null
	RC=$?
	{ cat "$BUILD/o"; echo "--- stderr:"; cat "$BUILD/e"; echo "--- exit status $RC"; } >>"$LOG"
}

why_rc() { case $RC in 124 | 137) echo "timed out after ${T} s" ;; *) echo "exit $RC" ;; esac; }
figures() { grep -h '^figures:' "$BUILD/o" | tail -1 | sed 's/^figures: //'; }
# The library's first denial or error line, and how many denial lines it printed.
denial() {
	local n
	n=$(cat "$BUILD/e" "$BUILD/o" | grep -c 'vramguard: denied')
	cat "$BUILD/e" "$BUILD/o" | grep -m1 'vramguard: \(denied\|error\)' | sed "s/^/($n denial lines) /"
}
# For programs whose steps include denials: the library must have said so.
need_denial() { grep -q 'vramguard: denied' "$BUILD/e" "$BUILD/o" || echo "no 'vramguard: denied' line printed"; }
bads() { grep -h '^BAD ' "$BUILD/o" | head -3 | sed 's/^BAD //' | paste -sd'|' | sed 's/|/ | /g'; }
verdict() {
	FIG=$(figures)
	VERDICT=""
	if [ "$RC" -ne 0 ]; then
		VERDICT=$(bads)
		[ -n "$VERDICT" ] || VERDICT="report_check.py: $(why_rc)$(stderr_tail)"
	fi
}
# log_quote TITLE FILE: the report's first lines, quoted in the log under a title.
log_quote() {
	{
		printf '\n----- %s\n' "$1"
		sed -n '/^vramguard: report (/,$p' "$2" | head -24
	} >>"$LOG"
}
first_file() { [ -e "$1" ] && echo "$1"; } # first_file GLOB...: the first match, or nothing

# program NAME CMD...: a program of this suite (prints ok/BAD lines and a final figures: line). A caller may set
# EXTRA to a function that prints why the run is wrong beyond the program's own verdict (nothing when right).
program() {
	local name=$1 d extra=""
	shift
	run "$name" "$@"
	if [ "$RC" -eq 3 ] && grep -q '^skip: ' "$BUILD/o"; then # the script found its framework or tool missing here
		result SKIP "$name" "$(grep -m1 '^skip: ' "$BUILD/o" | sed 's/^skip: //')"
		return
	fi
	d=$(denial)
	[ -n "${EXTRA:-}" ] && extra=$("$EXTRA")
	if [ "$RC" -eq 0 ] && [ -z "$extra" ]; then
		result PASS "$name" "$(figures)${d:+; library said: $d}"
	else
		local b f
		b=$(bads) f=$(figures)
		result FAIL "$name" "$(why_rc)${extra:+, $extra}${b:+: $b}${f:+; $f}${d:+; library said: $d}$(stderr_tail)"
	fi
}
stderr_tail() { [ -s "$BUILD/e" ] && echo "; stderr tail: $(tail -c 300 "$BUILD/e" | tr '\n' ' ')"; }

# ---- header
echo "vramguard GPU suite, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), library $VG_LIB" | tee -a "$LOG"
{
	timeout 30 nvidia-smi -L 2>&1 || echo "nvidia-smi -L failed"
	echo "driver $(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
	echo "nvcc: $("$NVCC" --version 2>/dev/null | tail -1)"
	for m in torch jax cupy pytest; do
		timeout 60 "$PY" -c "import $m; print('$m', $m.__version__)" 2>/dev/null || echo "$m: import failed"
	done
	timeout 60 "$PY" -c 'import importlib.metadata as m; print("nvidia-ml-py (pynvml)", m.version("nvidia-ml-py"))' \
		2>/dev/null || echo "nvidia-ml-py (pynvml): not installed"
} | tee -a "$LOG"
NGPU=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU')

VG_ONLY=${VG_ONLY:-}
if [ -z "$VG_ONLY" ]; then # (not indented: VG_ONLY=physical skips the build and the checks up to region_pidns)
# ---- build (in parallel; -arch=native needs the GPU, sm_90 is the H100/H200 fallback)
compile() { # compile NAME SRC NVCC-ARGS...
	local name=$1 src=$2
	shift 2
	timeout 300 "$NVCC" -O2 -arch=native "$HERE/$src" -o "$BUILD/$name" "$@" >"$BUILD/$name.cc" 2>&1 ||
		timeout 300 "$NVCC" -O2 -arch=sm_90 "$HERE/$src" -o "$BUILD/$name" "$@" >>"$BUILD/$name.cc" 2>&1
}
CUDA_LIB=$(dirname "$(dirname "$(readlink -f "$NVCC")")")/lib64
compile driver_api driver_api.cu -lcuda &
compile multi_gpu multi_gpu.cu -lcuda &
compile runtime_api runtime_api.cu &
compile runtime_api_shared runtime_api.cu -cudart shared -Xlinker -rpath="$CUDA_LIB" &
# the example with two bugs for the reports: -g and no -rdynamic (its static functions are named from .symtab)
compile leaky ../../examples/leaky.cu -g &
wait
built() { # built NAME: true if the binary exists, else a FAIL line for CHECK ($2)
	[ -x "$BUILD/$1" ] && return 0
	result FAIL "$2" "compile of $1 failed: $(grep -m1 -i error "$BUILD/$1.cc")"
	cat "$BUILD/$1.cc" >>"$LOG"
	return 1
}
fi # VG_ONLY
unset VRAMGUARD_COUNT

# ---- 0. the library is there and actually mapped into a preloaded process
if [ ! -f "$VG_LIB" ]; then
	result FAIL library_loads "no file $VG_LIB (build it, or set VG_LIB)"
else
	run library_loads env LD_PRELOAD="$VG_LIB" "$PY" -c \
		"import sys; sys.exit(0 if 'libvramguard' in open('/proc/self/maps').read() else 1)"
	if [ "$RC" -eq 0 ]; then
		result PASS library_loads "$(stat -c %s "$VG_LIB") bytes, mapped into a preloaded python3"
	else result FAIL library_loads "$(why_rc), not mapped: $(head -c 300 "$BUILD/e")"; fi
fi

if [ -z "$VG_ONLY" ]; then # (not indented, up to region_checks)
# The checks up to region_pidns count bytes exactly (so many GiB fit, so much is free at the start): they hold the
# allocations' accounting (VRAMGUARD_COUNT=allocations) on every route. Device counting, the default, is proved by
# the phys_* checks at the end, which read what nvidia-smi shows.
export VRAMGUARD_COUNT=allocations
# ---- 1-3. CUDA C
built driver_api driver_api && EXTRA=need_denial program driver_api vg "$BUILD/driver_api"
built runtime_api runtime_api && EXTRA=need_denial program runtime_api vg "$BUILD/runtime_api"
# the same with the shared libcudart.so.13 (what PyTorch and CuPy load) instead of nvcc's default static copy
built runtime_api_shared runtime_api_shared && EXTRA=need_denial program runtime_api_shared vg "$BUILD/runtime_api_shared"

# Invalid configuration: exactly one error line naming the variable and the value, and CUDA refused.
invalid_message() {
	local n all
	n=$(grep -c "^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB'" "$BUILD/e")
	all=$(cat "$BUILD/o" "$BUILD/e" | grep -c 'vramguard: error')
	if [ "$n" -ne 1 ] || [ "$all" -ne 1 ]; then
		echo "$n lines \"vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB'...\" on stderr, $all \"vramguard: error\" lines in all (want 1 and 1)"
	fi
}
invalid_config() { # invalid_config NAME BINARY
	built "$2" "$1" || return
	LIMITS=4XB EXTRA=invalid_message program "$1" vg "$BUILD/$2" --expect-invalid
}
invalid_config invalid_config_runtime runtime_api
invalid_config invalid_config_driver driver_api

# ---- 4-6. frameworks
program torch_default vg "$PY" -u "$HERE/torch_quota.py"
program torch_expandable vg env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$PY" -u "$HERE/torch_quota.py"
program torch_cudamallocasync vg env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$PY" -u "$HERE/torch_quota.py"
program jax_quota vg "$PY" -u "$HERE/jax_quota.py"
program cupy_quota vg "$PY" -u "$HERE/cupy_quota.py"

# ---- 7. processes that never touch CUDA: same output, same exit status, no extra threads, even when the
# configuration is invalid (the error belongs to the first CUDA call, not to every `ls` in the container).
nocuda() {
	local fails="" what base lim got i=0
	for what in "sh -c 'echo hi; exit 3'" "$PY -c pass" "ls /"; do
		i=$((i + 1))
		run "no_cuda[$what, no preload]" sh -c "$what"
		base="$RC $(md5sum <"$BUILD/o") $(md5sum <"$BUILD/e")"
		[ $i -eq 1 ] && local sh_rc=$RC
		for lim in $QUOTA 4XB; do
			run "no_cuda[$what, preload, $lim]" env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS="$lim" sh -c "$what"
			got="$RC $(md5sum <"$BUILD/o") $(md5sum <"$BUILD/e")"
			[ "$got" = "$base" ] || fails="$fails [$what with $lim: exit $RC, stderr '$(head -c 120 "$BUILD/e" | tr '\n' ' ')']"
		done
	done
	if [ -z "$fails" ]; then
		result PASS no_cuda_processes "sh (exit $sh_rc), python3 -c pass, ls /: stdout, stderr and exit status identical without preload, with quota $QUOTA and with invalid 4XB"
	else result FAIL no_cuda_processes "differs from the run without preload:$fails"; fi

	local code="print(open('/proc/self/status').read())" t0 t1 t2
	run no_cuda_threads_base "$PY" -c "$code"
	t0=$(awk '/^Threads:/ {print $2}' "$BUILD/o")
	run no_cuda_threads_preload env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=$QUOTA "$PY" -c "$code"
	t1=$(awk '/^Threads:/ {print $2}' "$BUILD/o")
	run no_cuda_threads_invalid env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=4XB "$PY" -c "$code"
	t2=$(awk '/^Threads:/ {print $2}' "$BUILD/o")
	if [ -n "$t0" ] && [ "$t0" = "$t1" ] && [ "$t0" = "$t2" ]; then
		result PASS no_cuda_threads "python3 Threads: $t0 without preload, $t1 with, $t2 with invalid config"
	else result FAIL no_cuda_threads "python3 Threads: '${t0}' without preload, '${t1}' with, '${t2}' with invalid config"; fi
}
nocuda

# ---- 8. two GPUs, per-device quotas
if [ "${NGPU:-0}" -ge 2 ]; then
	built multi_gpu two_gpu && LIMITS=0:2G,1:1G program two_gpu vg "$BUILD/multi_gpu"
else
	result SKIP two_gpu "one GPU on this machine (nvidia-smi -L lists ${NGPU:-0})"
fi

# ---- 9. device memory outside the quota (CUDA context, modules, cuBLAS), for the docs
program ctx_overhead vg "$PY" -u "$HERE/ctx_overhead.py"

# ---- 10-14. reports: live allocations by call site, busy streams, exit and signal dumps
# verdict: after `run NAME "$PY" "$CHECK" ...`, VERDICT is empty when it passed, else what was BAD;
# FIG is its figures: line.
ms_figure() { sed -n "s/^figures:.*$1=\([0-9.]*\).*/\1/p" "$BUILD/o" | tail -1; } # ms_figure KEY (from leaky)
report_checks() {
	if ! built leaky leak_report; then
		result FAIL busy_stream "examples/leaky.cu did not compile"
		return
	fi
	local f why="" text_why="" warn_n fig_json rc

	# leak_report + busy_stream (warn): one run with the report as JSON in a file
	run leak_report.json vg env VRAMGUARD_REPORT="$BUILD/leak-%p-%r.json" VRAMGUARD_REPORT_FORMAT=json \
		"$BUILD/leaky"
	rc=$RC
	cp "$BUILD/o" "$BUILD/leak.o"
	cp "$BUILD/e" "$BUILD/leak.e"
	local warn_ms
	warn_ms=$(ms_figure destroy_ms)
	warn_n=$(grep -c '^vramguard: warning: .*destroyed with work still queued' "$BUILD/leak.e")
	f=$(first_file "$BUILD"/leak-*-exit.json)
	if [ "$rc" -ne 0 ]; then
		why="leaky under the preload: $(why_rc)$(stderr_tail)"
	elif [ -z "$f" ]; then
		why="no exit report $BUILD/leak-<pid>-exit.json$(stderr_tail)"
	fi
	if [ -z "$why" ]; then
		run leak_report.check "$PY" "$CHECK" leak "$f"
		verdict
		fig_json=$FIG
		[ -n "$VERDICT" ] && why="JSON: $VERDICT; $FIG"
	fi
	# the same with the default text report on stderr
	run leak_report.text vg "$BUILD/leaky"
	log_quote "leak_report: the text report's first lines" "$BUILD/e"
	local outst
	outst=$(grep -m1 -E '^  (held at exit|outstanding):' "$BUILD/e" | sed 's/^ *//; s/ (largest first)://')
	if [ "$RC" -ne 0 ]; then
		text_why="text run: $(why_rc)"
	elif [ "$(grep -c '^vramguard: report (exit)' "$BUILD/e")" -ne 1 ]; then
		text_why="text run: $(grep -c '^vramguard: report (exit)' "$BUILD/e") 'vramguard: report (exit)' lines on stderr, want 1"
	else
		sed -n '/^vramguard: report (exit)/,$p' "$BUILD/e" | grep -q 'leak_buffers' || text_why="text report does not name leak_buffers"
		sed -n '/^vramguard: report (exit)/,$p' "$BUILD/e" | grep -q '192\.00 MiB' || text_why="${text_why:+$text_why; }text report does not show 192.00 MiB"
	fi
	[ -n "$text_why" ] && text_why="$text_why$(stderr_tail)"
	if [ -z "$why" ] && [ -z "$text_why" ]; then
		result PASS leak_report "JSON: $fig_json; text: '$(grep -m1 '^vramguard: report (exit)' "$BUILD/e" | cut -c1-60)...', $outst, names leak_buffers"
	else
		result FAIL leak_report "${why}${why:+${text_why:+; }}${text_why}"
	fi

	# source_lines: `vramguard report --lines` on that JSON names the line of leak_buffers' cudaMalloc in
	# examples/leaky.cu (compiled with -g; the line found in the source, not written here)
	local vgc=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} want sl
	want=$(awk '/void leak_buffers\(/ { in_fn = 1 } in_fn && /cudaMalloc\(/ { print NR; exit }' "$HERE/../../examples/leaky.cu")
	if [ -z "$f" ]; then
		result FAIL source_lines "no exit report from the JSON run (see leak_report)"
	elif [ ! -x "$vgc" ]; then
		result FAIL source_lines "no vramguard command at $vgc (build it, or set VG_CMD)"
	else
		run source_lines "$vgc" report --lines "$f"
		sl=$(grep -m1 -E "^ +leak_buffers\+0x[0-9a-f]+  [^ ]*leaky\.cu:$want " "$BUILD/o" | sed 's/^ *//' | cut -c1-160)
		if grep -q "^vramguard: note: --lines needs elfutils' libdw" "$BUILD/e"; then
			result SKIP source_lines "no libdw.so.1 on this machine (apt-get install libdw1)"
		elif [ "$RC" -eq 0 ] && [ -n "$sl" ]; then
			result PASS source_lines "leak_buffers at leaky.cu:$want: '$sl'"
		else
			result FAIL source_lines "want leak_buffers at examples/leaky.cu:$want; got: $(grep -m3 -E 'leak_buffers|leaky\.cu' "$BUILD/o" | sed 's/^ *//' | tr '\n' '|' | cut -c1-300)$(stderr_tail)"
		fi
	fi

	# busy_stream: the JSON run above (VRAMGUARD_STREAM_CHECK=warn), then sync
	why=""
	if [ -z "$f" ]; then
		why="no exit report from the JSON run (see leak_report)"
	else
		run busy_stream.check "$PY" "$CHECK" stream "$f"
		verdict
		fig_json=$FIG
		[ -n "$VERDICT" ] && why="$VERDICT; $FIG"
	fi
	[ "$warn_n" -eq 1 ] || why="${why:+$why; }$warn_n 'vramguard: warning: ... destroyed with work still queued' lines on stderr, want 1"
	awk -v m="${warn_ms:-x}" 'BEGIN { exit !(m != "x" && m + 0 < 500) }' ||
		why="${why:+$why; }cudaStreamDestroy took '${warn_ms}' ms with VRAMGUARD_STREAM_CHECK=warn, want < 500 (no wait)"
	local warn_line
	warn_line=$(grep -m1 'destroyed with work still queued' "$BUILD/leak.e" | cut -c1-200)
	run busy_stream.sync vg env VRAMGUARD_STREAM_CHECK=sync VRAMGUARD_REPORT="$BUILD/sync-%p-%r.json" \
		VRAMGUARD_REPORT_FORMAT=json "$BUILD/leaky"
	local sync_ms sync_n sync_why="" sf
	sync_ms=$(ms_figure destroy_ms)
	sync_n=$(grep -c '^vramguard: warning: waited for stream' "$BUILD/e")
	local sync_line
	sync_line=$(grep -m1 'waited for stream' "$BUILD/e" | cut -c1-160)
	sf=$(first_file "$BUILD"/sync-*-exit.json)
	if [ "$RC" -ne 0 ]; then
		sync_why="sync run: $(why_rc)$(stderr_tail)"
	else
		[ "$sync_n" -eq 1 ] || sync_why="$sync_n 'vramguard: warning: waited for stream' lines with VRAMGUARD_STREAM_CHECK=sync, want 1"
		awk -v m="${sync_ms:-x}" 'BEGIN { exit !(m != "x" && m + 0 >= 1000) }' ||
			sync_why="${sync_why:+$sync_why; }cudaStreamDestroy took '${sync_ms}' ms with VRAMGUARD_STREAM_CHECK=sync, want >= 1000 (the kernel spins 1.5 s)"
		if [ -z "$sf" ]; then
			sync_why="${sync_why:+$sync_why; }no exit report from the sync run"
		else
			run busy_stream.sync_check "$PY" "$CHECK" stream "$sf" --sync
			verdict
			[ -n "$VERDICT" ] && sync_why="${sync_why:+$sync_why; }sync report: $VERDICT"
		fi
	fi
	if [ -z "$why" ] && [ -z "$sync_why" ]; then
		result PASS busy_stream "$fig_json; warn: 1 warning, destroy returned in ${warn_ms} ms ('${warn_line}'); sync: destroy waited ${sync_ms} ms, 1 warning ('${sync_line}')"
	else
		result FAIL busy_stream "${why}${why:+${sync_why:+; }}${sync_why}; destroy ${warn_ms} ms (warn), ${sync_ms} ms (sync)"
	fi
}
report_checks

# sigusr1_torch: three SIGUSR1 dumps of a running training loop, then its exit report; the result must be the one it
# computes without the preload.
sigusr1_torch() {
	local name=sigusr1_torch pid="" i sent=0 why="" f files
	run "$name.reference" "$PY" -u "$HERE/torch_train.py" --steps 300
	cp "$BUILD/o" "$BUILD/train-ref.o"
	if [ "$RC" -ne 0 ]; then
		result FAIL $name "the reference run without preload failed: $(why_rc)$(stderr_tail)"
		return
	fi
	local cmd=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS="$QUOTA" VRAMGUARD_REPORT="$BUILD/sig-%p-%n.json"
		VRAMGUARD_REPORT_FORMAT=json "$PY" -u "$HERE/torch_train.py" --steps 300 --pace 0.04)
	printf '\n===== %s: %s\n' "$name" "${cmd[*]}" >>"$LOG"
	timeout -k 5 "$T" "${cmd[@]}" >"$BUILD/train.o" 2>"$BUILD/train.e" </dev/null &
	local bg=$!
	for ((i = 0; i < T * 5; i++)); do
		pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/train.o")
		[ -n "$pid" ] && break
		kill -0 $bg 2>/dev/null || break
		sleep 0.2
	done
	if [ -n "$pid" ]; then
		for _ in 1 2 3; do
			kill -USR1 "$pid" 2>>"$LOG" && sent=$((sent + 1))
			sleep 1
		done
	fi
	wait $bg
	RC=$?
	{ cat "$BUILD/train.o"; echo "--- stderr:"; cat "$BUILD/train.e"; echo "--- exit status $RC, $sent signals sent to pid ${pid:-?}"; } >>"$LOG"
	files=()
	for f in "$BUILD"/sig-*.json; do [ -e "$f" ] && files+=("$f"); done
	if [ -z "$pid" ]; then
		why="never printed 'ready pid=N' ($(why_rc))"
	elif [ "$RC" -eq 138 ]; then
		why="the loop was killed by SIGUSR1 (exit 138) after $sent signal(s): no vramguard handler installed"
	elif [ "$RC" -ne 0 ]; then
		why="the loop under the preload: $(why_rc)"
	elif [ "$sent" -ne 3 ]; then
		why="$sent of 3 signals could be sent (the loop ended early?)"
	fi
	cp "$BUILD/train.e" "$BUILD/e"
	[ -n "$why" ] && why="$why$(stderr_tail)"
	run "$name.check" "$PY" "$CHECK" signal --ref "$BUILD/train-ref.o" --run "$BUILD/train.o" "${files[@]}"
	verdict
	[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
	if [ -z "$why" ]; then
		result PASS $name "3 x kill -USR1 $pid one second apart: $FIG; $(grep -h '^figures:' "$BUILD/train.o" | sed 's/^figures: //')"
	else
		result FAIL $name "$why; $FIG"
	fi
}
sigusr1_torch

# html_torch: the exit report of sigusr1_torch's training loop as an HTML page (vramguard report --html): static checks,
# then headless Chromium where installed; the page and its screenshot are kept in $OUT (docs/report-html.md).
html_torch() {
	local name=html_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} f why="" VC="$HERE/../lib/view_check.py"
	f=$(ls -t "$BUILD"/sig-*.json 2>/dev/null | head -n 1)
	if [ -z "$f" ]; then result SKIP $name "sigusr1_torch wrote no JSON report"; return; fi
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg (build it, or set VG_CMD)"; return; fi
	run "$name.render" "$vg" report --html "$f" -o "$OUT/torch-train.html"
	[ "$RC" -eq 0 ] || why="vramguard report --html: $(why_rc)$(stderr_tail)"
	run "$name.folded" "$vg" report --format folded "$f" -o "$OUT/torch-train.folded"
	[ "$RC" -eq 0 ] || why="${why:+$why; }--format folded: $(why_rc)$(stderr_tail)"
	run "$name.static" "$PY" "$VC" html "$OUT/torch-train.html" "Live memory by call stack" "usage over time"
	grep -q '^not ok' "$BUILD/o" && why="${why:+$why; }$(grep -m2 -A1 '^not ok' "$BUILD/o" | tr '\n' ' ')"
	if command -v chromium >/dev/null 2>&1; then
		run "$name.browser" "$PY" "$VC" browser "$OUT/torch-train.html" "$BUILD/chromium" 'class="timeline"' \
			'<svg class="icicle"'
		grep -q '^not ok' "$BUILD/o" && why="${why:+$why; }$(grep -m2 -A1 '^not ok' "$BUILD/o" | tr '\n' ' ')"
		cp "$BUILD/chromium/screenshot.png" "$OUT/torch-train.png" 2>/dev/null
	fi
	if [ -z "$why" ]; then
		result PASS $name "$(stat -c %s "$OUT/torch-train.html") bytes of HTML from $(basename "$f") ($(stat -c %s "$f") bytes of JSON), $(wc -l <"$OUT/torch-train.folded") folded stacks; page, screenshot in $OUT/torch-train.{html,png}"
	else
		result FAIL $name "$why"
	fi
}
html_torch

# torch_exit_report: the exit report of a PyTorch job that holds memory until exit, written while the driver is alive
torch_exit_report() {
	local name=torch_exit_report why="" f n_rep deinit
	run "$name.text" vg "$PY" -u "$HERE/torch_exit.py"
	log_quote "$name: the text report's first lines" "$BUILD/e"
	n_rep=$(grep -c '^vramguard: report (exit)' "$BUILD/e")
	deinit=$(grep -ci 'CUDA_ERROR_DEINITIALIZED\|deinitialized' "$BUILD/e")
	if [ "$RC" -ne 0 ]; then
		why="text run: $(why_rc)$(stderr_tail)"
	else
		[ "$n_rep" -eq 1 ] || why="text run: $n_rep 'vramguard: report (exit)' lines on stderr, want 1"
		[ "$deinit" -eq 0 ] || why="${why:+$why; }text run: stderr mentions deinitialized: $(grep -im1 'deinitialized' "$BUILD/e" | cut -c1-160)"
	fi
	run "$name.json" vg env VRAMGUARD_REPORT="$BUILD/texit-%p-%r.json" VRAMGUARD_REPORT_FORMAT=json \
		"$PY" -u "$HERE/torch_exit.py"
	deinit=$(grep -ci 'CUDA_ERROR_DEINITIALIZED\|deinitialized' "$BUILD/e")
	local rc=$RC
	f=$(first_file "$BUILD"/texit-*-exit.json)
	if [ "$rc" -ne 0 ]; then
		why="${why:+$why; }JSON run: $(why_rc)$(stderr_tail)"
	else
		[ "$deinit" -eq 0 ] || why="${why:+$why; }JSON run: stderr mentions deinitialized: $(grep -im1 'deinitialized' "$BUILD/e" | cut -c1-160)"
		[ -n "$f" ] || why="${why:+$why; }JSON run: no $BUILD/texit-<pid>-exit.json$(stderr_tail)"
	fi
	FIG=""
	if [ -n "$f" ]; then
		run "$name.check" "$PY" "$CHECK" torch_exit "$f"
		verdict
		[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
	fi
	if [ -z "$why" ]; then
		result PASS $name "text: 1 'vramguard: report (exit)'; JSON: $FIG; no 'deinitialized' on stderr"
	else
		result FAIL $name "$why${FIG:+; $FIG}"
	fi
}
torch_exit_report

# report_cost: what writing the exit report adds to a PyTorch job's end, for the docs (PASS when every run ran).
# Wall time of the whole process, and from the job's last Python line ("done T") to the process's end.
report_cost() {
	local name=report_cost mode i t0 t1 d tot tear fails="" size=0 sites=""
	local off_tot="" off_tear="" json_tot="" json_tear=""
	for i in 1 2; do
		for mode in off json; do
			local cmd=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS="$QUOTA" VRAMGUARD_REPORT_FORMAT=json)
			if [ $mode = off ]; then cmd+=(VRAMGUARD_REPORT=off); else cmd+=(VRAMGUARD_REPORT="$BUILD/cost-%p-%r.json"); fi
			cmd+=("$PY" -u "$HERE/torch_exit.py")
			printf '\n===== %s[%s %d]: %s\n' "$name" $mode $i "${cmd[*]}" >>"$LOG"
			t0=$(date +%s.%N)
			timeout -k 5 "$T" "${cmd[@]}" >"$BUILD/o" 2>"$BUILD/e" </dev/null
			RC=$?
			t1=$(date +%s.%N)
			{ cat "$BUILD/o"; echo "--- stderr:"; cat "$BUILD/e"; echo "--- exit status $RC"; } >>"$LOG"
			d=$(sed -n 's/^done \([0-9.]*\)$/\1/p' "$BUILD/o")
			if [ "$RC" -ne 0 ] || [ -z "$d" ]; then
				fails="$fails [$mode run $i: $(why_rc)]"
				continue
			fi
			tot=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
			tear=$(awk -v a="$d" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
			if [ $mode = off ]; then
				off_tot="$off_tot${off_tot:+/}$tot" off_tear="$off_tear${off_tear:+/}$tear"
			else
				json_tot="$json_tot${json_tot:+/}$tot" json_tear="$json_tear${json_tear:+/}$tear"
			fi
		done
	done
	local jf
	jf=$(first_file "$BUILD"/cost-*-exit.json)
	[ -n "$jf" ] && size=$(stat -c %s "$jf") &&
		sites=$(timeout 30 "$PY" "$CHECK" sites "$jf" 2>/dev/null)
	[ -z "$jf" ] && [ -n "$json_tot" ] && fails="$fails [no cost-*-exit.json written]"
	if [ -z "$fails" ]; then
		result PASS $name "torch_exit.py wall ms, 2 runs each: VRAMGUARD_REPORT=off $off_tot, JSON to a file $json_tot; from its last Python line to the process's end: off $off_tear ms, JSON $json_tear ms; report $size bytes, ${sites:-?} sites"
	else
		result FAIL $name "runs failed:$fails; off $off_tot ms, JSON $json_tot ms"
	fi
}
report_cost

# ---- the vramguard command: run, dump, check on the real driver
VG_CLI=${VG_CLI:-$(dirname "$VG_LIB")/vramguard}
cli_checks() {
	if [ ! -x "$VG_CLI" ]; then
		result FAIL cli_run_torch "no vramguard command at $VG_CLI"
		return
	fi
	# cli_run_torch: the limit given to `vramguard run` holds in PyTorch
	program cli_run_torch env -u LD_PRELOAD -u NVIDIA_GPU_MEMORY_LIMITS "$VG_CLI" run --limit 2G -- \
		"$PY" -u "$HERE/cli_torch.py" 2048

	# cli_dump_torch: `vramguard dump PID` on a running training loop prints the path of a complete report
	local name=cli_dump_torch pid="" i out="" why=""
	local cmd=(env -u LD_PRELOAD "$VG_CLI" run --limit 4G --report "$BUILD/dump-%p-%n.json" --format json --
		"$PY" -u "$HERE/torch_train.py" --steps 300 --pace 0.04)
	printf '\n===== %s: %s\n' "$name" "${cmd[*]}" >>"$LOG"
	timeout -k 5 "$T" "${cmd[@]}" >"$BUILD/dtrain.o" 2>"$BUILD/dtrain.e" </dev/null &
	local bg=$!
	for ((i = 0; i < T * 5; i++)); do
		pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/dtrain.o")
		[ -n "$pid" ] && break
		kill -0 $bg 2>/dev/null || break
		sleep 0.2
	done
	local t0 t1
	if [ -n "$pid" ]; then
		t0=$(date +%s.%N)
		out=$("$VG_CLI" dump "$pid" --wait 20 2>>"$LOG")
		t1=$(date +%s.%N)
	fi
	wait $bg
	local rc=$?
	{ cat "$BUILD/dtrain.o"; echo "--- stderr:"; cat "$BUILD/dtrain.e"; echo "--- exit $rc; dump printed: $out"; } >>"$LOG"
	local used=""
	if [ -z "$pid" ]; then
		why="the loop never printed 'ready pid=N'"
	elif [ -z "$out" ] || [ ! -f "$out" ]; then
		why="vramguard dump printed no report path ('$out')"
	elif ! used=$(timeout 30 "$PY" "$CHECK" dumped "$out" 2>>"$LOG"); then
		why="the report at $out is not a complete JSON signal report"
	elif [ "$rc" -ne 0 ]; then
		why="the training loop failed after the dump (exit $rc)"
	fi
	if [ -z "$why" ]; then
		result PASS $name "dump $pid -> $out in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms; report used_bytes $used; loop exit 0, $(grep -h '^result:' "$BUILD/dtrain.o" | head -1)"
	else
		result FAIL $name "$why$(tail -c 300 "$BUILD/dtrain.e" | tr '\n' ' ')"
	fi

	# cli_check: the real device, its memory and the quota, without a context
	run cli_check env -u LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS=0:4G "$VG_CLI" check
	log_quote "cli_check: output" "$BUILD/o"
	local gpu0
	gpu0=$(grep -A1 '^  GPU 0 ' "$BUILD/o" | tr -s ' ' | paste -sd' ')
	if [ "$RC" -eq 0 ] && grep -q '^  GPU 0  NVIDIA' "$BUILD/o" && grep -q 'quota 4.00 GiB (NVIDIA_GPU_MEMORY_LIMITS)' "$BUILD/o" &&
		grep -q '^libcuda.so.1: ' "$BUILD/o" && grep -q '^NVML: *found' "$BUILD/o"; then
		result PASS cli_check "$(grep -h '^libcuda.so.1:\|^NVML:' "$BUILD/o" | paste -sd';' | tr -s ' '); $gpu0"
	else
		result FAIL cli_check "exit $RC: $(head -c 600 "$BUILD/o" | tr '\n' ' ')$(stderr_tail)"
	fi
}
cli_checks

# shared_region: two PyTorch processes in one 8 GiB region cannot together take more than 8 GiB; `vramguard top`
# sees both; when the first is SIGKILLed its share comes back to the second.
# live_limit: a job stuck at its 2 GiB quota continues to 4 GiB after `vramguard limit set 4G --pid`, no restart.
wait_line() { # wait_line FILE REGEX: the first match, after waiting up to T s
	local i
	for ((i = 0; i < T * 10; i++)); do
		grep -m1 -E "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
top_members() { # top_members TOP_JSON REGION: "PROCESSES MIB", the members of REGION and what they hold
	echo "$1" | timeout 20 "$PY" "$CHECK" top-members - "$2" 2>>"$LOG"
}
shared_checks() {
	if [ "${VG_SKIP_TORCH:-}" = 1 ] || ! "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>>"$LOG"; then
		result SKIP shared_region "torch with CUDA not importable"
		result SKIP region_lifecycle "torch with CUDA not importable"
		result SKIP live_limit "torch with CUDA not importable"
		return
	fi
	local R=vgtest$$ D why="" a b
	D=$(mktemp -d /dev/shm/vramguard-gpu.XXXXXX 2>/dev/null || echo "$BUILD/shm")     # regions belong in memory
	mkdir -p "$D"
	local env_r=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=8G VRAMGUARD_SHM_DIR="$D" VRAMGUARD_SHARED="$R"
		VRAMGUARD_LOG=info VRAMGUARD_REPORT=off)
	printf '\n===== shared_region\n' >>"$LOG"
	timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" hold 5 "$BUILD/a.ready" "$BUILD/a.go" \
		>"$BUILD/a.o" 2>"$BUILD/a.e" </dev/null &
	a=$!
	local apid=""
	wait_line "$BUILD/a.o" '^took' >/dev/null && apid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/a.o")
	timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" fill "$BUILD/b.ready" "$BUILD/b.go" \
		"$BUILD/b.go2" fill >"$BUILD/b.o" 2>"$BUILD/b.e" </dev/null &
	b=$!
	local first top="" smi="" second
	first=$(wait_line "$BUILD/b.o" '^took')
	if [ -n "$first" ]; then
		top=$(VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" top --once --json --shared $R 2>>"$LOG")
		echo "$top" >"$BUILD/top.json"
		VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" top --once --shared $R >>"$LOG" 2>&1
		smi=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | paste -sd';')
	fi
	[ -n "$apid" ] && kill -9 "$apid" 2>/dev/null
	wait $a 2>/dev/null
	touch "$BUILD/b.go"
	second=$(wait_line "$BUILD/b.o" '^then took')
	# a live raise of the region's budget: B goes on past 8 GiB without a restart (NVIDIA_GPU_MEMORY_LIMITS alone made
	# the budget, so B's own quota follows the region's)
	local raise_out=""
	[ -n "$second" ] && raise_out=$(VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" limit set 10G --shared $R 2>&1)
	touch "$BUILD/b.go2"
	wait_line "$BUILD/b.o" '^after the change' >/dev/null
	wait $b
	local brc=$?
	{ echo "--- limit set --shared: $raise_out"; echo "--- A:"; cat "$BUILD/a.o" "$BUILD/a.e"; echo "--- B (exit $brc):"; cat "$BUILD/b.o" "$BUILD/b.e"; echo "--- top: $top"; echo "--- nvidia-smi: $smi"; } >>"$LOG"
	local n1 n2 topsum
	n1=$(sed -n 's/^took \([0-9]*\) GiB until.*/\1/p' "$BUILD/b.o")
	n2=$(sed -n 's/^then took \([0-9]*\) GiB more.*/\1/p' "$BUILD/b.o")
	local n3 budget_line
	n3=$(sed -n 's/^after the change took \([0-9]*\) GiB more.*/\1/p' "$BUILD/b.o")
	budget_line=$(grep -m1 "budget changed to '10G'.*quota follows it" "$BUILD/b.e" | cut -c1-260)
	topsum=$(top_members "$top" $R)
	if [ -z "$apid" ]; then
		why="process A never took its 5 GiB"
	elif [ "$n1" != 3 ]; then
		why="B took '${n1}' GiB next to A's 5 GiB in an 8 GiB region, want 3"
	elif [ "${topsum%% *}" != 2 ] || [ "${topsum##* }" -gt 8192 ]; then
		why="vramguard top --json saw '${topsum}' (processes, MiB), want 2 processes and <= 8192 MiB"
	elif [ "$n2" != 5 ]; then
		why="after A was SIGKILLed B took '${n2}' GiB more, want 5 (A's share reclaimed)"
	elif [ "$n3" != 2 ]; then
		why="after 'limit set 10G --shared' B took '${n3}' GiB more, want 2 ($raise_out)"
	elif [ -z "$budget_line" ]; then
		why="B did not log the region's budget change (and that its quota follows it)"
	elif [ "$brc" -ne 0 ]; then
		why="B exited $brc"
	fi
	if [ -z "$why" ]; then
		result PASS shared_region "A held 5 GiB, B took $n1 GiB then OOM ($(sed -n 's/^took [0-9]* GiB until OutOfMemoryError; //p' "$BUILD/b.o")); top: ${topsum%% *} processes, ${topsum##* } MiB in the region; nvidia-smi: $smi; after kill -9 A, B took $n2 GiB more ($(sed -n 's/^then took [0-9]* GiB more until OutOfMemoryError; //p' "$BUILD/b.o")); '$raise_out', then B took $n3 GiB more ($(sed -n 's/^after the change took [0-9]* GiB more; //p' "$BUILD/b.o")); logged: '$budget_line'"
	else
		result FAIL shared_region "$why; $(tail -c 300 "$BUILD/b.e" | tr '\n' ' ')"
	fi

	# region_lifecycle: B was the region's last member, so its exit removed the file; the next job makes the region
	# again with its own budget (3G), not the 10G the old one had in force (before, it ran silently under 10G).
	why=""
	local left_after_b=no left_after_c=no cn=""
	[ -e "$D/vramguard.$R" ] && left_after_b=yes
	printf '\n===== region_lifecycle\n' >>"$LOG"
	timeout -k 5 "$T" env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=12G VRAMGUARD_SHARED_LIMITS=3G \
		VRAMGUARD_SHM_DIR="$D" VRAMGUARD_SHARED=$R VRAMGUARD_LOG=info VRAMGUARD_REPORT=off \
		"$PY" -u "$HERE/shared_torch.py" once >"$BUILD/d.o" 2>"$BUILD/d.e" </dev/null
	local drc=$?
	{ cat "$BUILD/d.o"; echo "--- stderr:"; cat "$BUILD/d.e"; echo "--- exit $drc"; } >>"$LOG"
	[ -e "$D/vramguard.$R" ] && left_after_c=yes
	cn=$(sed -n 's/^took \([0-9]*\) GiB until.*/\1/p' "$BUILD/d.o")
	local created_line
	created_line=$(grep -m1 "created shared region '$R' .*budget '3G'" "$BUILD/d.e" | cut -c1-200)
	if [ "$left_after_b" = yes ]; then
		why="the region's file was left after its last member (B) exited"
	elif [ "$cn" != 3 ]; then
		why="the next job took '${cn}' GiB with VRAMGUARD_SHARED_LIMITS=3G (own quota 12G), want 3"
	elif [ -z "$created_line" ]; then
		why="the next job did not say it created the region with its budget"
	elif [ "$left_after_c" = yes ]; then
		why="the region's file was left after the next job exited"
	elif [ "$drc" -ne 0 ]; then
		why="exit $drc"
	fi
	if [ -z "$why" ]; then
		result PASS region_lifecycle "after B (the last member) exited the region's file was gone; the next job took $cn GiB under its own VRAMGUARD_SHARED_LIMITS=3G (not the old 10G in force) ($(sed -n 's/^took [0-9]* GiB until OutOfMemoryError; //p' "$BUILD/d.o")); logged: '$created_line'; gone again after it exited"
	else
		result FAIL region_lifecycle "$why; $(tail -c 300 "$BUILD/d.e" | tr '\n' ' ')"
	fi

	# live_limit
	why=""
	local env_c=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=2G VRAMGUARD_SHM_DIR="$D" VRAMGUARD_REPORT=off)
	printf '\n===== live_limit\n' >>"$LOG"
	timeout -k 5 "$T" "${env_c[@]}" "$PY" -u "$HERE/shared_torch.py" fill "$BUILD/c.ready" "$BUILD/c.go" \
		"$BUILD/c.go2" lower >"$BUILD/c.o" 2>"$BUILD/c.e" </dev/null &
	local c=$! cpid set_out=""
	first=$(wait_line "$BUILD/c.o" '^took')
	cpid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/c.o")
	if [ -n "$first" ] && [ -n "$cpid" ]; then
		set_out=$(VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" limit set 4G --pid "$cpid" 2>&1)
		echo "limit set: $set_out" >>"$LOG"
	fi
	touch "$BUILD/c.go"
	# then a live lower below what it holds: the next tensor is refused, nothing is freed
	local lower_out=""
	wait_line "$BUILD/c.o" '^then took' >/dev/null &&
		lower_out=$(VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" limit set 1G --pid "$cpid" 2>&1)
	echo "limit set (lower): $lower_out" >>"$LOG"
	touch "$BUILD/c.go2"
	wait $c
	local crc=$?
	{ cat "$BUILD/c.o"; echo "--- stderr:"; cat "$BUILD/c.e"; echo "--- exit $crc"; } >>"$LOG"
	n1=$(sed -n 's/^took \([0-9]*\) GiB until.*/\1/p' "$BUILD/c.o")
	n2=$(sed -n 's/^then took \([0-9]*\) GiB more.*/\1/p' "$BUILD/c.o")
	local changed
	changed=$(grep -m1 'quota changed' "$BUILD/c.e" | cut -c1-160)
	if [ "$n1" != 2 ]; then
		why="the job took '${n1}' GiB under a 2 GiB quota, want 2"
	elif [ "$n2" != 2 ]; then
		why="after 'limit set 4G' it took '${n2}' GiB more, want 2 ($set_out)"
	elif ! grep -q 'then took.*total=4096 MiB' "$BUILD/c.o"; then
		why="mem_get_info does not report total=4096 MiB after the change"
	elif [ -z "$changed" ]; then
		why="the process did not log the change"
	elif ! grep -q '^after the lower took 0 GiB; still holding 4 GiB, values intact' "$BUILD/c.o"; then
		why="after 'limit set 1G' below its 4 GiB: '$(grep -m1 '^after the lower' "$BUILD/c.o" | cut -c1-120)', want 0 GiB taken, 4 GiB held intact ($lower_out)"
	elif ! grep -q '^after freeing everything took 1 GiB;.*total=1024 MiB' "$BUILD/c.o"; then
		why="after freeing it took '$(grep -m1 '^after freeing' "$BUILD/c.o" | cut -c1-120)', want 1 GiB under the lowered quota, total=1024 MiB"
	elif [ "$crc" -ne 0 ]; then
		why="exit $crc"
	fi
	if [ -z "$why" ]; then
		result PASS live_limit "took $n1 GiB under 2G, '$set_out', then $n2 GiB more ($(sed -n 's/^then took [0-9]* GiB more until OutOfMemoryError; //p' "$BUILD/c.o")); logged: '$changed'; 'limit set 1G' below use: $(sed -n 's/^after the lower //p' "$BUILD/c.o" | cut -c1-60); $(sed -n 's/^after freeing everything //p' "$BUILD/c.o" | cut -c1-80)"
	else
		result FAIL live_limit "$why; $(tail -c 300 "$BUILD/c.e" | tr '\n' ' ')"
	fi
	rm -rf "$D"
}
shared_checks

# region_stall: a PyTorch job starts while another member holds its region's lock (stopped inside it): it runs,
# its tensor is refused with torch.OutOfMemoryError, and once the lock is free its next tensor joins the region.
# region_pidns: a member in its own PID namespace holding 5 GiB is killed with -9; its liveness lock goes with it, so
# the other member gets the 5 GiB without a restart.
region_checks() {
	if [ "${VG_SKIP_TORCH:-}" = 1 ] || ! "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>>"$LOG"; then
		result SKIP region_stall "torch with CUDA not importable"
		result SKIP region_pidns "torch with CUDA not importable"
		return
	fi
	local POKE=${VG_POKE:-$(dirname "$VG_LIB")/tests/region_poke} D R=vgst$$ why="" a b
	D=$(mktemp -d /dev/shm/vramguard-gpu.XXXXXX 2>/dev/null || echo "$BUILD/shm2")
	mkdir -p "$D"
	local env_r=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=8G VRAMGUARD_SHM_DIR="$D" VRAMGUARD_SHARED="$R"
		VRAMGUARD_LOG=info VRAMGUARD_REPORT=off)
	printf '\n===== region_stall\n' >>"$LOG"
	if [ ! -x "$POKE" ]; then
		result FAIL region_stall "no region_poke at $POKE (make build/tests/region_poke)"
	else
		timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" hold 1 "$BUILD/sa.ready" "$BUILD/sa.go" \
			>"$BUILD/sa.o" 2>"$BUILD/sa.e" </dev/null &
		a=$!
		wait_line "$BUILD/sa.o" '^took' >/dev/null
		"$POKE" lock "$D/vramguard.$R" "$BUILD/sa.release" >"$BUILD/poke.o" 2>>"$LOG" &
		local pk=$!
		wait_line "$BUILD/poke.o" '^locked' >/dev/null
		timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" stall "$BUILD/sb.ready" "$BUILD/sb.go" \
			>"$BUILD/sb.o" 2>"$BUILD/sb.e" </dev/null &
		b=$!
		wait_line "$BUILD/sb.o" '^while the lock was held' >/dev/null
		touch "$BUILD/sa.release"
		wait $pk
		touch "$BUILD/sb.go"
		wait_line "$BUILD/sb.o" '^after the lock was released' >/dev/null
		local top
		top=$(VRAMGUARD_SHM_DIR="$D" timeout 20 "$VG_CLI" top --once --json --shared $R 2>>"$LOG")
		touch "$BUILD/sa.go"
		wait $b
		local brc=$?
		wait $a
		{ echo "--- A:"; cat "$BUILD/sa.o" "$BUILD/sa.e"; echo "--- B (exit $brc):"; cat "$BUILD/sb.o" "$BUILD/sb.e"; echo "--- top: $top"; } >>"$LOG"
		local s1 s2 topsum
		s1=$(sed -n 's/^while the lock was held took \([0-9]*\) GiB.*/\1/p' "$BUILD/sb.o")
		s2=$(sed -n 's/^after the lock was released took \([0-9]*\) GiB.*/\1/p' "$BUILD/sb.o")
		topsum=$(top_members "$top" $R)
		if ! grep -q 'retried at each allocation' "$BUILD/sb.e"; then
			why="B did not say it could not join yet; $(head -c 200 "$BUILD/sb.e")"
		elif [ "$s1" != 0 ]; then
			why="B took '$s1' GiB while the lock was held, want 0 (refused, out of memory)"
		elif [ "$s2" != 1 ]; then
			why="B took '$s2' GiB after the lock was released, want 1"
		elif ! grep -q 'joined after [0-9]* retr' "$BUILD/sb.e"; then
			why="B did not say it joined"
		elif [ "$topsum" != "2 2048" ]; then
			why="top saw '$topsum' (processes, MiB), want 2 processes and 2048 MiB"
		elif [ "$brc" -ne 0 ]; then
			why="B exit $brc"
		fi
		if [ -z "$why" ]; then
			result PASS region_stall "lock held by region_poke while B started: B ran, its 1 GiB tensor -> torch.OutOfMemoryError ($(sed -n 's/^while the lock was held took 0 GiB; //p' "$BUILD/sb.o")); after release it took $s2 GiB; top: $topsum (processes, MiB); logged: '$(grep -m1 'joined after' "$BUILD/sb.e" | cut -c1-160)'"
		else
			result FAIL region_stall "$why"
		fi
	fi

	why=""
	R=vgns$$
	env_r=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=8G VRAMGUARD_SHM_DIR="$D" VRAMGUARD_SHARED="$R"
		VRAMGUARD_LOG=info VRAMGUARD_REPORT=off)
	printf '\n===== region_pidns\n' >>"$LOG"
	if ! unshare --pid --fork --kill-child --mount-proc true 2>>"$LOG"; then
		result SKIP region_pidns "unshare --pid does not work here"
	else
		timeout -k 5 "$T" unshare --pid --fork --kill-child --mount-proc "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" hold 5 \
			"$BUILD/na.ready" "$BUILD/na.go" >"$BUILD/na.o" 2>"$BUILD/na.e" </dev/null &
		a=$!
		wait_line "$BUILD/na.o" '^took' >/dev/null
		local apid_ns
		apid_ns=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/na.o")
		timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/shared_torch.py" fill "$BUILD/nb.ready" "$BUILD/nb.go" \
			>"$BUILD/nb.o" 2>"$BUILD/nb.e" </dev/null &
		b=$!
		wait_line "$BUILD/nb.o" '^took' >/dev/null
		local unshare_pid a_host i
		unshare_pid=$(pgrep -P $a -x unshare || echo $a)
		a_host=$(pgrep -P "$unshare_pid" | head -1)       # A as this namespace numbers it
		kill -9 "$unshare_pid" 2>/dev/null               # --kill-child takes A with it
		wait $a 2>/dev/null
		# Until A is gone: a killed CUDA process is a zombie leader while its other threads still tear down its GPU
		# memory, and its liveness lock (like its memory) goes only when the last thread has (seen on an H100:
		# "Zl" for a moment after kill -9). Its share is reclaimed from then on, not before.
		for ((i = 0; i < T * 10; i++)); do
			[ -n "$a_host" ] && [ -e "/proc/$a_host" ] || break
			grep -q '^State:.Z' "/proc/$a_host/status" 2>/dev/null && grep -q '^Threads:.1$' "/proc/$a_host/status" &&
				break
			sleep 0.1
		done
		touch "$BUILD/nb.go"
		wait_line "$BUILD/nb.o" '^then took' >/dev/null
		wait $b
		local brc=$? m1 m2
		{ echo "--- A (pid $apid_ns in its namespace):"; cat "$BUILD/na.o" "$BUILD/na.e"; echo "--- B (exit $brc):"; cat "$BUILD/nb.o" "$BUILD/nb.e"; } >>"$LOG"
		m1=$(sed -n 's/^took \([0-9]*\) GiB until.*/\1/p' "$BUILD/nb.o")
		m2=$(sed -n 's/^then took \([0-9]*\) GiB more.*/\1/p' "$BUILD/nb.o")
		if [ "$apid_ns" != 1 ]; then
			why="A did not run in its own PID namespace (pid '$apid_ns' there)"
		elif [ "$m1" != 3 ]; then
			why="B took '$m1' GiB next to A's 5 GiB in an 8 GiB region, want 3"
		elif [ "$m2" != 5 ]; then
			why="after A was killed in its namespace B took '$m2' GiB more, want 5 (A's share reclaimed)"
		elif [ "$brc" -ne 0 ]; then
			why="B exit $brc"
		fi
		if [ -z "$why" ]; then
			result PASS region_pidns "A (pid 1 in its own PID namespace) held 5 GiB, B took $m1 GiB then OOM; after kill -9 of A's namespace B took $m2 GiB more ($(sed -n 's/^then took [0-9]* GiB more until OutOfMemoryError; //p' "$BUILD/nb.o"))"
		else
			result FAIL region_pidns "$why; $(tail -c 300 "$BUILD/nb.e" | tr '\n' ' ')"
		fi
	fi
	rm -rf "$D"
}
region_checks
fi # VG_ONLY
unset VRAMGUARD_COUNT

# cdi_torch: the GPU half of the CDI route (docs/cdi.md; the container half is tests/containers/sections/20-cdi.sh,
# podman on CPU). No CDI runtime here, so the edits of the spec `vramguard cdi --limit 4G` writes are applied by hand
# (cdi_apply.py: its LD_PRELOAD and NVIDIA_GPU_MEMORY_LIMITS, the library at the hostPath the spec names) to a
# PyTorch job that fills the GPU until torch.OutOfMemoryError (phys_fill.py, default device counting, as a container
# would run): PASS when nvidia-smi shows at most 4096 MiB for it and the library said it denied.
cdi_torch() {
	local name=cdi_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} dir=$BUILD/cdi spec py
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg (build it, or set VG_CMD)"; return; fi
	run $name.spec "$vg" cdi --limit 4G --lib "$VG_LIB" --output "$dir"
	spec=$dir/vramguard.dev-quota.yaml
	if [ "$RC" -ne 0 ] || [ ! -s "$spec" ]; then
		result FAIL $name "vramguard cdi --limit 4G: $(why_rc): $(head -c 300 "$BUILD/e")"
		return
	fi
	# The job's python may lack PyYAML: a python that has it converts the spec to JSON for cdi_apply.py.
	for py in "$PY" /usr/bin/python3 python3; do
		timeout 60 "$py" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' \
			"$spec" "$dir/spec.json" 2>>"$LOG" && break
	done
	if [ ! -s "$dir/spec.json" ]; then result SKIP $name "no python3 with PyYAML to read the spec"; return; fi
	if [ -z "$SMI" ]; then result SKIP $name "nvidia-smi not found"; return; fi
	EXTRA=need_denial program $name "$PY" "$HERE/cdi_apply.py" "$dir/spec.json" 4G -- \
		"$PY" -u "$HERE/phys_fill.py" torch --quota-mib 4096
}

# ---- physical memory: what the GPU really holds for a process, read with nvidia-smi WITHOUT the preload. Counting
# device memory (the default; VRAMGUARD_COUNT=allocations keeps the old logical counting), the quota covers the
# allocations, what stream-ordered pools and CUDA graphs keep, and the driver's own memory for the process (context,
# modules, kernels loaded lazily): counting allocations only, a PyTorch job filled to 4096 MiB showed 4614 MiB there.
SMI=$(command -v nvidia-smi || true)
# smi_mib PID...: the MiB nvidia-smi --query-compute-apps lists for each PID (summed over GPUs; "?" if not listed)
smi_mib() {
	local out p
	out=$(env -u LD_PRELOAD timeout 30 nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>>"$LOG")
	echo "nvidia-smi --query-compute-apps (pid, MiB): $(echo "$out" | paste -sd';')" >>"$LOG"
	for p in "$@"; do
		echo "$out" | awk -F', *' -v p="$p" '$1 == p && $2 ~ /^[0-9]+$/ { s += $2; n++ } END { print (n ? s : "?") }'
	done | paste -sd' '
}
# wait_files FILE...: until every FILE exists (true), or T s have passed or no background job runs any more (false)
wait_files() {
	local i f all
	for ((i = 0; i < T * 10; i++)); do
		all=1
		for f in "$@"; do [ -e "$f" ] || all=0; done
		[ $all = 1 ] && return 0
		[ -n "$(jobs -rp)" ] || return 1
		sleep 0.1
	done
	return 1
}
torch_ok() { [ "${VG_SKIP_TORCH:-}" != 1 ] && timeout 60 "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>>"$LOG"; }
held_of() { sed -n 's/^holding: filled \([0-9]*\) MiB.*memory_reserved \([0-9]*\) MiB.*/\1 filled, \2 reserved/p' "$1"; }

# phys_fill_*: one job per allocator under the 4096 MiB quota warms up, fills until the framework's own OOM error
# (chunks of 256, 64, 16, 2 MiB), holds, and reads nvidia-smi for its pid (phys_fill.py runs it without the preload):
# PASS when <= 4096 MiB, the OOM was clean and an allocation works again after freeing.
phys_fill_checks() {
	local n F=("$PY" -u "$HERE/phys_fill.py")
	if [ -z "$SMI" ]; then
		for n in torch torch_expandable torch_cudamallocasync jax jax_prealloc cupy cupy_async; do
			result SKIP "phys_fill_$n" "nvidia-smi not found"
		done
		return
	fi
	program phys_fill_torch vg "${F[@]}" torch --quota-mib $QUOTA
	PHYS_TORCH_MIB=$(sed -n 's/^figures: nvidia-smi \([0-9]*\) MiB.*/\1/p' "$BUILD/o")
	program phys_fill_torch_expandable vg env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "${F[@]}" torch \
		--quota-mib $QUOTA
	program phys_fill_torch_cudamallocasync vg env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "${F[@]}" torch \
		--quota-mib $QUOTA
	program phys_fill_jax vg env XLA_PYTHON_CLIENT_PREALLOCATE=false "${F[@]}" jax --quota-mib $QUOTA
	program phys_fill_jax_prealloc vg "${F[@]}" jax --quota-mib $QUOTA # JAX's default: 75 % of the reported total
	program phys_fill_cupy vg "${F[@]}" cupy --quota-mib $QUOTA
	program phys_fill_cupy_async vg "${F[@]}" cupy-async --quota-mib $QUOTA
}
PHYS_TORCH_MIB=""
phys_wanted() { [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = physical ]; }
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = cdi ]; } && cdi_torch
# shellcheck source=tests/gpu/ops.sh
. "$HERE/ops.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = ops ]; } && ops_checks
# shellcheck source=tests/gpu/autoscale.sh
. "$HERE/autoscale.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = autoscale ]; } && { autoscale_torch; autoscale_loop_torch; }
# shellcheck source=tests/gpu/pysites.sh
. "$HERE/pysites.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = python ]; } && pysites_checks
phys_wanted && phys_fill_checks
# shellcheck source=tests/gpu/install.sh
. "$HERE/install.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = install ]; } && install_checks
# shellcheck source=tests/gpu/compute.sh
. "$HERE/compute.sh"
[ "$VG_ONLY" = compute ] && compute_checks # (asked for by name only until the compute limit is built: issue 28)
{ [ "$VG_ONLY" = compute ] || [ "$VG_ONLY" = ddp ]; } && compute_ddp
# shellcheck source=tests/gpu/growth.sh
. "$HERE/growth.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = growth ]; } && growth_torch
# shellcheck source=tests/gpu/allocators.sh
. "$HERE/allocators.sh"
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = allocators ]; } && allocator_checks

# accounting_*: vramguard's books (tests/gpu/accounting.cu, driver API) with VRAMGUARD_DRIVER_HEADROOM=0, so that
# nothing hides a wrong charge to the driver. threadchurn: 10 000 short-lived threads allocate and free; usage comes
# back exactly and the rest of the quota can be had at once. sampler: a thread allocates and frees 2 MiB without a
# pause while the driver's memory is measured every 50 ms; no signal report charges the driver more than it holds.
accounting_checks() {
	local ad
	timeout 300 "$NVCC" -O2 "$HERE/accounting.cu" -o "$BUILD/accounting" -lcuda >"$BUILD/accounting.cc" 2>&1
	if [ ! -x "$BUILD/accounting" ]; then
		result FAIL accounting_build "compile failed: $(grep -m1 -i error "$BUILD/accounting.cc")"
		return
	fi
	program accounting_threadchurn vg env VRAMGUARD_DRIVER_HEADROOM=0 VRAMGUARD_REPORT=off "$BUILD/accounting" \
		threadchurn
	ad=$(mktemp -d "$BUILD/acct.XXXXXX")
	program accounting_sampler vg env VRAMGUARD_DRIVER_HEADROOM=0 VRAMGUARD_DEVICE_POLL=50 \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$ad/r-%p-%n-%r.json" "$BUILD/accounting" sampler "$ad"
	grep -h '^charges' "$BUILD/o" >>"$RES"
}
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = accounting ]; } && accounting_checks

# phys_shared: three PyTorch jobs in one 8192 MiB region (own quotas far above it) fill until OOM and hold at the
# same time; nvidia-smi's sum for the three pids must be <= 8192 MiB. All three warm up (context, cuBLAS) before any
# fills: the driver's memory for a context starting in a full region cannot be refused, only what follows can.
phys_shared() {
	local name=phys_shared R=vgphys$$ D i why="" bgs=() pids=() rcs=() mibs="" sum=0 m held=""
	if [ -z "$SMI" ]; then result SKIP $name "nvidia-smi not found"; return; fi
	if ! torch_ok; then result SKIP $name "torch with CUDA not importable"; return; fi
	D=$(mktemp -d /dev/shm/vramguard-gpu.XXXXXX 2>/dev/null || echo "$BUILD/shm-phys") # regions belong in memory
	mkdir -p "$D"
	local env_r=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=64G VRAMGUARD_SHM_DIR="$D" VRAMGUARD_SHARED="$R"
		VRAMGUARD_SHARED_LIMITS=8192 VRAMGUARD_REPORT=off)
	printf '\n===== %s: 3 x %s\n' $name "${env_r[*]} $PY phys_fill.py torch --warm ... --hold ..." >>"$LOG"
	for i in 1 2 3; do
		timeout -k 5 "$T" "${env_r[@]}" "$PY" -u "$HERE/phys_fill.py" torch --warm "$BUILD/ps$i.warm" "$BUILD/ps.start" \
			--hold "$BUILD/ps$i.ready" "$BUILD/ps.go" >"$BUILD/ps$i.o" 2>"$BUILD/ps$i.e" </dev/null &
		bgs+=($!)
	done
	wait_files "$BUILD"/ps{1,2,3}.warm || why="not all three warmed up"
	touch "$BUILD/ps.start"
	[ -z "$why" ] && { wait_files "$BUILD"/ps{1,2,3}.ready || why="not all three filled to OOM and held"; }
	for i in 1 2 3; do pids+=("$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/ps$i.o")"); done
	[ -z "$why" ] && mibs=$(smi_mib "${pids[@]}")
	touch "$BUILD/ps.go"
	for i in 0 1 2; do
		wait "${bgs[$i]}"
		rcs+=($?)
		{ echo "--- process $((i + 1)) (pid ${pids[$i]}, exit ${rcs[$i]}):"; cat "$BUILD/ps$((i + 1)).o" "$BUILD/ps$((i + 1)).e"; } >>"$LOG"
		held="${held:+$held; }$(held_of "$BUILD/ps$((i + 1)).o")"
	done
	for m in $mibs; do
		if [[ $m =~ ^[0-9]+$ ]]; then sum=$((sum + m)); else why="${why:+$why; }nvidia-smi lists no memory for one of pids ${pids[*]}"; fi
	done
	[ -n "$why" ] || [ "$sum" -le 8192 ] || why="nvidia-smi: the three hold $sum MiB together, want <= 8192 (the region's budget)"
	for i in 0 1 2; do
		[ "${rcs[$i]}" -eq 0 ] || why="${why:+$why; }process $((i + 1)) exit ${rcs[$i]}: $(grep -h '^BAD ' "$BUILD/ps$((i + 1)).o" | head -2 | paste -sd'|')"
	done
	local fig="nvidia-smi MiB for pids ${pids[*]}: ${mibs// / + } = $sum (region budget 8192); torch MiB: $held"
	if [ -z "$why" ]; then
		result PASS $name "$fig; each allocated again after freeing"
	else
		result FAIL $name "$why; $fig$(tail -c 200 "$BUILD/ps1.e" | tr '\n' ' ')"
	fi
	rm -rf "$D"
}
phys_wanted && phys_shared

# nvml_view: under the preload with a 4096 MiB quota, NVML reports the quota as the card's total, in the job
# (nvml_view.py: ctypes and pynvml, before CUDA and with 1 GiB held; torch.cuda.mem_get_info agrees) and in nvidia-smi
# started with the preload; nvidia-smi without it (the control) shows the card.
nvml_view() {
	local name=nvml_view why="" fig with without q="--query-gpu=memory.total,memory.used"
	if [ -z "$SMI" ]; then result SKIP $name "nvidia-smi not found"; return; fi
	run $name.py vg "$PY" -u "$HERE/nvml_view.py" --quota-mib $QUOTA
	if [ "$RC" -eq 3 ] && grep -q '^skip: ' "$BUILD/o"; then
		result SKIP $name "$(grep -m1 '^skip: ' "$BUILD/o" | sed 's/^skip: //')"
		return
	fi
	fig=$(figures)
	[ "$RC" -eq 0 ] || why="in the job: $(why_rc): $(bads)$(stderr_tail)"
	run $name.smi_preload vg nvidia-smi $q --format=csv,noheader,nounits
	with=$(paste -sd';' <"$BUILD/o")
	# every GPU's line: total = the quota, used <= it
	awk -F', *' -v q=$QUOTA 'NF == 2 { n++; if ($1 != q || $2 + 0 > q) b++ } END { exit !(n && !b) }' "$BUILD/o" ||
		why="${why:+$why; }nvidia-smi with the preload printed '$with' (total, used MiB), want total $QUOTA, used <= $QUOTA"
	run $name.smi_plain nvidia-smi $q --format=csv,noheader,nounits
	without=$(paste -sd';' <"$BUILD/o")
	awk -F', *' -v q=$QUOTA 'NR == 1 { exit !($1 + 0 > q) }' "$BUILD/o" ||
		why="${why:+$why; }nvidia-smi without the preload printed '$without', want the card's total (> $QUOTA)"
	if [ -z "$why" ]; then
		result PASS $name "nvidia-smi $q: with the preload '$with', without '$without' (total, used MiB); in the job: $fig"
	else
		result FAIL $name "$why; nvidia-smi with the preload '$with', without '$without'; in the job: $fig"
	fi
}
phys_wanted && nvml_view

# phys_pidns: the PyTorch fill of phys_fill_torch in its own PID namespace (unshare --pid --mount-proc, as root):
# the job sees itself as pid 1, nvidia-smi lists its host pid (found as the unshare process's child). PASS when
# nvidia-smi shows <= 4096 MiB for it.
phys_pidns() {
	local name=phys_pidns why="" bg u hp="" nspid="" mib="?" rc
	if [ -z "$SMI" ]; then result SKIP $name "nvidia-smi not found"; return; fi
	if [ "$(id -u)" != 0 ]; then result SKIP $name "not root (unshare --pid needs it)"; return; fi
	if ! torch_ok; then result SKIP $name "torch with CUDA not importable"; return; fi
	if ! unshare --pid --fork --kill-child --mount-proc true 2>>"$LOG"; then
		result SKIP $name "unshare --pid does not work here"
		return
	fi
	printf '\n===== %s\n' $name >>"$LOG"
	timeout -k 5 "$T" unshare --pid --fork --kill-child --mount-proc env LD_PRELOAD="$VG_LIB" \
		NVIDIA_GPU_MEMORY_LIMITS=$QUOTA "$PY" -u "$HERE/phys_fill.py" torch --hold "$BUILD/pn.ready" "$BUILD/pn.go" \
		>"$BUILD/pn.o" 2>"$BUILD/pn.e" </dev/null &
	bg=$!
	if wait_files "$BUILD/pn.ready"; then
		u=$(pgrep -P $bg -x unshare)
		hp=$(pgrep -P "${u:-$bg}" | head -1) # the job, as the host numbers it
		nspid=$(awk '/^NSpid:/ { print $2 "->" $NF }' "/proc/$hp/status" 2>/dev/null)
		mib=$(smi_mib "$hp")
	else
		why="the job never held its memory"
	fi
	touch "$BUILD/pn.go"
	wait $bg
	rc=$?
	{ echo "--- job (host pid $hp, NSpid $nspid, exit $rc):"; cat "$BUILD/pn.o" "$BUILD/pn.e"; } >>"$LOG"
	local nsself held
	nsself=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$BUILD/pn.o")
	held=$(held_of "$BUILD/pn.o")
	if [ -z "$why" ]; then
		if [ "$nsself" != 1 ]; then
			why="the job saw itself as pid '$nsself', want 1 (its own PID namespace)"
		elif ! [[ $mib =~ ^[0-9]+$ ]]; then
			why="nvidia-smi lists no memory for host pid '$hp'"
		elif [ "$mib" -gt $QUOTA ]; then
			why="nvidia-smi: the GPU holds $mib MiB for the job, want <= $QUOTA"
		elif [ "$rc" -ne 0 ]; then
			why="exit $rc: $(grep -h '^BAD ' "$BUILD/pn.o" | head -2 | paste -sd'|')"
		fi
	fi
	local fig="in its own PID namespace (pid 1 there, $hp on the host): nvidia-smi $mib MiB (quota $QUOTA); the same fill outside (phys_fill_torch): ${PHYS_TORCH_MIB:-n/a} MiB; torch MiB: $held"
	if [ -z "$why" ]; then
		result PASS $name "$fig"
	else
		result FAIL $name "$why; $fig$(tail -c 200 "$BUILD/pn.e" | tr '\n' ' ')"
	fi
}
phys_wanted && phys_pidns

# cupy_suite: CuPy's own tests/cupy_tests/cuda_tests (of the installed version; see scripts/fetch-cupy-tests.sh) with
# pytest, without the preload, then with it (quota 60G, default counting): every test that passed without must pass
# with it, TestMemoryAsyncPool::test_free_all_blocks_large_chunk included (a pool's freed memory is still the GPU's).
cupy_suite() {
	local name=cupy_suite dir=${CUPY_TESTS:-} ver tver mode rc t0 secs=() tmo=() cmd why="" tails=""
	local CT=${CUPY_SUITE_TIMEOUT:-240}
	[ -z "$dir" ] && [ -d "$PWD/.gpu-cache/cupy-tests" ] && dir=$PWD/.gpu-cache/cupy-tests
	if [ -z "$dir" ] || [ "$dir" = off ]; then
		result SKIP $name "no CuPy tests: set CUPY_TESTS to a folder holding cupy_tests/cuda_tests and conftest.py (scripts/fetch-cupy-tests.sh CUPY_GIT_DIR makes .gpu-cache/cupy-tests)"
		return
	fi
	if [ ! -d "$dir/cupy_tests/cuda_tests" ]; then result SKIP $name "CUPY_TESTS=$dir holds no cupy_tests/cuda_tests"; return; fi
	if ! ver=$(timeout 60 "$PY" -c 'import cupy; print(cupy.__version__)' 2>>"$LOG"); then
		result SKIP $name "cupy not importable"
		return
	fi
	if ! timeout 60 "$PY" -m pytest --version >>"$LOG" 2>&1; then result SKIP $name "pytest not installed for $PY"; return; fi
	tver=$(sed -n 's/^version //p' "$dir/SOURCE" 2>/dev/null)
	# pytest-timeout, where installed: a test that hangs fails alone instead of taking the whole run with it
	timeout 60 "$PY" -c 'import pytest_timeout' 2>/dev/null && tmo=(--timeout=120)
	# pytest-xdist, where installed: the tests in parallel worker processes (each its own CUDA context and quota)
	timeout 60 "$PY" -c 'import xdist' 2>/dev/null && [ "${CUPY_SUITE_WORKERS:-8}" -gt 1 ] &&
		tmo+=(-n "${CUPY_SUITE_WORKERS:-8}")
	for mode in without with; do
		cmd=("$PY" -m pytest -p no:cacheprovider -q -rfEs "${tmo[@]}" --junitxml="$BUILD/cupy-$mode.xml" cupy_tests/cuda_tests)
		[ $mode = with ] && cmd=(env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=60G "${cmd[@]}")
		printf '\n===== %s, %s the preload: cd %s && %s\n' $name $mode "$dir" "${cmd[*]}" >>"$LOG"
		t0=$(date +%s)
		(cd "$dir" && PYTHONDONTWRITEBYTECODE=1 timeout -k 10 "$CT" "${cmd[@]}") >"$BUILD/cupy-$mode.o" 2>&1 </dev/null
		rc=$?
		secs+=($(($(date +%s) - t0)))
		{ cat "$BUILD/cupy-$mode.o"; echo "--- exit status $rc"; } >>"$LOG"
		case $rc in 124 | 137) why="${why:+$why; }pytest $mode the preload timed out after $CT s (CUPY_SUITE_TIMEOUT)" ;; esac
		tails="${tails:+$tails; }$mode: '$(grep -v '^$' "$BUILD/cupy-$mode.o" | tail -1 | cut -c1-100)'"
	done
	run $name.compare "$PY" "$HERE/junit_compare.py" "$BUILD/cupy-without.xml" "$BUILD/cupy-with.xml"
	[ "$RC" -eq 0 ] || why="${why:+$why; }$(bads)"
	local fig vnote=""
	[ -n "$tver" ] && [ "$tver" != "$ver" ] && vnote=", NOT the installed version: results may differ for that alone"
	fig="CuPy $ver (tests of ${tver:-an unknown version}$vnote): $(figures); pytest ${secs[0]} s without, ${secs[1]} s with (NVIDIA_GPU_MEMORY_LIMITS=60G); $tails"
	if [ -z "$why" ]; then
		result PASS $name "$fig"
	else
		result FAIL $name "$why; $fig"
	fi
}
{ [ -z "$VG_ONLY" ] || [ "$VG_ONLY" = physical ] || [ "$VG_ONLY" = cupy ]; } && cupy_suite
echo "suite time: $SECONDS s" | tee -a "$LOG"

SUMMARY="$NP passed, $NF failed"
[ "$NS" -gt 0 ] && SUMMARY="$SUMMARY, $NS skipped"
echo "$SUMMARY" | tee -a "$RES"
echo "(results in $RES, full output in $LOG)"
[ "$NF" -eq 0 ]

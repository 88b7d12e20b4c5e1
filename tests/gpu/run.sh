#!/usr/bin/env bash
# tests/gpu/run.sh: vramguard's suite for a real GPU. Run from the repo root: bash tests/gpu/run.sh
#   VG_LIB  the library to preload (default $PWD/build/libvramguard.so)
#   OUT     where gpu-results.txt (one line per check) and gpu-log.txt (full output) go (default /tmp/vramguard-gpu)
#   PYTHON  the interpreter with torch, jax and cupy (default python3); VG_TIMEOUT per check (default 120 s)
# Each check prints one line: PASS/FAIL/SKIP <name>: <figures>. No check can stop or hang the others (no set -e,
# every command under timeout). Exit status 1 when anything failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VG_LIB=${VG_LIB:-$PWD/build/libvramguard.so}
OUT=${OUT:-/tmp/vramguard-gpu}
PY=${PYTHON:-python3}
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
unset LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS CUDA_DEVICE_MEMORY_LIMIT PYTORCH_CUDA_ALLOC_CONF 2>/dev/null
for v in $(env | sed -n 's/^\(CUDA_DEVICE_MEMORY_LIMIT_[0-9]*\)=.*/\1/p'); do unset "$v"; done

result() { # result PASS|FAIL|SKIP NAME TEXT
	local line="$1 $2: $3"
	echo "$line"
	echo "$line" >>"$RES"
	case $1 in PASS) NP=$((NP + 1)) ;; FAIL) NF=$((NF + 1)) ;; SKIP) NS=$((NS + 1)) ;; esac
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

# program NAME CMD...: a program of this suite (prints ok/BAD lines and a final figures: line). A caller may set
# EXTRA to a function that prints why the run is wrong beyond the program's own verdict (nothing when right).
program() {
	local name=$1 d extra=""
	shift
	run "$name" "$@"
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
	for m in torch jax cupy; do
		timeout 60 "$PY" -c "import $m; print('$m', $m.__version__)" 2>/dev/null || echo "$m: import failed"
	done
} | tee -a "$LOG"
NGPU=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU')

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
wait
built() { # built NAME: true if the binary exists, else a FAIL line for CHECK ($2)
	[ -x "$BUILD/$1" ] && return 0
	result FAIL "$2" "compile of $1 failed: $(grep -m1 -i error "$BUILD/$1.cc")"
	cat "$BUILD/$1.cc" >>"$LOG"
	return 1
}

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

SUMMARY="$NP passed, $NF failed"
[ "$NS" -gt 0 ] && SUMMARY="$SUMMARY, $NS skipped"
echo "$SUMMARY" | tee -a "$RES"
echo "(results in $RES, full output in $LOG)"
[ "$NF" -eq 0 ]

# shellcheck shell=bash
# tests/gpu/allocators.sh: which framework's allocator a call site comes from, on a real GPU (issue 29 item 3;
# report/allocator.c's table of patterns against the frames real frameworks leave), sourced by tests/gpu/run.sh,
# whose helpers (run, result, ...) and variables they use. VG_ONLY=allocators runs only library_loads and these.
#
# allocator_check NAME WHICH WANT ENV...: tests/gpu/allocators.py WHICH holds 2 x 64 MiB (one more freed) when it asks
# for a report by SIGUSR1; the report's largest call site must be named WANT ("(site N, WANT)"). PyTorch's exit
# report must say "held at exit" and that all of it is in its caching allocator.
allocator_check() {
	local name=$1 which=$2 want=$3 dir=$BUILD/$1 why="" f site held vgc=${VG_CMD:-${VG_LIB%/*}/vramguard}
	shift 3
	mkdir -p "$dir"
	run "$name" vg env "$@" VRAMGUARD_REPORT_ON=signal,exit VRAMGUARD_REPORT_FORMAT=json \
		VRAMGUARD_REPORT="$dir/r-%p-%n-%r.json" "$PY" -u "$HERE/allocators.py" "$which"
	if [ "$RC" -eq 3 ] && grep -q '^skip: ' "$BUILD/o"; then
		result SKIP "$name" "$(grep -m1 '^skip: ' "$BUILD/o" | sed 's/^skip: //')"
		return
	fi
	[ "$RC" -eq 0 ] || why="job: $(why_rc)$(stderr_tail)"
	f=$(find "$dir" -name 'r-*-signal.json' | head -1)
	if [ -z "$f" ]; then
		why="${why:+$why; }no signal report"
	else
		"$vgc" report "$f" >"$OUT/$name-signal.txt" 2>&1
		site=$(grep -m1 '^    [0-9.]* [KMGT]*i*B in [0-9]* allocations* via ' "$OUT/$name-signal.txt")
		printf '%s' "$site" | grep -qF ", $want)" || why="${why:+$why; }the largest site is not named '$want': $site"
	fi
	f=$(find "$dir" -name 'r-*-exit.json' | head -1)
	[ -n "$f" ] && "$vgc" report "$f" >"$OUT/$name-exit.txt" 2>&1
	if [ "$name" = allocator_torch ]; then
		held=$(grep -A1 -m1 '^  held at exit: ' "$OUT/$name-exit.txt" 2>/dev/null | paste -sd ' ')
		printf '%s' "$held" | grep -q "all of it in PyTorch's caching allocator.*not a leak by itself" ||
			why="${why:+$why; }the exit report does not say it is all in PyTorch's caching allocator: ${held:-no 'held at exit' line}"
	fi
	if [ -z "$why" ]; then
		result PASS "$name" "$(printf '%s' "$site" | sed 's/^ *//')${held:+; at exit: $(printf '%s' "$held" | tr -s ' ' | sed 's/^ //')}"
	else
		result FAIL "$name" "$why"
	fi
}

allocator_checks() {
	allocator_check allocator_torch torch "PyTorch's caching allocator"
	allocator_check allocator_torch_async torch "a stream-ordered pool" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
	allocator_check allocator_cupy cupy "CuPy's memory pool"
	allocator_check allocator_cupy_async cupy-async "a stream-ordered pool"
	allocator_check allocator_jax jax "XLA's BFC allocator" XLA_PYTHON_CLIENT_PREALLOCATE=false
}

#!/usr/bin/env bash
# A thread allocating and freeing 2 MiB without a pause (tests/gpu/accounting.cu pairs), on a GPU machine: pairs a
# second without the preload and with each library given, in alternating rounds (the best of ROUNDS each), with
# the default sampler poll (500 ms) and the fastest (50 ms). What a job that frees all the time pays for the
# measurement of the driver's memory (interposer/devmem.c), which calls NVML while the job runs.
#   bash bench/run_gpu_churn.sh LIB [LIB...]   (ROUNDS=3, SECONDS_EACH=5; OUT: where the table goes)
set -u
cd "$(dirname "$0")/.." || exit 2
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_EACH:-5}
BIN=$(mktemp -d)/accounting
"$NVCC" -O2 tests/gpu/accounting.cu -o "$BIN" -lcuda || exit 2
declare -A best
run() { # KEY [ENV...]: pairs/s of one run, kept if the best of KEY
	local key=$1 v
	shift
	v=$(env "$@" "$BIN" pairs "$SECS" | sed -n 's/^pairs_per_s=//p')
	[ -n "$v" ] && { [ -z "${best[$key]:-}" ] || [ "$v" -gt "${best[$key]}" ]; } && best[$key]=$v
	echo "round: $key $v" >&2
}
for _ in $(seq "$ROUNDS"); do
	run none
	for lib in "$@"; do
		for poll in 500 50; do
			run "$lib poll=$poll" LD_PRELOAD="$lib" NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT=off \
				VRAMGUARD_DEVICE_POLL=$poll
		done
	done
done
row() { printf '%-60s %12s %8s\n' "$@"; }
ratio() { awk -v a="$1" -v b="${best[none]}" 'BEGIN { printf "%.3f", a / b }'; }
row "setting (2 MiB cuMemAlloc_v2 + cuMemFree_v2, one thread)" "pairs/s" "vs none"
row "without the preload" "${best[none]}" "1.000"
for lib in "$@"; do
	for poll in 500 50; do
		key="$lib poll=$poll"
		row "$(basename "$(dirname "$lib")")/$(basename "$lib"), VRAMGUARD_DEVICE_POLL=$poll" "${best[$key]}" \
			"$(ratio "${best[$key]}")"
	done
done

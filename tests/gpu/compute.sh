# shellcheck shell=bash
# tests/gpu/compute.sh: vramguard's compute share on the real GPU (issue 28), sourced by tests/gpu/run.sh (its
# helpers result, torch_ok, ... and variables). VG_ONLY=compute runs only library_loads and these.
# compute_checks: bench/run_compute.sh for vramguard alone (HAMi-core is the benchmark's business, not the
# suite's) with the caps of the issue's acceptance: 50 % alone and 30 % + 70 % together, for the workloads matmul
# (4096² fp16, synchronize every 10), mlp (batch-1 training step of small kernels) and graph (the matmul loop
# replayed as a CUDA graph: a cap must hold through cuGraphLaunch and must not hang it). Each capped row is one
# check: every process's share (its iterations/s over the same loop's rate alone and uncapped, measured before and
# after) within ±5 percentage points of its cap. The uncapped rows are information only. About 4 minutes;
# VG_COMPUTE_SECONDS (default 4) sets each process's measured interval. The table is copied to $OUT.
compute_checks() {
	local d=$BUILD/compute verdicts verdict w sys row rest
	if ! torch_ok; then
		result SKIP compute_share "torch with CUDA not importable"
		return
	fi
	mkdir -p "$d"
	printf '\n===== compute_checks: bench/run_compute.sh (vramguard; caps 50, 30+70; matmul mlp graph)\n' >>"$LOG"
	OUT=$d VG_LIB=$VG_LIB PYTHON=$PY VG_COMPUTE_SYSTEMS=vramguard VG_COMPUTE_CAPS=50 VG_COMPUTE_PAIRS=30+70 \
		VG_COMPUTE_WORKLOADS="matmul mlp graph" timeout -k 10 590 bash "$HERE/../../bench/run_compute.sh" \
		>>"$LOG" 2>&1 </dev/null
	RC=$?
	{ echo "--- exit status $RC; the processes' log:"; cat "$d/compute-log.txt" 2>/dev/null; } >>"$LOG"
	cp "$d/compute-table.md" "$OUT/compute-table.md" 2>/dev/null
	verdicts=$(python3 "$HERE/../../bench/compute_table.py" --verdicts "$d/compute-raw.jsonl" 2>&1)
	if ! grep -q '^[A-Z]* ' <<<"$verdicts"; then
		result FAIL compute_share "bench/run_compute.sh gave no rows ($(why_rc)): $(tail -c 300 <<<"$verdicts")"
		return
	fi
	while read -r verdict w sys row rest; do
		case $verdict in
		PASS) result PASS "compute_${w}_${row%:}" "$sys: $rest" ;;
		FAIL | NODATA) result FAIL "compute_${w}_${row%:}" "$sys: $rest" ;;
		esac
	done <<<"$verdicts"
}

# compute_ddp: tests/gpu/ddp_compute.py, data-parallel training over NCCL on GPUs 0 and 1, without the preload and
# then with a compute share on both ranks (50 % each; 30 % on GPU 0 and 70 % on GPU 1). Each capped run must end
# (no rank held inside a collective while its peer waits: NCCL's kernels never wait, docs/compute.md), with the
# all_reduce right and the parameters equal on both ranks. The steps/s against the uncapped run are in the text.
compute_ddp() {
	local caps port=29511 out base="" rate
	# shellcheck disable=SC2034  # read by why_rc (run.sh)
	local T=120
	if [ "${NGPU:-0}" -lt 2 ]; then
		result SKIP compute_ddp "one GPU on this machine (nvidia-smi -L lists ${NGPU:-0}): DDP over NCCL needs 2"
		return
	fi
	if ! torch_ok; then
		result SKIP compute_ddp "torch with CUDA not importable"
		return
	fi
	for caps in none 50% 0:30%,1:70%; do
		printf '\n===== compute_ddp: VRAMGUARD_COMPUTE_LIMIT=%s\n' "$caps" >>"$LOG"
		if [ "$caps" = none ]; then
			out=$(env -u LD_PRELOAD timeout -k 10 120 "$PY" "$HERE/ddp_compute.py" "$port" 1000 2>>"$LOG")
		else
			out=$(env LD_PRELOAD="$VG_LIB" VRAMGUARD_COMPUTE_LIMIT="$caps" NVIDIA_GPU_MEMORY_LIMITS=64G \
				VRAMGUARD_REPORT=off timeout -k 10 120 "$PY" "$HERE/ddp_compute.py" "$port" 1000 2>>"$LOG")
		fi
		RC=$?
		echo "$out" >>"$LOG"
		port=$((port + 1))
		rate=$(sed -n 's/^ddp ok steps_per_s \([0-9.]*\) \([0-9.]*\) .*/\1 \2/p' <<<"$out")
		if [ "$caps" = none ]; then
			base=$rate
			[ "$RC" = 0 ] && [ -n "$rate" ] && continue
			result FAIL compute_ddp "the uncapped run failed ($(why_rc)): $(tail -c 300 <<<"$out")"
			return
		fi
		if [ "$RC" = 0 ] && grep -q ' preload 1 1$' <<<"$out"; then
			result PASS "compute_ddp_${caps//[:,%]/_}" "VRAMGUARD_COMPUTE_LIMIT=$caps on both ranks: 1000 DDP steps\
 ended, all_reduce and parameters equal on both ranks; steps/s $rate (rank 0, 1) against $base uncapped\
 ($(awk -v a="${rate%% *}" -v b="${base%% *}" 'BEGIN { printf "%.2f", a / b }') of it)"
		else
			result FAIL "compute_ddp_${caps//[:,%]/_}" "VRAMGUARD_COMPUTE_LIMIT=$caps ($(why_rc)): $(tail -c 300 <<<"$out")"
		fi
	done
}

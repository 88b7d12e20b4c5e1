# shellcheck shell=bash
# tests/gpu/ops.sh: the operations checks (reports at a denial and at VRAMGUARD_WARN_AT, the exporter), sourced by
# tests/gpu/run.sh, whose helpers (run, program, result, verdict, first_file, ...) and variables they use.
# VG_ONLY=ops runs only library_loads and these.

OPS=("$PY" -u "$HERE/ops_torch.py")

# denial_report_torch: a PyTorch job under the 4096 MiB quota fills until torch.OutOfMemoryError; with
# VRAMGUARD_REPORT_ON=denial,exit its first refusal writes a "denial" report naming the call sites that hold the
# memory (the reporter thread writes it while the job holds its tensors for 2 s).
denial_report_torch() {
	local name=denial_report_torch dir=$BUILD/denial why="" f fig_job
	mkdir -p "$dir"
	run "$name" vg env VRAMGUARD_REPORT_ON=denial,exit VRAMGUARD_REPORT="$dir/den-%p-%n-%r.json" \
		VRAMGUARD_REPORT_FORMAT=json "${OPS[@]}" denial
	fig_job=$(figures)
	[ "$RC" -eq 0 ] || why="job: $(why_rc)$(stderr_tail)$(bads)"
	local nden
	nden=$(find "$dir" -name '*-denial.json' | wc -l)
	[ "$nden" -eq 1 ] || why="${why:+$why; }$nden denial reports, want 1 (one per VRAMGUARD_REPORT_INTERVAL)"
	f=$(find "$dir" -name '*-denial.json' | head -1)
	FIG=""
	if [ -n "$f" ]; then
		run "$name.check" "$PY" "$CHECK" denial "$f"
		verdict
		[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
		cp "$f" "$OUT/denial-report.json" 2>/dev/null
	fi
	if [ -z "$why" ]; then
		result PASS $name "job: $fig_job; report: $FIG"
	else
		result FAIL $name "$why; job: $fig_job${FIG:+; report: $FIG}"
	fi
}

# threshold_report_torch: VRAMGUARD_WARN_AT=80% under the 4096 MiB quota; the job grows to 85 % and hovers above
# 90 % of the line (4 drops and regrowths): one warning line and one "threshold" report, then the exit report.
threshold_report_torch() {
	local name=threshold_report_torch dir=$BUILD/threshold why="" fig_job nwarn
	mkdir -p "$dir"
	run "$name" vg env VRAMGUARD_WARN_AT=80% VRAMGUARD_REPORT="$dir/thr-%p-%n-%r.json" VRAMGUARD_REPORT_FORMAT=json \
		"${OPS[@]}" threshold
	fig_job=$(figures)
	nwarn=$(grep -c 'crossed its warning threshold' "$BUILD/e")
	[ "$RC" -eq 0 ] || why="job: $(why_rc)$(stderr_tail)$(bads)"
	[ "$nwarn" -eq 1 ] || why="${why:+$why; }$nwarn 'crossed its warning threshold' lines, want 1"
	local line
	line=$(grep -m1 'crossed its warning threshold' "$BUILD/e" | cut -c1-220)
	run "$name.check" "$PY" "$CHECK" threshold "$dir"
	verdict
	[ -n "$VERDICT" ] && why="${why:+$why; }$VERDICT"
	cp "$dir"/*-threshold.json "$OUT/threshold-report.json" 2>/dev/null
	if [ -z "$why" ]; then
		result PASS $name "job: $fig_job; reports: $FIG; logged: '$line'"
	else
		result FAIL $name "$why; job: $fig_job; reports: $FIG"
	fi
}

# exporter_torch: `vramguard exporter` on this machine while a PyTorch job holds 1 GiB and was refused 8 GiB once:
# its /metrics shows the job's used, quota, peak and denials (the lines are quoted, the exposition kept in $OUT).
exporter_torch() {
	local name=exporter_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} shm port=19847 why="" exp job jpid
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg (build it, or set VG_CMD)"; return; fi
	shm=$(mktemp -d /dev/shm/vramguard-ops.XXXXXX)
	VRAMGUARD_SHM_DIR=$shm timeout 150 "$vg" exporter --listen 127.0.0.1:$port >"$BUILD/exp.o" 2>"$BUILD/exp.e" &
	exp=$!
	env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=$QUOTA VRAMGUARD_SHM_DIR="$shm" \
		timeout 120 "${OPS[@]}" hold "$BUILD/go" >"$BUILD/hold.o" 2>"$BUILD/hold.e" </dev/null &
	job=$!
	for _ in $(seq 1 900); do
		grep -q '^ready' "$BUILD/hold.o" 2>/dev/null && break
		kill -0 $job 2>/dev/null || break
		sleep 0.1
	done
	jpid=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$BUILD/hold.o")
	if [ -z "$jpid" ]; then
		why="the job never printed ready: $(tail -c 300 "$BUILD/hold.e" | tr '\n' ' ')"
	else
		sleep 1.2 # the job's sampler publishes its counts every round (500 ms)
		run "$name.scrape" "$PY" "$HERE/metrics_check.py" "http://127.0.0.1:$port/metrics" "$jpid" \
			$((QUOTA * 1048576)) $((1024 * 1048576)) "$OUT/metrics.txt"
		verdict
		[ -n "$VERDICT" ] && why=$VERDICT
	fi
	touch "$BUILD/go"
	wait $job
	local jrc=$?
	kill $exp 2>/dev/null
	wait $exp 2>/dev/null
	{ echo "--- hold job:"; cat "$BUILD/hold.o" "$BUILD/hold.e"; echo "--- exporter:"; cat "$BUILD/exp.o" "$BUILD/exp.e"; } >>"$LOG"
	[ "$jrc" -eq 0 ] || why="${why:+$why; }job exit $jrc: $(grep -h '^BAD' "$BUILD/hold.o" | head -2 | tr '\n' ' ')"
	rm -rf "$shm"
	if [ -z "$why" ]; then
		result PASS $name "job pid $jpid: $(sed -n 's/^figures: //p' "$BUILD/hold.o"); /metrics: $FIG"
	else
		result FAIL $name "$why${FIG:+; /metrics: $FIG}"
	fi
}

# exporter_attacked_torch: root's exporter serves a PyTorch job's metrics while another user (uid 65534) cuts their
# own region of the same directory to nothing and writes it back, as fast as it goes, for 15 s (issue 25: the
# exporter used to die of SIGBUS, and the node's metrics with it). Every scrape must be answered with the job's line;
# root's `top --once` and `limit show`, run over and over meanwhile, must never die.
exporter_attacked_torch() {
	local name=exporter_attacked_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} shm port=19848 why="" exp job jpid
	local atk deaths=0 runs=0 rc
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg (build it, or set VG_CMD)"; return; fi
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		result SKIP $name "needs root and setpriv (another user's file under root's exporter)"
		return
	fi
	shm=$(mktemp -d /dev/shm/vramguard-atk.XXXXXX)
	chmod 1777 "$shm"
	VRAMGUARD_SHM_DIR=$shm timeout 150 "$vg" exporter --listen 127.0.0.1:$port >"$BUILD/atk-exp.o" 2>"$BUILD/atk-exp.e" &
	exp=$!
	env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=$QUOTA VRAMGUARD_SHM_DIR="$shm" \
		timeout 120 "${OPS[@]}" hold "$BUILD/atk-go" >"$BUILD/atk-hold.o" 2>"$BUILD/atk-hold.e" </dev/null &
	job=$!
	for _ in $(seq 1 900); do
		grep -q '^ready' "$BUILD/atk-hold.o" 2>/dev/null && break
		kill -0 $job 2>/dev/null || break
		sleep 0.1
	done
	jpid=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$BUILD/atk-hold.o")
	if [ -z "$jpid" ]; then
		why="the job never printed ready: $(tail -c 300 "$BUILD/atk-hold.e" | tr '\n' ' ')"
	elif ! setpriv --reuid=65534 --regid=65534 --clear-groups "$vg" region create mine --limit 1G --dir "$shm" \
		>>"$LOG" 2>&1; then
		why="uid 65534 could not create its region in $shm"
	else
		sleep 1.2 # the job's sampler publishes its counts every round (500 ms)
		# The system's interpreter: uid 65534 may not be able to reach $PY (a virtual environment under /root).
		setpriv --reuid=65534 --regid=65534 --clear-groups "$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo "$PY")" -c '
import os, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_RDWR)
data = os.pread(fd, os.fstat(fd).st_size, 0)
n, end = 0, time.time() + float(sys.argv[2])
while time.time() < end:
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    n += 1
print(n)' "$shm/vramguard.mine" 16 >"$BUILD/atk.count" 2>>"$LOG" &
		atk=$!
		( for _ in $(seq 1 150); do
			for c in "top --once" "limit show"; do
				# shellcheck disable=SC2086 # c is the command's words
				timeout 30 "$vg" $c --dir "$shm" >/dev/null 2>>"$BUILD/atk-cmds.e"
				rc=$?
				runs=$((runs + 1))
				[ "$rc" -ge 124 ] && deaths=$((deaths + 1))
			done
		done
		echo "$deaths $runs" >"$BUILD/atk-cmds" ) &
		local cmds=$!
		run "$name.scrape" "$PY" "$HERE/attack_scrape.py" "http://127.0.0.1:$port/metrics" "$jpid" 15 \
			"$OUT/metrics-attacked.txt"
		verdict
		[ -n "$VERDICT" ] && why=$VERDICT
		wait "$atk"
		wait "$cmds"
		read -r deaths runs <"$BUILD/atk-cmds"
		[ "$deaths" = 0 ] || why="${why:+$why; }$deaths of $runs runs of top --once / limit show died or hung"
		kill -0 $exp 2>/dev/null || why="${why:+$why; }the exporter is not running after the attack"
	fi
	touch "$BUILD/atk-go"
	wait $job
	local jrc=$?
	kill $exp 2>/dev/null
	wait $exp 2>/dev/null
	{ echo "--- hold job:"; cat "$BUILD/atk-hold.o" "$BUILD/atk-hold.e"; echo "--- exporter:"; cat "$BUILD/atk-exp.o" \
		"$BUILD/atk-exp.e"; } >>"$LOG"
	[ "$jrc" -eq 0 ] || why="${why:+$why; }job exit $jrc"
	rm -rf "$shm"
	if [ -z "$why" ]; then
		result PASS $name "job pid $jpid; uid 65534 cut its region $(cat "$BUILD/atk.count") times; $FIG; $runs runs of top --once / limit show: none died"
	else
		result FAIL $name "$why${FIG:+; $FIG}"
	fi
}

ops_checks() {
	denial_report_torch
	threshold_report_torch
	exporter_torch
	exporter_attacked_torch
}

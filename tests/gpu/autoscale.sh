# shellcheck shell=bash
# tests/gpu/autoscale.sh: `vramguard autoscale` on a real GPU, sourced by tests/gpu/run.sh (whose helpers and
# variables it uses); VG_ONLY=autoscale runs only library_loads and this. There is no Prometheus or Alertmanager on
# the GPU machine: the receiver gets the payload the real Alertmanager sent in make test
# (tests/gpu/alertmanager-payload.json), its labels replaced by the job's own as the exporter serves them. A PyTorch
# job under a 2 GiB quota grows past 80 %; the receiver (--step 2G --ceiling 4G) raises it to 4 GiB; the job grows
# on to 3 GiB without an OutOfMemoryError and without a restart.

autoscale_torch() {
	local name=autoscale_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} shm why="" job rcv jpid port=19848
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg (build it, or set VG_CMD)"; return; fi
	shm=$(mktemp -d /dev/shm/vramguard-autoscale.XXXXXX)
	(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$shm/token")
	rm -f "$BUILD/as-go"
	env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=2048 VRAMGUARD_SHM_DIR="$shm" \
		timeout 180 "$PY" -u "$HERE/autoscale_torch.py" "$BUILD/as-go" 3072 >"$BUILD/as.o" 2>"$BUILD/as.e" </dev/null &
	job=$!
	timeout 200 "$vg" autoscale --dir "$shm" --listen 127.0.0.1:$port --token-file "$shm/token" --step 2G \
		--ceiling 4G --alert VramguardProcessNearQuota >"$BUILD/rcv.o" 2>"$BUILD/rcv.e" &
	rcv=$!
	for _ in $(seq 1 1200); do
		grep -q '^high' "$BUILD/as.o" 2>/dev/null && break
		kill -0 $job 2>/dev/null || break
		sleep 0.1
	done
	jpid=$(sed -n 's/^high \([0-9]*\) .*/\1/p' "$BUILD/as.o")
	if [ -z "$jpid" ]; then
		why="the job never reached 80 %: $(grep -h '^BAD' "$BUILD/as.o" | head -2 | tr '\n' ' ')$(tail -c 300 "$BUILD/as.e" | tr '\n' ' ')"
	else
		sleep 1.2 # the job's sampler publishes its usage every round (500 ms)
		# The alert as Prometheus would send it: the exporter's labels of the job's sample, with the alert's own.
		VRAMGUARD_SHM_DIR=$shm "$vg" exporter --once >"$BUILD/as.prom" 2>>"$LOG"
		"$PY" - "$HERE/alertmanager-payload.json" "$BUILD/as.prom" "$jpid" >"$BUILD/as.payload" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
line = next(l for l in open(sys.argv[2]) if l.startswith('vramguard_process_used_bytes{pid="%s",' % sys.argv[3]))
labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line[line.index("{"):line.rindex("}")]))
labels.update(alertname="VramguardProcessNearQuota", severity="warning", job="vramguard", instance="127.0.0.1:9847")
a = d["alerts"][0]
a["labels"] = labels
d["alerts"] = [a]
d["commonLabels"] = labels
d["groupLabels"] = {"alertname": labels["alertname"]}
print(json.dumps(d))
PY
		local code
		code=$(curl -sS --max-time 10 --noproxy '*' -o "$BUILD/as.resp" -w '%{http_code}' \
			-H "Authorization: Bearer $(cat "$shm/token")" -H 'Content-Type: application/json' \
			--data-binary @"$BUILD/as.payload" "http://127.0.0.1:$port/" 2>>"$LOG")
		[ "$code" = 200 ] && grep -q '^raised 1$' "$BUILD/as.resp" ||
			why="receiver answered $code: $(head -c 200 "$BUILD/as.resp"); $(grep 'autoscale: [a-z_]*:' "$BUILD/rcv.e" | tail -2 | tr '\n' ' ')"
	fi
	touch "$BUILD/as-go"
	wait $job
	local jrc=$?
	kill $rcv 2>/dev/null
	wait $rcv 2>/dev/null
	{ echo "--- autoscale job:"; cat "$BUILD/as.o" "$BUILD/as.e"; echo "--- receiver:"; cat "$BUILD/rcv.e"; } >>"$LOG"
	cp "$BUILD/rcv.e" "$OUT/autoscale-receiver.log" 2>/dev/null
	cp "$BUILD/as.o" "$OUT/autoscale-job.txt" 2>/dev/null
	local raised okline
	raised=$(grep -m1 'autoscale: raised:' "$BUILD/rcv.e" | cut -c1-260)
	okline=$(grep -m1 '^ok grew' "$BUILD/as.o" | cut -c1-260)
	[ -n "$raised" ] && ! grep -q 'limit 2.00 GiB -> 4.00 GiB' <<<"$raised" && why="${why:+$why; }raised, but not 2 -> 4 GiB: $raised"
	[ "$jrc" -eq 0 ] && [ -n "$okline" ] ||
		why="${why:+$why; }job exit $jrc: $(grep -h '^BAD' "$BUILD/as.o" | head -2 | tr '\n' ' ')$(tail -c 300 "$BUILD/as.e" | tr '\n' ' ')"
	rm -rf "$shm"
	if [ -z "$why" ]; then
		result PASS $name "receiver: '$raised'; job: '$okline'; $(sed -n 's/^figures: //p' "$BUILD/as.o")"
	else
		result FAIL $name "$why"
	fi
}

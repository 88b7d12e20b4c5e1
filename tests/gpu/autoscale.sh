# shellcheck shell=bash
# tests/gpu/autoscale.sh: `vramguard autoscale` on a real GPU, sourced by tests/gpu/run.sh (whose helpers and
# variables it uses); VG_ONLY=autoscale runs only library_loads and these two checks. A PyTorch job under a 2 GiB
# quota grows past 80 % and trains on; the receiver (--step 2G --ceiling 4G) raises it to 4 GiB; the job sees the
# new total in cudaMemGetInfo and grows on to 3 GiB without an OutOfMemoryError and without a restart.
#   autoscale_torch       the receiver gets the payload the real Alertmanager sent in make test
#                         (tests/gpu/alertmanager-payload.json), its labels replaced by the job's as the exporter
#                         serves them;
#   autoscale_loop_torch  the whole loop: exporter, Prometheus, Alertmanager and receiver, with Debian's binaries
#                         carried to the GPU machine (below).

# as_verdict NAME RECEIVER-LOG JOB-OUT JOB-ERR JOB-STATUS WHY PREFIX: what both checks ask, then their result line:
# the receiver raised the job once, 2 -> 4 GiB, and the job grew on without an OutOfMemoryError (WHY: what went
# wrong before, PREFIX: the figures' first words).
as_verdict() {
	local name=$1 rlog=$2 jo=$3 je=$4 jrc=$5 why=$6 raised okline
	raised=$(grep -m1 'autoscale: raised:' "$rlog" | cut -c1-260)
	okline=$(grep -m1 '^ok grew' "$jo" | cut -c1-260)
	grep -q 'limit 2.00 GiB -> 4.00 GiB' <<<"$raised" ||
		why="${why:+$why; }receiver: $(grep 'autoscale: [a-z_]*:' "$rlog" | tail -3 | tr '\n' ' ')"
	[ "$(grep -c 'autoscale: raised:' "$rlog")" -le 1 ] || why="${why:+$why; }raised more than once"
	[ "$jrc" -eq 0 ] && [ -n "$okline" ] ||
		why="${why:+$why; }job exit $jrc: $(grep -h '^BAD' "$jo" | head -2 | tr '\n' ' ')$(tail -c 300 "$je" | tr '\n' ' ')"
	if [ -z "$why" ]; then
		result PASS "$name" "$7receiver: '$raised'; job: '$okline'; $(sed -n 's/^figures: //p' "$jo")"
	else
		result FAIL "$name" "$why"
	fi
}

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
	rm -rf "$shm"
	as_verdict $name "$BUILD/rcv.e" "$BUILD/as.o" "$BUILD/as.e" $jrc "$why" ""
}

# The whole loop on the GPU machine, every part real: the job under a 2 GiB quota, `vramguard exporter`, Prometheus
# (scraping every second, examples/prometheus/rules.yml's process alert with `for: 1s`), Alertmanager (group_wait
# 1s, the bearer token) and the receiver. Nothing can be installed there: Debian's prometheus and
# prometheus-alertmanager binaries travel as a tarball, VG_PROM_TAR (default .gpu-cache/prom/prom.tar.xz, made by
# scripts/pack-prometheus.sh on a machine that has them); skipped without it.
autoscale_loop_torch() {
	local name=autoscale_loop_torch vg=${VG_CMD:-$(dirname "$VG_LIB")/vramguard} tar=${VG_PROM_TAR:-$HERE/../../.gpu-cache/prom/prom.tar.xz}
	local d shm why="" pids=() exp rcv aport pport t0
	if [ ! -f "$tar" ]; then result SKIP $name "no Prometheus/Alertmanager tarball at $tar: make it with scripts/pack-prometheus.sh"; return; fi
	if [ ! -x "$vg" ]; then result FAIL $name "no vramguard command at $vg"; return; fi
	d=$BUILD/loop
	mkdir -p "$d/bin"
	tar -C "$d/bin" -xJf "$tar" || { result FAIL $name "cannot unpack $tar"; return; }
	shm=$(mktemp -d /dev/shm/vramguard-loop.XXXXXX)
	(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$d/token")
	t0=$SECONDS
	env LD_PRELOAD="$VG_LIB" NVIDIA_GPU_MEMORY_LIMITS=2048 VRAMGUARD_SHM_DIR="$shm" \
		timeout 150 "$PY" -u "$HERE/autoscale_torch.py" "$d/never" 3072 >"$d/job.o" 2>"$d/job.e" </dev/null &
	local job=$!
	"$vg" exporter --listen 127.0.0.1:0 --dir "$shm" 2>"$d/exp.e" &
	pids+=($!)
	"$vg" autoscale --dir "$shm" --listen 127.0.0.1:0 --token-file "$d/token" --step 2G --ceiling 4G \
		--alert VramguardProcessNearQuota 2>"$d/rcv.e" &
	pids+=($!)
	for _ in $(seq 100); do
		grep -q 'listening on' "$d/exp.e" && grep -q 'listening on' "$d/rcv.e" && break
		sleep 0.1
	done
	exp=$(grep -Eo '127\.0\.0\.1:[0-9]+' "$d/exp.e" | head -1)
	rcv=$(grep -Eo '127\.0\.0\.1:[0-9]+' "$d/rcv.e" | head -1)
	aport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	pport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$d/am.yml" <<YML
route:
  receiver: vramguard
  group_by: [alertname, pid, gpu]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: vramguard
    webhook_configs:
      - url: http://${rcv}/
        send_resolved: true
        http_config:
          authorization: { type: Bearer, credentials_file: $d/token }
YML
	# examples/prometheus/rules.yml's process alert as it is (80 %), with for: 1s instead of 5m.
	{
		echo 'groups:'
		echo '  - name: vramguard.autoscale'
		echo '    rules:'
		sed -n '/- alert: VramguardProcessNearQuota/,/severity: warning/p' "$HERE/../../examples/prometheus/rules.yml" |
			sed 's/for: 5m/for: 1s/; s/^  //'
	} >"$d/rules.yml"
	cat >"$d/prometheus.yml" <<YML
global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }
rule_files: [ $d/rules.yml ]
alerting:
  alertmanagers: [ { static_configs: [ { targets: ['127.0.0.1:${aport}'] } ] } ]
scrape_configs:
  - job_name: vramguard
    static_configs: [ { targets: ['${exp}'] } ]
YML
	# Debian's Alertmanager reads its default template from /usr/share/prometheus/alertmanager/: where that is
	# absent, it runs in a mount namespace of its own with the tarball's share/ bound on /usr/share (a static Go
	# binary needs nothing else there), so the GPU machine itself is left as it was.
	local amcmd=("$d/bin/prometheus-alertmanager" --config.file="$d/am.yml" --storage.path="$d/am"
		--web.listen-address="127.0.0.1:$aport" --cluster.listen-address=)
	if [ -f /usr/share/prometheus/alertmanager/default.tmpl ]; then
		"${amcmd[@]}" >"$d/am.log" 2>&1 &
	else
		# shellcheck disable=SC2016 # expanded by the inner sh
		unshare -m sh -c 'mount --make-rprivate / && mount --bind "$0" /usr/share && exec "$@"' "$d/bin/share" \
			"${amcmd[@]}" >"$d/am.log" 2>&1 &
	fi
	pids+=($!)
	"$d/bin/prometheus" --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/prom" \
		--web.listen-address="127.0.0.1:$pport" >"$d/prom.log" 2>&1 &
	pids+=($!)
	[ -n "$exp" ] && [ -n "$rcv" ] && grep -q 'vramguard_process_used_bytes / (vramguard_process_quota_bytes > 0) > 0.8' "$d/rules.yml" ||
		why="setup: exporter '$exp', receiver '$rcv', rule $(tr '\n' ' ' <"$d/rules.yml")"
	wait $job
	local jrc=$? secs=$((SECONDS - t0))
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	{ echo "--- loop job:"; cat "$d/job.o" "$d/job.e"; echo "--- loop receiver:"; cat "$d/rcv.e"; echo "--- alertmanager:"
	  tail -n 20 "$d/am.log"; echo "--- prometheus:"; tail -n 20 "$d/prom.log"; } >>"$LOG"
	cp "$d/rcv.e" "$OUT/autoscale-loop-receiver.log" 2>/dev/null
	cp "$d/job.o" "$OUT/autoscale-loop-job.txt" 2>/dev/null
	! grep -q 'refused_auth\|refused_payload' "$d/rcv.e" || why="${why:+$why; }the receiver refused Alertmanager"
	rm -rf "$shm"
	as_verdict $name "$d/rcv.e" "$d/job.o" "$d/job.e" $jrc "$why" "loop in ${secs}s (job start to exit); "
}

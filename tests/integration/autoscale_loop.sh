# shellcheck shell=bash
# The closed loop of `vramguard autoscale` (sourced by tests/sections/autoscale.sh, whose helpers it uses), every
# part real and on 127.0.0.1: a job under the preload holds 70 MiB of a region of 80 MiB and is refused 20 MiB more;
# `vramguard exporter` serves it; Prometheus scrapes it every second and evaluates examples/prometheus/rules.yml's
# region alert with a threshold of 80 % and `for: 1s`; Alertmanager (group_wait 1s) posts to the receiver and to a
# small capture server (the payload is kept for the GPU check); the receiver raises the budget to 120 MiB; the job's
# next allocation succeeds. Bounded: 45 s at most; every process is stopped by acleanup (trap).

aport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
SECONDS=0
AJD=$AD/loop
mkdir "$AJD"
ajob loop 70 20 VRAMGUARD_SHARED=loop VRAMGUARD_SHARED_LIMITS=80M
"$VG" exporter --listen 127.0.0.1:0 --dir "$AJD" 2>"$AD/exp.err" &
APIDS+=($!)
wait_for "$AD/exp.err" 'listening on' || bad "autoscale loop: the exporter did not start" "$(cat "$AD/exp.err")"
AEXP=$(grep -Eo '127\.0\.0\.1:[0-9]+' "$AD/exp.err" | head -1)
aserve "$AD/recv.err" --listen 127.0.0.1:0 --token-file "$AD/token" --ceiling 160M --step 40M \
	--alert VramguardRegionNearBudget
ARCV=${AURL#http://}
# The capture server: keeps the first body Alertmanager posts to it.
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(sys.argv[1] + ".tmp", "wb") as f: f.write(body)
        __import__("os").replace(sys.argv[1] + ".tmp", sys.argv[1])
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$AD/captured.json" >"$AD/cap.port" 2>>"$LOG" &
APIDS+=($!)
wait_for "$AD/cap.port" '^[0-9]+$' || bad "autoscale loop: the capture server did not start"
ACAP=$(cat "$AD/cap.port")
AAM=$(aport)
APR=$(aport)
cat >"$AD/am.yml" <<YML
route:
  receiver: vramguard
  group_by: [alertname, region]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: vramguard
    webhook_configs:
      - url: http://${ARCV}/
        send_resolved: true
        http_config:
          authorization: { type: Bearer, credentials_file: $AD/token }
      - url: http://127.0.0.1:${ACAP}/
        send_resolved: false
YML
# examples/prometheus/rules.yml's region alert, at 80 % and for 1s (the example says 90 % for 5m).
sed -n '/- alert: VramguardRegionNearBudget/,/severity: warning/p' examples/prometheus/rules.yml |
	sed 's/> 0\.9$/> 0.8/; s/for: 5m/for: 1s/' >"$AD/rule.part"
{ echo 'groups:'; echo '  - name: vramguard.autoscale'; echo '    rules:'; sed 's/^  //' "$AD/rule.part"; } >"$AD/rules.yml"
cat >"$AD/prometheus.yml" <<YML
global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }
rule_files: [ $AD/rules.yml ]
alerting:
  alertmanagers: [ { static_configs: [ { targets: ['127.0.0.1:${AAM}'] } ] } ]
scrape_configs:
  - job_name: vramguard
    static_configs: [ { targets: ['${AEXP}'] } ]
YML
if ! grep -q 'vramguard_region_used_bytes / (vramguard_region_budget_bytes > 0) > 0.8' "$AD/rules.yml" ||
	! promtool check rules "$AD/rules.yml" >>"$LOG" 2>&1; then
	bad "autoscale loop: the rule taken from examples/prometheus/rules.yml" "$(cat "$AD/rules.yml")"
fi
"$AMBIN" --config.file="$AD/am.yml" --storage.path="$AD/am" --web.listen-address="127.0.0.1:$AAM" \
	--cluster.listen-address= >"$AD/am.log" 2>&1 &
APIDS+=($!)
prometheus --config.file="$AD/prometheus.yml" --storage.tsdb.path="$AD/prom" \
	--web.listen-address="127.0.0.1:$APR" >"$AD/prom.log" 2>&1 &
APIDS+=($!)
if wait_for "$AD/loop.out" '^granted 20 MiB more' 40; then
	ok "autoscale loop: Prometheus fired the region alert, Alertmanager posted it, the receiver raised the budget: the job's allocation refused before succeeds (${SECONDS}s)"
else bad "autoscale loop: the job never got its memory (${SECONDS}s)" "$(cat "$AD/loop.out" "$AD/recv.err"; tail -n 5 "$AD/am.log" "$AD/prom.log")"; fi
grep -q "raised: alert 'VramguardRegionNearBudget' firing: region 'loop' GPU 0: limit 80.00 MiB -> 120.00 MiB" "$AD/recv.err" &&
	grep -q "budget changed to .*0:120M" "$AD/loop.err" &&
	ok "  the receiver's log says 80 -> 120 MiB; the job's log says the budget changed" ||
	bad "  the logs" "$(cat "$AD/recv.err"; grep -v denied "$AD/loop.err")"
[ "$(grep -c '^vramguard: autoscale: raised:' "$AD/recv.err")" = 1 ] && ! grep -q 'refused_auth\|refused_payload' "$AD/recv.err" &&
	ok "  raised once; Alertmanager's posts carried the token and a payload the receiver reads" ||
	bad "  raised more than once, or refused Alertmanager" "$(cat "$AD/recv.err")"
# The payload Alertmanager sent: version 4, a firing alert with the exporter's labels.
wait_for "$AD/captured.json" 'VramguardRegionNearBudget' &&
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
a = d["alerts"][0]
assert d["version"] == "4" and a["status"] == "firing", d
assert a["labels"]["region"] == "loop" and a["labels"]["gpu"] == "0" and "gpu_uuid" in a["labels"], a["labels"]' \
		"$AD/captured.json" 2>>"$LOG" &&
	ok "  Alertmanager's own payload (captured): version 4, firing, labels region/gpu/gpu_uuid" ||
	bad "  the captured payload" "$(head -c 600 "$AD/captured.json")"
[ -n "${VG_AUTOSCALE_CAPTURE:-}" ] && cp "$AD/captured.json" "$VG_AUTOSCALE_CAPTURE"
[ "$SECONDS" -lt 45 ] && ok "  the loop took ${SECONDS}s (bound: 45)" || bad "  the loop took ${SECONDS}s, over 45"
touch "$AD/stop"
acleanup

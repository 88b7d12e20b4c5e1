#!/usr/bin/env bash
# Section annotation: examples/kubernetes/annotation-sync.sh (the pod annotation vramguard.dev/limit as a live
# quota). There is no cluster here: `kubectl` is a test double, a script on PATH that checks its arguments and prints
# a fixed pod list; the jobs are real processes under the preload with the test double of libcuda.so.1, named by
# POD_NAME as a pod's would be. Needs: make test-bins (grower, vramguard), python3; root and unshare for PID
# namespaces.
source tests/lib/section.sh

SD=$(mktemp -d /tmp/vg-annsync.XXXXXX)
SJD=$SD/regions
mkdir -p "$SJD" "$SD/bin"
SPIDS=()
scleanup() { touch "$SD/stop"; for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; SPIDS=(); }
at_exit 'scleanup; rm -rf "$SD"'
# The test double of kubectl: only `get pods --field-selector spec.nodeName=node-a -o json`, answered from
# $SD/pods.json; anything else, or FAKE_KUBECTL_FAIL set, fails as kubectl would.
cat >"$SD/bin/kubectl" <<'EOF'
#!/bin/sh
# A test double of kubectl (tests/sections/annotation.sh): no API server is contacted.
[ -z "${FAKE_KUBECTL_FAIL:-}" ] || { echo "The connection to the server localhost:8080 was refused" >&2; exit 1; }
[ "$*" = "get pods --field-selector spec.nodeName=node-a -o json" ] || { echo "fake kubectl: unexpected: $*" >&2; exit 1; }
echo call >>"$FAKE_KUBECTL_PODS.calls"
cat "$FAKE_KUBECTL_PODS"
EOF
chmod +x "$SD/bin/kubectl"
# sjob NAME POD HOLD_MIB MORE_MIB [ENV...]: a job of pod POD; its pid in $SJ
sjob() {
	: >"$SD/$1.out"         # empty before wait_for looks: a line from an earlier job of that name is not this one's
	env -u NVIDIA_GPU_MEMORY_LIMITS -u VRAMGUARD_SHARED "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T" \
		VRAMGUARD_SHM_DIR="$SJD" VRAMGUARD_REPORT=off POD_NAME="$2" "${@:5}" "$T/grower" "$SD/stop" "$3" "$4" 60 \
		>"$SD/$1.out" 2>"$SD/$1.err" &
	SJ=$!
	SPIDS+=("$SJ")
	wait_for "$SD/$1.out" '^(denied|granted)' || bad "annotation-sync: job $1 did not start" "$(cat "$SD/$1.out" "$SD/$1.err")"
}
# A pod of the list: NAME ANNOTATION-or-empty
spod() {
	local ann=
	[ -z "$2" ] || ann=$(printf ',"annotations":{"vramguard.dev/limit":"%s","other":"x"}' "$2")
	printf '{"metadata":{"name":"%s","namespace":"ml"%s},"spec":{"nodeName":"node-a"},"status":{"containerStatuses":[{"name":"train","containerID":""}]}}' "$1" "$ann"
}
spods() { local IFS=,; printf '{"apiVersion":"v1","kind":"List","items":[%s]}\n' "$*" >"$SD/pods.json"; }
# sync [ARGS...]: the script against the double, as the node's container would run it; its stderr in $SD/sync.err
ssync() {
	PATH="$SD/bin:$PATH" FAKE_KUBECTL_PODS="$SD/pods.json" NODE_NAME=node-a VRAMGUARD="$VG" \
		bash examples/kubernetes/annotation-sync.sh --dir "$SJD" "$@" 2>"$SD/sync.err"
}
# sloop ARGS...: the same in the background, as the script's own process (exec), so that $! is the script's PID
sloop() {
	PATH="$SD/bin:$PATH" FAKE_KUBECTL_PODS="$SD/pods.json" NODE_NAME=node-a VRAMGUARD="$VG" \
		exec bash examples/kubernetes/annotation-sync.sh --dir "$SJD" "$@" 2>"$SD/sync.err"
}
squota() { # PID: its own quota in bytes on GPU 0, or its pending spec
	"$VG" limit show --json --pid "$1" --dir "$SJD" | python3 -c 'import json,sys
p=[p for r in json.load(sys.stdin)["regions"] for p in r["processes"]][0]
print(p["requested_limit"] or p["devices"][0]["quota_bytes"])'
}

if ! command -v python3 >/dev/null; then
	skip "annotation-sync" "python3 is missing (the script reads JSON with it)"
else
	# Pod train-a: 100 MiB, holds 90, wants 20 more; annotated 150M. train-b: annotated 64G, above the ceiling.
	# train-c: in a shared region. bad: an annotation that is no size. ghost: no process. plain: no annotation.
	sjob a train-a 90 20 NVIDIA_GPU_MEMORY_LIMITS=100M
	SA=$SJ
	sjob b train-b 10 1 NVIDIA_GPU_MEMORY_LIMITS=100M
	SB=$SJ
	sjob c train-c 10 1 VRAMGUARD_SHARED=team VRAMGUARD_SHARED_LIMITS=100M
	sjob p plain 10 1 NVIDIA_GPU_MEMORY_LIMITS=100M
	SP_=$SJ
	spods "$(spod train-a 150M)" "$(spod train-b 64G)" "$(spod train-c 120M)" "$(spod bad 8XB)" \
		"$(spod ghost 1G)" "$(spod plain '')"
	ssync --ceiling 1G --once
	src=$?
	if [ $src = 0 ] && [ "$(grep -c '^vramguard: annotation-sync: set: ' "$SD/sync.err")" = 1 ] &&
		grep -q "^vramguard: annotation-sync: set: ml/train-a process $SA (.*grower.*): quota 100.00 MiB -> 150.00 MiB (annotation vramguard.dev/limit='150M', ceiling 1024.00 MiB)$" "$SD/sync.err" &&
		wait_for "$SD/a.out" '^granted 20 MiB more'; then
		ok "annotation-sync: pod train-a's vramguard.dev/limit=150M sets its process's quota 100 -> 150 MiB (one line); its refused allocation then succeeds"
	else bad "annotation-sync: the annotation was not applied (exit $src)" "$(cat "$SD/sync.err" "$SD/a.out")"; fi
	grep -q "refused: ml/train-b annotation vramguard.dev/limit='64G' (65536.00 MiB) is above the ceiling 1024.00 MiB: nothing changed" "$SD/sync.err" &&
		[ "$(squota "$SB")" = 104857600 ] &&
		ok "  above --ceiling (64G > 1G): refused, one line, its quota stays 100 MiB" ||
		bad "  ceiling" "$(cat "$SD/sync.err")"
	grep -q "refused: ml/bad annotation vramguard.dev/limit='8XB' is not a size" "$SD/sync.err" &&
		grep -q "refused: ml/ghost annotation vramguard.dev/limit='1G': no process of this pod under vramguard on this node" "$SD/sync.err" &&
		grep -q "refused: ml/train-c process [0-9]* (.*) is in a shared region" "$SD/sync.err" &&
		! grep -q "ml/plain" "$SD/sync.err" && [ "$(squota "$SP_")" = 104857600 ] &&
		ok "  not a size, no process, a process in a shared region: refused, one line each; a pod without the annotation: untouched" ||
		bad "  refusals" "$(cat "$SD/sync.err"; echo "plain's quota: $(squota "$SP_")")"
	ssync --ceiling 1G --once
	! grep -q ': set: ' "$SD/sync.err" && ok "  run again: the quota is already 150 MiB, nothing set" ||
		bad "  second pass set again" "$(cat "$SD/sync.err")"
	FAKE_KUBECTL_FAIL=1 ssync --ceiling 1G --once
	[ $? = 1 ] && grep -q '^vramguard: annotation-sync: error: kubectl get pods failed: The connection to the server' "$SD/sync.err" &&
		ok "  kubectl fails: exit 1, its message in one line" || bad "  kubectl failure" "$(cat "$SD/sync.err")"
	NODE_NAME='' ssync --once
	[ $? = 2 ] && grep -q 'error: --ceiling SIZE is required' "$SD/sync.err" && ok "  no --ceiling: usage error (2)" ||
		bad "  no --ceiling" "$(cat "$SD/sync.err")"

	# The loop (--interval): the annotation is applied when it changes, not on every pass; a limit changed since
	# (by autoscale or by hand) stays until the annotation changes again.
	spods "$(spod plain 120M)"
	sloop --ceiling 1G --interval 0.1 &
	SL=$!
	SPIDS+=("$SL")
	wait_for "$SD/sync.err" ': set: ml/plain' && "$VG" limit set 130M --pid "$SP_" --dir "$SJD" >>"$LOG" 2>&1
	# Three more passes see the hand-set 130M (the double counts the loop's kubectl calls) before the change.
	calls=$(($(wc -l <"$SD/pods.json.calls") + 3))
	end=$((SECONDS + 30))
	until [ "$(wc -l <"$SD/pods.json.calls")" -ge "$calls" ] || [ "$SECONDS" -gt "$end" ]; do sleep 0.02; done
	spods "$(spod plain 140M)"
	wait_for "$SD/sync.err" "set: ml/plain .*140.00 MiB"
	kill "$SL" && wait "$SL" 2>/dev/null
	[ "$(grep -c ': set: ' "$SD/sync.err")" = 2 ] && [ "$(squota "$SP_")" = 140M ] &&
		ok "annotation-sync --interval: 120M applied once, a hand-set 130M left alone, the annotation changed to 140M applied" ||
		bad "annotation-sync --interval" "$(cat "$SD/sync.err")"

	# Two pods' jobs, each PID 1 in its own PID namespace (as in containers): the exporter labels them with their PIDs
	# here, which `limit set --pid` takes, so each pod's annotation reaches its own job.
	if [ "$(id -u)" = 0 ] && unshare --pid --fork --kill-child --mount-proc true 2>/dev/null; then
		for n in d e; do
			unshare --pid --fork --kill-child --mount-proc env "LD_PRELOAD=$SP$LIB" "LD_LIBRARY_PATH=$PWD/$T" \
				VRAMGUARD_SHM_DIR="$SJD" VRAMGUARD_REPORT=off NVIDIA_GPU_MEMORY_LIMITS=100M POD_NAME=train-$n \
				"$T/grower" "$SD/stop" 10 1 60 >"$SD/$n.out" 2>"$SD/$n.err" &
			SPIDS+=($!)
			wait_for "$SD/$n.out" '^granted' || bad "annotation-sync: namespaced job $n did not start" "$(cat "$SD/$n.err")"
			eval "S_$n=\$(pgrep -P $! | head -1)"
		done
		spods "$(spod train-d 50M)" "$(spod train-e 70M)"
		ssync --ceiling 1G --once
		# shellcheck disable=SC2154 # S_d, S_e: set by eval above
		grep -q "set: ml/train-d process $S_d (.*): quota 100.00 MiB -> 50.00 MiB" "$SD/sync.err" &&
			grep -q "set: ml/train-e process $S_e (.*): quota 100.00 MiB -> 70.00 MiB" "$SD/sync.err" &&
			[ "$(grep -c ': set: ' "$SD/sync.err")" = 2 ] && ! grep -q 'refused' "$SD/sync.err" &&
			ok "annotation-sync: two pods' jobs, both PID 1 in their namespaces: each gets its own annotation (50M, 70M) through its PID here ($S_d, $S_e)" ||
			bad "annotation-sync: PID namespaces" "$(cat "$SD/sync.err")"
	else
		skip "annotation-sync: two jobs with PID 1 in their own PID namespaces" "needs root and unshare --pid"
	fi
fi
done_testing

#!/usr/bin/env bash
# Cost of one `vramguard exporter` scrape with N processes (default 1000), each a real process holding a slot with
# its liveness lock (tests/integration/region_tool, no CUDA): N control segments (N files: the worst case, one open
# and mmap each), then N members of one shared region. Prints the scrape's own figure
# (vramguard_exporter_scrape_duration_seconds) and the wall time of a GET /metrics over HTTP, median of 5 each.
# Usage: bash bench/run_exporter.sh [N]   (after make test, or make build/vramguard build/tests/region_tool)
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
N=${1:-1000}
VG=$PWD/$B/vramguard
RT=$PWD/$B/tests/region_tool
DIR=$(mktemp -d /tmp/vg-bench-exporter.XXXXXX)
PIDS=()
# shellcheck disable=SC2317  # called by the trap
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
U=GPU-eeeeeeee-1111-2222-3333-444444444444
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
measure() { # LABEL
	"$VG" exporter --dir "$DIR" --listen 127.0.0.1:0 2>"$DIR/e.err" &
	local e=$!
	for _ in $(seq 100); do grep -q listening "$DIR/e.err" && break; sleep 0.05; done
	local url
	url=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+/metrics' "$DIR/e.err")
	local own=() http=() samples
	for _ in 1 2 3 4 5; do
		http+=("$(curl -sS --noproxy '*' -o "$DIR/m" -w '%{time_total}' "$url")")
		own+=("$(sed -n 's/^vramguard_exporter_scrape_duration_seconds //p' "$DIR/m")")
	done
	samples=$(grep -c '^vramguard_process_used_bytes{' "$DIR/m")
	kill "$e"
	wait "$e" 2>/dev/null || true
	printf '%-34s %9s %12s s %12s s %9s\n' "$1" "$samples" "$(printf '%s\n' "${own[@]}" | median)" \
		"$(printf '%s\n' "${http[@]}" | median)" "$(wc -c <"$DIR/m")"
}
start() { # ARGS...: N region_tool processes, all ready
	for i in $(seq "$N"); do
		"$RT" "$@" dev=0 uuid=$U total=80G quota=4G used=$((i % 512 + 1))M >"$DIR/out.$i" 2>&1 &
		PIDS+=($!)
	done
	for _ in $(seq 1200); do
		[ "$(cat "$DIR"/out.* 2>/dev/null | grep -c '^ready')" -ge "$N" ] && return 0
		sleep 0.1
	done
	echo "bench: only $(cat "$DIR"/out.* | grep -c '^ready') of $N processes got ready" >&2
	exit 1
}
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; PIDS=(); rm -f "$DIR"/out.*; }
printf '%-34s %9s %14s %14s %9s\n' "processes" "samples" "scrape (own)" "GET /metrics" "bytes"
start control "$DIR"
measure "$N control segments ($N files)"
stop_all
"$RT" create "$DIR/vramguard.bench" bench "" 0600 persistent >/dev/null
start join "$DIR/vramguard.bench"
measure "$N members of one shared region"
stop_all
echo "(median of 5 scrapes; $(nproc) CPUs, $(uname -m); $(date -u +%Y-%m-%d))"

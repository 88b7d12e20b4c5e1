#!/usr/bin/env bash
# Scrape latency of `vramguard exporter --listen` with 0, 8 and 64 clients idling or trickling at it, the server
# before issue 25's poll loop (one connection at a time) and now, in one run (bench/http_latency.py; the figures are
# in docs/PERFORMANCE.md). The old command is built once from OLD_REV (default ef9b02d: main before the loop) into
# $BUILD/bench-http-old-REV. The old server takes up to 2 s per client ahead of a scrape, so it gets OLD_SCRAPES
# (default 10) scrapes, the new one 200.
# Usage: bash bench/run_http.sh   (after make)
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
OLD_REV=${OLD_REV:-ef9b02d}
OLD=$B/bench-http-old-$OLD_REV
if [ ! -x "$OLD/build/vramguard" ]; then
	rm -rf "$OLD"
	mkdir -p "$OLD"
	git archive "$OLD_REV" | tar -x -C "$OLD"
	env -u BUILD -u MAKEFLAGS make -C "$OLD" -s build/vramguard >/dev/null
fi
echo "== $(nproc) CPUs, $(git rev-parse --short HEAD) against $OLD_REV"
python3 bench/http_latency.py --scrapes 200 --idle 0,8,64 new="$B/vramguard"
python3 bench/http_latency.py --scrapes "${OLD_SCRAPES:-10}" --idle 0,8,64 old="$OLD/build/vramguard" | tail -n +2

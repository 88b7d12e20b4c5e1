#!/usr/bin/env bash
# Soak (issue 5): tests/gpu/soak.py under a 3 GiB quota with periodic SIGUSR1 JSON reports, and the same job
# without vramguard at the same time (the GPU has room for both); then check: no crash, every report complete,
# the numbers identical, and at exit vramguard's usage equals PyTorch's reserved memory plus what other libraries
# (cuBLAS) allocated outside its caching allocator, site by site.  Usage: bash tests/gpu/soak.sh [seconds]
set -u
secs=${1:-180}
OUT=${OUT:-/tmp/vramguard-soak}
mkdir -p "$OUT"
LIB=${VG_LIB:-$PWD/build/libvramguard.so}
D=$(mktemp -d /tmp/vg-soak.XXXXXX)
python3 -u tests/gpu/soak.py --seconds "$secs" --signal-every 0 >"$D/ref.out" 2>"$D/ref.err" &
ref=$!
env LD_PRELOAD="$LIB" NVIDIA_GPU_MEMORY_LIMITS=3G VRAMGUARD_REPORT="$D/soak-%n-%r.json" VRAMGUARD_REPORT_FORMAT=json \
	python3 -u tests/gpu/soak.py --seconds "$secs" --signal-every 15 >"$D/vg.out" 2>"$D/vg.err"
vrc=$?
wait $ref
rrc=$?
cp "$D"/*.out "$D"/*.err "$OUT/" 2>/dev/null
python3 tests/lib/report_check.py soak "$D" "$vrc" "$rrc" | tee "$OUT/soak-result.txt"
rm -rf "$D"

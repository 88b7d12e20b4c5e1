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
python3 - "$D" "$vrc" "$rrc" <<'PY' | tee "$OUT/soak-result.txt"
import glob, json, re, sys
d, vrc, rrc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def result(path):
    t = open(path).read()
    m = re.search(r"result: checksum=(\S+) ooms=(\d+) steps=(\d+) signals=(\d+) seconds=(\S+)", t)
    r = re.search(r"reserved_at_end=(\d+)", t)
    return m, int(r.group(1)) if r else None
vm, vres = result(f"{d}/vg.out")
rm, _ = result(f"{d}/ref.out")
fails = []
if vrc != 0 or not vm: fails.append(f"vramguard run exit {vrc}")
if rrc != 0 or not rm: fails.append(f"reference run exit {rrc}")
reps = []
for f in sorted(glob.glob(f"{d}/soak-*.json")):
    try:
        reps.append(json.load(open(f)))
    except Exception as e:
        fails.append(f"{f}: not complete JSON ({e})")
sig = [r for r in reps if r["reason"] == "signal"]
ext = [r for r in reps if r["reason"] == "exit"]
if vm and len(sig) != int(vm.group(4)): fails.append(f"{len(sig)} signal reports for {vm.group(4)} signals")
if len(ext) != 1: fails.append(f"{len(ext)} exit reports")
if vm and rm and vm.group(1) != rm.group(1): fails.append(f"checksum {vm.group(1)} != reference {rm.group(1)}")
over = [r["devices"][0]["peak_bytes"] for r in reps if r["devices"][0]["peak_bytes"] > 3 << 30]
if over: fails.append(f"peak over the quota: {over}")
recon = ""
if ext and vres is not None:
    e = ext[0]
    used = e["devices"][0]["used_bytes"]
    c10 = sum(s["live_bytes"] for s in e["sites"] if any("CUDACachingAllocator" in f.get("symbol", "") for f in s["frames"]))
    other = sum(s["live_bytes"] for s in e["sites"]) - c10
    recon = (f"at exit vramguard used {used >> 20} MiB = caching-allocator sites {c10 >> 20} MiB + other sites "
             f"{other >> 20} MiB; torch.cuda.memory_reserved() {vres >> 20} MiB")
    if c10 != vres: fails.append(f"caching-allocator sites hold {c10} bytes, PyTorch reserved {vres}")
    if used != c10 + other: fails.append(f"used {used} != sum of sites {c10 + other}")
denied = ext[0]["devices"][0]["denied_count"] if ext else 0
fig = (f"{vm.group(3) if vm else '?'} steps in {vm.group(5) if vm else '?'} s, {vm.group(2) if vm else '?'} OOMs caught "
       f"({denied} denials), {len(sig)} signal reports + {len(ext)} exit report, all complete JSON; checksum "
       f"{vm.group(1) if vm else '?'} {'==' if vm and rm and vm.group(1) == rm.group(1) else '!='} reference; {recon}")
print(("PASS soak: " if not fails else "FAIL soak: " + "; ".join(fails) + "; ") + fig)
PY
rm -rf "$D"

# shellcheck shell=bash
# The reliability campaign, sourced by tests/run.sh after its own checks: fault injection on every hook of
# interposer/hooks.h, stress and signal storms against a tight quota, and process lifecycle (fork, exec, exit under
# load, dlopen/dlclose, two copies, SIGUSR1 handlers, constructors, a second preload library). Uses run.sh's prog,
# ok, bad, expect_err, expect_err_lines and $B $T $LIB $PRE $RD $LOG (and, when run.sh sets them for sanitizer
# builds, $SP, $FORKENV and $COPYENV). Bounded: about 12 s on 2 cores.

RL=$RD/reliability
rm -rf "$RL" && mkdir -p "$RL/faults" "$RL/stress" "$RL/storm" "$RL/fork1" "$RL/fork0" "$RL/exit" "$RL/sig"
MIB=$((1 << 20))
FE=${FORKENV:-}
CE=${COPYENV:-}

# Report checks (python3's json: 64-bit integers stay exact). Modes: faults DIR, valid MIN FILE..., zero MIN QUOTA
# FILE..., fork DIR KEPT_BYTES, exits DIR.
RELPY=$(cat <<'PY'
import glob, json, os, sys
bad = 0
def check(cond, what):
    global bad
    print(("ok - " if cond else "not ok - ") + what)
    bad += not cond
def load(p):
    with open(p) as f:
        return json.load(f)
def dev0(r):
    d = [x for x in r["devices"] if x["ordinal"] == 0]
    return d[0] if d else {"used_bytes": 0, "allocs": 0, "frees": 0, "quota_bytes": None}
def faults(d):
    by_hook = {}
    exps = sorted(glob.glob(d + "/expect-*.json"))
    reps = glob.glob(d + "/exit-*.json")
    check(len(exps) > 0 and len(reps) == len(exps), f"one exit report per run ({len(reps)} reports, {len(exps)} runs)")
    for e in exps:
        x = load(e)
        errs = by_hook.setdefault(x["hook"], [])
        p = f"{d}/exit-{x['pid']}.json"
        try:
            r = load(p)
        except Exception as ex:
            errs.append(f"{x['fail']}: {p}: {ex}")
            continue
        v = dev0(r)
        live = r["allocations"]["live"]
        site_bytes = sum(s["live_bytes"] for s in r["sites"])
        site_count = sum(s["live_count"] for s in r["sites"])
        st = r["streams"]
        got = dict(schema=r["schema"], reason=r["reason"], used=v["used_bytes"], live=live, site_bytes=site_bytes,
                   site_count=site_count, allocs=v["allocs"], frees=v["frees"], quota=v.get("quota_bytes"),
                   created=st["created"], destroyed=st["destroyed"], live_streams=sum(s["count"] for s in st["live"]),
                   pending=sum(s["count"] for s in st["destroyed_pending"]))
        want = dict(schema="vramguard.report/1", reason="exit", used=x["used"], live=x["live"], site_bytes=x["used"],
                    site_count=x["live"], allocs=x["allocs"], frees=x["allocs"] - x["live"], quota=x["quota"],
                    created=x["streams_created"], destroyed=x["streams_destroyed"],
                    live_streams=x["streams_created"] - x["streams_destroyed"], pending=x["pending_destroyed"])
        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        if diff:
            errs.append(f"{x['fail']}: (got, want) {diff}")
    for h, errs in by_hook.items():
        n = sum(1 for e in exps if load(e)["hook"] == h)
        check(not errs, f"{h:29s} {n} exit reports: used_bytes and sites = the double's live bytes, allocations.live = "
              f"its live objects, allocs/frees and streams counted once" + (f"; {len(errs)} differ, first: {errs[0]}" if errs else ""))
    check(not glob.glob(d + "/*.vgtmp.*"), "no temporary report files left")
def valid(paths, min_n):
    ok, errs = 0, []
    for p in paths:
        try:
            r = load(p)
            assert r["schema"] == "vramguard.report/1" and r["reason"] in ("signal", "exit"), "schema/reason"
            ok += 1
        except Exception as ex:
            errs.append(f"{os.path.basename(p)}: {ex}")
    check(not errs and ok >= min_n, f"{ok} report files, every one complete JSON with the schema (at least {min_n})"
          + (f"; {len(errs)} broken, first: {errs[0]}" if errs else ""))
    return [load(p) for p in paths if not errs]
def pids(path):
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []
def fork(d, kept):
    plain, execs = pids(d + "/plain-pids"), pids(d + "/exec-pids")
    files = sorted(glob.glob(d + "/r-*.json"))
    reps = valid(files, len(execs) + 1)
    by = {}
    for r in reps:
        by.setdefault(r["pid"], []).append(r)
    check(plain and not [p for p in plain if p in by],
          f"no report from the {len(plain)} plain children (their exit() ran the atexit handlers)")
    fresh = [p for p in execs if len(by.get(p, [])) == 1 and by[p][0]["sequence"] == 1 and by[p][0]["reason"] == "exit"
             and dev0(by[p][0])["used_bytes"] == kept and dev0(by[p][0])["allocs"] == 3
             and by[p][0]["allocations"]["live"] == 3]
    check(execs and len(fresh) == len(execs), f"{len(fresh)} of {len(execs)} exec'd children wrote one report of "
          f"their own: sequence 1, 3 allocations, {kept >> 20} MiB")
    rest = [p for p in by if p not in execs]
    check(len(rest) == 1 and len(by[rest[0]]) == 1 and dev0(by[rest[0]][0])["used_bytes"] == 0,
          f"the parent wrote one exit report, at zero ({[(p, len(by[p])) for p in rest]})")
def exits(d):
    runs = pids(d + "/exit-pids")
    files = sorted(glob.glob(d + "/r-*.json"))
    reps = valid(files, len(runs))
    got = sorted(r["pid"] for r in reps if r["reason"] == "exit")
    check(runs and got == sorted(runs), f"one complete exit report from each of the {len(runs)} runs that called exit(7)")
cmd = sys.argv[1]
if cmd == "fork":
    fork(sys.argv[2], int(sys.argv[3]))
elif cmd == "exits":
    exits(sys.argv[2])
elif cmd == "faults":
    faults(sys.argv[2])
elif cmd == "valid":   # valid MIN_FILES FILE...
    valid(sys.argv[3:], int(sys.argv[2]))
elif cmd == "zero":    # zero MIN_FILES QUOTA_BYTES FILE...: all valid; the exit report shows nothing left
    reps = valid(sys.argv[4:], int(sys.argv[2]))
    ex = [r for r in reps if r["reason"] == "exit"]
    check(len(ex) == 1, f"exactly one exit report ({len(ex)})")
    if ex:
        r = ex[0]
        v = dev0(r)
        check(v["used_bytes"] == 0 and r["allocations"]["live"] == 0 and all(s["live_bytes"] == 0 for s in r["sites"])
              and v["allocs"] == v["frees"], f"exit report: used_bytes 0, allocations.live 0, every site 0, allocs "
              f"{v['allocs']} == frees {v['frees']}")
        q = int(sys.argv[3])
        check(all(dev0(x)["used_bytes"] <= q and dev0(x)["peak_bytes"] <= q for x in reps),
              f"every report within the quota (max peak {max(dev0(x)['peak_bytes'] for x in reps)} <= {q})")
sys.exit(1 if bad else 0)
PY
)

# The figures line of the last prog (from the log), shown under its result.
figures() { # REGEX
	local line
	line=$(grep -E -- "$1" "$LOG" | tail -n 1)
	[ -n "$line" ] && sed -E 's/^(not )?ok [0-9]+ - /# /' <<<"$line"
}

echo "== reliability: fault injection on every hook (FAKECUDA_FAIL=HOOK:N[+]=CODE, N=1,2,3, once and from then on)"
# The balance these runs check is the allocations' (the double counts stream-ordered allocations by their size):
# VRAMGUARD_COUNT=allocations. Device counting has its own checks (tests/integration/physical.c).
prog "fault campaign: each run balanced after every step (cuMemGetInfo_v2 = quota - driver's bytes)" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=1024 -- $T/faults campaign "$RL/faults"
figures '^(not )?ok [0-9]+ - campaign: '
prog "  the exit reports agree with the double (used, sites, live, allocs/frees, streams)" -- python3 -c "$RELPY" faults "$RL/faults"
out=$(env LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_AUTOCTX=0 FAKECUDA_FAIL=cuMemAlloc_v2:2 \
	FAULTS_DIR="$RL" timeout 60 $T/faults one cuMemAlloc_v2 2>&1)
if grep -q '^not ok' <<<"$out"; then ok "  control: without the preload the balance checks fail"; else
	bad "  control: without the preload the balance checks should fail"; fi
prog "a failed first sizing of the device (cuDeviceTotalMem_v2:1) keeps the absolute quota" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=1024 FAKECUDA_FAIL=cuDeviceTotalMem_v2:1=999 VRAMGUARD_REPORT=off -- $T/faults sizing

echo "== reliability: stress and signal storms"
prog "8 threads x 3 s: every allocation kind, frees, busy streams, cuMemGetInfo_v2, SIGUSR1 reports, 256 MiB quota" \
	$PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=256 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/stress/r-%p-%n-%r.json" \
	-- timeout 60 $T/stress race 3
figures '^ok [0-9]+ - 8 threads x '
prog "  every report complete JSON within the quota; the exit report at exact zero" -- \
	python3 -c "$RELPY" zero 10 $((256 * MIB)) "$RL"/stress/r-*.json
out=$(env LD_LIBRARY_PATH="$PWD/$T" NVIDIA_GPU_MEMORY_LIMITS=256 timeout 60 $T/stress race 0.3 2>&1)
if grep -Eq '^not ok [0-9]+ - the driver never held more than the quota' <<<"$out"; then
	ok "  control: without the preload the driver goes over the quota"
else bad "  control: without the preload the quota check should fail"; fi
prog "signal storm: 5000 SIGUSR1 (another process + a thread) while 4 threads allocate" $PRE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=256 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/storm/r-%p-%n-%r.json" \
	-- timeout 60 $T/stress storm 5000
figures '^ok [0-9]+ - survived '
prog "  every report complete JSON; the exit report at exact zero" -- \
	python3 -c "$RELPY" zero 2 $((256 * MIB)) "$RL"/storm/r-*.json

echo "== reliability: process lifecycle"
prog "20 forks while 4 threads allocate (FAKECUDA_FORK_OK=1): plain children and exec'd ones" $PRE \
	$FE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 FAKECUDA_FORK_OK=1 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/fork1/r-%p-%n-%r.json" -- timeout 60 $T/lifecycle fork "$RL/fork1"
prog "  no report from a plain child; an exec'd child is a fresh process with its own" -- \
	python3 -c "$RELPY" fork "$RL/fork1" $((192 * MIB))
prog "20 forks while 4 threads allocate (the driver refuses the child, like the real one)" $PRE $FE \
	VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/fork0/r-%p-%n-%r.json" \
	-- timeout 60 $T/lifecycle fork "$RL/fork0"
prog "  the same reports" -- python3 -c "$RELPY" fork "$RL/fork0" $((192 * MIB))
prog "exit(7) while 4 threads are inside the driver, 10 runs" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$RL/exit/r-%p-%n-%r.json" -- timeout 100 $T/lifecycle exitloop "$RL/exit"
prog "  one complete exit report per run" -- python3 -c "$RELPY" exits "$RL/exit"
prog "dlopen/dlclose of libcuda.so.1 by the application, 5 cycles (dlsym route)" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_REPORT=off -- $T/dl_lifecycle cycles
prog "a copy dlopened RTLD_GLOBAL before the first CUDA call, which goes through it; then dlclosed" $PRE \
	$FE $CE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/dl_lifecycle copy "$PWD/$T/copy/libvramguard.so"
expect_err_lines "  one exit report (the preloaded library's)" '^vramguard: report \(exit\)' 1
prog "the application's SIGUSR1 handler, installed before 8 threads' racing first CUDA use, is kept" $PRE \
	NVIDIA_GPU_MEMORY_LIMITS=4096 "VRAMGUARD_REPORT=$RL/sig/before-%p-%n-%r.json" -- $T/lifecycle sig_before
expect_err_lines "  vramguard says once that signal reports are off" \
	'^vramguard: warning: SIGUSR1 already has a handler in this process; reports on signal are off' 1
prog "the application's SIGUSR1 handler installed after the first CUDA use replaces ours; chaining still reports" \
	$PRE VRAMGUARD_COUNT=allocations NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$RL/sig/sigafter-%p-%n-%r.json" \
	-- $T/lifecycle sig_after "$RL/sig"
prog "  its reports complete JSON (the chained signal one and the exit one)" -- python3 -c "$RELPY" valid 2 "$RL"/sig/sigafter-*.json
if [ -x "$T/ctor" ]; then
	prog "CUDA from constructors (a linked library's and the program's): the quota holds" $PRE \
		NVIDIA_GPU_MEMORY_LIMITS=2048 VRAMGUARD_REPORT=off -- $T/ctor
else
	bad "CUDA from constructors: $T/ctor not built (Makefile rules for tests/integration/ctor/)"
fi
for order in "$LIB $PWD/$T/libnext.so" "$PWD/$T/libnext.so $LIB"; do
	prog "a second preload library using dlsym(RTLD_NEXT): LD_PRELOAD='${order//$PWD\//}'" "LD_PRELOAD=${SP:-}$order" \
		NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_REPORT=off -- $T/lifecycle next
	expect_err "  libnext got libc's getppid" '^libnext: RTLD_NEXT ok$'
done
if ls "$RL"/*/*.vgtmp.* >/dev/null 2>&1; then bad "reliability: temporary report files were left behind"; else
	ok "reliability: no temporary report files left behind"; fi

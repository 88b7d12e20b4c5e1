#!/usr/bin/env python3
"""Checks on vramguard JSON reports for tests/run.sh. Each check prints "ok - ..." or "not ok - ..." lines
(counted like the integration programs' own) and exits 1 if any failed."""
import glob
import json
import os
import sys

failed = False
MiB = 1 << 20


def check(cond, what):
    global failed
    print(("ok - " if cond else "not ok - ") + what)
    failed |= not cond


def load(path):
    with open(path) as f:
        return json.load(f)


SCHEMA_KEYS = ["schema", "reason", "sequence", "pid", "time", "time_ns", "command", "hostname", "version",
               "driver", "backtrace_depth", "count", "devices", "sites", "allocations", "streams"]


def schema_ok(r, what):
    missing = [k for k in SCHEMA_KEYS if k not in r]
    check(r.get("schema") == "vramguard.report/1" and not missing, f"{what}: schema keys present {missing or ''}")


def site_by_symbol(r, name):
    return [s for s in r["sites"] if any(f.get("symbol") == name for f in s["frames"])]


def site_ids(r, name):
    return {s["id"] for s in site_by_symbol(r, name)}


def leaks(path, check_mode):
    r = load(path)
    schema_ok(r, "exit report")
    check(r["reason"] == "exit" and r["sequence"] == 1, "reason exit, sequence 1")
    check(r["driver"] == "alive", f"driver alive at exit ({r['driver']})")
    lk = site_by_symbol(r, "leak_buffers")
    check(len(lk) == 1 and lk[0]["live_count"] == 3 and lk[0]["live_bytes"] == 3 * 64 * MiB,
          "the leak_buffers site holds exactly 3 x 64 MiB " + str([(s["live_count"], s["live_bytes"]) for s in lk]))
    check(lk and lk[0]["api"] == "cuMemAlloc_v2", "the site names its entry point")
    f0 = lk[0]["frames"][0] if lk else {}
    check(f0.get("symbol") == "leak_buffers" and f0.get("module", "").endswith("/leaky")
          and int(f0.get("module_offset", "0"), 16) > 0, f"innermost frame is leak_buffers in leaky ({f0})")
    check(any(f.get("symbol") == "main" for f in (lk[0]["frames"] if lk else [])), "the stack reaches main")
    bal = site_by_symbol(r, "balanced")
    check(len(bal) == 1 and bal[0]["live_count"] == 0 and bal[0]["total_allocs"] == 1,
          "the balanced site is listed with nothing live")
    check(r["sites"][0]["live_bytes"] == 3 * 64 * MiB, "sites are sorted worst first")
    dev = r["devices"][0]
    check(dev["used_bytes"] == 3 * 64 * MiB and dev["peak_bytes"] == 3 * 64 * MiB + 32 * MiB
          and dev["allocs"] == 4 and dev["frees"] == 1 and dev["quota_bytes"] == 4096 * MiB,
          f"device 0 counters exact ({dev})")
    al = r["allocations"]
    check(al["live"] == 3 and len(al["largest"]) == 3 and all(a["bytes"] == 64 * MiB for a in al["largest"]),
          "three live allocations listed")
    st = r["streams"]
    check(st["created"] == 3 and st["destroyed"] == 2, f"streams created/destroyed 3/2 ({st['created']}/{st['destroyed']})")
    mk, fin = site_ids(r, "make_stream"), site_ids(r, "finish")
    dp = st["destroyed_pending"]
    if check_mode == "off":
        check(dp == [], "STREAM_CHECK=off: nothing recorded")
    else:
        check(len(dp) == 1 and dp[0]["count"] == 1 and dp[0]["create_site"] in mk and dp[0]["destroy_site"] in fin,
              f"busy stream recorded with both sites (create in make_stream, destroy in finish): {dp}")
        check(dp and dp[0]["synchronized"] == (check_mode == "sync"), "synchronized flag matches the mode")
    live = st["live"]
    check(len(live) == 1 and live[0]["count"] == 1 and live[0]["create_site"] in mk and live[0]["pending"] == 0,
          f"one live stream, created in make_stream, idle: {live}")


def storm(pattern, spaced):
    files = sorted(glob.glob(pattern))
    reps = [load(f) for f in files]
    sig = [r for r in reps if r["reason"] == "signal"]
    ext = [r for r in reps if r["reason"] == "exit"]
    check(len(ext) == 1, f"one exit report ({len(ext)})")
    check(spaced + 1 <= len(sig) <= spaced + 500, f"signal reports: {len(sig)} (storm coalesced, spaced ones each)")
    seqs = sorted(r["sequence"] for r in reps)
    check(seqs == list(range(1, len(reps) + 1)), "sequence numbers 1..N without gaps")
    check(all(os.path.basename(f) == f"r-{r['pid']}-{r['sequence']}-{r['reason']}.json" for f, r in zip(files, reps)),
          "%p, %n and %r expanded in every file name")
    ok = True
    for r in reps:
        d = r["devices"][0]
        ok &= d["used_bytes"] <= 4096 * MiB and d["used_bytes"] >= 3 * 64 * MiB and d["peak_bytes"] >= d["used_bytes"]
    check(ok, "every report's counters are sane (used within [leak, quota], peak >= used)")
    e = ext[0] if ext else None
    if e:
        live = sum(s["live_bytes"] for s in e["sites"])
        check(live == e["devices"][0]["used_bytes"] == 3 * 64 * MiB,
              f"at exit the sites add up to the device's usage ({live})")


def soft(directory, crossed, used):
    """The reports of tests/integration/softlimit.c: a 4 GiB quota, a 3 GiB request from NVIDIA_GPU_MEMORY_REQUEST."""
    GiB = 1024 * MiB
    sl = sorted(glob.glob(os.path.join(directory, "r-soft-limit-*.json")))
    ex = sorted(glob.glob(os.path.join(directory, "r-exit-*.json")))
    check(len(sl) == (1 if crossed else 0), f"{len(sl)} soft-limit report(s), want {1 if crossed else 0}")
    check(len(ex) == 1, f"one exit report ({len(ex)})")
    reps = [(f, load(f)) for f in sl + ex]
    for f, r in reps:
        name = os.path.basename(f)
        schema_ok(r, name)
        check(name == f"r-{r['reason']}-{r['sequence']}.json", f"{name}: %r and %n expanded")
        d = r["devices"][0]
        check(d["soft_limit_bytes"] == 3 * GiB and d["soft_limit_source"] == "NVIDIA_GPU_MEMORY_REQUEST",
              f"{name}: device 0's soft limit is 3 GiB from NVIDIA_GPU_MEMORY_REQUEST "
              f"({d.get('soft_limit_bytes')}, {d.get('soft_limit_source')})")
        check(d["quota_bytes"] == 4 * GiB and d["denied_count"] == 0, f"{name}: quota 4 GiB, nothing denied")
    if crossed and sl:
        r = load(sl[0])
        check(r["reason"] == "soft-limit" and r["sequence"] == 1, "the soft-limit report comes first")
        check(r["devices"][0]["used_bytes"] > 3 * GiB, f"it shows usage above the request ({r['devices'][0]['used_bytes']})")
    if ex:
        r = load(ex[0])
        check(r["devices"][0]["used_bytes"] == used, f"exit report: {used} bytes in use ({r['devices'][0]['used_bytes']})")


def main():
    cmd = sys.argv[1]
    if cmd == "leaks":
        leaks(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "warn")
    elif cmd == "storm":
        storm(sys.argv[2], int(sys.argv[3]))
    elif cmd == "soft":
        soft(sys.argv[2], sys.argv[3] == "crossed", int(sys.argv[4]))
    elif cmd == "valid":
        for f in sys.argv[2:]:
            schema_ok(load(f), os.path.basename(f))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

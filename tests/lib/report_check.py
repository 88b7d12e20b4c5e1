#!/usr/bin/env python3
"""The tests' one checker of vramguard's JSON: reports ("vramguard.report/1"), `vramguard top --json`
("vramguard.top/1") and `vramguard limit show --json` ("vramguard.limits/1"). Standard library only (python3's json
keeps 64-bit integers exact); run from the repository root: python3 tests/lib/report_check.py SUBCOMMAND ARGS...

Each subcommand speaks the protocol of the suite that calls it (docs/TESTING.md):
  CPU suite (tests/run.sh and the scripts it sources): one "ok - what" / "not ok - what" line per assertion (prog
    counts them as "(N checks)"), exit status 1 when one failed.
  GPU suite (tests/gpu/run.sh): "ok ..." / "BAD ..." lines and a last "figures: ..." line, exit status 1 when
    something was BAD.
  value: prints one value for the caller's own message; exit status 1 and the reason on stderr when the JSON is
    not what it reads.
JSON that cannot be read, or lacks a key a check needs, is a failure in the subcommand's protocol, never a pass.
A usage error exits 2. TOP is top's (or limit show's) JSON as one argument, or - to read it from stdin.

Reports (CPU suite):
  leaks FILE [warn|sync|off]      tests/integration/leaky.c's leaks: exact sites, frames, counters, streams
  storm GLOB SPACED               a SIGUSR1 storm's reports: one exit, coalesced signals, %p/%n/%r, sequence
  soft DIR crossed|none USED      tests/integration/softlimit.c's soft-limit and exit reports
  pysites FILE SCRIPT [off]       tests/integration/python/sites.py's report: each "# site:" line is a site with
                                  that file, line and function; two lines, two sites; the C thread native only
  pyfake FILE good|none           tests/integration/pyfake.c's report: fake.py:12 in fake_fn, or no Python frames
  schema FILE...                  every file a report with all the schema's top-level keys
  modules FILE                    every module the frames name listed once, no other; its base agrees with the
                                  frames; its build ID what `readelf -n` reads in the file (40 hex digits, or "")
  growth leak|steady DIR [STEP_MS DENIED_NS]  tests/integration/growth.c's reports: the growing site flagged at
                                  its rate, the steady one never, the forecast against the denial, one per window
  growth python DIR SCRIPT STEP_MS DENIED_NS  tests/integration/python/leak.py's: its "site: append" line grows
  timeline DIR [churn]            tests/integration/timeline.c's reports: each device's timeline bounded, in order,
                                  ending at the report; the phases (rise, peak, denials, fall), or a churn's bound
  faults DIR                      the fault campaign's exit reports against the double's expect-*.json
  valid MIN FILE...               at least MIN files, each complete JSON with the schema, reason signal or exit
  zero MIN QUOTA FILE...          valid; one exit report at exact zero; every report within QUOTA bytes
  fork DIR KEPT                   forks: no report from plain children, one of their own from exec'd ones
  exits DIR                       one complete exit report from each run that called exit(7)
  dumped FILE                     (value) a complete signal report: prints devices[0].used_bytes
top and limit show --json (CPU suite):
  top TOP A B C UA UB             region_cli.sh's three processes, their quotas, the totals and the region
  pids TOP PIDS UUID USED [KEY=VALUE...]      exactly these processes; the GPU's usage; top-level values
  limits TOP NAME SPEC CREATED LIMIT          (limit show) the region's spec in force and its device limit
  requested TOP PID SPEC KIND APPLIED [QUOTA] (limit show) a process's pending or applied request
  toprequest TOP PID SPEC APPLIED OWN_QUOTA   the same request as top shows it
  writable TOP NAME true|false    the region's writable flag
  readonly TOP A E UUID           a live member and an exited one left out of the totals
  members TOP NAME PIDS USED [KEY=VALUE...]   a region's members and usage, agreeing with the totals' budget
  denied TOP NAME PID:N,...       each member was refused the N allocations it was told of, the region all of them
  proc TOP PID USED / once TOP PID / absent TOP PID      a process listed once (with that usage) / not listed
  noregion TOP NAME [KEY=VALUE...]            the region and its members not listed
  range TOP NAME KEY MIN MAX      the region's device 0 KEY within [MIN, MAX]
  gpus TOP UUID USED PROCESSES    one physical GPU's total
  unverifiable TOP PID            a planted member: state unverifiable, alive null, counted, not reclaimed
  slots TOP NAME SLOTS MEMBERS USED           a region's capacity, members and device 0 usage
  top-members TOP NAME            (value) prints "PROCESSES MIB" of the region's members
GPU suite:
  pyleak FILE SCRIPT torch|cupy  tests/gpu/pysites.py's report: leak_here's file and line hold its 192 MiB
  leak FILE                       examples/leaky.cu's exit report: leak_buffers' 3 x 64 MiB are live
  stream FILE [--sync]            ... its busy stream: destroyed_pending from make_stream to finish
  signal --ref OUT --run OUT FILE...  torch_train.py's dumps: 3 "signal" + 1 "exit", result as without preload
  torch_exit FILE                 a PyTorch job's exit report: driver alive, the pool's live bytes
  denial FILE                     ops_torch.py denial's report at the refusal: live sites naming c10 frames
  threshold DIR                   ops_torch.py threshold's reports: one "threshold" at WARN_AT=80%, one "exit"
  sites FILE                      (value) prints how many sites the report lists
  soak DIR VRC RRC                tests/gpu/soak.sh's runs: prints "PASS soak: ..." or "FAIL soak: ..."
"""
import glob
import json
import os
import re
import sys
import traceback

REPORT_SCHEMA = "vramguard.report/1"
# The revision this tree writes: report/report.h's VG_REPORT_REVISION.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "report", "report.h")) as _h:
    REVISION = int(re.search(r"^#define VG_REPORT_REVISION (\d+)", _h.read(), re.M).group(1))
TOP_SCHEMA = "vramguard.top/1"
LIMITS_SCHEMA = "vramguard.limits/1"
# The report's top-level keys (docs/report-format.md).
REPORT_KEYS = ["schema", "reason", "sequence", "pid", "time", "time_ns", "command", "hostname", "version",
               "driver", "backtrace_depth", "count", "devices", "sites", "allocations", "streams"]
# What the checks of top's and limit show's documents read at the top level.
TOP_KEYS = ["processes", "totals", "regions"]
LIMITS_KEYS = ["regions"]
MiB = 1 << 20
GiB = 1 << 30


class Unreadable(Exception):
    """JSON the checks cannot read: str() says which and why."""

    def __init__(self, what, why, cause=None):
        super().__init__(f"{what}: {why}")
        self.why = why
        self.cause = cause or why      # the parser's own words, where there are some


# ---- reading

def load(path):
    """One JSON file (a report): its object, or Unreadable naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Unreadable(path, f"not readable as JSON: {e}", str(e)) from None


def parse_doc(text, schema, keys):
    """top's or limit show's JSON, given as text: the object, with its schema and the keys the checks read."""
    what = schema.split(".")[1].split("/")[0]
    if text == "-":
        text = sys.stdin.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise Unreadable(f"{what} JSON", f"not readable ({e}): {text[:200]!r}") from None
    if not isinstance(doc, dict):
        raise Unreadable(f"{what} JSON", f"not an object: {text[:200]!r}")
    if doc.get("schema") != schema:
        raise Unreadable(f"{what} JSON", f"schema {doc.get('schema')!r}, want {schema!r}")
    missing = [k for k in keys if not isinstance(doc.get(k), list)]
    if missing:
        raise Unreadable(f"{what} JSON", f"no list {', '.join(map(repr, missing))}")
    return doc


def top_doc(text):
    return parse_doc(text, TOP_SCHEMA, TOP_KEYS)


def limits_doc(text):
    return parse_doc(text, LIMITS_SCHEMA, LIMITS_KEYS)


def pid_file(path):
    """A file of whitespace-separated pids (written by the lifecycle programs); [] when there is none."""
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def id_set(text):
    """"1,2,3" -> {1, 2, 3}; "" -> set()."""
    return {int(x) for x in text.split(",") if x}


# ---- a report's parts

# What a report says of a device it does not list (a report written before the process touched it): every counter
# zero. A check may read any of these keys of dev0(); a stand-in lacking one failed a check only when a report came
# before the first allocation (KeyError: 'peak_bytes', in .ci/run on a fresh clone).
UNTOUCHED_DEVICE = {"used_bytes": 0, "peak_bytes": 0, "allocs": 0, "frees": 0, "denied_count": 0, "denied_bytes": 0,
                    "largest_bytes": 0, "allocated_bytes": 0, "pool_reserved_bytes": 0, "pool_live_bytes": 0,
                    "graph_bytes": 0, "driver_bytes": 0, "quota_bytes": None}


def dev0(r):
    """Device ordinal 0, or zero counters when the report lists none (a run that never touched it)."""
    d = [x for x in r["devices"] if x["ordinal"] == 0]
    return d[0] if d else dict(UNTOUCHED_DEVICE, ordinal=0)


def names(symbol, want, clones):
    """A frame's symbol names function `want`; with clones, a compiler clone of it too (want.constprop.0)."""
    return symbol == want or (clones and symbol.startswith(want + "."))


def frame_index(site, want, clones=False):
    for i, f in enumerate(site.get("frames") or []):
        if names(f.get("symbol") or "", want, clones):
            return i
    return -1


def sites_naming(r, want, clones=False):
    """The sites with a frame in function `want`."""
    return [s for s in r.get("sites") or [] if frame_index(s, want, clones) >= 0]


def site_ids(r, want):
    return {s["id"] for s in sites_naming(r, want)}


def sites_live(r):
    """(bytes, count) live over all sites."""
    return sum(s["live_bytes"] for s in r["sites"]), sum(s["live_count"] for s in r["sites"])


def brief(site):
    fr = site.get("frames") or []
    return " < ".join((f.get("symbol") or "??") for f in fr[:6]) + (" < ..." if len(fr) > 6 else "")


def mib(n):
    return f"{n / MiB:.2f} MiB"


# ---- top's and limit show's parts

def procs(doc):
    return {p["pid"]: p for p in doc["processes"]}


def total(doc, uuid):
    t = [x for x in doc["totals"] if x["uuid"] == uuid]
    return t[0] if t else None


def regions_named(doc, name):
    return [x for x in doc["regions"] if x["name"] == name]


def region(doc, name):
    """The region NAME when it is listed exactly once, else None."""
    r = regions_named(doc, name)
    return r[0] if len(r) == 1 else None


def used(p):
    return sum(d["used_bytes"] for d in p["devices"])


def key_values(c, doc, pairs, reg=None):
    """KEY=VALUE checks on top-level values; region.KEY on the region reg's."""
    for kv in pairs:
        k, v = kv.split("=", 1)
        got = (reg or {}).get(k[7:]) if k.startswith("region.") else doc.get(k)
        c.check(str(got) == v, "%s = %s (got %s)" % (k, v, got))


# ---- verdicts

class Checks:
    """The verdicts of one subcommand, printed in its suite's protocol as they are made."""

    def __init__(self, style):
        self.style = style          # "tap" (CPU suite), "gpu" or "value"
        self.bad = []

    def check(self, cond, what):
        """CPU suite: one line per assertion."""
        print(("ok - " if cond else "not ok - ") + what)
        if not cond:
            self.bad.append(what)
        return cond

    def ok(self, msg):
        print("ok " + msg)

    def fail(self, msg):
        """A failure in this subcommand's protocol."""
        self.bad.append(msg)
        if self.style == "tap":
            print("not ok - " + msg)
        elif self.style == "gpu":
            print("BAD " + msg)
        else:
            print("report_check: " + msg, file=sys.stderr)

    def finish(self, figures=None):
        if figures is not None:
            print("figures: " + figures)
        sys.stdout.flush()
        sys.exit(1 if self.bad else 0)


# ---- reports, CPU suite

def schema_ok(c, r, what):
    missing = [k for k in REPORT_KEYS if k not in r]
    c.check(r.get("schema") == REPORT_SCHEMA and not missing, f"{what}: schema keys present {missing or ''}")


def cmd_leaks(c, a):
    path, check_mode = a[0], a[1] if len(a) > 1 else "warn"
    r = load(path)
    schema_ok(c, r, "exit report")
    c.check(r["reason"] == "exit" and r["sequence"] == 1, "reason exit, sequence 1")
    c.check(r["driver"] == "alive", f"driver alive at exit ({r['driver']})")
    lk = sites_naming(r, "leak_buffers")
    c.check(len(lk) == 1 and lk[0]["live_count"] == 3 and lk[0]["live_bytes"] == 3 * 64 * MiB,
            "the leak_buffers site holds exactly 3 x 64 MiB " + str([(s["live_count"], s["live_bytes"]) for s in lk]))
    c.check(lk and lk[0]["api"] == "cuMemAlloc_v2", "the site names its entry point")
    f0 = lk[0]["frames"][0] if lk else {}
    c.check(f0.get("symbol") == "leak_buffers" and f0.get("module", "").endswith("/leaky")
            and int(f0.get("module_offset", "0"), 16) > 0, f"innermost frame is leak_buffers in leaky ({f0})")
    c.check(any(f.get("symbol") == "main" for f in (lk[0]["frames"] if lk else [])), "the stack reaches main")
    bal = sites_naming(r, "balanced")
    c.check(len(bal) == 1 and bal[0]["live_count"] == 0 and bal[0]["total_allocs"] == 1,
            "the balanced site is listed with nothing live")
    c.check(r["sites"][0]["live_bytes"] == 3 * 64 * MiB, "sites are sorted worst first")
    dev = r["devices"][0]
    c.check(dev["used_bytes"] == 3 * 64 * MiB and dev["peak_bytes"] == 3 * 64 * MiB + 32 * MiB
            and dev["allocs"] == 4 and dev["frees"] == 1 and dev["quota_bytes"] == 4096 * MiB,
            f"device 0 counters exact ({dev})")
    al = r["allocations"]
    c.check(al["live"] == 3 and len(al["largest"]) == 3 and all(x["bytes"] == 64 * MiB for x in al["largest"]),
            "three live allocations listed")
    st = r["streams"]
    c.check(st["created"] == 3 and st["destroyed"] == 2,
            f"streams created/destroyed 3/2 ({st['created']}/{st['destroyed']})")
    mk, fin = site_ids(r, "make_stream"), site_ids(r, "finish")
    dp = st["destroyed_pending"]
    if check_mode == "off":
        c.check(dp == [], "STREAM_CHECK=off: nothing recorded")
    else:
        c.check(len(dp) == 1 and dp[0]["count"] == 1 and dp[0]["create_site"] in mk and dp[0]["destroy_site"] in fin,
                f"busy stream recorded with both sites (create in make_stream, destroy in finish): {dp}")
        c.check(dp and dp[0]["synchronized"] == (check_mode == "sync"), "synchronized flag matches the mode")
    live = st["live"]
    c.check(len(live) == 1 and live[0]["count"] == 1 and live[0]["create_site"] in mk and live[0]["pending"] == 0,
            f"one live stream, created in make_stream, idle: {live}")


def readelf_build_id(path):
    """The GNU build ID `readelf -n` reads in the file, "" if it has none."""
    import subprocess
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=False).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else ""


def cmd_modules(c, a):
    r = load(a[0])
    mods = r["modules"]
    paths = [m["path"] for m in mods]
    named = {f["module"] for s in r["sites"] for f in s["frames"] if f["module"]}
    c.check(len(paths) == len(set(paths)), f"each module listed once ({len(paths)})")
    c.check(set(paths) == named, f"the modules are exactly those the frames name: {sorted(set(paths) ^ named)}")
    for m in mods:
        bases = {int(f["address"], 16) - int(f["module_offset"], 16)
                 for s in r["sites"] for f in s["frames"] if f["module"] == m["path"]}
        c.check(bases == {int(m["base"], 16)}, f"{m['path']}: base {m['base']} is every frame's address - offset")
        if not os.path.exists(m["path"]):
            c.check(m["build_id"] == "" or re.fullmatch(r"[0-9a-f]+", m["build_id"]),
                    f"{m['path']} (not a file here): build ID hex or empty")
            continue
        want = readelf_build_id(m["path"])
        c.check(m["build_id"] == want and (want == "" or re.fullmatch(r"[0-9a-f]{40}", want)),
                f"{m['path']}: build ID {m['build_id']!r} is readelf -n's {want!r}")


def cmd_storm(c, a):
    pattern, spaced = a[0], int(a[1])
    files = sorted(glob.glob(pattern))
    reps = [load(f) for f in files]
    sig = [r for r in reps if r["reason"] == "signal"]
    ext = [r for r in reps if r["reason"] == "exit"]
    c.check(len(ext) == 1, f"one exit report ({len(ext)})")
    # The storm's 500 signals coalesce; each spaced one was answered by a report made after it (leaky.c waits for
    # and checks that): at least one report, at most one a signal, and in practice far fewer.
    c.check(1 <= len(sig) <= spaced + 500, f"signal reports: {len(sig)} (storm coalesced)")
    seqs = sorted(r["sequence"] for r in reps)
    c.check(seqs == list(range(1, len(reps) + 1)), "sequence numbers 1..N without gaps")
    c.check(all(os.path.basename(f) == f"r-{r['pid']}-{r['sequence']}-{r['reason']}.json"
                for f, r in zip(files, reps)), "%p, %n and %r expanded in every file name")
    sane = True
    for r in reps:
        d = r["devices"][0]
        sane &= 3 * 64 * MiB <= d["used_bytes"] <= 4096 * MiB and d["peak_bytes"] >= d["used_bytes"]
    c.check(sane, "every report's counters are sane (used within [leak, quota], peak >= used)")
    if ext:
        e = ext[0]
        live = sites_live(e)[0]
        d = e["devices"][0]
        c.check(live == d["used_bytes"] == 3 * 64 * MiB,
                f"at exit the sites add up to the device's usage (sites {live}, used {d['used_bytes']}, allocated "
                f"{d.get('allocated_bytes')}, driver {d.get('driver_bytes')} measured + {d.get('driver_headroom_bytes')} "
                f"charged beyond; want {3 * 64 * MiB})")


def cmd_soft(c, a):
    """The reports of tests/integration/softlimit.c: a 4 GiB quota, a 3 GiB request from NVIDIA_GPU_MEMORY_REQUEST."""
    directory, crossed, want_used = a[0], a[1] == "crossed", int(a[2])
    sl = sorted(glob.glob(os.path.join(directory, "r-soft-limit-*.json")))
    ex = sorted(glob.glob(os.path.join(directory, "r-exit-*.json")))
    c.check(len(sl) == (1 if crossed else 0), f"{len(sl)} soft-limit report(s), want {1 if crossed else 0}")
    c.check(len(ex) == 1, f"one exit report ({len(ex)})")
    for f in sl + ex:
        r = load(f)
        name = os.path.basename(f)
        schema_ok(c, r, name)
        c.check(name == f"r-{r['reason']}-{r['sequence']}.json", f"{name}: %r and %n expanded")
        d = r["devices"][0]
        c.check(d["soft_limit_bytes"] == 3 * GiB and d["soft_limit_source"] == "NVIDIA_GPU_MEMORY_REQUEST",
                f"{name}: device 0's soft limit is 3 GiB from NVIDIA_GPU_MEMORY_REQUEST "
                f"({d.get('soft_limit_bytes')}, {d.get('soft_limit_source')})")
        c.check(d["quota_bytes"] == 4 * GiB and d["denied_count"] == 0, f"{name}: quota 4 GiB, nothing denied")
    if crossed and sl:
        r = load(sl[0])
        c.check(r["reason"] == "soft-limit" and r["sequence"] == 1, "the soft-limit report comes first")
        c.check(r["devices"][0]["used_bytes"] > 3 * GiB,
                f"it shows usage above the request ({r['devices'][0]['used_bytes']})")
    if ex:
        r = load(ex[0])
        c.check(r["devices"][0]["used_bytes"] == want_used,
                f"exit report: {want_used} bytes in use ({r['devices'][0]['used_bytes']})")


def growth_sites_of(c, r, name):
    """Device 0's followed sites by the function that allocates ({"grow_one": {...}, "hold_steady": {...}})."""
    d = dev0(r)
    c.check(r.get("schema_revision") == REVISION, f"{name}: schema_revision {REVISION} ({r.get('schema_revision')})")
    fn = {s["id"]: next((f["symbol"] for f in s["frames"] if f["symbol"] in ("grow_one", "hold_steady")), None)
          for s in r["sites"]}
    g = d.get("growth")
    if not c.check(isinstance(g, dict) and g["window_ms"] == 2000 and g["step_ms"] == 200,
                   f"{name}: device 0 has growth, a 2 s window, a point every 200 ms"):
        return {}
    c.check(all(1 <= len(x["points"]) <= 64 for x in g["sites"]) and len(g["sites"]) <= 16,
            f"{name}: at most 16 sites, 64 points each")
    return {fn.get(x["site"]): dict(x, live=next(s for s in r["sites"] if s["id"] == x["site"])) for x in g["sites"]}


def cmd_growth(c, a):
    """tests/integration/growth.c's reports. leak DIR STEP_MS DENIED_NS: the growing site flagged at its rate in every
    growth report, the steady one never; the first report's forecast within 20 % of when the quota refused; growth
    reports at most one per 2 s window. steady DIR: the steady site followed, never growing, no forecast."""
    mode, directory = a[0], a[1]
    if mode == "steady":
        ex = sorted(glob.glob(os.path.join(directory, "r-exit-*.json")))
        if c.check(len(ex) == 1 and not glob.glob(os.path.join(directory, "r-growth-*")),
                   f"one exit report and no growth report ({os.listdir(directory)})"):
            r = load(ex[0])
            by = growth_sites_of(c, r, "exit")
            c.check("hold_steady" in by and not by["hold_steady"]["growing"] and
                    by["hold_steady"]["bytes_per_hour"] is None, "the steady site is followed, not growing")
            c.check(dev0(r)["forecast_seconds"] is None, "no forecast")
        return
    if mode == "python":
        cmd_growth_python(c, directory, a[2], int(a[3]), int(a[4]))
        return
    step_ms, denied_ns = int(a[2]), int(a[3])
    want_bph = 3600 * 1000 // step_ms * MiB
    gr = sorted(glob.glob(os.path.join(directory, "r-growth-*.json")), key=lambda f: load(f)["time_ns"])
    if not c.check(len(gr) >= 2, f"at least two growth reports ({len(gr)})"):
        return
    times = [load(f)["time_ns"] for f in gr]
    # The reporter thread writes each one after the sampler asked: its time is the ask's plus that thread's delay.
    gaps = [(b - t) / 1e9 for t, b in zip(times, times[1:])]
    c.check(min(gaps) >= 1.8, f"one growth report per 2 s window at most (gaps {['%.2f' % x for x in gaps]} s)")
    c.check(len(gr) <= (denied_ns - times[0]) / 2e9 + 1.5,
            f"  {len(gr)} in the {(denied_ns - times[0]) / 1e9:.1f} s from the first to the denial")
    for f in gr:
        r, name = load(f), os.path.basename(f)
        schema_ok(c, r, name)
        by = growth_sites_of(c, r, name)
        g, s = by.get("grow_one"), by.get("hold_steady")
        if not c.check(g is not None and s is not None, f"{name}: both sites followed ({list(by)})"):
            continue
        c.check(g["growing"] and abs(g["bytes_per_hour"] - want_bph) <= want_bph // 5,
                f"{name}: grow_one is growing, {g['bytes_per_hour'] / GiB:.1f} GiB/h (want "
                f"{want_bph / GiB:.1f} +-20 %)")
        c.check(g["live"]["growth_bytes_per_hour"] == g["bytes_per_hour"], f"{name}:   its site says the same rate")
        c.check(not s["growing"] and s["live"]["growth_bytes_per_hour"] is None, f"{name}: hold_steady is not")
        c.check(dev0(r)["growth"]["bytes_per_hour"] == g["bytes_per_hour"], f"{name}: the device's rate is grow_one's")
    r = load(gr[0])
    fc, true_s = dev0(r)["forecast_seconds"], (denied_ns - r["time_ns"]) / 1e9
    c.check(fc is not None and abs(fc - true_s) <= 0.2 * true_s,
            f"the first growth report's forecast: {fc} s, the quota refused {true_s:.2f} s later (+-20 %)")


def cmd_growth_python(c, directory, script, step_ms, denied_ns):
    """tests/integration/python/leak.py's first growth report: the growing site is the line marked "site: append"
    (its file, line and function train_step; its first call may make a site of its own, with other native frames,
    which holds 1 MiB and does not grow), the line marked "site: steady" is not growing; the forecast within 20 %."""
    gr = sorted(glob.glob(os.path.join(directory, "r-growth-*.json")), key=lambda f: load(f)["time_ns"])
    if not c.check(len(gr) >= 1, f"a growth report ({len(gr)})"):
        return
    r = load(gr[0])
    d = dev0(r)
    growth_sites_of(c, r, "r-growth-1.json")
    marks = {(os.path.abspath(script), line): m for m, (line, _) in py_markers(script).items()}
    sites = {s["id"]: s for s in r["sites"]}
    followed = [(g, sites.get(g["site"])) for g in d["growth"]["sites"]]
    mark = {g["site"]: marks.get((s["python"][0]["file"], s["python"][0]["line"])) if s and s["python"] else None
            for g, s in followed}
    growing = [(g, s) for g, s in followed if g["growing"]]
    c.check(len(growing) == 1 and mark[growing[0][0]["site"]] == "append" and
            growing[0][1]["python"][0]["function"] == "train_step",
            f"one growing site, the append line in train_step ({[(mark[g['site']], g['growing']) for g, _ in followed]})")
    c.check(any(mark[g["site"]] == "steady" for g, _ in followed) and
            not any(g["growing"] for g, _ in followed if mark[g["site"]] == "steady"), "the steady line: followed, not growing")
    if growing:
        want, bph = 3600 * 1000 // step_ms * MiB, growing[0][0]["bytes_per_hour"]
        c.check(abs(bph - want) <= want // 5, f"  at {bph / GiB:.1f} GiB/h (want {want / GiB:.1f} +-20 %)")
    fc, true_s = d["forecast_seconds"], (denied_ns - r["time_ns"]) / 1e9
    c.check(fc is not None and abs(fc - true_s) <= 0.2 * true_s,
            f"the forecast: {fc} s, the quota refused {true_s:.2f} s later (+-20 %)")


def timeline_of(c, r, name):
    """Device 0's timeline points after the checks every timeline must pass, or [] (failed) when it has none."""
    d = dev0(r)
    tl = d.get("timeline")
    c.check(r.get("schema_revision") == REVISION, f"{name}: schema_revision {REVISION} ({r.get('schema_revision')})")
    if not c.check(isinstance(tl, dict), f"{name}: device 0 has a timeline"):
        return []
    pts = tl["points"]
    c.check(1 <= len(pts) <= 129, f"{name}: 1 to 128 points and the report's own ({len(pts)})")
    c.check(all(a["time_ns"] < b["time_ns"] for a, b in zip(pts, pts[1:])), f"{name}: times strictly increase")
    c.check(pts[-1]["time_ns"] == r["time_ns"], f"{name}: the last point is the report's time")
    c.check(pts[-1]["used_bytes"] == d["used_bytes"] and pts[-1]["denied_count"] == d["denied_count"] and
            pts[-1]["denied_bytes"] == d["denied_bytes"], f"{name}: the last point has the device's final figures")
    c.check(max(p["peak_bytes"] for p in pts) == d["peak_bytes"],
            f"{name}: the highest point peak is the device's peak ({d['peak_bytes']})")
    c.check(tl["period_ms"] == 10000 << tl["compactions"], f"{name}: period {tl['period_ms']} ms after "
            f"{tl['compactions']} compactions")
    return pts


def cmd_timeline(c, a):
    directory = a[0]
    if len(a) > 1 and a[1] == "churn":
        ex = sorted(glob.glob(os.path.join(directory, "r-exit-*.json")))
        if c.check(len(ex) == 1, f"one exit report ({len(ex)})"):
            pts = timeline_of(c, load(ex[0]), os.path.basename(ex[0]))
            c.check(len(pts) - 1 <= 128, f"at most 128 points kept ({len(pts) - 1}) after 10^6 pairs")
        return
    sig, ex = os.path.join(directory, "r-signal-1.json"), os.path.join(directory, "r-exit-2.json")
    s = timeline_of(c, load(sig), "r-signal-1.json")
    if s:
        c.check(max(p["used_bytes"] for p in s) == 2 * GiB and s[-1]["denied_count"] == 0,
                "the signal report's timeline: the rise to 2 GiB, no denials yet")
        c.check(len(s) >= 3 and s[0]["used_bytes"] < s[-1]["used_bytes"],
                f"  the rise is drawn ({[p['used_bytes'] // MiB for p in s]} MiB)")
    e = timeline_of(c, load(ex), "r-exit-2.json")
    if not e:
        return
    used = [p["used_bytes"] // MiB for p in e]
    top = max(range(len(e)), key=lambda i: e[i]["peak_bytes"])
    first_denial = next((i for i, p in enumerate(e) if p["denied_count"]), None)
    c.check(e[top]["peak_bytes"] == 3584 * MiB, f"the exit report's peak point: 3.5 GiB ({used} MiB)")
    c.check(top > 0 and all(x <= y for x, y in zip(used[:top], used[1:top + 1])), "  after a rise")
    c.check(first_denial is not None and first_denial >= top, "  the denials come at or after the peak")
    c.check(e[-1]["denied_count"] == 2 and e[-1]["denied_bytes"] == 3 * GiB, "  two denials, 3 GiB asked")
    c.check(e[-1]["used_bytes"] == GiB and min(used[top:]) == 1024, "  then the fall to 1 GiB")
    c.check(e[0]["time_ns"] <= load(sig)["time_ns"] < e[-1]["time_ns"], "  the exit timeline spans the signal report")


def cmd_schema(c, a):
    for f in a:
        schema_ok(c, load(f), os.path.basename(f))


def cmd_faults(c, a):
    d = a[0]
    by_hook = {}
    exps = sorted(glob.glob(d + "/expect-*.json"))
    reps = glob.glob(d + "/exit-*.json")
    c.check(len(exps) > 0 and len(reps) == len(exps),
            f"one exit report per run ({len(reps)} reports, {len(exps)} runs)")
    runs = [load(e) for e in exps]
    for x in runs:
        errs = by_hook.setdefault(x["hook"], [])
        try:
            r = load(f"{d}/exit-{x['pid']}.json")
        except Unreadable as ex:
            errs.append(f"{x['fail']}: {ex}")
            continue
        v = dev0(r)
        st = r["streams"]
        site_bytes, site_count = sites_live(r)
        got = dict(schema=r["schema"], reason=r["reason"], used=v["used_bytes"], live=r["allocations"]["live"],
                   site_bytes=site_bytes, site_count=site_count, allocs=v["allocs"], frees=v["frees"],
                   quota=v.get("quota_bytes"), created=st["created"], destroyed=st["destroyed"],
                   live_streams=sum(s["count"] for s in st["live"]),
                   pending=sum(s["count"] for s in st["destroyed_pending"]))
        want = dict(schema=REPORT_SCHEMA, reason="exit", used=x["used"], live=x["live"], site_bytes=x["used"],
                    site_count=x["live"], allocs=x["allocs"], frees=x["allocs"] - x["live"], quota=x["quota"],
                    created=x["streams_created"], destroyed=x["streams_destroyed"],
                    live_streams=x["streams_created"] - x["streams_destroyed"], pending=x["pending_destroyed"])
        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        if diff:
            errs.append(f"{x['fail']}: (got, want) {diff}")
    for h, errs in by_hook.items():
        n = sum(1 for x in runs if x["hook"] == h)
        c.check(not errs, f"{h:29s} {n} exit reports: used_bytes and sites = the double's live bytes, "
                f"allocations.live = its live objects, allocs/frees and streams counted once"
                + (f"; {len(errs)} differ, first: {errs[0]}" if errs else ""))
    c.check(not glob.glob(d + "/*.vgtmp.*"), "no temporary report files left")


def valid(c, paths, min_n):
    """One check: every file a complete report (schema, reason signal or exit), at least min_n of them. Returns the
    reports when all are, else []."""
    reps, errs = [], []
    for p in paths:
        try:
            r = load(p)
            if r["schema"] != REPORT_SCHEMA or r["reason"] not in ("signal", "exit"):
                raise ValueError(f"schema {r['schema']!r}, reason {r['reason']!r}")
            reps.append(r)
        except Unreadable as ex:
            errs.append(f"{os.path.basename(p)}: {ex.why}")
        except (LookupError, TypeError, ValueError) as ex:
            errs.append(f"{os.path.basename(p)}: {type(ex).__name__}: {ex}")
    c.check(not errs and len(reps) >= min_n, f"{len(reps)} report files, every one complete JSON with the schema "
            f"(at least {min_n})" + (f"; {len(errs)} broken, first: {errs[0]}" if errs else ""))
    return reps if not errs else []


def cmd_valid(c, a):
    valid(c, a[1:], int(a[0]))


def cmd_zero(c, a):
    min_n, quota = int(a[0]), int(a[1])
    reps = valid(c, a[2:], min_n)
    ex = [r for r in reps if r["reason"] == "exit"]
    c.check(len(ex) == 1, f"exactly one exit report ({len(ex)})")
    if ex:
        r = ex[0]
        v = dev0(r)
        c.check(v["used_bytes"] == 0 and r["allocations"]["live"] == 0 and all(s["live_bytes"] == 0 for s in r["sites"])
                and v["allocs"] == v["frees"], f"exit report: used_bytes 0, allocations.live 0, every site 0, allocs "
                f"{v['allocs']} == frees {v['frees']}")
        c.check(all(dev0(x)["used_bytes"] <= quota and dev0(x)["peak_bytes"] <= quota for x in reps),
                f"every report within the quota (max peak {max(dev0(x)['peak_bytes'] for x in reps)} <= {quota})")


def cmd_fork(c, a):
    d, kept = a[0], int(a[1])
    plain, execs = pid_file(d + "/plain-pids"), pid_file(d + "/exec-pids")
    reps = valid(c, sorted(glob.glob(d + "/r-*.json")), len(execs) + 1)
    by = {}
    for r in reps:
        by.setdefault(r["pid"], []).append(r)
    c.check(plain and not [p for p in plain if p in by],
            f"no report from the {len(plain)} plain children (their exit() ran the atexit handlers)")
    fresh = [p for p in execs if len(by.get(p, [])) == 1 and by[p][0]["sequence"] == 1 and by[p][0]["reason"] == "exit"
             and dev0(by[p][0])["used_bytes"] == kept and dev0(by[p][0])["allocs"] == 3
             and by[p][0]["allocations"]["live"] == 3]
    c.check(execs and len(fresh) == len(execs), f"{len(fresh)} of {len(execs)} exec'd children wrote one report of "
            f"their own: sequence 1, 3 allocations, {kept >> 20} MiB")
    rest = [p for p in by if p not in execs]
    c.check(len(rest) == 1 and len(by[rest[0]]) == 1 and dev0(by[rest[0]][0])["used_bytes"] == 0,
            f"the parent wrote one exit report, at zero ({[(p, len(by[p])) for p in rest]})")


def cmd_exits(c, a):
    runs = pid_file(a[0] + "/exit-pids")
    reps = valid(c, sorted(glob.glob(a[0] + "/r-*.json")), len(runs))
    got = sorted(r["pid"] for r in reps if r["reason"] == "exit")
    c.check(runs and got == sorted(runs),
            f"one complete exit report from each of the {len(runs)} runs that called exit(7)")


def cmd_dumped(c, a):
    r = load(a[0])
    if r.get("schema") != REPORT_SCHEMA or r.get("reason") != "signal":
        c.fail(f"{a[0]}: schema {r.get('schema')!r}, reason {r.get('reason')!r}: not a {REPORT_SCHEMA} signal report")
    else:
        print(r["devices"][0]["used_bytes"])


# ---- top and limit show --json, CPU suite

def cmd_top(c, a):
    """region_cli.sh's scene: A and B in region job (8G), C with a control segment on the second GPU."""
    doc = top_doc(a[0])
    A, B, C, ua, ub = int(a[1]), int(a[2]), int(a[3]), a[4], a[5]
    c.check(doc["schema"] == TOP_SCHEMA, "schema vramguard.top/1")
    p = procs(doc)
    c.check(set(p) == {A, B, C}, "exactly the three processes (%s)" % sorted(p))
    if set(p) == {A, B, C}:
        pa, pb, pc = p[A], p[B], p[C]
        da, db, dc = pa["devices"][0], pb["devices"][0], pc["devices"][0]
        c.check(all(len(x["devices"]) == 1 for x in (pa, pb, pc)), "one GPU each")
        c.check((da["used_bytes"], da["peak_bytes"]) == (GiB, 2 * GiB), "A: 1 GiB in use, peak 2 GiB")
        c.check((da["quota_bytes"], da["own_quota_bytes"], da["region_limit_bytes"]) == (4 * GiB, 4 * GiB, 8 * GiB),
                "A: quota 4 GiB (its own, tighter than the region's 8 GiB)")
        c.check(pa["region"] == "job" and pa["denied"] == 1 and pa["last_report_ns"],
                "A: region job, 1 denial, a report")
        c.check((db["used_bytes"], db["quota_bytes"], db["own_quota_bytes"]) == (3 * GiB, 8 * GiB, None),
                "B: 3 GiB in use, quota 8 GiB (the region's budget; no own quota)")
        c.check(pc["region"] is None and (dc["uuid"], dc["used_bytes"], dc["quota_bytes"]) == (ub, 512 * MiB, 2 * GiB),
                "C: control segment, 512 MiB on the second GPU, quota 2 GiB")
        c.check(all(x["alive"] for x in (pa, pb, pc)), "all alive")
        c.check(all(x["requested_limit"] is None and x["applied"] is True for x in (pa, pb, pc)), "no request")
    ta, tb = total(doc, ua), total(doc, ub)
    c.check(ta is not None and (ta["used_bytes"], ta["processes"]) == (4 * GiB, 2),
            "GPU A: 4 GiB in use by 2 processes")
    c.check(ta is not None and ta["budgets"] == [{"region": "job", "limit_bytes": 8 * GiB, "used_bytes": 4 * GiB}],
            "GPU A: budget of job, 4 of 8 GiB")
    c.check(tb is not None and (tb["used_bytes"], tb["processes"], tb["budgets"]) == (512 * MiB, 1, []),
            "GPU B: 512 MiB, no budget")
    c.check(len(doc["totals"]) == 2 and doc["unreadable"] == 0 and doc["skipped"] == 0, "two GPUs, nothing unreadable")
    r = doc["regions"]
    c.check(len(r) == 1 and r[0]["name"] == "job" and r[0]["spec"] == "8G"
            and r[0]["devices"][0]["limit_bytes"] == 8 * GiB, "one shared region: job, 8G")


def cmd_pids(c, a):
    doc = top_doc(a[0])
    want, uuid, want_used = id_set(a[1]), a[2], int(a[3])
    p = procs(doc)
    c.check(set(p) == want, "processes %s (got %s)" % (sorted(want), sorted(p)))
    t = total(doc, uuid)
    got = t["used_bytes"] if t else 0
    c.check(got == want_used, "%s: %d bytes in use (got %d)" % (uuid[:12], want_used, got))
    for kv in a[4:]:
        k, v = kv.split("=")
        c.check(str(doc[k]) == v, "%s = %s (got %s)" % (k, v, doc[k]))


def cmd_limits(c, a):
    doc = limits_doc(a[0])
    name, spec, created, limit = a[1], a[2], a[3], int(a[4])
    c.check(doc["schema"] == LIMITS_SCHEMA, "schema vramguard.limits/1")
    r = regions_named(doc, name)
    c.check(len(r) == 1, "region %s listed" % name)
    if r:
        c.check((r[0]["spec"], r[0]["created_spec"]) == (spec, created),
                "in force %s, created with %s" % (spec, created))
        c.check([d["limit_bytes"] for d in r[0]["devices"]] == [limit], "device limit %s bytes" % limit)


def cmd_requested(c, a):
    doc = limits_doc(a[0])
    pid, spec, kind, applied = int(a[1]), a[2], a[3], a[4]
    found = [(r, p) for r in doc["regions"] for p in r["processes"] if p["pid"] == pid]
    c.check(len(found) == 1, "process %s listed once" % pid)
    if found:
        r, p = found[0]
        c.check(p["requested_limit"] == spec and p["requests"] >= 1, "requested limit %s" % spec)
        c.check(p["applied"] is (applied == "true"), "applied: %s (got %s)" % (applied, p["applied"]))
        c.check(r["kind"] == kind, "in a %s region" % kind)
        if len(a) > 5:
            c.check([d["quota_bytes"] for d in p["devices"]] == [int(a[5])], "own quota now %s bytes" % a[5])


def cmd_toprequest(c, a):
    doc = top_doc(a[0])
    pid, spec, applied, own = int(a[1]), a[2], a[3], int(a[4])
    p = procs(doc).get(pid)
    c.check(p is not None, "process %s listed" % pid)
    if p:
        c.check((p["requested_limit"], p["applied"]) == (spec, applied == "true"),
                "requested %s, applied %s (got %s, %s)" % (spec, applied, p["requested_limit"], p["applied"]))
        c.check([d["own_quota_bytes"] for d in p["devices"]] == [own], "own quota %s bytes" % own)


def cmd_denied(c, a):
    doc = top_doc(a[0])
    name, want = a[1], {int(k): int(v) for k, v in (x.split(":") for x in a[2].split(",") if x)}
    p = procs(doc)
    got = {pid: p[pid]["denied"] if pid in p else None for pid in want}
    c.check(got == want, "region %s: each member's refusals are those it was told of (%s, want %s)" % (name, got, want))
    r = region(doc, name)
    rden = sum(d["denied"] for d in r["devices"]) if r else -1
    c.check(rden == sum(want.values()), "region %s: the budget refused %d charges in all (got %d)"
            % (name, sum(want.values()), rden))


def cmd_writable(c, a):
    doc = top_doc(a[0])
    r = regions_named(doc, a[1])
    c.check(len(r) == 1 and r[0]["writable"] is (a[2] == "true"), "region %s writable: %s" % (a[1], a[2]))


def cmd_readonly(c, a):
    doc = top_doc(a[0])
    A, E, uuid = int(a[1]), int(a[2]), a[3]
    p = procs(doc)
    c.check(A in p and p[A]["alive"], "the live member is listed")
    c.check(E in p and not p[E]["alive"], "the killed member is listed as exited")
    t = total(doc, uuid)
    c.check(t is not None and t["used_bytes"] == GiB and t["processes"] == 1, "the exited one is not in the totals")
    c.check(doc["exited"] == 1 and doc["regions"][0]["writable"] is False, "one exited, the region read-only")


def cmd_members(c, a):
    doc = top_doc(a[0])
    name, want, want_used = a[1], id_set(a[2]), int(a[3])
    members = {pid: p for pid, p in procs(doc).items() if p["region"] == name}
    c.check(set(members) == want, "region %s: members %s (got %s)" % (name, sorted(want), sorted(members)))
    r = region(doc, name)
    rused = sum(d["used_bytes"] for d in r["devices"]) if r else -1
    msum = sum(used(p) for p in members.values())
    c.check(rused == want_used, "region %s: %d bytes in use (got %d)" % (name, want_used, rused))
    c.check(msum == rused, "its members' used_bytes add up to the region's (%d, %d)" % (msum, rused))
    b = [x for t in doc["totals"] for x in t["budgets"] if x["region"] == name]
    c.check(sum(x["used_bytes"] for x in b) == rused, "the totals' budget of %s says the same" % name)
    key_values(c, doc, a[4:], r)


def listed(c, doc, pid):
    n = sum(1 for x in doc["processes"] if x["pid"] == pid)
    c.check(n == 1, "process %s listed once (%d times)" % (pid, n))
    return n


def cmd_proc(c, a):
    doc = top_doc(a[0])
    pid, want_used = int(a[1]), int(a[2])
    n = listed(c, doc, pid)
    got = used(procs(doc)[pid]) if n else None
    c.check(got == want_used, "process %s: %s bytes in use (got %s)" % (pid, want_used, got))


def cmd_once(c, a):
    doc = top_doc(a[0])
    procs(doc)
    listed(c, doc, int(a[1]))


def cmd_absent(c, a):
    doc = top_doc(a[0])
    c.check(int(a[1]) not in procs(doc), "process %s not listed" % a[1])


def cmd_noregion(c, a):
    doc = top_doc(a[0])
    procs(doc)
    c.check(region(doc, a[1]) is None and not any(p["region"] == a[1] for p in doc["processes"]),
            "region %s and its members not listed" % a[1])
    key_values(c, doc, a[2:])


def cmd_range(c, a):
    doc = top_doc(a[0])
    procs(doc)
    name, key, lo, hi = a[1], a[2], int(a[3]), int(a[4])
    r = region(doc, name)
    v = r["devices"][0][key] if r and r["devices"] else None
    c.check(v is not None and lo <= v <= hi, "region %s: %s %s in [%s, %s]" % (name, key, v, lo, hi))


def cmd_gpus(c, a):
    doc = top_doc(a[0])
    procs(doc)
    t = [x for x in doc["totals"] if x["uuid"] == a[1]]
    got = (t[0]["used_bytes"], t[0]["processes"]) if len(t) == 1 else None
    c.check(got == (int(a[2]), int(a[3])), "GPU %s: %s bytes by %s processes (got %s)" % (a[1][:12], a[2], a[3], got))


def cmd_unverifiable(c, a):
    doc = top_doc(a[0])
    pid = int(a[1])
    p = [x for x in doc["processes"] if x["pid"] == pid]
    c.check(len(p) == 1 and p[0]["state"] == "unverifiable" and p[0]["alive"] is None,
            "process %s listed once, state unverifiable, alive null (%s)" % (pid, p))
    c.check(doc["unverifiable"] == 1 and doc["reclaimed"] == 0,
            "unverifiable 1, reclaimed 0 (got %s, %s)" % (doc["unverifiable"], doc["reclaimed"]))


def cmd_slots(c, a):
    doc = top_doc(a[0])
    name, slots, members, want_used = a[1], int(a[2]), int(a[3]), int(a[4])
    r = regions_named(doc, name)
    c.check(len(r) >= 1, "region %s listed" % name)
    if r:
        r = r[0]
        c.check((r["slots"], r["members"], r["devices"][0]["used_bytes"]) == (slots, members, want_used),
                "region %s: %s slots, %s members, %s bytes in use (got %s, %s, %s)"
                % (name, slots, members, want_used, r["slots"], r["members"], r["devices"][0]["used_bytes"]))


def cmd_top_members(c, a):
    doc = top_doc(a[0])
    ps = [p for p in doc["processes"] if p.get("region") == a[1]]
    print(len(ps), sum(used(p) for p in ps) >> 20)


# ---- GPU suite

def gpu_load(c, path):
    """A report, or None after a BAD line saying why."""
    try:
        return load(path)
    except Unreadable as e:
        c.fail(str(e))
        return None


def common(c, rep, reason, path):
    """Schema, reason and driver state of one report."""
    if rep.get("schema") != REPORT_SCHEMA:
        c.fail(f"{path}: schema {rep.get('schema')!r}, want {REPORT_SCHEMA!r}")
    if rep.get("reason") != reason:
        c.fail(f"{path}: reason {rep.get('reason')!r}, want {reason!r}")
    if rep.get("driver") != "alive":
        c.fail(f"{path}: driver {rep.get('driver')!r}, want 'alive' "
               f"(the {reason} report ran after the driver's teardown?)")
    for k in ("devices", "sites", "allocations", "streams"):
        if k not in rep:
            c.fail(f"{path}: no {k!r} key")


def cmd_leak(c, a):
    path = a[0]
    rep = gpu_load(c, path)
    if rep is None:
        c.finish("no report")
    common(c, rep, "exit", path)
    leak = sites_naming(rep, "leak_buffers", clones=True)
    count = sum(s.get("live_count", 0) for s in leak)
    nbytes = sum(s.get("live_bytes", 0) for s in leak)
    if not leak:
        c.fail("no site has a frame naming leak_buffers; sites: "
               + " | ".join(brief(s) for s in (rep.get("sites") or [])[:4]))
    elif count == 3 and nbytes == 3 * 64 * MiB:
        c.ok(f"leak_buffers: {count} live, {nbytes} bytes")
    else:
        c.fail(f"leak_buffers: {count} live allocations of {nbytes} bytes, want 3 of {3 * 64 * MiB}")
    if len(leak) > 1:
        print(f"note: leak_buffers appears in {len(leak)} sites (one expected: the same call site)")
    scratch = sites_naming(rep, "scratch_roundtrip", clones=True)
    s_live = sum(s.get("live_count", 0) for s in scratch)
    s_total = sum(s.get("total_allocs", 0) for s in scratch)
    if not scratch:
        c.fail("no site names scratch_roundtrip (its freed allocation should still be a site, with 0 live)")
    elif s_live != 0 or s_total != 1:
        c.fail(f"scratch_roundtrip: {s_live} live of {s_total} made, want 0 of 1")
    dev = (rep.get("devices") or [{}])[0]
    where = ""
    if leak:
        s = leak[0]
        where = (f" (site {s['id']} via {s.get('api')}, frame {frame_index(s, 'leak_buffers', True)} of "
                 f"{len(s.get('frames') or [])}: {brief(s)})")
    c.finish(f"leak_buffers: live_count {count}, live_bytes {nbytes} ({mib(nbytes)}) in {len(leak)} site(s){where}; "
             f"scratch_roundtrip {s_live} live of {s_total}; device 0 used_bytes {dev.get('used_bytes')}; "
             f"allocations.live {rep.get('allocations', {}).get('live')}; reason {rep.get('reason')}, "
             f"driver {rep.get('driver')}")


def cmd_stream(c, a):
    path, sync = a[0], "--sync" in a[1:]
    rep = gpu_load(c, path)
    if rep is None:
        c.finish("no report")
    common(c, rep, "exit", path)
    st = rep.get("streams") or {}
    ev = st.get("destroyed_pending") or []
    by_id = {s["id"]: s for s in rep.get("sites") or []}
    pending = sum(e.get("count", 0) for e in ev)
    match = None
    for e in ev:
        cs, ds = by_id.get(e.get("create_site")), by_id.get(e.get("destroy_site"))
        if cs and ds and frame_index(cs, "make_stream", True) >= 0 and frame_index(ds, "finish", True) >= 0:
            match = (e, cs, ds)
            break
    if pending < 1:
        c.fail(f"streams.destroyed_pending is empty (created {st.get('created')}, destroyed {st.get('destroyed')})")
    elif not match:
        def site_desc(sid):
            return brief(by_id[sid]) if sid in by_id else "not in sites[]"
        desc = "; ".join(f"create_site {e.get('create_site')} [{site_desc(e.get('create_site'))}] "
                         f"destroy_site {e.get('destroy_site')} [{site_desc(e.get('destroy_site'))}]" for e in ev)
        c.fail(f"no destroyed_pending entry goes from a make_stream site to a finish site: {desc}")
    else:
        e, cs, ds = match
        c.ok(f"destroyed_pending count {e['count']}: created by make_stream (site {cs['id']}), destroyed in finish "
             f"(site {ds['id']})")
        if bool(e.get("synchronized")) != sync:
            c.fail(f"synchronized is {e.get('synchronized')}, want {sync} "
                   f"(VRAMGUARD_STREAM_CHECK={'sync' if sync else 'warn'})")
    fig = f"streams created {st.get('created')}, destroyed {st.get('destroyed')}, destroyed_pending count {pending}"
    if match:
        e, cs, ds = match
        fig += (f"; create_site {cs['id']} ({cs.get('api')}, make_stream at frame "
                f"{frame_index(cs, 'make_stream', True)}), destroy_site {ds['id']} ({ds.get('api')}, finish at frame "
                f"{frame_index(ds, 'finish', True)}), synchronized {str(bool(e.get('synchronized'))).lower()}")
    c.finish(fig)


def result_line(path):
    """torch_train.py's "result: loss_first=A loss_last=B checksum=C" as floats, or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^result: loss_first=(\S+) loss_last=(\S+) checksum=(\S+)", text, re.M)
    return tuple(float(x) for x in m.groups()) if m else None


def cmd_signal(c, a):
    ref = run = None
    files = []
    i = 0
    while i < len(a):
        if a[i] in ("--ref", "--run") and i + 1 < len(a):
            if a[i] == "--ref":
                ref = a[i + 1]
            else:
                run = a[i + 1]
            i += 2
        else:
            files.append(a[i])
            i += 1
    reports = []
    for p in sorted(files):
        r = gpu_load(c, p)
        if r is not None:
            reports.append((p, r))
    sig = [(p, r) for p, r in reports if r.get("reason") == "signal"]
    ext = [(p, r) for p, r in reports if r.get("reason") == "exit"]
    other = [(p, r) for p, r in reports if r.get("reason") not in ("signal", "exit")]
    if len(sig) != 3 or len(ext) != 1 or other:
        c.fail(f"{len(files)} report files: {len(sig)} 'signal', {len(ext)} 'exit', {len(other)} other "
               f"(want 3 and 1)")
    used_b = []
    nsites = []
    for p, r in sig + ext:
        common(c, r, r.get("reason"), p)
        devs = r.get("devices") or []
        u = devs[0].get("used_bytes", 0) if devs else 0
        if r.get("reason") == "signal":
            used_b.append(u)
            nsites.append(len(r.get("sites") or []))
            if u <= 0:
                c.fail(f"{p}: devices[0].used_bytes {u}, want > 0 (the training loop holds memory)")
    seqs = sorted(r.get("sequence") for _, r in reports)
    if seqs != list(range(1, len(reports) + 1)):
        c.fail(f"sequence numbers {seqs}, want 1..{len(reports)}")
    got, want = result_line(run) if run else None, result_line(ref) if ref else None
    res = "no result"
    if not got:
        c.fail("the preloaded run printed no 'result:' line")
    elif not want:
        c.fail("the reference run (no preload) printed no 'result:' line")
    else:
        l0, l1, cs = got
        if not l1 < l0:
            c.fail(f"loss did not decrease: {l0} -> {l1}")
        tol = 1e-6 * max(1.0, abs(want[2]))
        if abs(cs - want[2]) > tol:
            c.fail(f"checksum {cs!r} under the preload, {want[2]!r} without (differ by {abs(cs - want[2]):.3g} > "
                   f"{tol:.3g})")
        same = ("identical to" if cs == want[2] else "within 1e-6 of" if abs(cs - want[2]) <= tol else
                f"NOT equal to ({want[2]!r})")
        res = f"loss {l0:.4f} -> {l1:.4f}, checksum {cs!r} {same} the run without preload"
    c.finish(f"{len(sig)} signal + {len(ext)} exit reports; signal used_bytes {', '.join(str(u) for u in used_b)}; "
             f"sites {', '.join(str(n) for n in nsites)}; {res}")


def cmd_torch_exit(c, a):
    path = a[0]
    rep = gpu_load(c, path)
    if rep is None:
        c.finish("no report")
    common(c, rep, "exit", path)
    live = [s for s in rep.get("sites") or [] if s.get("live_count", 0) > 0]
    live_bytes = sum(s.get("live_bytes", 0) for s in live)
    nlive = rep.get("allocations", {}).get("live")
    dev = (rep.get("devices") or [{}])[0]
    if not live:
        c.fail("no site with live allocations (the job keeps a tensor alive until exit)")
        c.finish(f"outstanding: allocations.live {nlive}, device 0 used_bytes {dev.get('used_bytes')}")
    top = max(live, key=lambda s: s.get("live_bytes", 0))
    fr = top.get("frames") or []
    first = next((f.get("symbol") for f in fr if f.get("symbol")), "")
    c10 = next((f.get("symbol") for f in fr if "c10" in (f.get("symbol") or "")), "")
    mod = (fr[0].get("module") or "").rsplit("/", 1)[-1] if fr else ""
    c.finish(f"outstanding {nlive} allocations, {live_bytes} bytes ({mib(live_bytes)}) in {len(live)} site(s); "
             f"device 0 used_bytes {dev.get('used_bytes')}, peak {dev.get('peak_bytes')}; top site {top.get('id')} "
             f"via {top.get('api')}: {mib(top.get('live_bytes', 0))}, first symbol {first or '??'} ({mod or '?'}), "
             f"first c10 frame {c10 or 'none'}; driver {rep.get('driver')}")


def timeline_brief(dev):
    """A device's timeline in a few words (revision 2 reports), or "" when the report has none."""
    tl = dev.get("timeline")
    if not isinstance(tl, dict):
        return ""
    pts = tl.get("points") or []
    if not pts:
        return "timeline: 0 points"
    top = max(pts, key=lambda p: p.get("peak_bytes", 0))
    first_den = next((p for p in pts if p.get("denied_count", 0) > 0), None)
    den = (f", denials from point {pts.index(first_den) + 1} ({pts[-1].get('denied_count')} in all)" if first_den
           else ", no denials")
    span = (pts[-1].get("time_ns", 0) - pts[0].get("time_ns", 0)) / 1e9
    return (f"timeline: {len(pts)} points over {span:.1f} s, period {tl.get('period_ms')} ms, highest peak "
            f"{mib(top.get('peak_bytes', 0))}{den}")


def cmd_denial(c, a):
    """ops_torch.py denial's report at its first refusal: what held the memory, by call site."""
    path = a[0]
    rep = gpu_load(c, path)
    if rep is None:
        c.finish("no report")
    common(c, rep, "denial", path)
    dev = (rep.get("devices") or [{}])[0]
    if dev.get("denied_count", 0) < 1:
        c.fail(f"device 0 denied_count {dev.get('denied_count')}, want >= 1")
    live = [s for s in rep.get("sites") or [] if s.get("live_count", 0) > 0]
    live_bytes = sum(s.get("live_bytes", 0) for s in live)
    if not live:
        c.fail("no site with live allocations: the report does not say what held the memory")
        c.finish(f"device 0 used_bytes {dev.get('used_bytes')}, denied {dev.get('denied_count')}")
    top = max(live, key=lambda s: s.get("live_bytes", 0))
    fr = top.get("frames") or []
    c10 = next((f.get("symbol") for f in fr if "c10" in (f.get("symbol") or "")), "")
    py = next((f.get("symbol") for f in fr if (f.get("symbol") or "").startswith("_Py")), "")
    if not fr:
        c.fail(f"top site {top.get('id')} has no frames (call sites off?)")
    elif not c10:
        c.fail(f"top site {top.get('id')} names no c10 frame: {brief(top)}")
    quota = dev.get("quota_bytes") or 0
    if live_bytes < quota // 2:
        c.fail(f"live bytes {live_bytes} ({mib(live_bytes)}) under half the quota ({mib(quota)}): the report "
               "came after the memory was freed?")
    tl = timeline_brief(dev)
    pts = (dev.get("timeline") or {}).get("points") or []
    if not pts:
        c.fail("device 0 has no timeline points (schema revision 2 reports carry them)")
    elif pts[-1].get("denied_count", 0) < 1:
        c.fail(f"the timeline's last point has denied_count {pts[-1].get('denied_count')}, want >= 1")
    c.finish(f"reason denial, sequence {rep.get('sequence')}; device 0 used {mib(dev.get('used_bytes', 0))} of "
             f"{mib(quota)}, denied {dev.get('denied_count')} ({mib(dev.get('denied_bytes', 0))}); live "
             f"{live_bytes} bytes ({mib(live_bytes)}) in {len(live)} site(s); top site {top.get('id')} via "
             f"{top.get('api')}: {top.get('live_count')} allocations, {mib(top.get('live_bytes', 0))}, first c10 frame "
             f"{c10 or 'none'}, first Python frame {py or 'none'}{'; ' + tl if tl else ''}")


def cmd_threshold(c, a):
    """ops_torch.py threshold's reports in DIR: exactly one "threshold" report, at VRAMGUARD_WARN_AT=80%."""
    d = a[0]
    thr = sorted(glob.glob(os.path.join(d, "*-threshold.json")))
    ext = sorted(glob.glob(os.path.join(d, "*-exit.json")))
    if len(thr) != 1:
        c.fail(f"{len(thr)} threshold reports in {d}, want 1: {', '.join(os.path.basename(x) for x in thr)}")
    if len(ext) != 1:
        c.fail(f"{len(ext)} exit reports, want 1")
    if not thr:
        c.finish("no threshold report")
    rep = gpu_load(c, thr[0])
    if rep is None:
        c.finish("unreadable threshold report")
    common(c, rep, "threshold", thr[0])
    dev = (rep.get("devices") or [{}])[0]
    quota, soft, used = dev.get("quota_bytes") or 0, dev.get("soft_limit_bytes"), dev.get("used_bytes", 0)
    if soft is None or abs(soft - quota * 0.8) > MiB:
        c.fail(f"soft_limit_bytes {soft}, want 80 % of the quota {quota}")
    elif used < soft:
        c.fail(f"used_bytes {used} below the line {soft} in the threshold report")
    if dev.get("soft_limit_source") != "VRAMGUARD_WARN_AT":
        c.fail(f"soft_limit_source {dev.get('soft_limit_source')!r}, want 'VRAMGUARD_WARN_AT'")
    tl = ""
    if ext:
        e = gpu_load(c, ext[0])
        ed = (e.get("devices") or [{}])[0] if e else {}
        tl = timeline_brief(ed)
        pts = (ed.get("timeline") or {}).get("points") or []
        top = max((p.get("peak_bytes", 0) for p in pts), default=0)
        if not pts:
            c.fail("the exit report's device 0 has no timeline")
        elif soft is not None and top < soft:
            c.fail(f"the exit report's timeline peaks at {top}, below the line {soft}")
    c.finish(f"{len(thr)} threshold report (sequence {rep.get('sequence')}), {len(ext)} exit report; at the crossing "
             f"used {mib(used)} of {mib(quota)}, line {mib(soft or 0)} from {dev.get('soft_limit_source')}"
             f"{'; exit report ' + tl if tl else ''}")


def cmd_sites(c, a):
    print(len(load(a[0])["sites"]))


def soak_result(path):
    """soak.py's result line and reserved_at_end."""
    with open(path) as f:
        t = f.read()
    m = re.search(r"result: checksum=(\S+) ooms=(\d+) steps=(\d+) signals=(\d+) seconds=(\S+)", t)
    r = re.search(r"reserved_at_end=(\d+)", t)
    return m, int(r.group(1)) if r else None


def cmd_soak(c, a):
    """tests/gpu/soak.sh: soak.py under a 3 GiB quota with SIGUSR1 JSON reports, and a reference run without."""
    d, vrc, rrc = a[0], int(a[1]), int(a[2])
    vm, vres = soak_result(f"{d}/vg.out")
    rm, _ = soak_result(f"{d}/ref.out")
    fails = []
    if vrc != 0 or not vm:
        fails.append(f"vramguard run exit {vrc}")
    if rrc != 0 or not rm:
        fails.append(f"reference run exit {rrc}")
    reps = []
    for f in sorted(glob.glob(f"{d}/soak-*.json")):
        try:
            reps.append(load(f))
        except Unreadable as e:
            fails.append(f"{f}: not complete JSON ({e.cause})")
    sig = [r for r in reps if r["reason"] == "signal"]
    ext = [r for r in reps if r["reason"] == "exit"]
    if vm and len(sig) != int(vm.group(4)):
        fails.append(f"{len(sig)} signal reports for {vm.group(4)} signals")
    if len(ext) != 1:
        fails.append(f"{len(ext)} exit reports")
    if vm and rm and vm.group(1) != rm.group(1):
        fails.append(f"checksum {vm.group(1)} != reference {rm.group(1)}")
    over = [r["devices"][0]["peak_bytes"] for r in reps if r["devices"][0]["peak_bytes"] > 3 << 30]
    if over:
        fails.append(f"peak over the quota: {over}")
    recon = ""
    if ext and vres is not None:
        e = ext[0]
        dev_used = e["devices"][0]["used_bytes"]
        c10 = sum(s["live_bytes"] for s in e["sites"]
                  if any("CUDACachingAllocator" in f.get("symbol", "") for f in s["frames"]))
        other = sites_live(e)[0] - c10
        recon = (f"at exit vramguard used {dev_used >> 20} MiB = caching-allocator sites {c10 >> 20} MiB + other sites "
                 f"{other >> 20} MiB; torch.cuda.memory_reserved() {vres >> 20} MiB")
        if c10 != vres:
            fails.append(f"caching-allocator sites hold {c10} bytes, PyTorch reserved {vres}")
        if dev_used != c10 + other:
            fails.append(f"used {dev_used} != sum of sites {c10 + other}")
    denied = ext[0]["devices"][0]["denied_count"] if ext else 0
    same = vm and rm and vm.group(1) == rm.group(1)
    fig = (f"{vm.group(3) if vm else '?'} steps in {vm.group(5) if vm else '?'} s, {vm.group(2) if vm else '?'} OOMs "
           f"caught ({denied} denials), {len(sig)} signal reports + {len(ext)} exit report, all complete JSON; "
           f"checksum {vm.group(1) if vm else '?'} {'==' if same else '!='} reference; "
           f"{recon}")
    print(("PASS soak: " if not fails else "FAIL soak: " + "; ".join(fails) + "; ") + fig)
    c.bad = fails


def py_markers(script):
    """{name: (line, function)} from a script's "# site: NAME" comments (tests/integration/python/sites.py)."""
    marks, func = {}, "<module>"
    for n, text in enumerate(open(script, encoding="utf-8"), 1):
        m = re.match(r"\s*def ([^\W\d]\w*)", text)
        if m:
            func = m.group(1)
        m = re.search(r"# site: (\w+)", text)
        if m:
            marks[m.group(1)] = (n, func)
    return marks


def cmd_pysites(c, a):
    path, script, mode = a[0], os.path.abspath(a[1]), a[2] if len(a) > 2 else "on"
    r = load(path)
    sites = r["sites"]
    if mode == "off":
        c.check(all(s["python"] == [] for s in sites), "VRAMGUARD_PYTHON=off: no site has Python frames")
        c.check(all(s["frames"] for s in sites), "  native frames still recorded")
        return
    byline = {}
    for s in sites:
        py = s["python"]
        if py and py[0]["file"] == script:
            byline.setdefault(py[0]["line"], []).append(s)
    mib = {"cdll": 1, "pydll": 2, "line_a": 4, "line_b": 5, "thread": 6, "method": 7, "latin1": 8, "ucs2": 9,
           "ucs4": 10}
    for name, (line, func) in sorted(py_markers(script).items()):
        got = byline.get(line, [])
        s = got[0] if len(got) == 1 else None
        c.check(s is not None, f"{name}: one site whose innermost Python frame is {os.path.basename(script)}:{line}")
        if not s:
            continue
        f0 = s["python"][0]
        c.check(f0["function"].split(".")[-1] == func, f"  in {func} ({f0['function']})")
        c.check(s["live_bytes"] == mib[name] * MiB and s["live_count"] == 1, f"  holds {mib[name]} MiB")
        c.check(len(s["frames"]) > 0, "  with its native frames too")
        outer = [f["function"] for f in s["python"][1:]]
        if name == "thread":
            c.check(any(f["file"].endswith("threading.py") and f["function"].split(".")[-1] == "run"
                        for f in s["python"][1:]), f"  its caller is threading's Thread.run ({outer})")
        else:
            c.check("main" in outer and outer[-1] == "<module>", f"  called from main, from <module> ({outer})")
    a_, b_ = [byline.get(py_markers(script)[k][0], [{}])[0] for k in ("line_a", "line_b")]
    c.check(a_.get("id") != b_.get("id") and a_.get("frames") and
            [f["module_offset"] for f in a_["frames"]] == [f["module_offset"] for f in b_["frames"]],
            "the same native stack from two Python lines: two sites")
    cth = [s for s in sites if s["live_bytes"] == 3 * MiB]
    c.check(len(cth) == 1 and cth[0]["python"] == [] and cth[0]["frames"],
            "the C thread's site: native frames only")


def cmd_pyleak(c, a):
    """tests/gpu/pysites.py's report: 3 x 64 MiB live from sites whose Python stack has leak_here at the marked line."""
    path, script, which = a[0], os.path.abspath(a[1]), a[2]
    r = load(path)
    line = next(n for n, t in enumerate(open(script, encoding="utf-8"), 1) if t.rstrip().endswith("# leak line: " + which))
    hits = [s for s in r["sites"] if any(f["function"].split(".")[-1] == "leak_here" and f["line"] == line and
                                          os.path.abspath(f["file"]) == script for f in s.get("python", []))]
    live = sum(s["live_bytes"] for s in hits)
    if hits and live >= 3 * 64 * MiB:
        c.ok(f"{which}: {len(hits)} site(s) name leak_here at {os.path.basename(script)}:{line}, {live >> 20} MiB live")
    else:
        tops = [[(f["file"].split("/")[-1], f["line"], f["function"]) for f in s.get("python", [])[:3]]
                for s in r["sites"][:3]]
        c.fail(f"{which}: no site with leak_here at {os.path.basename(script)}:{line} holding 192 MiB "
               f"(largest sites' Python frames: {tops})")
    c.finish(f"{len(hits)} sites, {live >> 20} MiB live from leak_here, python depth "
             f"{max((len(s.get('python', [])) for s in hits), default=0)}")


def cmd_pyfake(c, a):
    """tests/integration/pyfake.c's report: its frame read right, or no Python frames at all (native kept)."""
    r = load(a[0])
    sites = r["sites"]
    c.check(len(sites) == 2 and all(s["frames"] and s["live_bytes"] == 8 * MiB for s in sites),
            "two sites of 8 MiB with native frames")
    if a[1] == "good":
        want = [{"file": "fake.py", "line": 12, "function": "fake_fn"}]
        c.check(all(s["python"] == want for s in sites), f"each names fake.py:12 in fake_fn ({[s['python'] for s in sites]})")
    else:
        c.check(all(s["python"] == [] for s in sites), "no Python frames")


# name: (function, protocol, fewest arguments)
COMMANDS = {
    "leaks": (cmd_leaks, "tap", 1), "storm": (cmd_storm, "tap", 2), "soft": (cmd_soft, "tap", 3),
    "timeline": (cmd_timeline, "tap", 1), "growth": (cmd_growth, "tap", 2), "modules": (cmd_modules, "tap", 1),
    "pysites": (cmd_pysites, "tap", 2), "pyfake": (cmd_pyfake, "tap", 2),
    "schema": (cmd_schema, "tap", 1), "faults": (cmd_faults, "tap", 1), "valid": (cmd_valid, "tap", 1),
    "zero": (cmd_zero, "tap", 2), "fork": (cmd_fork, "tap", 2), "exits": (cmd_exits, "tap", 1),
    "dumped": (cmd_dumped, "value", 1),
    "top": (cmd_top, "tap", 6), "pids": (cmd_pids, "tap", 4), "limits": (cmd_limits, "tap", 5),
    "requested": (cmd_requested, "tap", 5), "toprequest": (cmd_toprequest, "tap", 5),
    "writable": (cmd_writable, "tap", 3), "readonly": (cmd_readonly, "tap", 4), "members": (cmd_members, "tap", 4),
    "denied": (cmd_denied, "tap", 3),
    "proc": (cmd_proc, "tap", 3), "once": (cmd_once, "tap", 2), "absent": (cmd_absent, "tap", 2),
    "noregion": (cmd_noregion, "tap", 2), "range": (cmd_range, "tap", 5), "gpus": (cmd_gpus, "tap", 4),
    "unverifiable": (cmd_unverifiable, "tap", 2), "slots": (cmd_slots, "tap", 5),
    "top-members": (cmd_top_members, "value", 2),
    "leak": (cmd_leak, "gpu", 1), "stream": (cmd_stream, "gpu", 1), "signal": (cmd_signal, "gpu", 0),
    "torch_exit": (cmd_torch_exit, "gpu", 1), "denial": (cmd_denial, "gpu", 1),
    "threshold": (cmd_threshold, "gpu", 1), "pyleak": (cmd_pyleak, "gpu", 3), "sites": (cmd_sites, "value", 1), "soak": (cmd_soak, "value", 3),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) - 2 < COMMANDS[sys.argv[1]][2]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name = sys.argv[1]
    fn, style, _ = COMMANDS[name]
    c = Checks(style)
    try:
        fn(c, sys.argv[2:])
    except Unreadable as e:
        c.fail(str(e))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        # A document without a key or value the checks read fails them; the traceback follows on stderr (the log).
        c.fail(f"{name}: the JSON lacks what the check reads: {type(e).__name__}: {e}")
        sys.stdout.flush()
        traceback.print_exc()
    c.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks of vramguard reports ("vramguard.report/1" JSON) for tests/gpu/run.sh.

Each subcommand prints "ok ..." / "BAD ..." lines and a final "figures: ..." line, and exits 0 only when nothing
was BAD (the suite's program convention). Standard library only.

  check_report.py leak JSON                 examples/leaky.cu's exit report: leak_buffers' 3 x 64 MiB are live
  check_report.py stream JSON [--sync]      ... its busy stream: destroyed_pending from make_stream to finish
  check_report.py signal --ref OUT --run OUT JSON...
                                            torch_train.py's dumps: 3 "signal" + 1 "exit", result as without preload
  check_report.py torch_exit JSON           a PyTorch job's exit report: driver alive, the pool's live bytes
"""
import json
import re
import sys

SCHEMA = "vramguard.report/1"
MiB = 1024 * 1024

bad = []


def ok(msg):
    print("ok " + msg)


def fail(msg):
    bad.append(msg)
    print("BAD " + msg)


def finish(figures):
    print("figures: " + figures)
    sys.exit(1 if bad else 0)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not readable as JSON: {e}")
        return None


def mib(n):
    return f"{n / MiB:.2f} MiB"


def names(sym, want):
    """A frame's symbol names function `want`: exactly, or a compiler clone of it (want.constprop.0, want.part.1)."""
    return sym == want or sym.startswith(want + ".")


def frame_index(site, want):
    for i, f in enumerate(site.get("frames") or []):
        if names(f.get("symbol") or "", want):
            return i
    return -1


def sites_by_id(rep):
    return {s["id"]: s for s in rep.get("sites") or []}


def common(rep, reason, path):
    """Schema, reason and driver state of one report."""
    if rep.get("schema") != SCHEMA:
        fail(f"{path}: schema {rep.get('schema')!r}, want {SCHEMA!r}")
    if rep.get("reason") != reason:
        fail(f"{path}: reason {rep.get('reason')!r}, want {reason!r}")
    if rep.get("driver") != "alive":
        fail(f"{path}: driver {rep.get('driver')!r}, want 'alive' "
             f"(the {reason} report ran after the driver's teardown?)")
    for k in ("devices", "sites", "allocations", "streams"):
        if k not in rep:
            fail(f"{path}: no {k!r} key")


def brief(site):
    fr = site.get("frames") or []
    return " < ".join((f.get("symbol") or "??") for f in fr[:6]) + (" < ..." if len(fr) > 6 else "")


def cmd_leak(args):
    path = args[0]
    rep = load(path)
    if rep is None:
        finish("no report")
    common(rep, "exit", path)
    leak = [s for s in rep.get("sites") or [] if frame_index(s, "leak_buffers") >= 0]
    count = sum(s.get("live_count", 0) for s in leak)
    nbytes = sum(s.get("live_bytes", 0) for s in leak)
    if not leak:
        fail("no site has a frame naming leak_buffers; sites: "
             + " | ".join(brief(s) for s in (rep.get("sites") or [])[:4]))
    elif count == 3 and nbytes == 3 * 64 * MiB:
        ok(f"leak_buffers: {count} live, {nbytes} bytes")
    else:
        fail(f"leak_buffers: {count} live allocations of {nbytes} bytes, want 3 of {3 * 64 * MiB}")
    if len(leak) > 1:
        print(f"note: leak_buffers appears in {len(leak)} sites (one expected: the same call site)")
    scratch = [s for s in rep.get("sites") or [] if frame_index(s, "scratch_roundtrip") >= 0]
    s_live = sum(s.get("live_count", 0) for s in scratch)
    s_total = sum(s.get("total_allocs", 0) for s in scratch)
    if not scratch:
        fail("no site names scratch_roundtrip (its freed allocation should still be a site, with 0 live)")
    elif s_live != 0 or s_total != 1:
        fail(f"scratch_roundtrip: {s_live} live of {s_total} made, want 0 of 1")
    dev = (rep.get("devices") or [{}])[0]
    where = ""
    if leak:
        s = leak[0]
        where = (f" (site {s['id']} via {s.get('api')}, frame {frame_index(s, 'leak_buffers')} of "
                 f"{len(s.get('frames') or [])}: {brief(s)})")
    finish(f"leak_buffers: live_count {count}, live_bytes {nbytes} ({mib(nbytes)}) in {len(leak)} site(s){where}; "
           f"scratch_roundtrip {s_live} live of {s_total}; device 0 used_bytes {dev.get('used_bytes')}; "
           f"allocations.live {rep.get('allocations', {}).get('live')}; reason {rep.get('reason')}, "
           f"driver {rep.get('driver')}")


def cmd_stream(args):
    path, sync = args[0], "--sync" in args[1:]
    rep = load(path)
    if rep is None:
        finish("no report")
    common(rep, "exit", path)
    st = rep.get("streams") or {}
    ev = st.get("destroyed_pending") or []
    by_id = sites_by_id(rep)
    total = sum(e.get("count", 0) for e in ev)
    match = None
    for e in ev:
        cs, ds = by_id.get(e.get("create_site")), by_id.get(e.get("destroy_site"))
        if cs and ds and frame_index(cs, "make_stream") >= 0 and frame_index(ds, "finish") >= 0:
            match = (e, cs, ds)
            break
    if total < 1:
        fail(f"streams.destroyed_pending is empty (created {st.get('created')}, destroyed {st.get('destroyed')})")
    elif not match:
        def site_desc(sid):
            return brief(by_id[sid]) if sid in by_id else "not in sites[]"
        desc = "; ".join(f"create_site {e.get('create_site')} [{site_desc(e.get('create_site'))}] "
                         f"destroy_site {e.get('destroy_site')} [{site_desc(e.get('destroy_site'))}]" for e in ev)
        fail(f"no destroyed_pending entry goes from a make_stream site to a finish site: {desc}")
    else:
        e, cs, ds = match
        ok(f"destroyed_pending count {e['count']}: created by make_stream (site {cs['id']}), destroyed in finish "
           f"(site {ds['id']})")
        if bool(e.get("synchronized")) != sync:
            fail(f"synchronized is {e.get('synchronized')}, want {sync} "
                 f"(VRAMGUARD_STREAM_CHECK={'sync' if sync else 'warn'})")
    fig = f"streams created {st.get('created')}, destroyed {st.get('destroyed')}, destroyed_pending count {total}"
    if match:
        e, cs, ds = match
        fig += (f"; create_site {cs['id']} ({cs.get('api')}, make_stream at frame {frame_index(cs, 'make_stream')}),"
                f" destroy_site {ds['id']} ({ds.get('api')}, finish at frame {frame_index(ds, 'finish')}),"
                f" synchronized {str(bool(e.get('synchronized'))).lower()}")
    finish(fig)


def result_line(path):
    """torch_train.py's "result: loss_first=A loss_last=B checksum=C" as floats, or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^result: loss_first=(\S+) loss_last=(\S+) checksum=(\S+)", text, re.M)
    return tuple(float(x) for x in m.groups()) if m else None


def cmd_signal(args):
    ref = run = None
    files = []
    i = 0
    while i < len(args):
        if args[i] == "--ref":
            ref, i = args[i + 1], i + 2
        elif args[i] == "--run":
            run, i = args[i + 1], i + 2
        else:
            files.append(args[i])
            i += 1
    reports = []
    for p in sorted(files):
        r = load(p)
        if r is not None:
            reports.append((p, r))
    sig = [(p, r) for p, r in reports if r.get("reason") == "signal"]
    ext = [(p, r) for p, r in reports if r.get("reason") == "exit"]
    other = [(p, r) for p, r in reports if r.get("reason") not in ("signal", "exit")]
    if len(sig) != 3 or len(ext) != 1 or other:
        fail(f"{len(files)} report files: {len(sig)} 'signal', {len(ext)} 'exit', {len(other)} other "
             f"(want 3 and 1)")
    used = []
    nsites = []
    for p, r in sig + ext:
        common(r, r.get("reason"), p)
        devs = r.get("devices") or []
        u = devs[0].get("used_bytes", 0) if devs else 0
        if r.get("reason") == "signal":
            used.append(u)
            nsites.append(len(r.get("sites") or []))
            if u <= 0:
                fail(f"{p}: devices[0].used_bytes {u}, want > 0 (the training loop holds memory)")
    seqs = sorted(r.get("sequence") for _, r in reports)
    if seqs != list(range(1, len(reports) + 1)):
        fail(f"sequence numbers {seqs}, want 1..{len(reports)}")
    a, b = result_line(run) if run else None, result_line(ref) if ref else None
    res = "no result"
    if not a:
        fail("the preloaded run printed no 'result:' line")
    elif not b:
        fail("the reference run (no preload) printed no 'result:' line")
    else:
        l0, l1, cs = a
        if not l1 < l0:
            fail(f"loss did not decrease: {l0} -> {l1}")
        tol = 1e-6 * max(1.0, abs(b[2]))
        if abs(cs - b[2]) > tol:
            fail(f"checksum {cs!r} under the preload, {b[2]!r} without (differ by {abs(cs - b[2]):.3g} > {tol:.3g})")
        same = ("identical to" if cs == b[2] else "within 1e-6 of" if abs(cs - b[2]) <= tol else
                f"NOT equal to ({b[2]!r})")
        res = f"loss {l0:.4f} -> {l1:.4f}, checksum {cs!r} {same} the run without preload"
    finish(f"{len(sig)} signal + {len(ext)} exit reports; signal used_bytes {', '.join(str(u) for u in used)}; "
           f"sites {', '.join(str(n) for n in nsites)}; {res}")


def cmd_torch_exit(args):
    path = args[0]
    rep = load(path)
    if rep is None:
        finish("no report")
    common(rep, "exit", path)
    sites = rep.get("sites") or []
    live = [s for s in sites if s.get("live_count", 0) > 0]
    live_bytes = sum(s.get("live_bytes", 0) for s in live)
    nlive = rep.get("allocations", {}).get("live")
    dev = (rep.get("devices") or [{}])[0]
    if not live:
        fail("no site with live allocations (the job keeps a tensor alive until exit)")
        finish(f"outstanding: allocations.live {nlive}, device 0 used_bytes {dev.get('used_bytes')}")
    top = max(live, key=lambda s: s.get("live_bytes", 0))
    fr = top.get("frames") or []
    first = next((f.get("symbol") for f in fr if f.get("symbol")), "")
    c10 = next((f.get("symbol") for f in fr if "c10" in (f.get("symbol") or "")), "")
    mod = (fr[0].get("module") or "").rsplit("/", 1)[-1] if fr else ""
    finish(f"outstanding {nlive} allocations, {live_bytes} bytes ({mib(live_bytes)}) in {len(live)} site(s); "
           f"device 0 used_bytes {dev.get('used_bytes')}, peak {dev.get('peak_bytes')}; top site {top.get('id')} "
           f"via {top.get('api')}: {mib(top.get('live_bytes', 0))}, first symbol {first or '??'} ({mod or '?'}), "
           f"first c10 frame {c10 or 'none'}; driver {rep.get('driver')}")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    cmd = {"leak": cmd_leak, "stream": cmd_stream, "signal": cmd_signal, "torch_exit": cmd_torch_exit}.get(sys.argv[1])
    if not cmd:
        print(__doc__)
        sys.exit(2)
    cmd(sys.argv[2:])


if __name__ == "__main__":
    main()

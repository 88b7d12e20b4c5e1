#!/usr/bin/env python3
"""A big "vramguard.report/1" document for bench/run_bigreport.sh: SITES call sites of FRAMES native frames each,
in the library's own layout (report/json_write.c: one top-level key per line, one array element per line), so that
`vramguard report` and `vramguard diff` read what a long-running process with many call sites would write.

Deterministic: the same arguments give the same bytes. The frames are drawn from 40 modules and 4000 functions, as a
real process's stacks repeat their libraries and functions (short names, as `tests/integration/leaky many` has,
so that 30 000 sites x 64 frames make the 221 MB report of issue 29); the devices carry a timeline of 400 points.
--variant 1 writes the same process's next report: a little more live memory at every 7th site, every 101st site
gone, 300 new sites (ids past SITES), a later time and sequence number; `vramguard diff A B` then matches by id.

Usage: gen_bigreport.py [--sites N] [--frames N] [--variant 0|1] OUT.json
"""
import argparse

MODULES = 40
FUNCS = 4000
POINTS = 400


def module(m):
    return "libcudart.so.12" if m == 0 else "m%02d.so" % m


def symbol(f):
    if f % 5 == 0:
        return ""               # unresolved frames: "??" in the text form
    return "f%d" % f


def rng(seed):
    """A small linear congruential generator: the same sequence on every Python."""
    x = seed & 0xFFFFFFFF
    while True:
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        yield x


def site_line(sid, live_count, live_bytes):
    return ('    {"id": %d, "api": "cuMemAlloc_v2", "live_count": %d, "live_bytes": %d, "total_allocs": %d, '
            '"total_bytes": %d, "frames": [\n' % (sid, live_count, live_bytes, live_count * 3, live_bytes * 3))


def frame_lines(sid, nframes):
    r = rng(sid * 7919 + 17)
    out = []
    for k in range(nframes):
        f = next(r) % FUNCS if k else sid % FUNCS
        m = f % MODULES
        base = 0x7F0000000000 + m * 0x10000000
        moff = 0x1000 + f * 0x340 + (next(r) % 0x300)
        sym = symbol(f)
        out.append('      {"address": "0x%x", "module": "%s", "module_offset": "0x%x", "symbol": "%s", "offset": %d}'
                   % (base + moff, module(m), moff, sym, (moff & 0x2FF) if sym else 0))
    return ",\n".join(out)


def device(variant, nsites, used):
    pts = []
    t0 = 1795296000000000000 + variant * 3600 * 10**9
    for i in range(POINTS):
        u = used * (i + 1) // POINTS
        pts.append('{"time_ns": %d, "used_bytes": %d, "peak_bytes": %d, "denied_count": 0, "denied_bytes": 0}'
                   % (t0 + i * 9 * 10**9, u, u))
    return ('    {"ordinal": 0, "uuid": "GPU-5e3c9a1b-7f2d-4c6e-9a0b-1d2e3f405162", "quota_bytes": 85899345920, '
            '"soft_limit_bytes": null, "soft_limit_source": null, "total_bytes": 85899345920, "used_bytes": %d, '
            '"peak_bytes": %d, "allocs": %d, "frees": %d, "denied_count": 0, "denied_bytes": 0, '
            '"largest_bytes": 67108864, "allocated_bytes": %d, "pool_reserved_bytes": 0, "pool_live_bytes": 0, '
            '"graph_bytes": 0, "driver_bytes": 0, "driver_headroom_bytes": 0, "driver_measured": false, '
            '"driver_limit_bytes": null, "compute_limit_permille": null, "compute_limit_source": null, '
            '"gpu_time_ns": 0, "compute_recent_permille": 0, "compute_recent_seconds": 0, "compute_waits": 0, '
            '"compute_waited_ns": 0, "timeline": {"period_ms": 9000, "compactions": 3, "points": [%s]}}\n'
            % (used, used, nsites * 3, nsites * 2, used, ", ".join(pts)))


def sites(args):
    """(id, live_count, live_bytes), largest live bytes first, as the library sorts them."""
    out = []
    for sid in range(1, args.sites + 1):
        if args.variant and sid % 101 == 0:
            continue
        count = 1 + (sid * 37) % 50
        nbytes = count * (1 << (10 + sid % 12))
        if args.variant and sid % 7 == 0:
            count, nbytes = count + 1, nbytes + (1 << 20)
        out.append((sid, count, nbytes))
    if args.variant:
        out += [(args.sites + i, 2, (2 << 20) + i * 4096) for i in range(1, 301)]
    out.sort(key=lambda s: (-s[2], s[0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sites", type=int, default=30000)
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--variant", type=int, default=0, choices=(0, 1))
    ap.add_argument("out")
    args = ap.parse_args()
    rows = sites(args)
    used = sum(s[2] for s in rows)
    t = 1795299600123456789 + args.variant * 3600 * 10**9
    with open(args.out, "w", encoding="utf-8", newline="\n") as w:
        w.write('{\n  "schema": "vramguard.report/1",\n  "schema_revision": 4,\n  "reason": "signal",\n'
                '  "sequence": %d,\n  "pid": 48213,\n  "time": "%s",\n  "time_ns": %d,\n'
                '  "command": "python3 train.py --epochs 90",\n  "hostname": "gpu-node-7",\n  "version": "0.3.0",\n'
                '  "driver": "alive",\n  "backtrace_depth": %d,\n  "count": "device",\n  "devices": [\n'
                % (1 + args.variant, "2026-11-21T0%d:00:00.123Z" % (args.variant + 1), t, args.frames))
        w.write(device(args.variant, len(rows), used))
        w.write('  ],\n  "sites": [\n')
        for i, (sid, count, nbytes) in enumerate(rows):
            w.write(site_line(sid, count, nbytes))
            w.write(frame_lines(sid, args.frames))
            w.write('\n    ], "python": []}%s\n' % ("," if i + 1 < len(rows) else ""))
        w.write('  ],\n  "modules": [\n')
        w.write(",\n".join('    {"path": "%s", "build_id": "%040x", "base": "0x%x"}'
                           % (module(m), m * 0x1234567 + 1, 0x7F0000000000 + m * 0x10000000)
                           for m in range(MODULES)))
        w.write('\n  ],\n  "allocations": {"live": %d, "listed": 0, "largest": []},\n' % sum(s[1] for s in rows))
        w.write('  "streams": {"created": 0, "destroyed": 0, "destroyed_pending": [], "live": []}\n}\n')


if __name__ == "__main__":
    main()

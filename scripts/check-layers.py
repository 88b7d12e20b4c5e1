#!/usr/bin/env python3
"""The folders are the architecture: check that their arrows point one way (`make test` runs this).

    config/                      the bottom: includes only itself
    accounting/   report/        above config, beside each other: neither includes the other
    interposer/   cli/           on top: may include everything below, never each other

Every `#include "..."` of a .c, .h or .S in those folders is an edge; an edge to a folder the rule does not allow
is printed as `file -> header (rule)` and fails the check. With --objs DIR (the library's objects, build/obj), a
call is an edge too: an object that needs a function defined in a folder it may not include is printed as
`file -> symbol in file (rule)`. And cli/ reads regions through accounting/region_scan.h only: a `->h->` or
`->slot[` in cli/ is the command reaching into a region's layout, and a *_impl.h header is its folder's own. A
header the Makefile force-includes (`-include FILE`) is included by every folder's objects, so it must be one every
folder may include: config/'s.

Exit status 0 when the graph is clean, 1 otherwise."""
import os
import re
import subprocess
import sys

# What each folder may include (itself always). accounting and report are independent today and stay so: a report
# field that needs accounting data gets it from the interposer (snapshot.c fills struct vg_report).
ALLOWED = {
    "config": {"config"},
    "accounting": {"accounting", "config"},
    "report": {"report", "config"},
    "interposer": {"interposer", "accounting", "config", "report"},
    "cli": {"cli", "accounting", "config", "report"},
}
RULE = {
    "config": "config/ includes only config/",
    "accounting": "accounting/ includes only accounting/ and config/",
    "report": "report/ includes only report/ and config/",
    "interposer": "interposer/ includes everything but cli/",
    "cli": "cli/ includes everything but interposer/",
}
# Known back edges, each to be deleted by the change that removes it. Keep this list short and commented.
ALLOW = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYOUT = re.compile(r"->h->|\.h->|->slot\[|\.slot\[")
FORCED = re.compile(r"(?:^|\s)-include\s+(\S+)")


def folder(path):
    top = path.split("/", 1)[0]
    return top if top in ALLOWED and "/" in path else None


def sources(root):
    for top in sorted(ALLOWED):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def include_edges(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    for inc in INCLUDE.findall(text):
        target = inc
        if folder(inc) is None:     # relative to the including file, as the compiler tries first
            rel = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            if os.path.exists(os.path.join(root, rel)):
                target = rel
        if folder(target):
            yield target


def forced_edges(root):
    """Headers the Makefile force-includes into objects (-include FILE)."""
    try:
        with open(os.path.join(root, "Makefile"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    return sorted({m for m in FORCED.findall(text) if not m.startswith("$")})


def nm(args):
    try:
        out = subprocess.run(["nm"] + args, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""
    return out


def call_edges(root, objs):
    """(caller source, symbol, defining source) for every undefined symbol of an object defined in another."""
    defined, needs = {}, {}
    for dirpath, _, files in os.walk(objs):
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            obj = os.path.join(dirpath, f)
            src = os.path.relpath(obj, objs)[:-2]
            src = next((src + e for e in (".c", ".S") if os.path.exists(os.path.join(root, src + e))), src + ".c")
            for line in nm(["--defined-only", obj]).splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TDBRtdbr" and parts[1].isupper():
                    defined.setdefault(parts[2], src)
            needs[src] = [l.split()[-1] for l in nm(["-u", obj]).splitlines() if l.strip()]
    for src, syms in sorted(needs.items()):
        for s in syms:
            if s in defined and s.startswith("vg_"):  # our own: dlsym and the cu* hooks are libc's and libcuda's names
                yield src, s, defined[s]


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    objs = None
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--objs" and args:
            objs = args.pop(0)
        elif a == "--root" and args:
            root = args.pop(0)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    bad = []
    files = list(sources(root))
    for path in files:
        src = folder(path)
        for target in include_edges(root, path):
            if folder(target) not in ALLOWED[src] and (path, target) not in ALLOW:
                bad.append(f"{path} -> {target} ({RULE[src]})")
            elif target.endswith("_impl.h") and folder(target) != src:
                bad.append(f"{path} -> {target} (a *_impl.h header is private to its folder)")
        if src == "cli":
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if LAYOUT.search(line):
                        bad.append(f"{path}:{n} -> region layout (cli/ reads regions through "
                                   f"accounting/region_scan.h only)")
    for target in forced_edges(root):
        if any(folder(target) not in ALLOWED[f] for f in ALLOWED):
            bad.append(f"Makefile -include {target} (every folder's objects include it: it belongs in config/)")
    if objs:
        for src, sym, where in call_edges(root, objs):
            s, w = folder(src), folder(where)
            if s and w and w not in ALLOWED[s] and (src, where.rsplit(".", 1)[0] + ".h") not in ALLOW:
                bad.append(f"{src} -> {sym} in {where} ({RULE[s]})")
    for b in bad:
        print(b)
    if not bad:
        print(f"{len(files)} files, no back edge")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

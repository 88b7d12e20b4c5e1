#!/usr/bin/env python3
"""The folders are the architecture: check that their arrows point one way, between the folders and inside each
one (`make test` runs this, in section docs).

    config/                      the bottom: includes only itself
    accounting/   report/        above config, beside each other: neither includes the other
    interposer/   cli/           on top: may include everything below, never each other

Edges. Every `#include "..."` of a .c, .h or .S in those folders is an edge. With --objs DIR (repeatable: the
library's objects, build/obj, and the command's, build/obj-cli), a call is an edge too: an object that needs a
symbol another object of the same DIR defines (nm), the two being linked together.

Between the folders: an edge to a folder the rule above does not allow fails, printed as `file -> header (rule)`
or `file -> symbol in file (rule)`; so does a *_impl.h header included from another folder. The command's
objects are held to the same rules as the library's (cli/ may not call into interposer/). A header the Makefile
force-includes (`-include FILE`) is included by every folder's objects, so it must be one every folder may include:
config/'s.

Inside a folder: its files are modules, a module being a path without its extension (x.c and x.h are module x; the
private header x_impl.h is x's too: the half of x.h that only x's family sees), a subfolder such as
interposer/cuda/ being part of its top folder. The edges between the modules of a folder must not close a circle:
a circle fails, printed with its modules' files, one cycle through it, and every edge inside it with where it comes
from (the include line or the called symbol), so that the edge to remove can be seen. A folder may declare its
order in ORDER (its modules, bottom to top): an edge from a module to one listed above it fails ("goes up"), and so
does a module the list lacks or a name it lists that is no module. KNOWN_CIRCLES are circles tolerated for now,
each exactly: a circle that differs from every entry fails, and so does an entry that is no longer a circle.

cli/ never reaches into a region's layout: it calls region.h's functions and reads what a region holds through
accounting/region_scan.h's copies (struct vg_region_info, vg_dev_view, ...); a `->h->` or `->slot[` in cli/ is
the command reading the mapped file itself, and fails.

--self-test runs the check on small fixture trees that must fail (a circle of includes, a circle of calls, an edge
that goes up, the command's object calling into interposer/) and on clean ones that must pass, so that a check
that stopped seeing edges cannot pass silently.

Exit status 0 when everything holds, 1 otherwise, 2 for a usage error."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

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
# Known back edges between folders, each to be deleted by the change that removes it. Keep this list short.
ALLOW = set()

# The declared order of a folder's modules, bottom to top: a module may include or call only those listed before
# it. A new file's module goes where its edges put it (the check names the edge that goes up).
ORDER = {
    "config": [
        "config/glibc_compat",  # force-included into every object
        "config/stat",
        "config/fsguard",
        "config/config",        # the public header: the model, the parsers' results
        "config/internal",      # config's own helpers, declarations of what one file lends another
        "config/format",        # bounded appender, quoting, sizes as text
        "config/size",
        "config/limits",
        "config/policy",        # one GPU's policy: quota, request, warning threshold, soft limit
        "config/template",      # VRAMGUARD_REPORT's template syntax
        "config/options",       # the options table
        "config/row",           # reading one row; the enum and integer loaders
        "config/compute",       # the compute share's rows: VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT[_<i>]
        "config/note",
        "config/load_files",
        "config/load",          # vg_config_load: every row's loader
    ],
    "accounting": [
        "accounting/clock",
        "accounting/atomic",
        "accounting/lockorder",
        "accounting/fault",
        "accounting/region",    # region.h (the layout and API), region_impl.h, region.c (open, check, close)
        "accounting/region_path",
        "accounting/region_proc",
        "accounting/region_lock",
        "accounting/region_slots",
        "accounting/region_charge",
        "accounting/region_limit",
        "accounting/region_usage",
        "accounting/region_scan",   # the command's
        "accounting/quota",
        "accounting/table",
        "accounting/timeline",
        "accounting/growth",    # per-site growth and the quota forecast
        "accounting/throttle",  # the compute share's arithmetic
        "accounting/gpu_share", # the compute share's per-GPU activity file
        "accounting/unwind",
        "accounting/pyframes",
        "accounting/sites",
    ],
    "interposer": [
        "interposer/globals",   # the shared state's declarations and owners
        "interposer/hooks",     # the hook list
        "interposer/base",      # the real driver table, the configuration, the hook prologue's closing half
        "interposer/thread",
        "interposer/reporter_ask",  # asking for a report: async-signal-safe
        "interposer/tables",
        "interposer/shared",    # the process's region
        "interposer/device",    # the quota in force
        "interposer/timeline",
        "interposer/growth",    # per-site growth: the sampler's points, the forecast, growth reports asked for
        "interposer/softlimit",
        "interposer/nvml/nvml", # NVML's real table and our own NVML access
        "interposer/devmem",
        "interposer/compute",   # the compute share: streams' activity, launches held
        "interposer/snapshot",
        "interposer/reporter",
        "interposer/charge",
        "interposer/lifecycle", # start-up, fork, exit; vg_hook_enter
        "interposer/cuda/hook", # the opening every CUDA hook has
        "interposer/cuda/hook_array",
        "interposer/cuda/hook_ctx",
        "interposer/cuda/hook_mem",
        "interposer/cuda/hook_stream",
        "interposer/cuda/hook_pool",
        "interposer/cuda/hook_vmm",
        "interposer/cuda/hook_launch",
        "interposer/cuda/procaddress",  # cuGetProcAddress and the CUDA hooks' routing table
        "interposer/nvml/nvml_hooks",
        "interposer/route",     # dlsym and dlclose
        "interposer/dlsym",
    ],
    "cli": [
        "cli/start",            # the command's start-up on glibc before 2.34
        "cli/metrics_table",    # the metrics table
        "cli/view_schema",      # the JSON views' schema rows
        "cli/table",
        "cli/autoscale_payload",
        "cli/diff_compare",
        "cli/diff_growth",
        "cli/http_req",
        "cli/lines_dw",
        "cli/commands",         # the command table and each command's flags
        "cli/diff",
        "cli/diff_html",
        "cli/cli",              # shared helpers: usage, help, errors returned through vg_cli_fail
        "cli/scan",             # regions as the commands show them
        "cli/cdi", "cli/check", "cli/dump", "cli/http", "cli/lines", "cli/report_view", "cli/run",
        "cli/limit_find", "cli/metrics", "cli/report_cmd", "cli/top_snap", "cli/view_json",
        "cli/exporter", "cli/limit_set", "cli/limit_show", "cli/region", "cli/top_json", "cli/top_text",
        "cli/autoscale_target", "cli/limit", "cli/top",
        "cli/autoscale_shrink",
        "cli/autoscale_act",
        "cli/autoscale",
        "cli/vramguard",        # main: dispatch from the command table
    ],
}

# Circles tolerated for now, each exactly (none since issue 26: every folder's files point one way).
KNOWN_CIRCLES = []

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYOUT = re.compile(r"->h->|\.h->|->slot\[|\.slot\[")
FORCED = re.compile(r"(?:^|\s)-include\s+(\S+)")


def folder(path):
    top = path.split("/", 1)[0]
    return top if top in ALLOWED and "/" in path else None


def module(path):
    """x.c, x.h, x.S and x_impl.h are module x."""
    base, ext = os.path.splitext(path)
    return base[:-len("_impl")] if ext == ".h" and base.endswith("_impl") else base


def sources(root):
    for top in sorted(ALLOWED):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def include_edges(root, path):
    """(line as written, target path) for every include of path that names a file of the folders."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    for inc in INCLUDE.findall(text):
        target = inc
        if folder(inc) is None:     # relative to the including file, as the compiler tries first
            rel = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            if os.path.exists(os.path.join(root, rel)):
                target = rel
        if folder(target):
            yield inc, target


def forced_edges(root):
    """Headers the Makefile force-includes into objects (-include FILE)."""
    try:
        with open(os.path.join(root, "Makefile"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    return sorted({m for m in FORCED.findall(text) if not m.startswith("$")})


def nm_all(args, objs):
    """(object, nm line) for every line nm prints about the objects, in one run per 200 objects."""
    for i in range(0, len(objs), 200):
        try:
            out = subprocess.run(["nm", "-A"] + args + objs[i:i + 200], capture_output=True, text=True,
                                 check=False).stdout
        except OSError:
            return
        for line in out.splitlines():
            obj, sep, rest = line.partition(".o:")
            if sep:
                yield obj + ".o", rest


def call_edges(root, objs):
    """(caller source, symbol, defining source) for every symbol an object of objs needs and another defines."""
    def source(obj):
        src = os.path.relpath(obj, objs)[:-2]
        return next((src + e for e in (".c", ".S") if os.path.exists(os.path.join(root, src + e))), None)
    # An object whose source is gone (a file moved or deleted since that build) is not the program any more.
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(objs) for f in fs
                   if f.endswith(".o") and source(os.path.join(d, f)))
    defined, needs = {}, {}
    for obj, rest in nm_all(["--defined-only"], files):
        parts = rest.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.setdefault(parts[2], source(obj))
    for obj, rest in nm_all(["-u"], files):
        parts = rest.split()
        if parts and parts[0] == "U":
            needs.setdefault(source(obj), []).append(parts[-1])
    for src, syms in sorted(needs.items()):
        for s in syms:
            if s in defined and defined[s] != src:
                yield src, s, defined[s]


class Graph:
    """The modules of every folder and the edges between modules of one folder, each with its first evidence."""

    def __init__(self):
        self.files = {}         # module -> its files
        self.edges = {}         # module -> {module: why}

    def add(self, a, b, why):
        if a != b and folder(a) == folder(b):
            self.edges.setdefault(a, {}).setdefault(b, why)

    def circles(self):
        """The strongly connected components of more than one module (Tarjan's, without recursion)."""
        index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
        for start in sorted(self.files):
            if start in index:
                continue
            work = [(start, iter(sorted(self.edges.get(start, {}))))]
            index[start] = low[start] = counter[0]
            counter[0] += 1
            stack.append(start)
            on.add(start)
            while work:
                v, it = work[-1]
                w = next(it, None)
                if w is not None:
                    if w not in index:
                        index[w] = low[w] = counter[0]
                        counter[0] += 1
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(sorted(self.edges.get(w, {})))))
                    elif w in on:
                        low[v] = min(low[v], index[w])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
        return sorted(out)

    def cycle(self, comp):
        """One shortest cycle through comp's first module, as a list of modules (first == last)."""
        first, members = comp[0], set(comp)
        prev, queue = {first: None}, [first]
        for v in queue:
            for w in sorted(self.edges.get(v, {})):
                if w == first:
                    path, x = [], v
                    while x is not None:
                        path.append(x)
                        x = prev[x]
                    return path[::-1] + [first]
                if w in members and w not in prev:
                    prev[w] = v
                    queue.append(w)
        return comp + [first]


def build_graph(root, files, calls):
    g = Graph()
    for path in files:
        g.files.setdefault(module(path), []).append(path)
    for path in files:
        for inc, target in include_edges(root, path):
            g.add(module(path), module(target), f'{path}: #include "{inc}"')
    for src, sym, where in calls:
        g.add(module(src), module(where), f"{src} calls {sym} ({where})")
    return g


def folder_rules(root, files, calls):
    bad = []
    for path in files:
        src = folder(path)
        for _, target in include_edges(root, path):
            if folder(target) not in ALLOWED[src] and (path, target) not in ALLOW:
                bad.append(f"{path} -> {target} ({RULE[src]})")
            elif target.endswith("_impl.h") and folder(target) != src:
                bad.append(f"{path} -> {target} (a *_impl.h header is private to its folder)")
        if src == "cli":
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if LAYOUT.search(line):
                        bad.append(f"{path}:{n} -> region layout (cli/ reads what a region holds through "
                                   f"accounting/region_scan.h's copies)")
    for target in forced_edges(root):
        if any(folder(target) not in ALLOWED[f] for f in ALLOWED):
            bad.append(f"Makefile -include {target} (every folder's objects include it: it belongs in config/)")
    for src, sym, where in calls:
        s, w = folder(src), folder(where)
        if not sym.startswith("vg_"):
            continue    # dlsym and the cu* hooks: libc's and libcuda's names, which the library also defines
        if s and w and w not in ALLOWED[s] and (src, where.rsplit(".", 1)[0] + ".h") not in ALLOW:
            bad.append(f"{src} -> {sym} in {where} ({RULE[s]})")
    return bad


def describe(g, comp):
    lines = [f"{folder(comp[0])}/: a circle of {len(comp)} modules: " +
             ", ".join(f"{m} ({' '.join(os.path.basename(p) for p in g.files.get(m, []))})" for m in comp),
             "  a cycle: " + " -> ".join(g.cycle(comp)),
             "  every edge inside it:"]
    for a in comp:
        for b, why in sorted(g.edges.get(a, {}).items()):
            if b in comp:
                lines.append(f"    {a} -> {b}: {why}")
    return lines


def module_rules(g, order, known):
    bad = []
    circles = g.circles()
    matched = set()
    for comp in circles:
        hit = next((i for i, k in enumerate(known) if set(comp) == set(k)), None)
        if hit is None:
            bad.extend(describe(g, comp))
        else:
            matched.add(hit)
    for i, k in enumerate(known):
        if i not in matched:
            bad.append("KNOWN_CIRCLES lists a circle there is not (any more): " + ", ".join(sorted(k)) +
                       " (delete it, or make it the circle there is)")
    for top, mods in sorted(order.items()):
        rank = {m: i for i, m in enumerate(mods)}
        bad.extend(f"ORDER['{top}'] lists {m} twice" for m in sorted(rank) if mods.count(m) > 1)
        have = sorted(m for m in g.files if folder(m) == top)
        for m in have:
            if m not in rank:
                bad.append(f"{m} is not in ORDER['{top}'] (scripts/check-layers.py): list it above what it uses")
        for m in mods:
            if m not in g.files:
                bad.append(f"ORDER['{top}'] lists {m}, which is no module of {top}/")
        for a in have:
            for b, why in sorted(g.edges.get(a, {}).items()):
                if a in rank and b in rank and rank[b] > rank[a]:
                    bad.append(f"{a} -> {b} goes up (ORDER['{top}'] lists {b} above {a}): {why}")
    return bad, circles


def check(root, objs_dirs, order, known):
    """Every rule on the tree at root; the lines that fail, and a summary."""
    files = list(sources(root))
    calls = [c for objs in objs_dirs for c in call_edges(root, objs)]
    bad = folder_rules(root, files, calls)
    g = build_graph(root, files, calls)
    more, circles = module_rules(g, order, known)
    bad += more
    nedges = sum(len(v) for v in g.edges.values())
    summary = (f"{len(files)} files, {len(g.files)} modules, {nedges} edges inside folders, no back edge, "
               + (f"no circle but the {len(circles)} known" if circles else "no circle"))
    return bad, summary


def self_test():
    """Fixture trees the check must fail, and clean ones it must pass."""
    cc = shutil.which("cc") or shutil.which("gcc")
    failures, judged = [], [0]

    def tree(files, compile_=()):
        root = tempfile.mkdtemp(prefix="vg-layers-")
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        objs = []
        if compile_:
            objs = [os.path.join(root, "obj")]
            for src in compile_:
                obj = os.path.join(root, "obj", src[:-2] + ".o")
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                subprocess.run([cc, "-c", "-o", obj, os.path.join(root, src)], check=True)
        return root, objs

    def expect(name, files, want, needle="", order=None, compile_=()):
        root, objs = tree(files, compile_)
        try:
            bad, _ = check(root, objs, order or {}, [])
        finally:
            shutil.rmtree(root)
        text = "\n".join(bad)
        judged[0] += 1
        if bool(bad) != (want == "fail") or needle not in text:
            failures.append(f"{name}: expected it to {want}{' naming ' + repr(needle) if needle else ''}, got "
                            f"{text or 'a pass'}")

    inc = {"config/a.c": '#include "config/a.h"\n#include "config/b.h"\n', "config/a.h": "",
           "config/b.c": '#include "config/b.h"\n', "config/b.h": ""}
    expect("one-way includes", inc, "pass")
    expect("a circle of includes", dict(inc, **{"config/b.c": '#include "config/a.h"\n'}), "fail",
           'config/b -> config/a: config/b.c: #include "config/a.h"')
    expect("an *_impl.h header is its module's", {"config/x.c": '#include "config/x_impl.h"\n',
                                                  "config/x_impl.h": '#include "config/x.h"\n', "config/x.h": ""},
           "pass")
    expect("a declared order, kept", inc, "pass", order={"config": ["config/b", "config/a"]})
    expect("a declared order, broken", inc, "fail", "config/a -> config/b goes up",
           order={"config": ["config/a", "config/b"]})
    expect("a module the order lacks", inc, "fail", "config/b is not in ORDER", order={"config": ["config/a"]})
    if cc:
        calls = {"accounting/a.c": "void b(void); void a(void) { b(); }\n",
                 "accounting/b.c": "void b(void) {}\n"}
        expect("one-way calls", calls, "pass", compile_=("accounting/a.c", "accounting/b.c"))
        expect("a circle of calls", dict(calls, **{"accounting/b.c": "void a(void); void b(void) { a(); }\n"}),
               "fail", "accounting/b -> accounting/a: accounting/b.c calls a",
               compile_=("accounting/a.c", "accounting/b.c"))
        expect("the command calls into interposer/",
               {"cli/c.c": "void vg_i(void); int main(void) { vg_i(); }\n", "interposer/i.c": "void vg_i(void) {}\n"},
               "fail", "cli/c.c -> vg_i in interposer/i.c", compile_=("cli/c.c", "interposer/i.c"))
    else:
        failures.append("no C compiler (cc): the call-edge fixtures cannot be built")
    for f in failures:
        print(f)
    if not failures:
        print(f"self-test: {judged[0]} fixture trees judged as expected")
    return 1 if failures else 0


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    objs = []
    args = argv[1:]
    if args == ["--self-test"]:
        return self_test()
    while args:
        a = args.pop(0)
        if a == "--objs" and args:
            objs.append(args.pop(0))
        elif a == "--root" and args:
            root = args.pop(0)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    for d in objs:
        if not os.path.isdir(d):
            print(f"--objs {d}: no such directory (build first)", file=sys.stderr)
            return 2
    bad, summary = check(root, objs, ORDER, KNOWN_CIRCLES)
    if bad and not objs:
        print("(without --objs only the #include edges are seen: section docs passes --objs build/obj --objs "
              "build/obj-cli)")
    for b in bad:
        print(b)
    if not bad:
        print(summary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""gpu_stats.py: the launcher and the arithmetic of bench/run_gpu.sh (standard library only).

  gpu_stats.py launch [VAR=VALUE...] -- PROG [ARGS...]
      fork; in the child, read CLOCK_MONOTONIC (ns) and execve PROG with it as argv[1], the VARs added to the
      environment of PROG only (so the launcher itself is never preloaded). Exits with PROG's status.
  gpu_stats.py table --unit U --rule RULE [--targets REGEX] BASE_LABEL=FILE LABEL=FILE...
      one row per figure (and per further FILE): the per-process values of each side, their median and range,
      compared with the first FILE (the side without the preload).
  gpu_stats.py raw LABEL=FILE...
      every per-process value, for the reader who wants to judge the spread.
  gpu_stats.py interleave --target X FILE
      the in-process comparison (gpu_alloc_cost interleave): per row, over the processes, the median of their
      real and wrapped times per pair, of their median block ratios (verdict: <= X) and of the time added; the
      range of their 95% intervals; blocks in which the wrapped pairs were slower, summed.

A FILE holds the output of the processes of one side, as bench/run_gpu.sh collects it: "proc ok PAIR|failed ...|
skip REASON|skipped ..." opens each process, then its "preload 0|1", "info ..." and "figure NAME VALUE [MIN]" lines.
VALUE is that process's own figure (a median over its rounds or steps); MIN, where given, its best round. PAIR
numbers the processes that ran back to back on the two sides.

Columns: ratio (or added) and range as below; best = best round with / best round without (or, without MIN,
best process: min / min; for added: min - min); paired = median over the pairs of with / without (with - without);
slower = in how many pairs the process with the preload was the slower one.

Rules (the verdict of a row whose name matches --targets; other rows get "-"):
  le:X      paired ratio <= X (without pair numbers: ratio = median(with) / median(without) <= X). Paired, because
            the machine has slow spells lasting several processes (seen on the H200: every process 35% slower for
            a minute): back-to-back pairs see the same spell, medians over all processes do not.
  overlap   the ratio's range, min(with)/max(without) .. max(with)/min(without) over the per-process values,
            contains 1.00 (the issue's "indistinguishable from 1.00")
  added:X   paired added <= X (without pair numbers: median(with) - median(without) <= X), in the unit of the
            figures
  none      no verdict
"""
import os
import re
import statistics
import sys
import time


def launch(args):
    if "--" not in args:
        sys.exit("usage: gpu_stats.py launch [VAR=VALUE...] -- PROG [ARGS...]")
    i = args.index("--")
    env = dict(os.environ)
    for a in args[:i]:
        k, _, v = a.partition("=")
        env[k] = v
    argv = args[i + 1:]
    pid = os.fork()
    if pid == 0:
        try:
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            os.execve(argv[0], [argv[0], str(t0)] + argv[1:], env)
        except BaseException as e:  # noqa: B902 - the child must never return into the parent's code
            os.write(2, f"gpu_stats.py launch: cannot run {argv[0]}: {e}\n".encode())
        os._exit(127)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 128 + os.WTERMSIG(status)


class Side:
    """The processes of one side (one FILE): per figure, the per-process values, minima and pair numbers."""

    def __init__(self, label, path):
        self.label, self.path = label, path
        self.values, self.mins, self.pairs, self.order = {}, {}, {}, []
        self.il, self.il_order = {}, []     # "interleave" lines (gpu_alloc_cost interleave), by row
        self.procs, self.failed, self.skipped, self.preload, self.info = 0, [], [], [], []
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        pair = None
        for line in lines:
            f = line.split()
            if not f:
                continue
            if f[0] == "proc":
                self.procs += 1
                pair = None
                if f[1:2] == ["skip"]:
                    self.skipped.append(" ".join(f[2:]))
                elif f[1:2] == ["ok"]:
                    pair = f[2] if len(f) > 2 else str(self.procs)
                else:
                    self.failed.append(" ".join(f[1:]))
            elif f[0] == "preload" and len(f) == 2:
                self.preload.append(f[1])
            elif f[0] == "info":
                if line[5:] not in self.info:
                    self.info.append(line[5:])
            elif f[0] == "interleave" and len(f) == 10:
                if f[1] not in self.il:
                    self.il_order.append(f[1])
                    self.il[f[1]] = []
                self.il[f[1]].append([float(x) for x in f[2:8]] + [int(f[8]), int(f[9])])
            elif f[0] == "figure" and len(f) >= 3:
                name = f[1]
                if name not in self.values:
                    self.order.append(name)
                    self.values[name], self.mins[name], self.pairs[name] = [], [], {}
                self.values[name].append(float(f[2]))
                if len(f) >= 4:
                    self.mins[name].append(float(f[3]))
                if pair is not None:
                    self.pairs[name][pair] = float(f[2])


def parse_sides(specs):
    sides = []
    for s in specs:
        label, sep, path = s.rpartition("=")
        if not sep:
            sys.exit(f"gpu_stats.py: expected LABEL=FILE, got {s!r}")
        sides.append(Side(label, path))
    return sides


def num(v):
    a = abs(v)
    return f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 10 else f"{v:.3f}"


def cell(vals):
    if not vals:
        return "no data"
    return f"{num(statistics.median(vals))} ({num(min(vals))}..{num(max(vals))})"


def table(args):
    unit, rule, targets, specs = "", "none", None, []
    while args:
        a = args.pop(0)
        if a == "--unit":
            unit = args.pop(0)
        elif a == "--rule":
            rule = args.pop(0)
        elif a == "--targets":
            targets = re.compile(args.pop(0))
        else:
            specs.append(a)
    sides = parse_sides(specs)
    if len(sides) < 2:
        sys.exit("gpu_stats.py table: need the side without the preload and at least one more")
    base, others = sides[0], sides[1:]
    kind, _, limit = rule.partition(":")
    if kind not in ("le", "overlap", "added", "none"):
        sys.exit(f"gpu_stats.py table: unknown rule {rule!r}")

    if not base.values and base.skipped:
        print(f"skipped: {base.skipped[0]}")
        return 0
    if not base.values and not any(o.values for o in others):
        print(f"no data: no process gave a figure ({sum(len(x.failed) for x in sides)} failed; see the failures at"
              " the end)")
        return 0
    # The side without the preload must not have it, and the others must: else the comparison means nothing.
    invalid = any(p != "0" for p in base.preload)
    if invalid:
        print(f"WARNING: libvramguard is mapped in {base.preload.count('1')} process(es) of side '{base.label}'")
    for o in others:
        if o.preload.count("1") != len(o.preload) or not o.preload:
            invalid = True
            print(f"WARNING: libvramguard is NOT mapped in {len(o.preload) - o.preload.count('1')} of "
                  f"{len(o.preload)} process(es) of side '{o.label}': check VG_LIB")

    added = kind == "added"
    hdr = ("row", "n", f"without {unit} (min..max)", f"with {unit} (min..max)", "added" if added else "ratio",
           "range", "best", "paired", "slower", "target", "verdict")
    fmt = "{:<40} {:>5} {:>21} {:>21} {:>7} {:>15} {:>7} {:>7} {:>6} {:>7}  {}"
    print(fmt.format(*hdr).rstrip())
    names = base.order + [n for o in others for n in o.order if n not in base.order]
    for name in names:
        for o in others:
            row = name if len(others) == 1 else f"{name}, {o.label}"
            a, b = base.values.get(name, []), o.values.get(name, [])
            n = f"{len(a)}+{len(b)}"
            has_target = kind != "none" and (targets is None or targets.search(name))
            target = "-" if not has_target else (f"<={limit}" if limit else "~1.00")
            if not a or not b:
                print(fmt.format(row, n, cell(a), cell(b), "-", "-", "-", "-", "-", target,
                                 "MISS (no data)" if has_target else "-").rstrip())
                continue
            ma, mb = statistics.median(a), statistics.median(b)
            # Processes that ran back to back (same pair number): slow spells of the machine hit both.
            pa, pb = base.pairs.get(name, {}), o.pairs.get(name, {})
            common = [k for k in pb if k in pa]
            if added:
                val, lo, hi = mb - ma, min(b) - max(a), max(b) - min(a)
                best = num(min(b) - min(a))
                per_pair = [pb[k] - pa[k] for k in common]
                paired = num(statistics.median(per_pair)) if per_pair else "-"
                slower = sum(d > 0 for d in per_pair)
                ok = (statistics.median(per_pair) if per_pair else val) <= float(limit)
                shown, rng = num(val), f"{num(lo)}..{num(hi)}"
            else:
                val, lo, hi = mb / ma, min(b) / max(a), max(b) / min(a)
                ma_min, mb_min = base.mins.get(name), o.mins.get(name)
                best = f"{(min(mb_min) / min(ma_min) if ma_min and mb_min else min(b) / min(a)):.3f}"
                per_pair = [pb[k] / pa[k] for k in common]
                paired = f"{statistics.median(per_pair):.3f}" if per_pair else "-"
                slower = sum(r > 1 for r in per_pair)
                if kind == "le":
                    ok = (statistics.median(per_pair) if per_pair else val) <= float(limit)
                else:
                    ok = lo <= 1.0 <= hi
                shown, rng = f"{val:.3f}", f"{lo:.3f}..{hi:.3f}"
            verdict = ("INVALID (preload)" if invalid else "PASS" if ok else "MISS") if has_target else "-"
            print(fmt.format(row, n, cell(a), cell(b), shown, rng, best, paired,
                             f"{slower}/{len(per_pair)}" if per_pair else "-", target, verdict).rstrip())
    for s in sides:
        for f in s.failed:
            print(f"note: side '{s.label}': a process {f} (see the failures at the end)")
    return 0


def raw(args):
    for s in parse_sides(args):
        pre = "".join(s.preload) or "-"
        print(f"  [{s.label}] {s.procs} process(es), preload flags {pre}"
              + (f", {len(s.failed)} failed" if s.failed else "")
              + (f", skipped: {s.skipped[0]}" if s.skipped else ""))
        for i in s.info:
            print(f"    info: {i}")
        for name in s.order:
            print(f"    {name}: " + " ".join(num(v) for v in s.values[name])
                  + (f"  (best rounds: {' '.join(num(v) for v in s.mins[name])})" if s.mins[name] else ""))
    return 0


def interleave(args):
    if len(args) != 3 or args[0] != "--target":
        sys.exit("usage: gpu_stats.py interleave --target X FILE")
    limit, side = float(args[1]), Side("interleave", args[2])
    if not side.il_order:
        print(f"skipped: {side.skipped[0]}" if side.skipped
              else f"no data ({len(side.failed)} process(es) failed; see the failures)")
        return 0
    hdr = ("row", "n", "real µs (min..max)", "with µs (min..max)", "ratio", "95% (min lo..max hi)", "added µs",
           "slower", "target", "verdict")
    fmt = "{:<40} {:>3} {:>21} {:>21} {:>7} {:>21} {:>9} {:>12} {:>7}  {}"
    print(fmt.format(*hdr).rstrip())
    for name in side.il_order:
        v = side.il[name]
        ratio = statistics.median(x[2] for x in v)
        slower, blocks = sum(x[6] for x in v), sum(x[7] for x in v)
        print(fmt.format(name, len(v), cell([x[0] for x in v]), cell([x[1] for x in v]), f"{ratio:.4f}",
                         f"{min(x[3] for x in v):.4f}..{max(x[4] for x in v):.4f}",
                         num(statistics.median(x[5] for x in v)), f"{slower}/{blocks}", f"<={limit}",
                         "PASS" if ratio <= limit else "MISS").rstrip())
    if side.failed:
        print(f"note: {len(side.failed)} process(es) failed (see the failures at the end)")
    return 0


def main():
    cmds = {"launch": launch, "table": table, "raw": raw, "interleave": interleave}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())

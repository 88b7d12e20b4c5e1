"""compute_table.py RAW.jsonl: the markdown table of bench/run_compute.sh from its raw lines (standard library only).

Each line is one process of one row: compute_share.py's JSON, whose "label" run_compute.sh set to
"system=S;row=R;slot=I;cap=C" (C: a percentage, or "-" for no cap), or a line with "error" for a process that gave
no figure. The baseline of a workload is the mean iterations/s of its rows "baseline-start" and "baseline-end" (the
same loop alone, uncapped, no preload, at the start and at the end of its rows); achieved share = a process's
iterations/s / that baseline; error = achieved - target in percentage points; verdict: every process of the row
within +-5 points (the issue's target), else MISS. Rows without a target (uncapped) show the shares and their sum.
Prints the table on stdout.
"""
import json
import sys

TOLERANCE_PP = 5.0


def parse_label(label):
    out = {}
    for part in label.split(";"):
        key, _, value = part.partition("=")
        out[key] = value
    return out


def load(path):
    recs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            r.update(parse_label(r.get("label", "")))
            recs.append(r)
    return recs


def baselines(recs):
    base = {}
    for w in dict.fromkeys(r["workload"] for r in recs):
        ends = [r for r in recs if r["workload"] == w and r.get("row", "").startswith("baseline") and "ips" in r]
        if ends:
            base[w] = (sum(r["ips"] for r in ends) / len(ends), ends)
    return base


def fmt_row(w, system, row, procs, base):
    procs = sorted(procs, key=lambda r: int(r.get("slot", 0)))
    errors = [r for r in procs if "ips" not in r]
    if errors or base is None:
        why = "; ".join(dict.fromkeys(r.get("error", "no figure") for r in errors)) or "no baseline for this workload"
        return f"| {w} | {system} | {row} | | | | no data: {why} | | |"
    caps = [r.get("cap", "-") for r in procs]
    shares = [r["ips"] / base for r in procs]
    share_s = " / ".join(f"{s:.2f}" for s in shares)
    if all(c != "-" for c in caps):
        targets = [float(c) / 100 for c in caps]
        errs = [100 * (s - t) for s, t in zip(shares, targets)]
        target_s = " / ".join(f"{t:.2f}" for t in targets)
        err_s = " / ".join(f"{e:+.1f}" for e in errs)
        verdict = "within ±5" if all(abs(e) <= TOLERANCE_PP for e in errs) else "MISS"
    else:
        target_s = "(none)"
        err_s = ""
        verdict = f"sum {sum(shares):.2f}" if len(shares) > 1 else ""
    late = max(r.get("late_s", 0) for r in procs)
    if late > 0.5:
        verdict += f" (a process began {late:.1f} s late: intervals differ)"
    util = " / ".join("-" if r.get("nvml_sm_util") is None else f"{r['nvml_sm_util']:.0f}" for r in procs)
    ips = " / ".join(f"{r['ips']:.1f}" for r in procs)
    return f"| {w} | {system} | {row} | {target_s} | {share_s} | {err_s} | {verdict} | {util} | {ips} |"


def table(recs):
    base = baselines(recs)
    lines = []
    for w, (mean, ends) in base.items():
        each = ", ".join(f"{r['row'].split('-')[1]} {r['ips']:.1f}" for r in ends)
        spread = (max(r["ips"] for r in ends) / min(r["ips"] for r in ends) - 1) * 100 if len(ends) > 1 else 0
        lines.append(f"- {w}: baseline {mean:.1f} iterations/s (alone, uncapped, no preload: {each}; "
                     f"start and end differ by {spread:.1f} %)")
    lines += ["", "| workload | system | row | target | achieved share | error (pp) | verdict | NVML smUtil % | "
              "iterations/s |", "|---|---|---|---|---|---|---|---|---|"]
    groups = {}
    for r in recs:
        groups.setdefault((r["workload"], r.get("system", "?"), r.get("row", "?")), []).append(r)
    for (w, system, row), procs in groups.items():
        lines.append(fmt_row(w, system, row, procs, base.get(w, (None,))[0]))
    return "\n".join(lines)


def main(argv):
    if len(argv) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    print(table(load(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

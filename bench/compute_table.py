"""compute_table.py [--verdicts] [--clocks CSV] RAW.jsonl: the markdown table of bench/run_compute.sh from its raw lines (stdlib only).

Each line is one process of one row: compute_share.py's JSON, whose "label" run_compute.sh set to
"system=S;row=R;slot=I;cap=C" (C: a percentage, or "-" for no cap), or a line with "error" for a process that gave
no figure. The baseline of a workload is the mean iterations/s of its rows "baseline-start" and "baseline-end" (the
same loop alone, uncapped, no preload, at the start and at the end of its rows); achieved share = a process's
iterations/s / that baseline; error = achieved - target in percentage points; verdict: every process of the row
within +-5 points (the issue's target), else MISS. Rows without a target (uncapped) show the shares and their sum.
Prints the table on stdout; with --verdicts, one line per row that has a target instead:
"PASS|FAIL|NODATA WORKLOAD SYSTEM ROW: ..." (tests/gpu/compute.sh turns them into checks).
With --clocks (nvidia-smi's "timestamp, clocks.sm, power.draw" lines, local time), the table gains the mean SM clock
and power over each row's measured interval.
"""
import json
import sys
import time

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


def evaluate(procs, base):
    """The figures of one row: a dict with shares, targets, errors (pp), verdict and its text; None without data."""
    procs = sorted(procs, key=lambda r: int(r.get("slot", 0)))
    errors = [r for r in procs if "ips" not in r]
    if errors or base is None:
        why = "; ".join(dict.fromkeys(r.get("error", "no figure") for r in errors)) or "no baseline for this workload"
        return {"procs": procs, "verdict": "NODATA", "text": f"no data: {why}"}
    caps = [r.get("cap", "-") for r in procs]
    ev = {"procs": procs, "shares": [r["ips"] / base for r in procs], "targets": None, "errs": None}
    if all(c != "-" for c in caps):
        ev["targets"] = [float(c) / 100 for c in caps]
        ev["errs"] = [100 * (s - t) for s, t in zip(ev["shares"], ev["targets"])]
        ok = all(abs(e) <= TOLERANCE_PP for e in ev["errs"])
        ev["verdict"], ev["text"] = ("PASS", "within ±5") if ok else ("FAIL", "MISS")
    else:
        ev["verdict"] = "INFO"
        ev["text"] = f"sum {sum(ev['shares']):.2f}" if len(procs) > 1 else ""
    late = max(r.get("late_s", 0) for r in procs)
    if late > 0.5:
        ev["text"] += f" (a process began {late:.1f} s late: intervals differ)"
    return ev


def load_clocks(path):
    """[(epoch seconds, SM MHz, watts)] from nvidia-smi's CSV lines; lines that do not parse are passed over."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3:
                continue
            stamp, _, frac = parts[0].partition(".")
            try:
                t = time.mktime(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + (frac or "0"))
                out.append((t, float(parts[1]), float(parts[2])))
            except ValueError:
                continue
    return out


def clock_cell(procs, clocks):
    """The mean SM clock (MHz) and power (W) over the row's measured interval: "1980 / 310"; "-" without samples."""
    starts = [r["start"] for r in procs if "start" in r]
    ends = [r["end"] for r in procs if "end" in r]
    if not starts or not ends:
        return "-"
    got = [(mhz, w) for t, mhz, w in clocks if max(starts) <= t <= min(ends)]
    if not got:
        return "-"
    return f"{sum(g[0] for g in got) / len(got):.0f} / {sum(g[1] for g in got) / len(got):.0f}"


def joined(values, form):
    return " / ".join(form.format(v) for v in values)


def fmt_row(w, system, row, procs, base, clocks):
    ev = evaluate(procs, base)
    clock = f" {clock_cell(procs, clocks)} |" if clocks is not None else ""
    if ev["verdict"] == "NODATA":
        return f"| {w} | {system} | {row} | | | | {ev['text']} | | |" + (" |" if clocks is not None else "")
    target_s = joined(ev["targets"], "{:.2f}") if ev["targets"] else "(none)"
    err_s = joined(ev["errs"], "{:+.1f}") if ev["errs"] else ""
    util = " / ".join("-" if r.get("nvml_sm_util") is None else f"{r['nvml_sm_util']:.0f}" for r in ev["procs"])
    return (f"| {w} | {system} | {row} | {target_s} | {joined(ev['shares'], '{:.2f}')} | {err_s} | {ev['text']} | "
            f"{util} | {joined((r['ips'] for r in ev['procs']), '{:.1f}')} |{clock}")


def verdicts(recs):
    """One line per row with a target: "PASS|FAIL|NODATA WORKLOAD SYSTEM ROW: shares against targets"."""
    base = baselines(recs)
    lines = []
    for (w, system, row), procs in groups(recs).items():
        ev = evaluate(procs, base.get(w, (None,))[0])
        if ev["verdict"] == "INFO":
            continue
        what = ev["text"] if ev["verdict"] == "NODATA" else (
            f"share {joined(ev['shares'], '{:.3f}')} for target {joined(ev['targets'], '{:.2f}')} "
            f"(error {joined(ev['errs'], '{:+.1f}')} points, tolerance ±{TOLERANCE_PP:.0f}; baseline "
            f"{base[w][0]:.1f} it/s){'' if ev['text'] in ('within ±5', 'MISS') else ' ' + ev['text']}")
        lines.append(f"{ev['verdict']} {w} {system} {row}: {what}")
    return "\n".join(lines)


def groups(recs):
    out = {}
    for r in recs:
        out.setdefault((r["workload"], r.get("system", "?"), r.get("row", "?")), []).append(r)
    return out


def table(recs, clocks=None):
    base = baselines(recs)
    lines = []
    for w, (mean, ends) in base.items():
        each = ", ".join(f"{r['row'].split('-')[1]} {r['ips']:.1f}" for r in ends)
        spread = (max(r["ips"] for r in ends) / min(r["ips"] for r in ends) - 1) * 100 if len(ends) > 1 else 0
        lines.append(f"- {w}: baseline {mean:.1f} iterations/s (alone, uncapped, no preload: {each}; "
                     f"start and end differ by {spread:.1f} %)")
    head = ("| workload | system | row | target | achieved share | error (pp) | verdict | NVML smUtil % | "
            "iterations/s |")
    rule = "|---|---|---|---|---|---|---|---|---|"
    if clocks is not None:
        head, rule = head + " SM MHz / W |", rule + "---|"
    lines += ["", head, rule]
    for (w, system, row), procs in groups(recs).items():
        lines.append(fmt_row(w, system, row, procs, base.get(w, (None,))[0], clocks))
    return "\n".join(lines)


def main(argv):
    argv = list(argv)
    check = argv[:1] == ["--verdicts"]
    if check:
        argv.pop(0)
    clocks = None
    if argv[:1] == ["--clocks"] and len(argv) >= 2:
        clocks = load_clocks(argv[1])
        argv = argv[2:]
    if len(argv) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    recs = load(argv[0])
    print(verdicts(recs) if check else table(recs, clocks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

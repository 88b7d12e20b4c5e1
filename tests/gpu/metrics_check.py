"""Scrape `vramguard exporter` once and check one job's figures, for tests/gpu/ops.sh's exporter_torch.

  metrics_check.py URL PID QUOTA_BYTES MIN_USED_BYTES OUT_FILE

Fetches URL (the exporter's /metrics) with the standard library, writes the exposition to OUT_FILE, and checks:
vramguard_up is 1; the job's (label pid="PID") used >= MIN_USED_BYTES, quota == QUOTA_BYTES, peak >= used, denials
>= 1; every family has HELP and TYPE. Lines: "ok ..." / "BAD ..." and a last "figures: ..." quoting the job's lines.
"""
import re
import sys
import urllib.request

url, pid, quota, min_used, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
bad = []
try:
    with urllib.request.urlopen(url, timeout=10) as r:
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode("utf-8")
except Exception as e:
    print(f"BAD scrape of {url} failed: {e!r}\nfigures: none")
    sys.exit(1)
with open(out, "w") as f:
    f.write(text)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
helps, types, values, mine = set(), set(), {}, []
for line in text.splitlines():
    if line.startswith("# HELP "):
        helps.add(line.split()[2])
    elif line.startswith("# TYPE "):
        types.add(line.split()[2])
    elif line and not line.startswith("#"):
        m = SAMPLE.match(line)
        if not m:
            bad.append(f"not a sample line: {line[:120]!r}")
            continue
        name, labels, val = m.group(1), m.group(3) or "", float(m.group(4))
        if f'pid="{pid}"' in labels.split(",") or labels.startswith(f'pid="{pid}"'):
            values[name] = values.get(name, 0) + val
            mine.append(line)
        elif not labels:
            values.setdefault(name, val)
families = {re.sub(r'_total$', '', n) for n in values}
for fam in sorted(families):
    if fam not in types and fam + "_total" not in types:
        bad.append(f"no TYPE for {fam}")
    if fam not in helps and fam + "_total" not in helps:
        bad.append(f"no HELP for {fam}")


def want(name, cond, what):
    v = values.get(name)
    if v is None:
        bad.append(f"no {name} line for pid {pid}")
    elif not cond(v):
        bad.append(f"{name} = {v:.0f}, want {what}")
    else:
        print(f"ok {name} = {v:.0f}")


want("vramguard_up", lambda v: v == 1, "1")
want("vramguard_process_used_bytes", lambda v: v >= min_used, f">= {min_used}")
want("vramguard_process_quota_bytes", lambda v: v == quota, f"{quota}")
want("vramguard_process_peak_bytes", lambda v: v >= values.get("vramguard_process_used_bytes", 0), ">= used")
want("vramguard_process_denials_total", lambda v: v >= 1, ">= 1")
for b in bad:
    print(f"BAD {b}")
short = [re.sub(r',command="[^"]*"', '', x) for x in mine if re.match(
    r"vramguard_process_(used_bytes|quota_bytes|peak_bytes|denials_total|denied_bytes_total|allocations_total|live_allocations)\{", x)]
print(f"figures: Content-Type {ctype}; {len(text.splitlines())} lines, {len(mine)} for pid {pid}: "
      + " | ".join(short[:8]))
sys.exit(1 if bad else 0)

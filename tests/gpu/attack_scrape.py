"""tests/gpu/attack_scrape.py URL PID SECONDS OUT: scrape the exporter at URL for SECONDS while another user cuts a
region file of the same directory in a loop (tests/gpu/ops.sh, exporter_attacked_torch). Every scrape must be
answered with the job's (PID) vramguard_process_used_bytes line; the last exposition goes to OUT. Prints one
"figures:" line, and "BAD ..." lines for what went wrong; exit 1 if any."""
import re
import sys
import time
import urllib.request

url, pid, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
bad, n, lat, changed, text = [], 0, [], None, ""
used_re = re.compile(r'^vramguard_process_used_bytes\{pid="%s",.*\} (\d+)$' % re.escape(pid), re.M)
end = time.time() + seconds
while time.time() < end:
    t0 = time.time()
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode("utf-8")
    except Exception as e:  # an exporter that died or hung is what this check is for
        bad.append(f"scrape {n + 1} failed: {e}")
        break
    lat.append(time.time() - t0)
    n += 1
    if not used_re.search(text):
        bad.append(f"scrape {n} has no vramguard_process_used_bytes line for pid {pid}")
        break
    m = re.search(r'^vramguard_exporter_segments_skipped_total\{reason="changed"\} (\d+)$', text, re.M)
    changed = m.group(1) if m else None
    time.sleep(0.02)
with open(out, "w") as f:
    f.write(text)
used = used_re.search(text)
lat.sort()
p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0
print(f"figures: {n} scrapes in {seconds:.0f} s all answered with the job's line "
      f"(used {int(used.group(1)) / 2**20:.0f} MiB) ; p99 {p99 * 1000:.1f} ms; "
      f"segments skipped as changed: {changed}" if used else f"figures: {n} scrapes", flush=True)
for b in bad:
    print("BAD " + b, flush=True)
sys.exit(1 if bad else 0)

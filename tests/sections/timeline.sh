#!/usr/bin/env bash
# Section timeline: the usage timeline under the preload (tests/integration/timeline.c): phases a second apart with
# a signal report between them, in both count modes; `vramguard report` and `diff` read the reports; a revision-1
# file and a newer revision still read; 10^6 alloc/free pairs keep the timeline bounded.
# Needs: make test-bins (timeline, vramguard).
source tests/lib/section.sh

TL=$T/timeline
TLD=$RD/timeline
rm -rf "$TLD" && mkdir -p "$TLD/device" "$TLD/allocations" "$TLD/churn"
for mode in device allocations; do
	prog "timeline ($mode): a rise, a signal report, a peak with two denials, a fall" $PRE \
		NVIDIA_GPU_MEMORY_LIMIT=4096 VRAMGUARD_COUNT=$mode VRAMGUARD_DEVICE_POLL=50 VRAMGUARD_REPORT_FORMAT=json \
		"VRAMGUARD_REPORT=$TLD/$mode/r-%r-%n.json" -- $TL phases "$TLD/$mode"
	prog "  its reports' timelines" -- $CHK timeline "$TLD/$mode"
done
cli "  vramguard report shows the timeline and its sparkline" 0 \
	'timeline .* UTC, [0-9]+ points \(every 10 s, or 1 s on change\): peak 3\.50 GiB by [0-9:]+, first denial by [0-9:]+ \(2 denials\)' \
	-- $VG report "$TLD/device/r-exit-2.json"
if grep -Eq '^       \|[ .:=+*#%@!-]+\| peaks, full scale 4\.00 GiB \(the quota\), ! denials$' <<<"$CO"; then
	ok "  the sparkline: ASCII levels and a '!' for the denials, scaled to the quota"
else bad "  the sparkline line expected" "$(grep -A1 timeline <<<"$CO")"; fi
cli "  vramguard diff: what happened between the signal report and the exit report" 0 \
	'GPU 0: used 2\.00 GiB -> 1\.00 GiB; highest peak 3\.50 GiB by [0-9:]+; 2 denials \(3\.00 GiB\), the first by [0-9:]+$' \
	-- $VG diff "$TLD/device/r-signal-1.json" "$TLD/device/r-exit-2.json"
python3 - "$TLD/device/r-exit-2.json" "$TLD/rev1.json" "$TLD/rev99.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
new = dict(d, schema_revision=99)
new["devices"] = [dict(x, future_key={"a": [1]}) for x in d["devices"]]
json.dump(new, open(sys.argv[3], "w"))
del d["schema_revision"]
for x in d["devices"]:
    x.pop("timeline", None)
json.dump(d, open(sys.argv[2], "w"))
PY
cli "  vramguard report of a revision-1 report (no timeline)" 0 '^    0  1\.00 GiB ' -- $VG report "$TLD/rev1.json"
if ! grep -q '^       timeline ' <<<"$CO" && [ ! -s "$ERR" ]; then ok "  shows no timeline, says nothing on stderr"
else bad "  no timeline line and a quiet stderr expected" "$(grep timeline <<<"$CO"; head -2 "$ERR")"; fi
cli "  vramguard diff with a revision-1 report second: one line says there is no timeline" 0 \
	'^  between the reports: the second report has no timeline \(report revision 1\)$' \
	-- $VG diff "$TLD/device/r-signal-1.json" "$TLD/rev1.json"
cli "  vramguard report of a revision-99 report reads it" 0 'timeline .* \(2 denials\)' -- $VG report "$TLD/rev99.json"
REV=$(sed -n 's/^#define VG_REPORT_REVISION \([0-9]*\).*/\1/p' report/report.h)
expect_err_lines "  and notes the newer revision in one line" \
	"^vramguard: note: '[^']*/rev99\.json' is report revision 99; this vramguard knows revision $REV: keys it does not know are passed over \(a newer vramguard shows them\)\$" 1
prog "timeline: 10^6 alloc/free pairs, sampled every 50 ms (the shortest poll)" $PRE NVIDIA_GPU_MEMORY_LIMIT=4096 \
	VRAMGUARD_DEVICE_POLL=50 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$TLD/churn/r-%r-%n.json" -- $TL churn 1000000
prog "  its exit report's timeline is bounded" -- $CHK timeline "$TLD/churn" churn
done_testing

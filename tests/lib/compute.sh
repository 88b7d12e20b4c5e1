# shellcheck shell=bash
# What sections compute and compute_live share (sourced after tests/lib/section.sh): the launcher, a directory for
# its reports, and how a run is made and judged.
LN=$T/launcher
CD=$RD/compute
rm -rf "$CD" && mkdir -p "$CD"

# crun TAG LIMIT ARGS...: the launcher under the preload with VRAMGUARD_COMPUTE_LIMIT=LIMIT ("" none) and a JSON exit
# report in $CD/TAG.json; its figures in $FIG (gpu_us, wall_us), its output checked like prog's.
crun() {
	local tag=$1 limit=$2
	shift 2
	prog "$tag: launcher $* (VRAMGUARD_COMPUTE_LIMIT=${limit:-unset})" $PRE ${limit:+VRAMGUARD_COMPUTE_LIMIT=$limit} \
		FAKECUDA_GRAPH_US=20000 VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$CD/$tag.json" -- "$LN" "$@"
	FIG=$(grep -h '^figures:' "$LOG" | tail -n 1)
}

# judge NAME TAG PYTHON-EXPRESSION: the expression over d (GPU 0 of TAG's report), gpu_us and wall_us (figures).
judge() {
	local name=$1 tag=$2 expr=$3 out
	out=$(python3 - "$CD/$tag.json" "$FIG" "$expr" 2>&1 <<'PY'
import json, re, sys
path, fig, expr = sys.argv[1:4]
r = json.load(open(path))
# A GPU the process never measured nor used is not listed: nothing measured, nothing waited.
d = next((x for x in r["devices"] if x["ordinal"] == 0), None) or {"compute_limit_permille": None,
     "compute_limit_source": None, "gpu_time_ns": 0, "compute_waits": 0, "compute_waited_ns": 0, "absent": True}
m = dict(re.findall(r"(\w+) ([0-9.]+)", fig))
gpu_us, wall_us = float(m.get("gpu_us", "nan")), float(m.get("wall_us", "nan"))
ok = eval(expr)
keys = ("compute_limit_permille", "compute_limit_source", "gpu_time_ns", "compute_waits", "compute_waited_ns")
print(("PASS " if ok else "FAIL ") + ("GPU 0 not in the report; " if "absent" in d else "") +
      ", ".join(f"{k} {d.get(k)}" for k in keys) + f"; gpu_us {gpu_us:.0f}, wall_us {wall_us:.0f}")
PY
)
	# PASS first, nothing else: a report that is missing or does not parse (a traceback) is a failure.
	if [ "${out#PASS }" != "$out" ] && [ "$(grep -c . <<<"$out")" = 1 ]; then ok "$name"; echo "# ${out#PASS }"
	else bad "$name" "$expr: $out"; fi
}

#!/usr/bin/env bash
# The pod annotation vramguard.dev/limit as a live quota: on one node, for each pod that carries it (e.g.
# `kubectl annotate pod train-0 vramguard.dev/limit=8G`), set the quota of that pod's processes under vramguard
# with `vramguard limit set SIZE --pid PID`, never above --ceiling. Meant for a container of the node's vramguard
# DaemonSet (autoscale.yaml): it needs kubectl (RBAC: get and list pods), python3 (to read JSON), vramguard, the
# jobs' VRAMGUARD_SHM_DIR, and the jobs' user. Not run on a cluster: `make test` runs it against a test double of
# kubectl (tests/sections/annotation.sh).
#
#   annotation-sync.sh --ceiling 16G [--node NAME] [--dir DIR] [--interval SECONDS | --once] [--dry-run]
#
# A pod's processes are those whose exporter label `pod` is the pod's name (`vramguard exporter --once`: the job's
# POD_NAME, or its HOSTNAME in a Kubernetes cgroup; docs/metrics.md); when the process's `container` label (the
# container ID from its cgroup) and the pod's containerStatuses both name IDs, they must agree, so a pod of the
# same name in another namespace is not taken for it. The quota compared is each process's own quota on every GPU
# (`vramguard limit show --json --pid PID`); a process whose quota is already SIZE, or has SIZE pending, is left
# alone.
#
# The PID is the exporter's `pid` label: the process's PID as this container sees it, which `limit set --pid` takes
# (a job in a pod records its own PID, often 1; the exporter and `limit set` find it by that and its start time).
# It needs hostPID: true (autoscale.yaml has it). Without it, the exporter cannot see into the pods' PID namespaces
# and exports each job's own PID: two pods' PID 1 then look alike, and such a PID is refused here, one line,
# nothing changed.
#
# With --interval, the annotation is applied when it changes (or a new process appears), not on every pass: a
# limit raised since by `vramguard autoscale`, or by hand, stays until the annotation changes again. With --once
# every process whose quota differs from its pod's annotation is set. One log line per change or refusal, on
# stderr: "vramguard: annotation-sync: ...". Exit status: 0, or 1 if kubectl or vramguard failed, 2 on a usage
# error.
set -euo pipefail

ANNOTATION=vramguard.dev/limit
ceiling='' node=${NODE_NAME:-} dir='' interval='' once=0 dry=0
VG=${VRAMGUARD:-vramguard}

say() { printf 'vramguard: annotation-sync: %s\n' "$*" >&2; }
usage() {
	say "error: $1"
	echo "usage: annotation-sync.sh --ceiling SIZE [--node NAME] [--dir DIR] [--interval SECONDS | --once] [--dry-run]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--ceiling) ceiling=${2-} && shift ;;
	--node) node=${2-} && shift ;;
	--dir) dir=${2-} && shift ;;
	--interval) interval=${2-} && shift ;;
	--once) once=1 ;;
	--dry-run) dry=1 ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" && exit 0 ;;
	*) usage "unknown option '$1'" ;;
	esac
	shift
done
[ -n "$ceiling" ] || usage "--ceiling SIZE is required (the most an annotation may ask for, e.g. 16G)"
[ -n "$node" ] || usage "no node: set NODE_NAME (the downward API's spec.nodeName) or pass --node NAME"
[[ $interval =~ ^([0-9]+(\.[0-9]+)?)?$ ]] || usage "invalid --interval '$interval' (seconds, e.g. 30)"
[ -n "$interval" ] || once=1
dirargs=()
[ -z "$dir" ] || dirargs=(--dir "$dir")

# The decisions of one pass, one per line: "set PID SPEC NAMESPACE/POD WHAT" or "refuse NAMESPACE/POD WHY"
# (nothing for a process whose quota is already the annotation's). The size grammar is vramguard's for one plain size: 4096 (MiB), 512M, 8G, 1.5G, 1T, optional i/iB/B.
decide() { # PODS.json EXPORTER.txt
	python3 - "$@" "$ANNOTATION" "$ceiling" "$node" "$VG" "$dir" <<'EOF'
import json, re, subprocess, sys
pods_f, metrics_f, ann, ceiling, node, vg, vgdir = sys.argv[1:]
UNITS = {"": 1 << 20, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

def size(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt]?)(?:i?b)?", s.strip().lower())
    if not m or (m.group(2) == "" and s.strip().lower().endswith("b")):
        return None
    return int(float(m.group(1)) * UNITS[m.group(2)])

def mib(b):
    return f"{b / (1 << 20):.2f} MiB"

cap = size(ceiling)
if cap is None or cap <= 0:
    print(f"usage invalid --ceiling '{ceiling}' (a size: 4096 = MiB, 16G)")
    sys.exit(0)
with open(pods_f) as f:
    pods = json.load(f).get("items") or []
# The exporter's processes: pid -> [(pod, container, command)], one entry per slot (without hostPID, two slots of
# other PID namespaces can be exported with the same PID).
procs = {}
label = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
with open(metrics_f) as f:
    for line in f:
        if not line.startswith("vramguard_process_denials_total{"):
            continue        # one sample per process, not per GPU
        lb = dict(label.findall(line[line.index("{"):line.rindex("}")]))
        procs.setdefault(lb["pid"], []).append((lb.get("pod", ""), lb.get("container", ""), lb.get("command", "")))

def own_quota(pid):
    """([quota bytes per GPU], requested spec or None) of a process with its own control segment, None for one in a
    shared region: `limit show --json --pid PID` finds it by the PID as this container sees it (a job in a pod of
    its own PID namespace too: its PID there and its start time)."""
    r = subprocess.run([vg, "limit", "show", "--json", "--pid", pid] + (["--dir", vgdir] if vgdir else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    for reg in json.loads(r.stdout).get("regions") or []:
        for p in reg.get("processes") or []:
            if reg.get("kind") == "control" and p.get("state") == "alive":
                return ([d.get("quota_bytes") for d in p.get("devices") or []], p.get("requested_limit"))
    return None

for pod in pods:
    meta = pod.get("metadata") or {}
    name, ns = meta.get("name", ""), meta.get("namespace", "")
    if (pod.get("spec") or {}).get("nodeName") not in (None, node):
        print(f"refuse {ns}/{name} kubectl listed it, but it is on node {pod['spec']['nodeName']}, not {node}")
        continue
    spec = (meta.get("annotations") or {}).get(ann)
    if spec is None:
        continue
    want = size(spec)
    if want is None or want <= 0:
        print(f"refuse {ns}/{name} annotation {ann}='{spec}' is not a size (4096 = MiB, 8G): nothing changed")
        continue
    if want > cap:
        print(f"refuse {ns}/{name} annotation {ann}='{spec}' ({mib(want)}) is above the ceiling {mib(cap)}: "
              "nothing changed")
        continue
    ids = {c.get("containerID", "").split("://")[-1] for c in (pod.get("status") or {}).get("containerStatuses")
           or [] if c.get("containerID")}
    mine = []
    for pid, slots in procs.items():
        hits = [s for s in slots if s[0] == name and not (s[1] and ids and s[1] not in ids)]
        if not hits:
            continue
        if len(slots) > 1:
            print(f"refuse {ns}/{name} process {pid} ({hits[0][2]}): {len(slots)} processes under vramguard "
                  f"on this node are exported as PID {pid} (PID namespaces the exporter cannot see into: run it "
                  "with hostPID), `limit set --pid {pid}` cannot tell them apart: nothing changed")
            continue
        mine.append((pid, hits[0][2]))
    if not mine:
        print(f"refuse {ns}/{name} annotation {ann}='{spec}': no process of this pod under vramguard on this node "
              "(yet): nothing changed")
        continue
    for pid, cmd in mine:
        own = own_quota(pid)
        if own is None:
            print(f"refuse {ns}/{name} process {pid} ({cmd}) is in a shared region, not in its own control "
                  "segment: set the region's budget instead (vramguard limit set SIZE --shared NAME)")
            continue
        quotas, pending = own
        if pending is not None:
            if size(pending) == want:
                continue
        elif quotas and all(q == want for q in quotas):
            continue
        old = ", ".join("none" if q is None else mib(q) for q in quotas) or "none"
        print(f"set {pid} {spec} {ns}/{name} process {pid} ({cmd}): quota {old} -> {mib(want)} "
              f"(annotation {ann}='{spec}', ceiling {mib(cap)})")
EOF
}

declare -A applied=()   # "PID COMMAND" -> the annotation last applied to it (--interval only)
tmp=$(mktemp -d /tmp/vg-annotation-sync.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 0' TERM INT

pass() {
	local rc=0 kind rest pid spec pod what cmd key
	if ! kubectl get pods --field-selector "spec.nodeName=$node" -o json >"$tmp/pods.json" 2>"$tmp/kubectl.err"; then
		say "error: kubectl get pods failed: $(head -c 300 "$tmp/kubectl.err")"
		return 1
	fi
	if ! "$VG" exporter --once "${dirargs[@]}" >"$tmp/metrics.txt" 2>"$tmp/vg.err"; then
		say "error: vramguard failed: $(head -c 300 "$tmp/vg.err")"
		return 1
	fi
	decide "$tmp/pods.json" "$tmp/metrics.txt" >"$tmp/decisions" || return 1
	while read -r kind rest; do
		case $kind in
		usage) usage "$rest" ;;
		refuse)
			# A refusal is said once per pod and reason while the loop runs, not on every pass.
			[ "${applied["refuse $rest"]-}" = 1 ] && continue
			[ "$once" = 1 ] || applied["refuse $rest"]=1
			say "refused: $rest"
			;;
		set)
			read -r pid spec pod what <<<"$rest"
			cmd=${what#*(}
			key="$pid ${cmd%%)*}"
			if [ "$once" = 0 ] && [ "${applied[$key]-}" = "$spec" ]; then
				continue        # applied before and changed since by someone else: the annotation did not change
			fi
			if [ "$dry" = 1 ]; then
				say "would set: $pod $what"
			elif "$VG" limit set "$spec" --pid "$pid" "${dirargs[@]}" >>"$tmp/set.out" 2>"$tmp/set.err"; then
				say "set: $pod $what"
			else
				say "failed: $pod $what: $(head -c 300 "$tmp/set.err")"
				rc=1
				continue
			fi
			[ "$once" = 1 ] || applied[$key]=$spec
			;;
		esac
	done <"$tmp/decisions"
	return $rc
}

if [ "$once" = 1 ]; then
	pass
	exit
fi
while :; do
	pass || true            # a failed pass is logged; the next may succeed (the API server back, a job started)
	sleep "$interval" &
	wait $! || true
done

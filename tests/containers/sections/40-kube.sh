# shellcheck shell=bash
# Kubernetes Pod specs (examples/kubernetes) run with podman kube play
# Each manifest's Pod (a workload's Pod template) is played by podman with its env, volumes, mounts and
# securityContext as written; tests/containers/kube.py swaps the images for local test images, the job for
# quota_demo (examples/quota_demo.c) and moves hostPath paths under a scratch directory. Judged from outside:
# `podman logs`, exit statuses, files in hostPath and emptyDir volumes. Not run: the DaemonSet as a DaemonSet (its
# Pod is played once), the Job controller (its Pod template is played), the device plugin's ConfigMap, and the
# runtime's CDI injection (podman kube play ignores CDI annotations; the device's edits are applied by kube.py).
#
# Uses from run.sh: ok, bad, skip, LOG, B, LIB, VG, CTR_DIR and ctr_* (tests/containers/lib.sh).

kube_host=$CTR_DIR/vg-kube-host
kube_out=$CTR_DIR/vg-kube-pods

# kube_images: the two test images, tagged by a hash of what goes in, so a changed build makes new ones and an
# unchanged one reuses them. vg-kube-plain stands in for an image that knows nothing of vramguard (PyTorch's): the
# test double of libcuda.so.1 where the NVIDIA container toolkit mounts the driver (a 16 GiB card) and the job.
# vg-kube-vramguard stands in for the vramguard images: the same plus the library and the command where
# examples/docker/Dockerfile puts them, and its ENTRYPOINT.
kube_images() {
	local ctx=$CTR_DIR/vg-kube-ctx tag
	ctr_base bookworm || return 1
	[ -x "$B/quota_demo" ] || make --no-print-directory -s BUILD="$B" "$B/quota_demo" >>"$LOG" 2>&1 || return 1
	tag=$(cat "$T/libcuda.so.1" "$B/quota_demo" "$LIB" "$VG" | sha256sum | cut -c1-12)
	KUBE_PLAIN=localhost/vg-kube-plain:$tag
	KUBE_VG=localhost/vg-kube-vramguard:$tag
	podman image exists "$KUBE_PLAIN" && podman image exists "$KUBE_VG" && return 0
	rm -rf "$ctx" && mkdir -p "$ctx"
	cp "$T/libcuda.so.1" "$B/quota_demo" "$LIB" "$VG" "$ctx/"
	cat >"$ctx/Containerfile.plain" <<C
FROM localhost/vramguard-base:bookworm
COPY libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1
COPY quota_demo /usr/local/bin/quota_demo
ENV FAKECUDA_MEM=16G
C
	cat >"$ctx/Containerfile.vramguard" <<C
FROM $KUBE_PLAIN
COPY vramguard /usr/local/bin/vramguard
COPY libvramguard.so /usr/local/lib/libvramguard.so
ENTRYPOINT ["/usr/local/bin/vramguard", "run", "--"]
CMD ["/usr/local/bin/vramguard", "check"]
C
	podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/vg-kube-' |
		xargs -r podman rmi >>"$LOG" 2>&1
	podman build --network=host -f "$ctx/Containerfile.plain" -t "$KUBE_PLAIN" "$ctx" >>"$LOG" 2>&1 &&
		podman build --network=host -f "$ctx/Containerfile.vramguard" -t "$KUBE_VG" "$ctx" >>"$LOG" 2>&1
}

# kube_play MANIFEST [kube.py options]: plays the manifest's Pod and waits for its containers (not those named
# idle) to end. Sets kpod (the Pod's name), kyaml (what was played), and per container NAME kout_NAME (logs) and
# krc_NAME (exit status). Leaves the Pod for kube_down, so its volumes can still be read.
kube_play() {
	local m=$1 c v
	shift
	kyaml=$kube_out/$(basename "$m")
	kpod=$(python3 tests/containers/kube.py "$m" "$kyaml" --vg-image "$KUBE_VG" --plain-image "$KUBE_PLAIN" \
		--host-root "$kube_host" "$@" 2>>"$LOG") || return 1
	podman kube down "$kyaml" >/dev/null 2>&1
	printf '== podman kube play %s\n%s\n' "$m" "$(cat "$kyaml")" >>"$LOG"
	podman kube play --network=none "$kyaml" >>"$LOG" 2>&1 || return 1
	for c in $(python3 -c 'import sys, yaml; print(*[c["name"] for c in yaml.safe_load(open(sys.argv[1]))
		["spec"]["containers"] if c["name"] != "idle"])' "$kyaml"); do
		v=${c//-/_}
		printf -v "krc_$v" '%s' "$(timeout 60 podman wait "$kpod-$c" 2>>"$LOG")"
		printf -v "kout_$v" '%s' "$(podman logs "$kpod-$c" 2>&1)"
		v=krc_$v
		printf '== %s-%s (rc %s)\n%s\n' "$kpod" "$c" "${!v}" "$(podman logs "$kpod-$c" 2>&1)" >>"$LOG"
	done
}

kube_down() { podman kube down "$kyaml" >>"$LOG" 2>&1; }

# kube_quota NAME OUT RC QUOTA_MIB: the job in one container met the quota: vramguard's denial line at that quota
# in its log, quota_demo's count of 512 MiB pieces equal to the quota, and a normal end.
kube_quota() {
	local name=$1 out=$2 rc=$3 mib=$4 gib
	gib=$(awk -v m="$mib" 'BEGIN { printf "%.2f", m / 1024 }')
	if [ "$rc" = 0 ] && grep -q "^vramguard: denied .* of $gib GiB quota in use" <<<"$out" &&
		grep -q "^allocated $((mib / 512)) x 512 MiB" <<<"$out"; then
		ok "$name: the $gib GiB quota holds in the pod's container (denial line, $((mib / 512)) x 512 MiB, exit 0)"
	else
		bad "$name: the $gib GiB quota holds in the pod's container" "rc ${rc:-?}; log: $(head -c 1500 <<<"$out")"
	fi
}

kube_started=$SECONDS
ctr_conf   # run.sh calls it inside $(ctr_why_not), a subshell, so its export of CONTAINERS_CONF is lost there
rm -rf "$kube_host" "$kube_out" && mkdir -p "$kube_host" "$kube_out"
if ! kube_images; then
	bad "kube: test images vg-kube-plain and vg-kube-vramguard built" "$(tail -20 "$LOG")"
else
	echo "# images: $KUBE_PLAIN $(ctr_size "$KUBE_PLAIN"), $KUBE_VG $(ctr_size "$KUBE_VG")"

	# daemonset.yaml: its Pod, once. The install step copies the library and the command to the host; the cdi-spec
	# step runs the installed command (`vramguard cdi`, issue 15's CDI part) to write the spec.
	kube_play examples/kubernetes/daemonset.yaml
	for _ in $(seq 50); do
		[ -e "$kube_host/var/run/cdi/vramguard.dev-quota.yaml" ] && break
		[ "$(podman ps -a --filter "name=^$kpod-idle\$" --format '{{.State}}')" = running ] && break
		sleep 0.2
	done
	if cmp -s "$LIB" "$kube_host/opt/vramguard/lib/libvramguard.so" && cmp -s "$VG" "$kube_host/opt/vramguard/bin/vramguard"
	then
		ok "daemonset.yaml: the install step put the library and the command in the node's /opt/vramguard (hostPath)"
	else
		bad "daemonset.yaml: the install step put the library and the command in the node's /opt/vramguard" \
			"$(find "$kube_host" -ls 2>&1 | head)"
	fi
	kube_spec=$kube_host/var/run/cdi/vramguard.dev-quota.yaml
	if ! "$VG" cdi --help >/dev/null 2>&1; then
		skip "daemonset.yaml: the cdi-spec step wrote /var/run/cdi/vramguard.dev-quota.yaml" \
			"this build's vramguard has no cdi command yet (issue 15, CDI part)"
		kube_spec=
	elif python3 -c 'import sys, yaml; s = yaml.safe_load(open(sys.argv[1]))
names = sorted(d["name"] for d in s["devices"])
sys.exit(not (s["kind"] == "vramguard.dev/quota" and names == ["16G", "4G", "8G"]))' "$kube_spec" 2>>"$LOG"; then
		ok "daemonset.yaml: the cdi-spec step wrote the spec: kind vramguard.dev/quota, devices 4G, 8G, 16G"
	else
		bad "daemonset.yaml: the cdi-spec step wrote the spec with devices 4G, 8G, 16G" \
			"$(cat "$kube_spec" 2>&1 | head -30)"
		kube_spec=
	fi
	kube_down
	# Without the step's spec, the Pods below get the edits `vramguard cdi` documents, and the library from
	# the install step.
	[ -e "$kube_host/opt/vramguard/lib/libvramguard.so" ] ||
		{ mkdir -p "$kube_host/opt/vramguard/lib" && cp "$LIB" "$kube_host/opt/vramguard/lib/"; }

	# cdi-pod.yaml as podman plays it: the annotation is ignored, and the image knows nothing of vramguard.
	kube_play examples/kubernetes/cdi-pod.yaml
	if [ "${krc_train:-}" = 0 ] && grep -q '^allocated 32 x 512 MiB' <<<"${kout_train:-}" &&
		! grep -q '^vramguard:' <<<"${kout_train:-}"; then
		ok "cdi-pod.yaml without the device's edits: the whole 16 GiB card, no vramguard (kube play ignores CDI)"
	else
		bad "cdi-pod.yaml without the device's edits: the whole card" "${kout_train:-}"
	fi
	kube_down

	# cdi-pod.yaml with vramguard.dev/quota=4G's edits applied as the runtime would.
	kube_play examples/kubernetes/cdi-pod.yaml --cdi-edits ${kube_spec:+--cdi-spec "$kube_spec"}
	kube_quota "cdi-pod.yaml + the edits of vramguard.dev/quota=4G${kube_spec:+ (from the spec)}" \
		"${kout_train:-}" "${krc_train:-}" 4096
	kube_down

	kube_play examples/kubernetes/hostpath-pod.yaml
	kube_quota "hostpath-pod.yaml" "${kout_train:-}" "${krc_train:-}" 4096
	kube_down

	kube_play examples/kubernetes/pod.yaml
	kube_quota "pod.yaml container trainer" "${kout_trainer:-}" "${krc_trainer:-}" 6144
	kube_quota "pod.yaml container evaluator" "${kout_evaluator:-}" "${krc_evaluator:-}" 2048
	kube_down

	# job.yaml's Pod template: the report lands in the reports emptyDir, read from the host through podman.
	kube_play examples/kubernetes/job.yaml
	kube_quota "job.yaml (its Pod template)" "${kout_train:-}" "${krc_train:-}" 8192
	kube_reports=$(podman inspect "$kpod-train" --format \
		'{{range .Mounts}}{{if eq .Destination "/reports"}}{{.Source}}{{end}}{{end}}' 2>>"$LOG")
	if [ -n "$kube_reports" ] && python3 -c 'import glob, json, sys
r = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/vg-*.json")]
d = r[0]["devices"][0] if len(r) == 1 else {}
sys.exit(not (r and r[0]["reason"] == "exit" and d["quota_bytes"] == 8 << 30 and d["denied_count"] >= 1))' \
		"$kube_reports" 2>>"$LOG"; then
		ok "job.yaml: the exit report in the reports volume (emptyDir): reason exit, quota 8 GiB, a denial"
	else
		bad "job.yaml: the exit report in the reports volume" "volume at '${kube_reports}': $(ls -l "$kube_reports" 2>&1)"
	fi
	kube_down

	kube_play examples/kubernetes/shared-region.yaml
	kube_quota "shared-region.yaml (one worker)" "${kout_train:-}" "${krc_train:-}" 8192
	kube_down
	echo "# kube: $((SECONDS - kube_started)) s"
fi

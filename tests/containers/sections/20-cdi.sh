# shellcheck shell=bash
# CDI: `podman run --device vramguard.dev/quota=SIZE` puts an image that knows nothing of vramguard under a quota
# Sourced by tests/containers/run.sh. The spec is the one `vramguard cdi` writes, with the host-built library as its
# hostPath. podman 4.3 reads specs only from /etc/cdi and /var/run/cdi (no setting moves them), so the spec goes
# into /var/run/cdi under a name of this run's own (vg-cdi-PID.yaml) and is removed at the end; a spec of the same
# kind that is not ours (a real installation) would make the devices ambiguous, and then the section is skipped.
# The image is the plain bootstrapped Debian; the test double of libcuda.so.1 is mounted where the NVIDIA container
# toolkit mounts the driver, and tests/integration/direct's perdevice scenario (2 fake GPUs) checks each GPU's
# total and that exactly its quota can be allocated. Uses run.sh's ok, bad, skip, LOG, T, LIB, VG and lib.sh.

cdi_section() {
	local img=localhost/vramguard-base:bookworm dir=/var/run/cdi made_dir='' priv spec f others=''
	local started=$SECONDS
	# run.sh calls ctr_conf inside $(ctr_why_not): its export of CONTAINERS_CONF is lost in that subshell.
	ctr_conf
	if ! ctr_base bookworm; then
		skip "CDI" "no base image localhost/vramguard-base:bookworm (debootstrap failed: see the log)"
		return
	fi
	# Our own specs left by a run that was killed: removed. Another spec of the kind: not ours to move.
	for f in "$dir"/vg-cdi-*.yaml; do
		[ -e "$f" ] || continue
		f=${f##*/vg-cdi-}
		kill -0 "${f%.yaml}" 2>/dev/null || rm -f "$dir/vg-cdi-$f"
	done
	others=$(grep -ls 'vramguard\.dev/quota' /etc/cdi/* "$dir"/* 2>/dev/null | grep -v "^$dir/vg-cdi-[0-9]*\.yaml\$")
	if [ -n "$others" ]; then
		skip "CDI" "a spec of kind vramguard.dev/quota is installed here ($(echo $others)): devices would be ambiguous"
		return
	fi
	spec=$dir/vg-cdi-$$.yaml
	priv=$(mktemp -d /tmp/vg-cdi-ctr.XXXXXX)
	if "$VG" cdi --limit 4G --limit 0:2G,1:8G --lib "$LIB" --output "$priv" 2>>"$LOG" &&
		{ [ -d "$dir" ] || { mkdir -p "$dir" && made_dir=1; }; } &&
		cp "$priv/vramguard.dev-quota.yaml" "$spec.tmp" && mv "$spec.tmp" "$spec"; then
		ok "vramguard cdi --limit 4G --limit 0:2G,1:8G --lib build/libvramguard.so: installed as $dir/vg-cdi-PID.yaml"
	else
		bad "vramguard cdi: no spec to install" "$(tail -3 "$LOG")"
		rm -rf "$priv" "$spec.tmp"
		return
	fi
	cat "$spec" >>"$LOG"
	rm -rf "$priv"

	# What a GPU host gives every container (the driver), and the test program; nothing of vramguard.
	local gpu=(-e FAKECUDA_DEVICES=2 -v "$PWD/$T/libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro"
		-v "$PWD/$T/direct:/opt/vgtest/direct:ro")
	local prog=/opt/vgtest/direct
	# shellcheck disable=SC2154 # out and rc: set by ctr_run (lib.sh)
	cdi_quota() { # NAME WANT0 WANT1 [podman args...]: perdevice WANT0 WANT1 passes
		local name=$1 w0=$2 w1=$3
		shift 3
		ctr_run "$@" "${gpu[@]}" "$img" "$prog" perdevice "$w0" "$w1"
		if [ "$rc" = 0 ] && grep -q '^ok ' <<<"$out" && ! grep -q '^not ok ' <<<"$out"; then ok "$name"; else
			bad "$name (exit $rc)" "$(grep -v '^ok ' <<<"$out" | head -5)"; fi
	}
	cdi_quota "--device vramguard.dev/quota=4G: each GPU shows 4 GiB, 4 GiB + 1 B denied, 4 GiB allowed" 4096 4096 \
		--device vramguard.dev/quota=4G
	local denied='^vramguard: denied 4\.00 GiB on GPU 0 (cuMemAlloc_v2): .* of 4\.00 GiB quota in use'
	if grep -q "$denied (NVIDIA_GPU_MEMORY_LIMITS)\$" <<<"$out" && grep -q '^vramguard: report (exit) pid 1, .*: /opt/vgtest/direct perdevice' <<<"$out"; then
		ok "  the library's lines: the denial (NVIDIA_GPU_MEMORY_LIMITS) and the exit report"
	else bad "  the library's lines are missing" "$(grep -v '^ok ' <<<"$out" | head -5)"; fi
	cdi_quota "--device vramguard.dev/quota=0:2G_1:8G (the same spec's second device): GPU 0 2 GiB, GPU 1 8 GiB" \
		2048 8192 --device vramguard.dev/quota=0:2G_1:8G
	cdi_quota "no --device: the same image runs unlimited (the double's 16 GiB on each GPU)" -1 -1
	if [ "$rc" = 0 ] && ! grep -q 'vramguard' <<<"$out"; then ok "  ... and nothing of vramguard in its output"
	else bad "  ... and nothing of vramguard in its output (exit $rc)" "$(head -3 <<<"$out")"; fi
	ctr_run "${gpu[@]}" "$img" "$prog" perdevice 4096 4096
	if [ "$rc" != 0 ] && grep -q '^not ok ' <<<"$out"; then
		ok "control: without --device the 4 GiB checks fail (they can fail)"
	else bad "control: without --device the 4 GiB checks should fail" "$(head -3 <<<"$out")"; fi
	# CDI's env edits replace a variable: an LD_PRELOAD the container had is gone (docs/cdi.md).
	ctr_run --device vramguard.dev/quota=4G -e LD_PRELOAD=/opt/other.so "$img" /bin/sh -c \
		'echo "LD_PRELOAD=$LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS=$NVIDIA_GPU_MEMORY_LIMITS"
		grep " /usr/lib/vramguard/" /proc/mounts'
	if grep -qx 'LD_PRELOAD=/usr/lib/vramguard/libvramguard.so NVIDIA_GPU_MEMORY_LIMITS=4G' <<<"$out" &&
		grep -q ' /usr/lib/vramguard/libvramguard.so [^ ]* ro,' <<<"$out"; then
		ok "  the edits: LD_PRELOAD replaced (-e LD_PRELOAD=/opt/other.so is gone), the library mounted read-only"
	else bad "  the edits as the container sees them" "$(head -3 <<<"$out")"; fi

	rm -f "$spec"
	[ -n "$made_dir" ] && rmdir "$dir" 2>/dev/null
	if [ ! -e "$spec" ]; then ok "the spec removed from $dir ($((SECONDS - started)) s)"; else bad "$spec left behind"; fi
	unset -f cdi_quota
}
cdi_section
unset -f cdi_section

# shellcheck shell=bash
# Exporter labels: a job in a real container gets its container id and pod name in the host exporter's metrics
# Sourced by tests/containers/run.sh. A waiter under the preload (test double mounted where the toolkit mounts the
# driver) runs in a podman container that shares the host's PID namespace (as a node agent sees pods with
# hostPID) and a host folder as VRAMGUARD_SHM_DIR; `vramguard exporter --once` on the host must label its samples
# with the 64-hex id podman gave the container (read from /proc/PID/cgroup) and with POD_NAME from its environment.
# In a PID namespace of its own (the usual container), the slot holds the PID the job sees (1 or so): the exporter
# finds the host's PID through /proc/*/status's NSpid and the start time, labels it the same way and exports that
# PID as its pid label, which `limit set --pid` on the host takes (a real container's PID 1). Uses run.sh's
# ok, bad, skip, LOG, T, LIB, VG and lib.sh.

exporter_section() {
	local img=localhost/vramguard-base:bookworm shm prom started=$SECONDS
	ctr_conf
	if ! ctr_base bookworm; then
		skip "exporter labels" "no base image localhost/vramguard-base:bookworm (debootstrap failed: see the log)"
		return
	fi
	shm=$(mktemp -d /tmp/vg-ctr-exp.XXXXXX)
	local job=(-v "$shm:/vgshm" -e VRAMGUARD_SHM_DIR=/vgshm -e NVIDIA_GPU_MEMORY_LIMITS=1G -e VRAMGUARD_REPORT=off
		-e POD_NAME=trainer-0 -e LD_PRELOAD=/opt/vg/libvramguard.so -v "$LIB:/opt/vg/libvramguard.so:ro"
		-v "$PWD/$T/libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro" -v "$PWD/$T/waiter:/opt/vgtest/waiter:ro")
	# exp_wait NAME: the container's waiter is ready (its control segment exists); the exposition in $prom
	exp_wait() {
		local _
		prom=""
		for _ in $(seq 100); do
			prom=$(VRAMGUARD_SHM_DIR=$shm VRAMGUARD_SHARED="" "$VG" exporter --once 2>>"$LOG")
			grep -q '^vramguard_process_used_bytes{' <<<"$prom" && return 0
			sleep 0.1
		done
		return 1
	}
	# exp_job WHAT PODMAN-ARGS...: one job in a container, its labels checked; WHAT names the case in the lines.
	exp_job() {
		local what=$1 cid line inner
		shift
		cid=$(podman run -d --rm --network=none "$@" "${job[@]}" "$img" /opt/vgtest/waiter /vgshm/stop cuda 60 \
			2>>"$LOG")
		if [ -z "$cid" ] || ! exp_wait; then
			bad "exporter labels, $what: the job never showed up in the exporter" "$(podman logs "$cid" 2>&1 | tail -3)"
		else
			printf '%s\n' "$prom" >>"$LOG"
			line=$(grep -m1 '^vramguard_process_used_bytes{' <<<"$prom")
			inner=$(sed -n 's/.*{pid="\([0-9]*\)".*/\1/p' <<<"$line")
			if grep -q "container=\"$cid\",pod=\"trainer-0\"} 67108864\$" <<<"$line"; then
				ok "exporter labels, $what: container=\"${cid:0:12}...\" (podman's id), pod=\"trainer-0\", 64 MiB used"
			else bad "exporter labels, $what" "want container=\"$cid\",pod=\"trainer-0\"; got: $line"; fi
			# The pid label is the job's PID on the host, which `limit set --pid` on the host takes.
			local hpid
			hpid=$(podman inspect -f '{{.State.Pid}}' "$cid" 2>>"$LOG")
			if [ "$inner" = "$hpid" ] && "$VG" limit set 512M --pid "$hpid" --dir "$shm" >"$shm/set.out" 2>>"$LOG" &&
				"$VG" limit show --json --pid "$hpid" --dir "$shm" 2>>"$LOG" | grep -q '"requested_limit": *"512M"'; then
				ok "  its pid label is its PID on the host ($hpid), which 'limit set 512M --pid $hpid' on the host reaches: $(sed 's/.*vramguard: process \([0-9]*\)\( (PID [0-9]* in its own PID namespace)\)\{0,1\}.*/process \1\2/' "$shm/set.out")"
			else bad "  pid label and limit set --pid on the host" "label $inner, host PID $hpid; $(cat "$shm/set.out" 2>/dev/null)"; fi
		fi
		touch "$shm/stop"
		[ -n "$cid" ] && podman wait "$cid" >/dev/null 2>&1
		rm -f "$shm/stop"
	}
	exp_job "a job sharing the host's PID namespace (--pid=host)" --pid=host
	# Its own PID namespace: the slot's PID is the container's; the labels are found through NSpid.
	exp_job "a job in its own PID namespace (found through NSpid and the start time)"
	rm -rf "$shm"
	echo "# exporter labels: $((SECONDS - started)) s"
	unset -f exp_wait exp_job
}
exporter_section
unset -f exporter_section

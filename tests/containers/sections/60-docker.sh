# shellcheck shell=bash
# docker: Debian's Docker engine builds examples/docker with BuildKit and the legacy builder and runs the images
# Sourced by tests/containers/run.sh. dockerd (docker.io, installed by scripts/setup.sh) is started here on a socket,
# data root and exec root of this run's own under a mktemp folder, with no bridge and no iptables rules (nothing is
# left on the host), and stopped and removed at the end; the section is one skip, with the reason, where it cannot
# start. The base images are the podman suite's bootstrapped Debian ones (tests/containers/lib.sh), brought over
# with `podman save | docker load`; Debian's client (/usr/bin/docker, 20.10) builds with BuildKit when
# DOCKER_BUILDKIT=1 and with the legacy builder when DOCKER_BUILDKIT=0. The legacy builder reads only the root
# .dockerignore, and the Dockerfile runs `make clean` first: a check reads every compile unit's DW_AT_comp_dir in
# the image's command and library, which must all be the build stage's /src (a host-built object names the host's
# checkout). The running container: `docker kill --signal=USR1` and `docker exec ... vramguard dump 1` write
# reports, and `vramguard limit set --pid` on the host (not `docker update`, which knows no GPU memory) raises the
# quota of the job inside. `docker compose config` validates examples/compose.yaml where the Compose plugin is
# installed (a skip, with the reason, where not). Uses run.sh's ok, bad, skip, LOG, T, B, VG and lib.sh.
# shellcheck disable=SC2154 # out and rc are set by dk_run

dk_bin=/usr/bin/docker  # Debian's client; /usr/local/bin/docker may be a newer one without buildx
dk_lib=/usr/lib/x86_64-linux-gnu/libcuda.so.1

dk() { DOCKER_HOST=unix://$dk_dir/docker.sock "$dk_bin" "$@"; }

# dk_run ARGS...: docker run --rm --network=none ARGS..., stdout and stderr together in $out, status in $rc.
dk_run() {
	out=$(dk run --rm --network=none "$@" 2>&1)
	rc=$?
	printf '== docker run %s\n%s\n(rc %s)\n' "$*" "$out" "$rc" >>"$LOG"
}

# dk_start: dockerd on this run's own socket; non-zero (the log's end in $out) if it does not answer in 30 s. Where
# a system dockerd runs (installing docker.io starts one under systemd), this one may share its containerd, in a
# namespace of its own.
dk_start() {
	dk_dir=$(mktemp -d /tmp/vg-docker.XXXXXX)
	dockerd -H "unix://$dk_dir/docker.sock" --data-root "$dk_dir/data" --exec-root "$dk_dir/exec" \
		--pidfile "$dk_dir/dockerd.pid" --iptables=false --ip-masq=false --bridge=none \
		--containerd-namespace vg-docker --containerd-plugins-namespace vg-docker-plugins >"$dk_dir/dockerd.log" 2>&1 &
	dk_pid=$!
	local _
	for _ in $(seq 150); do
		dk version >/dev/null 2>&1 && return 0
		kill -0 "$dk_pid" 2>/dev/null || break
		sleep 0.2
	done
	out=$(tail -3 "$dk_dir/dockerd.log")
	return 1
}

# dk_stop: the daemon stopped (it stops its containers and unmounts its layers), its folder removed.
dk_stop() {
	kill "$dk_pid" 2>/dev/null
	local _
	for _ in $(seq 150); do kill -0 "$dk_pid" 2>/dev/null || break; sleep 0.2; done
	kill -9 "$dk_pid" 2>/dev/null
	wait "$dk_pid" 2>/dev/null
	cat "$dk_dir/dockerd.log" >>"$LOG"
	local m
	# a mount a killed daemon left behind (deepest first), then the folder
	awk -v d="$dk_dir" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m"; done
	rm -rf "$dk_dir"
}

# dk_build NAME TAG DOCKERFILE BUILDKIT [BUILD-ARG...]: docker build from the repository root with
# DOCKER_BUILDKIT=BUILDKIT (1 BuildKit, 0 the legacy builder); ok or bad with the log's end.
dk_build() {
	local name=$1 tag=$2 file=$3 bk=$4 a args=()
	shift 4
	for a in "$@"; do args+=(--build-arg "$a"); done
	ctr_build_run "$name" "$dk_dir/build.log" env DOCKER_BUILDKIT="$bk" DOCKER_HOST="unix://$dk_dir/docker.sock" \
		"$dk_bin" build --network=host "${args[@]}" -f "$file" -t "$tag" .
}

# dk_compiled_inside NAME IMAGE: every compile unit of the image's command and library was compiled in /src.
dk_compiled_inside() {
	local name=$1 img=$2 c f dirs why=''
	c=$(dk create "$img" 2>>"$LOG") || { bad "$name: objects compiled inside" "docker create failed"; return; }
	for f in /usr/local/bin/vramguard /usr/local/lib/libvramguard.so; do
		rm -f "$dk_dir/obj" && dk cp "$c:$f" "$dk_dir/obj" 2>>"$LOG"
		dirs=$(readelf --debug-dump=info "$dk_dir/obj" 2>/dev/null |
			sed -n 's/^.*DW_AT_comp_dir *: *\(([^)]*): \)\{0,1\}//p' | sort | uniq -c | awk '{ printf "%s x %s; ", $1, $2 }')
		[[ $dirs =~ ^[0-9]+\ x\ /src\;\ $ ]] || why+="$f: ${dirs:-no DWARF} "
	done
	dk rm "$c" >/dev/null 2>&1
	if [ -z "$why" ]; then ok "$name: every compile unit of the command and the library was compiled in the build stage's /src"
	else bad "$name: every object compiled inside (DW_AT_comp_dir /src)" "$why"; fi
}

# dk_quota NAME IMAGE: quota_demo under a 2 GiB quota of the 16 GiB double: four 512 MiB pieces granted, the
# fifth refused, 256 MiB after a free, status 0, one exit report at zero within the quota in the mounted folder.
dk_quota() {
	local name=$1 img=$2 host=vg-docker-$RANDOM why='' chk
	rm -rf "$dk_dir/reports" && mkdir -p "$dk_dir/reports"
	dk_run "${dk_mounts[@]}" -v "$dk_dir/reports:/reports" --hostname "$host" -e NVIDIA_GPU_MEMORY_LIMITS=2G \
		-e VRAMGUARD_REPORT=/reports/vg-%h-%p-%n.json -e VRAMGUARD_REPORT_FORMAT=json "$img" /opt/vg-test/quota_demo
	[ "$rc" = 0 ] || why="exit status $rc;"
	grep -q '^allocated 4 x 512 MiB = 2048 MiB, then cuMemAlloc returned 2 ' <<<"$out" || why+=" no 4 x 512 MiB then a refusal;"
	grep -q '^after freeing one piece, a 256 MiB allocation returned 0$' <<<"$out" || why+=" 256 MiB after a free not granted;"
	chk=$(python3 tests/lib/report_check.py zero 1 2147483648 "$dk_dir/reports/vg-$host-1-1.json" 2>&1) || why+=" $chk"
	if [ -z "$why" ]; then ok "$name: 2G quota holds (4 x 512 MiB, the 5th refused, 256 MiB after a free), exit report in the volume"
	else bad "$name: quota and exit report" "$why"$'\n'"$out"; fi
}

# dk_live IMAGE: a job that wants more than its quota, running: grower holds 512 MiB of its 1 GiB and asks for
# 1 GiB more every 100 ms. docker kill --signal=USR1 and docker exec ... vramguard dump 1 each write a report with
# its 512 MiB; `vramguard limit set 2G --pid HOST-PID` on the host (its control segment in a mounted folder) lets
# the next request through; then the job exits 0.
dk_live() {
	local img=$1 c host=dk-live hpid i chk
	local live=$dk_dir/live
	mkdir -p "$live/reports" "$live/shm"
	c=$(dk run -d --network=none "${dk_mounts[@]}" -v "$live/reports:/reports" -v "$live/shm:/vgshm" --hostname $host \
		-e VRAMGUARD_SHM_DIR=/vgshm -e NVIDIA_GPU_MEMORY_LIMITS=1G -e VRAMGUARD_REPORT=/reports/vg-%h-%p-%n.json \
		-e VRAMGUARD_REPORT_FORMAT=json "$img" /opt/vg-test/grower /vgshm/stop 512 1024 60 2>>"$LOG")
	for i in $(seq 100); do dk logs "$c" 2>&1 | grep -q '^denied' && break; sleep 0.1; done
	if ! dk logs "$c" 2>&1 | grep -q '^denied'; then
		bad "docker live: the job under 1G is refused its second piece" "$(dk logs "$c" 2>&1 | tail -3)"
		dk rm -f "$c" >/dev/null 2>&1
		return
	fi
	dk kill --signal=USR1 "$c" >>"$LOG" 2>&1
	for i in $(seq 50); do [ -s "$live/reports/vg-$host-1-1.json" ] && break; sleep 0.1; done
	if chk=$(python3 tests/lib/report_check.py dumped "$live/reports/vg-$host-1-1.json" 2>&1) && [ "$chk" = 536870912 ]; then
		ok "docker live: docker kill --signal=USR1 reaches the job as pid 1: a report of its 512 MiB (vg-$host-1-1.json)"
	else bad "docker live: docker kill --signal=USR1 writes a report" "$chk; $(ls "$live/reports")"; fi
	out=$(dk exec "$c" vramguard dump 1 2>&1)
	printf '== docker exec vramguard dump 1\n%s\n' "$out" >>"$LOG"
	if grep -q "/reports/vg-$host-1-2.json" <<<"$out" &&
		chk=$(python3 tests/lib/report_check.py dumped "$live/reports/vg-$host-1-2.json" 2>&1) && [ "$chk" = 536870912 ]; then
		ok "docker live: docker exec ... vramguard dump 1 prints the report's path; the report has the 512 MiB"
	else bad "docker live: docker exec ... vramguard dump 1" "$out; $chk"; fi
	# docker update changes cgroup limits (host memory, CPU), none of them GPU memory
	if dk update --help 2>&1 | grep -qi 'gpu'; then bad "docker live: docker update has no GPU option" "$(dk update --help)"
	else ok "docker live: docker update has no GPU memory option (its --memory is host memory)"; fi
	hpid=$(dk inspect -f '{{.State.Pid}}' "$c" 2>>"$LOG")
	if "$VG" limit set 2G --pid "$hpid" --dir "$live/shm" >"$live/set.out" 2>&1; then
		for i in $(seq 50); do dk logs "$c" 2>&1 | grep -q '^granted ' && break; sleep 0.1; done
	fi
	cat "$live/set.out" >>"$LOG"
	if dk logs "$c" 2>&1 | grep -q '^granted '; then
		ok "docker live: vramguard limit set 2G --pid $hpid on the host raises the running container's quota (1 GiB more granted)"
	else bad "docker live: limit set from the host raises the quota" "$(cat "$live/set.out"); $(dk logs "$c" 2>&1 | tail -3)"; fi
	touch "$live/shm/stop"
	rc=$(dk wait "$c" 2>>"$LOG")
	dk logs "$c" >>"$LOG" 2>&1
	dk rm -f "$c" >/dev/null 2>&1
	if [ "$rc" = 0 ]; then ok "docker live: the job exits 0 (the container's status)"
	else bad "docker live: the job exits 0" "status $rc"; fi
}

# dk_sizes IMAGE PRELOAD-IMAGE BASE: what each example adds to its base agrees, within 0.3 MB, with docs/containers.md's
# image sizes table ("the base + N MB" in the rows of examples/docker/Dockerfile and ld.so.preload/Dockerfile).
dk_sizes() {
	local base want got f img
	base=$(dk image inspect -f '{{.Size}}' "$3" 2>>"$LOG")
	for f in Dockerfile ld.so.preload/Dockerfile; do
		img=$1
		[ "$f" = Dockerfile ] || img=$2
		want=$(sed -n "s/^| \`examples\/docker\/${f//\//\\/}\` |.*the base + \([0-9.]*\) MB.*/\1/p" docs/containers.md)
		got=$(dk image inspect -f '{{.Size}}' "$img" 2>>"$LOG" | awk -v b="$base" '{ printf "%.1f", ($1 - b) / 1e6 }')
		if [ -n "$want" ] && [ -n "$base" ] && awk -v w="$want" -v g="$got" 'BEGIN { d = w - g; exit !(d <= 0.3 && d >= -0.3) }'; then
			ok "docker: examples/docker/$f adds $got MB to its base (docs/containers.md: $want MB)"
		else bad "docker: examples/docker/$f adds what docs/containers.md says" "measured ${got:-?} MB, the table ${want:-(no row)}"; fi
	done
}

dk_section() {
	local started=$SECONDS rel=bookworm i bk
	if [ ! -x "$dk_bin" ] || ! command -v dockerd >/dev/null; then
		skip "docker" "Debian's docker.io is not installed (bash scripts/setup.sh installs it)"
		return
	fi
	if ! dk_start; then
		skip "docker" "dockerd does not start here: $out"
		dk_stop
		return
	fi
	ok "docker: dockerd $(dk version -f '{{.Server.Version}}' 2>/dev/null) on its own socket and data root ($(dk info -f '{{.Driver}}, cgroup {{.CgroupVersion}}' 2>/dev/null))"
	[ -n "${CONTAINERS_CONF:-}" ] || ctr_conf
	ctr_build_base "$rel" || { bad "docker: the podman base images" "see $LOG"; dk_stop; return; }
	for i in base build; do
		podman save "localhost/vramguard-$i:$rel" 2>>"$LOG" | dk load >>"$LOG" 2>&1 ||
			{ bad "docker: docker load of localhost/vramguard-$i:$rel" "see $LOG"; dk_stop; return; }
	done
	[ -x "$B/quota_demo" ] || make -s BUILD="$B" "$B/quota_demo" >>"$LOG" 2>&1
	dk_mounts=(-v "$PWD/$T/libcuda.so.1:$dk_lib:ro" -v "$PWD/$B/quota_demo:/opt/vg-test/quota_demo:ro"
		-v "$PWD/$T/grower:/opt/vg-test/grower:ro")
	local bases=("BUILD_IMAGE=localhost/vramguard-build:$rel" "RUNTIME_IMAGE=localhost/vramguard-base:$rel")
	local sizes=''
	for bk in 1 0; do
		local how=BuildKit
		[ "$bk" = 0 ] && how="the legacy builder"
		local vg=vg-docker/vramguard:bk$bk pre=vg-docker/preload:bk$bk
		dk_build "docker, $how: examples/docker/Dockerfile builds" "$vg" examples/docker/Dockerfile "$bk" "${bases[@]}" ||
			continue
		dk_compiled_inside "docker, $how" "$vg"
		# the build stage's /src: the context the builder sent, after its ignore file
		if DOCKER_BUILDKIT=$bk dk build -q --network=host "${bases[@]/#/--build-arg=}" --target build \
			-f examples/docker/Dockerfile -t "vg-docker/build:bk$bk" . >>"$LOG" 2>&1; then
			dk_run --entrypoint '' "vg-docker/build:bk$bk" /bin/sh -c \
				'cd /src && ls -d .git build/tests tests 2>/dev/null; ls Makefile'
			if [ "$out" = Makefile ]; then ok "docker, $how: the context has no .git, no host build/, no tests/"
			else bad "docker, $how: the context leaves out .git, build/ and tests/" "in /src: $out"; fi
		else bad "docker, $how: the build stage alone builds" "see $LOG"; fi
		dk_quota "docker, $how" "$vg"
		dk_build "docker, $how: examples/docker/ld.so.preload/Dockerfile builds" "$pre" \
			examples/docker/ld.so.preload/Dockerfile "$bk" "VRAMGUARD_IMAGE=$vg" "APP_IMAGE=localhost/vramguard-base:$rel" &&
			dk_quota "docker, $how, ld.so.preload" "$pre"
		sizes+="$how: $(dk image inspect -f '{{.Size}}' "$vg" "$pre" 2>/dev/null |
			awk '{ printf "%s%.1f MB", (NR > 1 ? ", " : ""), $1 / 1e6 }'); "
	done
	dk_sizes "vg-docker/vramguard:bk0" "vg-docker/preload:bk0" "localhost/vramguard-base:$rel"
	dk image inspect "vg-docker/vramguard:bk1" >/dev/null 2>&1 && dk_live "vg-docker/vramguard:bk1"
	# examples/compose.yaml: the Compose plugin validates it (gpus, CDI devices) where one is installed
	if dk compose version >>"$LOG" 2>&1; then
		if dk compose -f examples/compose.yaml config -q >"$dk_dir/compose.out" 2>&1; then
			ok "docker compose config accepts examples/compose.yaml (gpus, CDI devices, the mounted library)"
		else bad "docker compose config accepts examples/compose.yaml" "$(cat "$dk_dir/compose.out")"; fi
	else skip "docker compose config examples/compose.yaml" "no Compose plugin for $dk_bin (Debian 12 packages none)"; fi
	echo "# docker image sizes (vramguard, ld.so.preload): ${sizes}base $(dk image inspect -f '{{.Size}}' \
		"localhost/vramguard-base:$rel" | awk '{ printf "%.1f MB", $1 / 1e6 }')"
	dk_stop
	echo "# docker: $((SECONDS - started)) s"
}
dk_section
unset -f dk dk_run dk_start dk_stop dk_build dk_compiled_inside dk_quota dk_live dk_sizes dk_section

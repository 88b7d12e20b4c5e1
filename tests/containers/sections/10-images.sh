# shellcheck shell=bash
# images: examples/docker's image, its /etc/ld.so.preload variant and the compose file's services, built and run
# The public Dockerfiles are built as they are, with their base images passed as build arguments (local Debian
# bookworm images: tests/containers/lib.sh), and run with the test double of libcuda.so.1 mounted read-only where
# the NVIDIA container toolkit would mount the driver, and host-built CUDA test programs mounted under /opt/vg-test.
# Every check judges from outside: exit status, output, files in a mounted directory or volume.
#
# Uses from run.sh: ok, bad, skip, LOG, B, T, ctr_* (lib.sh); the images are kept between runs and rebuilt from
# the layer cache (about a second when the sources have not changed).
# shellcheck disable=SC2154 # out and rc are set by ctr_run (lib.sh)

img_rel=bookworm
img_vg=localhost/vg-img-vramguard:$img_rel
img_pre=localhost/vg-img-preload:$img_rel
img_dir=$PWD/$T/containers-images
img_lib=/usr/lib/x86_64-linux-gnu/libcuda.so.1  # where the NVIDIA container toolkit puts the driver
img_mounts=(-v "$PWD/$T/libcuda.so.1:$img_lib:ro" -v "$PWD/$B/quota_demo:/opt/vg-test/quota_demo:ro"
	-v "$PWD/$T/waiter:/opt/vg-test/waiter:ro")
img_denied='^vramguard: denied 512.00 MiB on GPU 0 \(cuMemAlloc_v2\): 2.00 GiB of 2.00 GiB quota in use \(NVIDIA_GPU_MEMORY_LIMITS\)$'
img_ls='exec /bin/ls -l /usr/bin/env /nonexistent 2>&1'
img_badlimit="vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB': unknown unit 'XB' (expected e.g. 4096, 4G, 50%, 0:4G,1:2G)"

# img_build NAME IMAGE DOCKERFILE [BUILD-ARG...]: podman build from the repository root; ok or bad with the log's end.
img_build() {
	local name=$1 img=$2 file=$3
	shift 3
	local args=() a
	for a in "$@"; do args+=(--build-arg "$a"); done
	ctr_build_run "$name" "$img_dir/build.log" podman build --network=host "${args[@]}" -f "$file" -t "$img" .
}

# img_quota NAME IMAGE: quota_demo under a 2 GiB quota of the 16 GiB double, its exit report as JSON in
# the mounted directory: four 512 MiB pieces granted, the fifth refused with the library's one line, 256 MiB
# granted after a free, exit status 0, one complete exit report at zero within the quota.
img_quota() {
	local name=$1 img=$2 host
	host=vg-img-$RANDOM
	rm -rf "$img_dir/reports" && mkdir -p "$img_dir/reports"
	ctr_run "${img_mounts[@]}" -v "$img_dir/reports:/reports" --hostname "$host" -e NVIDIA_GPU_MEMORY_LIMITS=2G \
		-e VRAMGUARD_REPORT=/reports/vg-%h-%p-%n.json -e VRAMGUARD_REPORT_FORMAT=json "$img" /opt/vg-test/quota_demo
	local why=
	[ "$rc" = 0 ] || why="exit status $rc"
	grep -q '^allocated 4 x 512 MiB = 2048 MiB, then cuMemAlloc returned 2 ' <<<"$out" || why+=" no 4 x 512 MiB granted then refused;"
	grep -q '^after freeing one piece, a 256 MiB allocation returned 0$' <<<"$out" || why+=" 256 MiB after a free not granted;"
	[ "$(grep -c '^vramguard' <<<"$out")" = 1 ] && grep -Eq "$img_denied" <<<"$out" ||
		why+=" not exactly one vramguard line, the refusal;"
	if [ -z "$why" ]; then ok "$name: quota holds (2G: 4 x 512 MiB granted, the 5th refused with one line, 256 MiB after a free)"
	else bad "$name: quota holds" "$why"$'\n'"$out"; fi
	local rep=$img_dir/reports/vg-$host-1-1.json chk
	if chk=$(python3 tests/lib/report_check.py zero 1 2147483648 "$rep" 2>&1); then
		ok "$name: exit report as JSON in the mounted directory (vg-%h-%p-%n.json, %h the container's host name)"
	else bad "$name: exit report as JSON in the mounted directory" "$(ls "$img_dir/reports")"$'\n'"$chk"; fi
}

# img_plain NAME IMAGE REF-IMAGE: a non-CUDA command (ls, one path missing; stderr into stdout inside, so the
# order is the program's) gives the same output and status in IMAGE (vramguard loaded) as in REF-IMAGE (its base,
# without vramguard): no line from vramguard.
img_plain() {
	local name=$1 img=$2 ref=$3 want wrc
	ctr_run --entrypoint '' -e NVIDIA_GPU_MEMORY_LIMITS=2G "$ref" /bin/sh -c "$img_ls"
	want=$out wrc=$rc
	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=2G "$img" /bin/sh -c "$img_ls"
	if [ "$out" = "$want" ] && [ "$rc" = "$wrc" ] && [ "$rc" = 2 ]; then
		ok "$name: a non-CUDA command is untouched (ls: same output and status 2 as without vramguard)"
	else bad "$name: a non-CUDA command is untouched" "status $rc (want $wrc); output:"$'\n'"$out"$'\n'"want:"$'\n'"$want"; fi
}

img_section() {
	mkdir -p "$img_dir"
	# run.sh calls ctr_why_not in a command substitution, so the CONTAINERS_CONF its ctr_conf exports is lost
	[ -n "${CONTAINERS_CONF:-}" ] || ctr_conf
	ctr_build_base "$img_rel" || { skip "images" "the $img_rel base images cannot be made (see $LOG)"; return; }
	# quota_demo is not among the test programs `make test-bins` builds
	[ -x "$B/quota_demo" ] || make -s BUILD="$B" "$B/quota_demo" >>"$LOG" 2>&1 ||
		{ bad "images: build $B/quota_demo" "see $LOG"; return; }

	# ---- examples/docker/Dockerfile: the build stage compiles vramguard, the runtime stage gets three files ----
	local bases=("BUILD_IMAGE=localhost/vramguard-build:$img_rel" "RUNTIME_IMAGE=localhost/vramguard-base:$img_rel")
	img_build "docker: examples/docker/Dockerfile builds (bases as build arguments)" "$img_vg" \
		examples/docker/Dockerfile "${bases[@]}" || return
	# the build stage alone, from the same cached layers: its /src is the context after the ignore file
	if podman build --network=host --target build "${bases[@]/#/--build-arg=}" -f examples/docker/Dockerfile \
		-t localhost/vg-img-vramguard-build:$img_rel . >>"$LOG" 2>&1; then
		ctr_run --entrypoint '' localhost/vg-img-vramguard-build:$img_rel /bin/sh -c \
			'cd /src && ls -d .git build/tests build/quota_demo examples/docker tests 2>/dev/null; ls Makefile'
		if [ "$out" = Makefile ]; then
			ok "docker: the build context leaves out .git, build/, tests/ and examples/docker (Dockerfile.dockerignore)"
		else bad "docker: the build context leaves out .git, build/, tests/ and examples/docker" "in /src: $out"; fi
	else bad "docker: the build stage alone builds" "see $LOG"; fi
	out=$(podman image diff "$img_vg" "localhost/vramguard-base:$img_rel" 2>&1 | sed -n 's/^A //p' | sort | tr '\n' ' ')
	if [ "$out" = "/usr/local/bin/vramguard /usr/local/lib/libvramguard.so /usr/local/share/man/man1 /usr/local/share/man/man1/vramguard.1 " ]; then
		ok "docker: the runtime stage adds the command, the library and the man page to its base, nothing else"
	else bad "docker: the runtime stage adds only the three installed files" "added: $out"; fi

	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=2G "$img_vg"
	if [ "$rc" = 0 ] && grep -q '^libcuda.so.1: .*/x86_64-linux-gnu/libcuda.so.1 ' <<<"$out" &&
		grep -q '^         memory 16.00 GiB, quota 2.00 GiB (NVIDIA_GPU_MEMORY_LIMITS)' <<<"$out"; then
		ok "docker: the default command, vramguard check, finds the double at the toolkit's path and the quota"
	else bad "docker: vramguard check: status 0, the driver and the quota" "rc $rc, output:"$'\n'"$out"; fi
	img_quota "docker" "$img_vg"
	# top from inside, while a CUDA job (the double's 64 MiB allocation) waits under the same entry point
	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=2G "$img_vg" /bin/sh -c '/opt/vg-test/waiter /tmp/stop >/tmp/w 2>&1 &
		i=0; while ! grep -q ready /tmp/w && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
		vramguard top --once; s=$?; touch /tmp/stop; wait; exit $s'
	if [ "$rc" = 0 ] && grep -Eq '^[0-9]+ +/opt/vg-test/waiter /tmp/stop +GPU-0+ \(0\) +64.00 MiB .* 2.00 GiB +0 ' <<<"$out"; then
		ok "docker: vramguard top --once inside lists the running job, 64 MiB of its 2 GiB quota"
	else bad "docker: vramguard top --once inside lists the running job" "rc $rc:"$'\n'"$out"; fi
	img_plain "docker" "$img_vg" "localhost/vramguard-base:$img_rel"
	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=4XB "$img_vg" /bin/sh -c 'echo the job ran'
	if [ "$rc" != 0 ] && [ "$out" = "$img_badlimit" ]; then
		ok "docker: a bad limit (4XB) fails closed: status $rc, the one-line message, the job not run"
	else bad "docker: a bad limit (4XB) fails closed with one line" "rc $rc, output:"$'\n'"$out"; fi

	# ---- examples/docker/ld.so.preload: the library in /etc/ld.so.preload, the application image's entry point ----
	img_build "preload: examples/docker/ld.so.preload/Dockerfile builds on the image above" "$img_pre" \
		examples/docker/ld.so.preload/Dockerfile "VRAMGUARD_IMAGE=$img_vg" "APP_IMAGE=localhost/vramguard-base:$img_rel" ||
		return
	out=$(podman image inspect --format '{{.Config.Entrypoint}}|{{.Config.Cmd}}' "$img_pre" 2>&1)
	if [ "$out" = "[]|[]" ]; then ok "preload: no entry point or command of its own (the application image's, none here)"
	else bad "preload: keeps the application image's entry point and command" "$out"; fi
	img_quota "preload" "$img_pre"
	img_plain "preload" "$img_pre" "localhost/vramguard-base:$img_rel"
	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=4XB "$img_pre" /opt/vg-test/quota_demo
	if [ "$rc" != 0 ] && [ "$out" = "$img_badlimit"$'\n'"quota_demo: CUDA initialisation failed with error 800" ]; then
		ok "preload: a bad limit (4XB) fails closed: cuInit refused (800, CUDA_ERROR_NOT_PERMITTED) after the one line"
	else bad "preload: a bad limit fails closed at cuInit" "rc $rc, output:"$'\n'"$out"; fi
	ctr_run "${img_mounts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=4XB "$img_pre" /bin/sh -c 'echo plain'
	if [ "$rc" = 0 ] && [ "$out" = plain ]; then ok "preload: with the bad limit, a non-CUDA command still runs, silent"
	else bad "preload: with the bad limit, a non-CUDA command still runs, silent" "rc $rc, output:"$'\n'"$out"; fi

	# ---- examples/docker/docker-compose.yml: each service's hostname, environment and volumes, with podman ----
	local file=examples/docker/docker-compose.yml svc opts quota vol mnt rep n=0 chk
	local services
	services=$(python3 tests/containers/compose_args.py "$file" 2>&1) ||
		{ bad "compose: $file's services read" "$services"; return; }
	python3 tests/containers/compose_args.py "$file" --unrun | sed 's/^/== compose, not run: /' >>"$LOG"
	for svc in $services; do
		mapfile -t opts < <(python3 tests/containers/compose_args.py "$file" "$svc" vg-img- 2>&1)
		for vol in "${opts[@]}"; do  # a fresh named volume, as on a first `docker compose up`
			case $vol in --volume=vg-img-*) vol=${vol#--volume=} && podman volume rm -f "${vol%%:*}" >/dev/null 2>&1
				podman volume create "${vol%%:*}" >>"$LOG" 2>&1 ;; esac
		done
		quota=$(printf '%s\n' "${opts[@]}" | sed -n 's/^--env=NVIDIA_GPU_MEMORY_LIMITS=\([0-9]*\)G$/\1/p')
		ctr_run "${img_mounts[@]}" "${opts[@]}" "$img_vg" /opt/vg-test/quota_demo
		vol=$(printf '%s\n' "${opts[@]}" | sed -n 's/^--volume=\(vg-img-[^:]*\):.*/\1/p')
		mnt=$(podman volume inspect --format '{{.Mountpoint}}' "$vol" 2>>"$LOG")
		rep=$mnt/vg-$svc-1-1.json
		if [ -n "$quota" ] && [ "$rc" = 0 ] &&
			grep -q "^allocated $((quota * 2)) x 512 MiB = $((quota * 1024)) MiB, then cuMemAlloc returned 2 " <<<"$out" &&
			chk=$(python3 tests/lib/report_check.py zero 1 $((quota << 30)) "$rep" 2>&1); then
			ok "compose: service $svc (its hostname, environment, volume): ${quota}G quota holds, $(basename "$rep") in $vol"
			n=$((n + 1))
		else bad "compose: service $svc under its quota, its report in the volume" \
			"options: ${opts[*]}; rc $rc; files: $(ls "$mnt" 2>&1)"$'\n'"$out"$'\n'"${chk:-}"; fi
	done
	[ "$n" -ge 2 ] || bad "compose: at least two services run" "services: $services"

	echo "# image sizes: $img_vg $(ctr_size "$img_vg"), $img_pre $(ctr_size "$img_pre"), base" \
		"$(ctr_size "localhost/vramguard-base:$img_rel"), build $(ctr_size "localhost/vramguard-build:$img_rel")"
}
img_section

# shellcheck shell=bash
# older glibc: the host-built library and command in the oldest Debian the mirror has (buster, else bullseye)
# The claim (config/glibc_compat.h, cli/start.c; `make test` checks the symbol versions): the library and the
# command built here, on glibc 2.36, run on glibc 2.17 and later. Proven on the oldest release debootstrap can fetch
# here: the host's $LIB and $VG are mounted read-only into it, as the installed layout /opt/vramguard/{lib,bin}.
# The test double of libcuda.so.1 and the CUDA programs are compiled inside that release's build image (a program
# built on glibc 2.36 would not start there: they are not what is under test), into localhost/vg-old-tools:REL-HASH,
# HASH of their sources, reused while those do not change. Every check judges from outside: exit status, output, a
# report file in a mounted directory.
#
# Uses from run.sh: ok, bad, skip, LOG, T, LIB, VG; from lib.sh: ctr_base, ctr_build_base, ctr_run, ctr_size.

# vg_old_tools REL: make (or reuse) the image with the test double at /usr/local/lib/libcuda.so.1 and quota_demo
# and waiter in /usr/local/bin; its name in $vg_old_img.
vg_old_tools() {
	local rel=$1 ctx=$CTR_DIR/vg-old-tools-$1 f file
	local srcs=(tests/fakecuda/fakecuda.c tests/fakecuda/fakecuda.h examples/quota_demo.c tests/integration/waiter.c)
	# The same flags as the Makefile's rules for these files; the runtime stage is the plain base, like a
	# deployment image, with the test double where ldconfig finds it (the NVIDIA toolkit mounts the driver's there).
	file=$(cat <<C
FROM localhost/vramguard-build:$rel AS build
COPY src /src
RUN mkdir /out && cd /src && \
    gcc -std=gnu11 -O1 -g -pthread -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 \
        -I. -I/usr/local/cuda/include -o /out/libcuda.so.1 tests/fakecuda/fakecuda.c -ldl && \
    gcc -std=gnu11 -O1 -g -I/usr/local/cuda/include -o /out/quota_demo examples/quota_demo.c -ldl && \
    gcc -std=gnu11 -O1 -g -I. -I/usr/local/cuda/include -o /out/waiter tests/integration/waiter.c -L/out \
        -l:libcuda.so.1
FROM localhost/vramguard-base:$rel
COPY --from=build /out/libcuda.so.1 /usr/local/lib/libcuda.so.1
COPY --from=build /out/quota_demo /out/waiter /usr/local/bin/
RUN ldconfig
C
)
	vg_old_img=localhost/vg-old-tools:$rel-$( (cat "${srcs[@]}"; echo "$file") | sha256sum | cut -c1-12)
	podman image exists "$vg_old_img" && return 0
	ctr_build_base "$rel" || return 1
	rm -rf "$ctx" && mkdir -p "$ctx/src"
	for f in "${srcs[@]}"; do cp --parents "$f" "$ctx/src/"; done  # the tree's paths: #include "tests/..."
	echo "$file" >"$ctx/Containerfile"
	echo "== podman build $vg_old_img" >>"$LOG"
	podman build --network=host -t "$vg_old_img" "$ctx" >>"$LOG" 2>&1 || return 1
	# the images of earlier sources go
	podman images --format '{{.Repository}}:{{.Tag}}' | grep "^localhost/vg-old-tools:$rel-" |
		grep -vxF "$vg_old_img" | xargs -r podman rmi >>"$LOG" 2>&1
	return 0
}

# vg_old_checks REL: the checks, in REL's tools image.
vg_old_checks() {
	local rel=$1 img=$vg_old_img out rc dir=$PWD/$T/containers-glibc-$1
	local L=/opt/vramguard/lib/libvramguard.so V=/opt/vramguard/bin/vramguard
	rm -rf "$dir" && mkdir -p "$dir"
	# Never a pull (no registry here); the host-built binaries, read-only, in the installed layout (`run` finds
	# ../lib/libvramguard.so); the report directory; a fake GPU of 8 GiB.
	local opts=(--pull=never -v "$LIB:$L:ro" -v "$VG:$V:ro" -v "$dir:/out" -e FAKECUDA_MEM=8G)
	local glibc
	glibc=$(podman run --rm --network=none --pull=never "$img" ldd --version 2>>"$LOG" | sed -n '1s/.* //p')

	# A program that links neither libdl nor libpthread: the library must bring what an old glibc keeps there.
	ctr_run "${opts[@]}" -e LD_PRELOAD=$L "$img" /bin/echo untouched
	if [ "$rc" = 0 ] && [ "$out" = untouched ]; then
		ok "$rel (glibc $glibc): a non-CUDA program starts with the library preloaded, untouched"
	else
		bad "$rel (glibc $glibc): the library does not load in a plain program (rc $rc)" "$out"
	fi

	# The quota through LD_PRELOAD, as an image's ENTRYPOINT or a CDI spec sets it: 1 GiB of the 8 GiB GPU.
	ctr_run "${opts[@]}" -e LD_PRELOAD=$L -e NVIDIA_GPU_MEMORY_LIMITS=1G "$img" quota_demo
	if [ "$rc" = 0 ] && grep -q '^allocated 2 x 512 MiB = 1024 MiB, then cuMemAlloc returned 2 ' <<<"$out" &&
		grep -q '^cuMemGetInfo: total 1024 MiB' <<<"$out"; then
		ok "$rel: the quota holds under LD_PRELOAD (1G of 8G: $(grep -m1 '^allocated' <<<"$out"))"
	else
		bad "$rel: the quota under LD_PRELOAD (rc $rc)" "$out"
	fi

	# vramguard run: the command starts, finds the library, the quota holds, the exit report is written.
	ctr_run "${opts[@]}" "$img" $V run --limit 1G --report /out/run.json --format json -- quota_demo
	if [ "$rc" = 0 ] && grep -q '^allocated 2 x 512 MiB = 1024 MiB' <<<"$out" && [ -s "$dir/run.json" ] &&
		grep -q '"schema"' "$dir/run.json"; then
		ok "$rel: vramguard run --limit 1G: the quota holds, the JSON report is written ($(wc -c <"$dir/run.json") bytes)"
	else
		bad "$rel: vramguard run --limit 1G (rc $rc)" "$out"$'\n'"$(ls -l "$dir" 2>&1)"
	fi

	# vramguard report FILE.json: the host-built reader on the report the run wrote.
	if [ -s "$dir/run.json" ]; then
		ctr_run "${opts[@]}" "$img" $V report /out/run.json
		if [ "$rc" = 0 ] && grep -q '^vramguard: report (exit) pid [0-9]*, .*: quota_demo$' <<<"$out" &&
			grep -Eq '^ +0 +0 B +1\.00 GiB +1\.00 GiB +3 +3 +1 \(512\.00 MiB\)$' <<<"$out"; then
			ok "$rel: vramguard report run.json prints it ($(wc -l <<<"$out") lines)"
		else
			bad "$rel: vramguard report run.json (rc $rc)" "$out"
		fi
	else
		bad "$rel: vramguard report: no report to read (the run above failed)"
	fi

	# vramguard check: the configuration, the library it would load, the test double as the driver, the device.
	ctr_run "${opts[@]}" -e NVIDIA_GPU_MEMORY_LIMITS=1G "$img" $V check
	if [ "$rc" = 0 ] && grep -q "^library: *$L\$" <<<"$out" && grep -q '/usr/local/lib/libcuda.so.1' <<<"$out" &&
		grep -q '^  NVIDIA_GPU_MEMORY_LIMITS *1G$' <<<"$out" &&
		grep -q 'memory 8\.00 GiB, quota 1\.00 GiB (NVIDIA_GPU_MEMORY_LIMITS)' <<<"$out"; then
		ok "$rel: vramguard check finds the library, the driver and the 1G quota of the 8 GiB device"
	else
		bad "$rel: vramguard check (rc $rc)" "$out"
	fi

	# vramguard top --once beside a job under vramguard run (64 MiB in use of its 1 GiB quota).
	ctr_run "${opts[@]}" "$img" /bin/sh -c "$V run --limit 1G -- waiter /tmp/stop >/tmp/w 2>&1 &
		i=0; until grep -q ready /tmp/w || [ \$i -gt 100 ]; do sleep 0.1; i=\$((i + 1)); done
		$V top --once; r=\$?; touch /tmp/stop; wait; exit \$r"
	if [ "$rc" = 0 ] && grep -Eq '^[0-9]+ +waiter +.* 64\.00 MiB .* 1\.00 GiB ' <<<"$out"; then
		ok "$rel: vramguard top --once shows the job: $(grep -E '^[0-9]+ +waiter' <<<"$out" | tr -s ' ')"
	else
		bad "$rel: vramguard top --once (rc $rc)" "$out"
	fi
}

vg_old_started=$SECONDS
# run.sh asks ctr_why_not in a subshell, whose export of CONTAINERS_CONF (runc, the ulimits) does not reach us.
ctr_conf
vg_old_rel=
# buster (glibc 2.28, the age of RHEL 8) first; the mirror here no longer carries it.
for r in buster bullseye; do
	vg_old_log=$(wc -l <"$LOG")
	if ctr_base "$r"; then
		vg_old_rel=$r
		break
	fi
	skip "$r: the oldest release first" "debootstrap cannot fetch $r here: $(tail -n +$((vg_old_log + 1)) "$LOG" | grep -m1 '^E: ' | cut -c4-)"
done
if [ -z "$vg_old_rel" ]; then
	skip "older glibc" "no older Debian release could be bootstrapped (see $LOG)"
elif ! vg_old_tools "$vg_old_rel"; then
	bad "$vg_old_rel: building the test double and the CUDA programs in vramguard-build:$vg_old_rel" \
		"$(tail -n 5 "$LOG")"
else
	echo "# $vg_old_img: $(ctr_size "$vg_old_img")"
	vg_old_checks "$vg_old_rel"
fi
echo "# older glibc: $((SECONDS - vg_old_started)) s"

# shellcheck shell=bash
# The container tests' shared part, sourced by tests/containers/run.sh: a container runtime that works on this
# machine kind (podman with runc, as root, no registry: docs/containers.md), base images bootstrapped from Debian's
# own mirror, and helpers the sections use. Everything lives under CTR_DIR (root file systems, the build image's
# inputs) and in podman's storage as localhost/vramguard-*:TAG images, which later runs reuse.
#
# Uses from run.sh: ok, bad, skip (tests/run.sh's protocol), LOG.
CTR_DIR=${VG_CTR_DIR:-/var/tmp/vramguard-ctr}

# Why containers cannot run here, or nothing (then they can). Cheap: no image is made. Runs in a subshell
# ($(ctr_why_not)): the caller then calls ctr_conf itself, for the export.
ctr_why_not() {
	[ "$(id -u)" = 0 ] || { echo "needs root (podman as root, runc)"; return; }
	local c
	for c in podman runc debootstrap; do
		command -v "$c" >/dev/null || { echo "$c not installed (bash scripts/setup.sh installs it)"; return; }
	done
	ctr_conf
	podman info >/dev/null 2>>"$LOG" || { echo "podman info fails (see the log)"; return; }
}

# podman's settings for this machine kind: runc (crun refuses a hybrid cgroup layout), default ulimits at or below
# the host's hard limits (root may not raise them here). Exported for every podman call of the run.
ctr_conf() {
	mkdir -p "$CTR_DIR"
	local nofile nproc
	nofile=$(ulimit -Hn)
	nproc=$(ulimit -Hu)
	[ "$nofile" = unlimited ] && nofile=1048576
	[ "$nproc" = unlimited ] && nproc=32768
	[ "$nofile" -gt 20000 ] && nofile=20000
	[ "$nproc" -gt 32768 ] && nproc=32768
	# a new file renamed into place: another run may be reading it
	cat >"$CTR_DIR/containers.conf.$$" <<C
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
C
	mv -f "$CTR_DIR/containers.conf.$$" "$CTR_DIR/containers.conf"
	export CONTAINERS_CONF=$CTR_DIR/containers.conf
}

# The Debian mirror apt uses on this machine (deb822 sources or sources.list), else deb.debian.org.
ctr_mirror() {
	local m
	m=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
	[ -n "$m" ] || m=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null |
		grep -v security | head -1)
	echo "${m:-http://deb.debian.org/debian}"
}

# ctr_base RELEASE: the image localhost/vramguard-base:RELEASE, a minbase Debian RELEASE (bookworm, bullseye, ...)
# made with debootstrap from the mirror and imported; kept between runs. Returns non-zero (logged) if it cannot be
# made, e.g. a release the mirror no longer carries.
ctr_base() {
	local rel=$1 img=localhost/vramguard-base:$1 root=$CTR_DIR/rootfs-$1
	podman image exists "$img" && return 0
	if [ ! -x "$root/bin/sh" ]; then
		rm -rf "$root"
		echo "== debootstrap --variant=minbase $rel $root $(ctr_mirror)" >>"$LOG"
		debootstrap --variant=minbase "$rel" "$root" "$(ctr_mirror)" >>"$LOG" 2>&1 || { rm -rf "$root"; return 1; }
		# apt inside a build reaches the mirror the way the host does (proxies, snapshot date checks)
		local f
		for f in /etc/apt/apt.conf.d/*; do
			grep -q 'Acquire::' "$f" 2>/dev/null && cp "$f" "$root/etc/apt/apt.conf.d/"
		done
		rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
	fi
	tar -C "$root" -c . | podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		- "$img" >>"$LOG" 2>&1
}

# ctr_build_base RELEASE: localhost/vramguard-build:RELEASE, the base plus what compiling vramguard takes (gcc, make,
# libc6-dev, uthash-dev, libdw-dev) and the CUDA headers from CUDA_HOME at /usr/local/cuda/include, standing in for the
# nvidia/cuda devel image that cannot be pulled here.
ctr_build_base() {
	local rel=$1 img=localhost/vramguard-build:$1 ctx=$CTR_DIR/build-$1
	podman image exists "$img" && return 0
	ctr_base "$rel" || return 1
	rm -rf "$ctx" && mkdir -p "$ctx/cuda"
	cp -r "${CUDA_HOME:-/usr/local/cuda}/include" "$ctx/cuda/include"
	cat >"$ctx/Containerfile" <<C
FROM localhost/vramguard-base:$rel
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc make libc6-dev \
    uthash-dev libdw-dev python3 && rm -rf /var/lib/apt/lists/*
COPY cuda/include /usr/local/cuda/include
C
	podman build --network=host -t "$img" "$ctx" >>"$LOG" 2>&1
}

# ctr_run ARGS...: podman run --rm --network=none ARGS..., stdout and stderr together in $out, status in $rc.
ctr_run() {
	out=$(podman run --rm --network=none "$@" 2>&1)
	rc=$?
	printf '== podman run %s\n%s\n(rc %s)\n' "$*" "$out" "$rc" >>"$LOG"
}

# ctr_build_run NAME BUILD-LOG CMD...: an image build (podman's or Docker's) run from the repository root, its
# output in BUILD-LOG and the suite's log; ok NAME with its time, or bad with the log's end (and status 1).
ctr_build_run() {
	local name=$1 blog=$2 t=$SECONDS
	shift 2
	echo "== $*" >>"$LOG"
	if "$@" >"$blog" 2>&1; then
		cat "$blog" >>"$LOG"
		ok "$name ($((SECONDS - t)) s)"
	else
		cat "$blog" >>"$LOG"
		bad "$name" "$(tail -5 "$blog")"
		return 1
	fi
}

# ctr_size IMAGE: its size as podman reports it (for the notes).
ctr_size() { podman image inspect --format '{{.Size}}' "$1" 2>/dev/null | awk '{ printf "%.1f MB", $1 / 1e6 }'; }

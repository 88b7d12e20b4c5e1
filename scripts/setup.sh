#!/usr/bin/env bash
# Install the build and test dependencies from Debian's packages (idempotent; needs root or sudo for apt-get).
# The CUDA headers (cuda.h, cudaTypedefs.h) come from the CUDA toolkit under CUDA_HOME (default /usr/local/cuda).
set -eu
need=()
for p in gcc make libc6-dev binutils uthash-dev libdw-dev yamllint python3-yaml clang-14 libclang-rt-14-dev \
	shellcheck stress-ng podman runc debootstrap prometheus prometheus-alertmanager curl chromium fonts-dejavu-core \
	docker.io dpkg-dev lintian time; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
command -v python3 >/dev/null 2>&1 || need+=(python3)     # the tests read JSON reports with it
# make wheel builds the Python wheel with Debian's python3, setuptools and wheel (no network); tests/sections/wheel.sh
# installs it with pip into a fresh virtual environment.
for p in python3-setuptools python3-wheel python3-venv python3-pip; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
# chromium (headless) renders the HTML reports in make test (tests/sections/views.sh), with a font.
# docker.io: Debian's Docker engine (dockerd and a 20.10 client with BuildKit built in), which make test-containers
# starts on a socket of its own (tests/containers/sections/60-docker.sh), whether or not a system one runs.
# dpkg-dev (dpkg-shlibdeps) and lintian: `make deb` (scripts/deb.sh) and its check.
# time (GNU time, /usr/bin/time): the peak RSS of `make bench-bigreport` (bench/run_bigreport.sh).
if [ "${#need[@]}" -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "setup: installing ${need[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/cuda.h" ] || [ ! -f "$cuda_home/include/cudaTypedefs.h" ]; then
	echo "setup: error: cuda.h and cudaTypedefs.h not found under $cuda_home/include: install the CUDA toolkit" \
		"headers (12.x or 13.x) or set CUDA_HOME" >&2
	exit 1
fi
echo "setup: ok (CUDA headers from $cuda_home)"

#!/usr/bin/env bash
# Install the build and test dependencies from Debian's packages (idempotent; needs root or sudo for apt-get).
# The CUDA headers (cuda.h, cudaTypedefs.h) come from the CUDA toolkit under CUDA_HOME (default /usr/local/cuda).
set -eu
need=()
for p in gcc make libc6-dev binutils uthash-dev libdw-dev yamllint python3-yaml clang-14 libclang-rt-14-dev \
	shellcheck stress-ng podman runc debootstrap prometheus prometheus-alertmanager curl chromium fonts-dejavu-core \
	dpkg-dev lintian; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
command -v python3 >/dev/null 2>&1 || need+=(python3)     # the tests read JSON reports with it
# chromium (headless) renders the HTML reports in make test (tests/sections/views.sh), with a font.
# dpkg-dev (dpkg-shlibdeps) and lintian: `make deb` (scripts/deb.sh) and its check.
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

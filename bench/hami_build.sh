#!/usr/bin/env bash
# Builds HAMi-core's libvgpu.so with its own build system (build.sh: cmake, then make), from a source tarball, for
# the side-by-side compute benchmark (bench/run_compute.sh). The tarball comes from a fetched snapshot, made on a
# machine with the network:
#   git -C HAMi-core archive --format=tar.gz --prefix=hami-core/ -o .gpu-cache/hami/hami-core.tar.gz HEAD
#   git -C HAMi-core rev-parse HEAD >.gpu-cache/hami/COMMIT
# (.gpu-cache/ is ignored by git and carried to the GPU machine; the figures of issue 28 are from commit
# 8f3a89c67b037d8fdfe6c4cd4d8c4f0cd6504811.)
#
# Usage: bash bench/hami_build.sh [TARBALL [BUILD-DIR]]
#   TARBALL    default .gpu-cache/hami/hami-core.tar.gz
#   BUILD-DIR  where the tree is unpacked and built (default build-hami: ignored by git; emptied first); the
#              commit it was built from is written to BUILD-DIR/COMMIT
#   CUDA_HOME  the toolkit (default /usr/local/cuda): cuda.h, nvml.h, nvcc (its test/ folder needs FindCUDA)
# Prints the build's log to stderr and, last on stdout, the absolute path of libvgpu.so. Exit status 1, with one
# line saying what is missing, when it cannot build (no cmake, no CUDA headers, no libcuda/libnvidia-ml to link).
set -u
cd "$(dirname "$0")/.." || exit 1
TARBALL=${1:-.gpu-cache/hami/hami-core.tar.gz}
DIR=${2:-build-hami}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME

die() {
	echo "hami_build: error: $*" >&2
	exit 1
}

# link_dir LIB: "" when the linker finds libLIB.so by itself, else a folder of the toolkit that holds it (its stubs:
# the library then needs the driver's libLIB.so.1 at run time only, as any program linked against a stub does).
link_dir() {
	local d
	if echo 'int main(void){return 0;}' | cc -x c - -o /dev/null "-l$1" >/dev/null 2>&1; then
		return 0
	fi
	for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/$(uname -m)-linux/lib/stubs" "$CUDA_HOME/lib64"; do
		[ -f "$d/lib$1.so" ] && { echo "$d"; return 0; }
	done
	return 1
}

[ -f "$TARBALL" ] || die "no HAMi-core source tarball '$TARBALL' (make it with git archive: see this file's header)"
for tool in cmake make cc; do
	command -v "$tool" >/dev/null || die "'$tool' not found (install it: apt-get install cmake build-essential)"
done
[ -f "$CUDA_HOME/include/cuda.h" ] || die "cuda.h not found under CUDA_HOME=$CUDA_HOME/include (set CUDA_HOME to the toolkit)"
# nvml.h: the toolkit's (package cuda-nvml-dev), else one elsewhere on the machine (a pip nvidia-nvml-dev wheel,
# Debian's libnvidia-ml-dev), else NVML_INCLUDE; gcc reads CPATH as -I for <nvml.h>.
nvml_inc=${NVML_INCLUDE:-}
if [ -z "$nvml_inc" ] && [ ! -f "$CUDA_HOME/include/nvml.h" ]; then
	nvml_inc=$(find /usr/local/cuda*/include /usr/local/cuda*/targets/*/include /usr/include /opt -maxdepth 7 \
		-name nvml.h -printf '%h\n' 2>/dev/null | head -n 1)
	[ -n "$nvml_inc" ] || die "nvml.h not found (not in $CUDA_HOME/include, /usr/include or /opt): install the" \
		"toolkit's NVML headers (cuda-nvml-dev) or set NVML_INCLUDE to a folder that holds nvml.h"
fi
[ -n "$nvml_inc" ] && export CPATH=$nvml_inc${CPATH:+:$CPATH}
[ -x "$CUDA_HOME/bin/nvcc" ] || command -v nvcc >/dev/null ||
	die "nvcc not found (HAMi-core's cmake configures its CUDA tests with FindCUDA): set CUDA_HOME"
extra=""
for lib in cuda nvidia-ml; do
	d=$(link_dir "$lib") || die "lib$lib.so not found for linking (neither on the linker's path nor in $CUDA_HOME's stubs)"
	[ -n "$d" ] && case ":$extra:" in *":$d:"*) ;; *) extra=${extra:+$extra:}$d ;; esac
done
# gcc reads LIBRARY_PATH for -l; HAMi-core's cmake links with a bare -lcuda -lnvidia-ml.
[ -n "$extra" ] && export LIBRARY_PATH=$extra${LIBRARY_PATH:+:$LIBRARY_PATH}

case $DIR in "" | / | . | .. | "$HOME") die "refusing to empty build folder '$DIR'" ;; esac
rm -rf "$DIR" && mkdir -p "$DIR" || die "cannot create $DIR"
tar -xzf "$TARBALL" -C "$DIR" || die "cannot unpack $TARBALL"
src=$(find "$DIR" -mindepth 1 -maxdepth 2 -name build.sh -printf '%h\n' | head -n 1)
[ -n "$src" ] || die "no build.sh in $TARBALL (not a HAMi-core tree?)"
export PATH=$CUDA_HOME/bin:$PATH
{
	echo "hami_build: source $TARBALL (commit $(cat "$(dirname "$TARBALL")/COMMIT" 2>/dev/null || echo unknown))"
	echo "hami_build: cmake $(cmake --version | head -n 1 | cut -d' ' -f3), nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')," \
		"nvml.h from ${nvml_inc:-$CUDA_HOME/include}, extra link folders: ${extra:-none}"
} >&2
# Its own build.sh, as its Dockerfile runs it (a Debug build with the hooks it enables). CMake 4 refuses projects
# that declare a minimum below 3.5 (HAMi-core says 2.8.11) unless told the policy version; older cmake ignores it.
(cd "$src" && CMAKE_OPTIONS="-DCMAKE_POLICY_VERSION_MINIMUM=3.5" J=$(nproc) timeout 600 sh ./build.sh) >&2
rc=$?
lib=$src/build/libvgpu.so
if [ "$rc" -ne 0 ] && [ ! -f "$src/build/Makefile" ] && grep -q '^add_subdirectory(test)' "$src/CMakeLists.txt"; then
	# cmake did not configure: most likely its test/ folder (FindCUDA, removed from newer cmake). The library does
	# not need it: configure again without the tests.
	echo "hami_build: cmake failed (exit $rc); configuring again without HAMi-core's test/ folder" >&2
	sed -i 's/^add_subdirectory(test)/# &  (left out by vramguard bench\/hami_build.sh)/' "$src/CMakeLists.txt"
	rm -rf "$src/build"
	(cd "$src" && CMAKE_OPTIONS="-DCMAKE_POLICY_VERSION_MINIMUM=3.5" J=$(nproc) timeout 600 sh ./build.sh) >&2
	rc=$?
fi
if [ "$rc" -ne 0 ] && [ ! -f "$lib" ] && [ -f "$src/build/Makefile" ]; then
	# The whole tree failed (its test programs, say): the library alone is what the benchmark needs.
	echo "hami_build: build.sh failed (exit $rc); building the library target alone" >&2
	(cd "$src/build" && timeout 600 make -j"$(nproc)" vgpu) >&2
fi
[ -f "$lib" ] || die "libvgpu.so was not built (exit $rc; the log above says why)"
nm -D --defined-only "$lib" 2>/dev/null | grep -q ' cuLaunchKernel$' ||
	die "$lib does not export cuLaunchKernel: not a HAMi-core hook library"
cp "$(dirname "$TARBALL")/COMMIT" "$DIR/COMMIT" 2>/dev/null || echo unknown >"$DIR/COMMIT"
echo "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")"

#!/usr/bin/env bash
# scripts/fetch-cupy-tests.sh: copy CuPy's own CUDA tests out of a CuPy git repository into .gpu-cache/cupy-tests/,
# for the cupy_suite check of tests/gpu/run.sh. Run it on the development machine; the GPU machine has no network, so
# carry .gpu-cache/cupy-tests there with the tree (run.sh looks for it, or set CUPY_TESTS to it).
#
#   usage: scripts/fetch-cupy-tests.sh CUPY_GIT_DIR [REF]
#     CUPY_GIT_DIR  a CuPy checkout or a bare mirror of github.com/cupy/cupy
#     REF           tag or commit, default v14.2.0: the tests must match the CuPy installed on the GPU machine
#                   (python3 -c 'import cupy; print(cupy.__version__)'; run.sh prints both versions)
#     CUPY_TESTS_OUT  where to put them (default: .gpu-cache/cupy-tests in this repository)
#
# What is copied, and why: tests/cupy_tests/cuda_tests (the tests), fft_tests/test_fft.py (cuda_tests/test_cufft.py
# imports a helper from it; only cuda_tests is run), tests/cupy_tests/__init__.py (cuda_tests is a
# package inside cupy_tests), tests/conftest.py (the pytester plugin and options the tests run with) moved up one
# level next to cupy_tests/, pyproject.toml (pytest's settings: --strict-markers with the markers slow and multi_gpu,
# xfail_strict, the warning filters) and LICENSE (CuPy's MIT licence travels with its code). None of it is ever
# committed here: .gpu-cache/ is in .gitignore. The file SOURCE records the ref, the commit and CuPy's version there.
set -euo pipefail
src=${1:?usage: $0 CUPY_GIT_DIR [REF]}
ref=${2:-v14.2.0}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${CUPY_TESTS_OUT:-$root/.gpu-cache/cupy-tests}

if ! commit=$(git -C "$src" rev-parse --verify -q "$ref^{commit}"); then
	echo "fetch-cupy-tests: no $ref in $src; its v1x tags: $(git -C "$src" tag -l 'v1[0-9]*' | sort -V | tail -8 | paste -sd' ')" >&2
	exit 1
fi
version=$(git -C "$src" show "$commit:cupy/_version.py" | sed -n "s/^__version__ = ['\"]\(.*\)['\"]/\1/p")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$src" archive --format=tar "$commit" pyproject.toml LICENSE tests/conftest.py tests/cupy_tests/__init__.py \
	tests/cupy_tests/cuda_tests tests/cupy_tests/fft_tests/__init__.py tests/cupy_tests/fft_tests/test_fft.py |
	tar -x -C "$tmp"
mkdir -p "$tmp/out"
mv "$tmp/tests/conftest.py" "$tmp/tests/cupy_tests" "$tmp/pyproject.toml" "$tmp/LICENSE" "$tmp/out/"
printf 'version %s\nref %s\ncommit %s\nfrom %s\n' "$version" "$ref" "$commit" "$src" >"$tmp/out/SOURCE"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/out" "$dest"
echo "CuPy $version tests ($ref, $commit) in $dest: $(find "$dest" -name 'test_*.py' | wc -l) test files, $(du -sh "$dest" | cut -f1)"

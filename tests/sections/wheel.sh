#!/usr/bin/env bash
# Section wheel: the Python wheel (`make wheel`, python/; docs/install.md). Its tag is honest: the library and the
# command inside it need glibc 2.17 at most and only manylinux2014's libraries (PEP 599), and they are the build's
# own; installed with pip into a fresh virtual environment of Debian's python3, it gives the `vramguard` command on
# PATH, `python -m vramguard`, and vramguard.library_path(), each run against the test double.
# Needs: make (the library, the command, the wheel: make test builds it), make test-bins (the double, quota_demo).
source tests/lib/section.sh
source tests/lib/elf.sh
source tests/lib/docsize.sh

if [ -n "$SAN" ]; then
	skip "the wheel" "it ships the release build; a $SAN build needs its sanitizer's runtime, outside manylinux2014"
	done_testing
	exit
fi
PY=/usr/bin/python3 # Debian's, as `make wheel` uses (WHEEL_PYTHON), not whatever python3 is first on PATH
version=$(sed -n 's/^#define VG_VERSION "\([^"]*\)".*/\1/p' config/config.h)
WHL=$PWD/$B/vramguard-$version-py3-none-manylinux2014_x86_64.whl
if [ ! -f "$WHL" ]; then
	bad "the wheel $WHL exists (make wheel)"
	done_testing
	exit
fi
ok "make wheel: $(basename "$WHL"), $(stat -c %s "$WHL") bytes"
doc_size_about "the wheel" "$(stat -c %s "$WHL")" 'manylinux2014_x86_64\.whl`, about'

echo "== the wheel's contents and tag"
X=$W/unpacked
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$WHL" "$X"
DI=$X/vramguard-$version.dist-info
if grep -qx 'Tag: py3-none-manylinux2014_x86_64' "$DI/WHEEL" && grep -qx 'Root-Is-Purelib: false' "$DI/WHEEL"; then
	ok "WHEEL: tag py3-none-manylinux2014_x86_64, installed to platlib"
else bad "WHEEL: tag py3-none-manylinux2014_x86_64, installed to platlib" "$(cat "$DI/WHEEL")"; fi
if grep -qx 'vramguard = vramguard.__main__:main' "$DI/entry_points.txt"; then
	ok "entry_points.txt: the console script vramguard = vramguard.__main__:main"
else bad "entry_points.txt: the console script vramguard" "$(cat "$DI/entry_points.txt")"; fi
if cmp -s "$X/vramguard/_bin/libvramguard.so" "$LIB" && cmp -s "$X/vramguard/_bin/vramguard" "$VG"; then
	ok "vramguard/_bin/ holds this build's libvramguard.so and vramguard"
else bad "vramguard/_bin/ holds this build's libvramguard.so and vramguard" "$(ls -l "$X/vramguard/_bin" 2>&1)"; fi
glibc_at_most "the wheel's library" "$X/vramguard/_bin/libvramguard.so"
glibc_at_most "the wheel's command" "$X/vramguard/_bin/vramguard"
needed_manylinux2014 "the wheel's library" "$X/vramguard/_bin/libvramguard.so"
needed_manylinux2014 "the wheel's command" "$X/vramguard/_bin/vramguard"

echo "== pip install into a fresh virtual environment"
if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
	skip "pip install into a fresh venv" "$PY has no venv with pip: install Debian's python3-venv (scripts/setup.sh)"
	done_testing
	exit
fi
V=$W/venv
if "$PY" -m venv "$V" >>"$LOG" 2>&1 && "$V/bin/pip" install -q --no-index "$WHL" >>"$LOG" 2>&1; then
	ok "python3 -m venv, then pip install --no-index $(basename "$WHL")"
else
	bad "python3 -m venv, then pip install --no-index $(basename "$WHL")" "$(tail -n 4 "$LOG")"
	done_testing
	exit
fi
# The venv's bin/ first on PATH, as `source bin/activate` leaves it.
VENV=(env "PATH=$V/bin:$PATH" VIRTUAL_ENV="$V")
cli "the console script is the vramguard on PATH" 0 "^$V/bin/vramguard\$" -- "${VENV[@]}" sh -c 'command -v vramguard'
cli "vramguard --version (console script)" 0 "^vramguard $version\$" -- "${VENV[@]}" vramguard --version
cli "vramguard check (console script, test double)" 0 'GPU 0' $FAKEENV -- "${VENV[@]}" vramguard check
cli "a bad limit: exit status 2 through the console script" 2 '^$' -- "${VENV[@]}" vramguard run --limit 4XB -- true
grep -q "^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB'" "$ERR" ||
	bad "a bad limit through the console script: the command's own message" "$(head -n 2 "$ERR")"
cli "python -m vramguard run --limit 1G -- quota_demo: the quota holds" 0 \
	'^allocated 2 x 512 MiB = 1024 MiB, then cuMemAlloc returned 2' $FAKEENV -- \
	"${VENV[@]}" python -m vramguard run --limit 1G -- "$PWD/$B/quota_demo"
libpath=$("${VENV[@]}" python -c 'import vramguard; print(vramguard.library_path())' 2>>"$LOG")
case $libpath in "$V"/lib/python3*/site-packages/vramguard/_bin/libvramguard.so) in_venv=1 ;; *) in_venv=0 ;; esac
if [ "$in_venv" = 1 ] && cmp -s "$libpath" "$LIB"; then
	ok "vramguard.library_path(): the installed libvramguard.so ($libpath)"
else bad "vramguard.library_path(): the installed libvramguard.so" "got '$libpath'"; fi
cli "python -m vramguard run puts vramguard.library_path() in LD_PRELOAD" 0 "^$libpath\$" $FAKEENV -- \
	"${VENV[@]}" python -m vramguard run --limit 1G -- python -c 'import os; print(os.environ["LD_PRELOAD"])'
done_testing

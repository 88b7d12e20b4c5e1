#!/usr/bin/env bash
# `make try`: a shell in which vramguard can be tried by hand: build/ on PATH (vramguard, quota_demo) and, on a
# machine without an NVIDIA GPU, LD_LIBRARY_PATH pointing at the test double of libcuda.so.1 and libnvidia-ml.so.1.
#   bash scripts/try.sh             an interactive shell (exit to leave)
#   bash scripts/try.sh CMD ARGS... CMD run in that environment (what make test checks)
set -eu
cd "$(dirname "$0")/.."
# Under `make demo` / `make try` this script's make would be a sub-make without the jobserver (the Makefile sets -j):
# make it a make of its own, which also keeps make[1]'s directory lines out of the output.
unset MAKEFLAGS MFLAGS MAKELEVEL
targets="build/libvramguard.so build/vramguard build/tests/libcuda.so.1 build/tests/libnvidia-ml.so.1 build/quota_demo"
if ! make -q $targets 2>/dev/null; then
	bash scripts/setup.sh >/dev/null
	make -s $targets
fi
export PATH="$PWD/build:$PATH"
if nvidia-smi -L >/dev/null 2>&1; then
	where="the real NVIDIA driver"
else
	export LD_LIBRARY_PATH="$PWD/build/tests${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	where="the test double of libcuda.so.1 (no GPU here; LD_LIBRARY_PATH=$PWD/build/tests)"
fi
[ $# -gt 0 ] && exec "$@"
rc=$(mktemp)
cat >"$rc" <<RC
[ -f ~/.bashrc ] && . ~/.bashrc
PS1='(vramguard try) \w\$ '
echo "vramguard: a shell on $where, build/ on PATH. Try:"
echo "  vramguard run --limit 2G -- quota_demo"
echo "  VRAMGUARD_REPORT_FORMAT=json vramguard run --limit 2G --report /tmp/try-%p.json -- quota_demo"
echo "  vramguard check"
echo "exit (or Ctrl-D) to leave."
rm -f "$rc"
RC
exec bash --rcfile "$rc" -i

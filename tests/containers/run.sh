#!/usr/bin/env bash
# The container suite (`make test-containers`, run by .ci/run): vramguard in real containers (podman + runc, as
# root, no registry; Debian's Docker engine on a daemon of its own in 60-docker.sh), against the test double of libcuda.so.1 where the NVIDIA container toolkit would mount the
# driver. Same output protocol as tests/run.sh (docs/TESTING.md); the whole suite is one skip, with the reason,
# where no container runtime can run. Sections, in order: the sections/*.sh files (one per part of the issue:
# images, CDI, older glibc, the wheel on it, Kubernetes Pod specs, the exporter, the .deb, Docker). Arguments name
# sections to run alone, by file name with or without its number (`make test-containers T=deb,60-docker`); a name
# that matches no section is an error. Log: $BUILD/tests/containers.log.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
T=$B/tests
# shellcheck disable=SC2034 # LIB, VG and T are for the sections (sourced below)
LIB=$PWD/$B/libvramguard.so
# shellcheck disable=SC2034
VG=$PWD/$B/vramguard
LOG=$T/containers.log
mkdir -p "$T"
: >"$LOG"
source tests/lib/tap.sh
source tests/containers/lib.sh

started=$SECONDS
why=$(ctr_why_not)
if [ -n "$why" ]; then
	skip "containers" "$why"
else
	ctr_conf
	for want in "$@"; do
		compgen -G "tests/containers/sections/$want.sh" >/dev/null ||
			compgen -G "tests/containers/sections/[0-9][0-9]-$want.sh" >/dev/null ||
			{ echo "tests/containers/run.sh: no section '$want' (tests/containers/sections/)" >&2; exit 2; }
	done
	for section in tests/containers/sections/*.sh; do
		[ -e "$section" ] || continue
		name=$(basename "$section" .sh)
		if [ $# -gt 0 ] && ! [[ " $* " == *" $name "* || " $* " == *" ${name#[0-9][0-9]-} "* ]]; then continue; fi
		echo "== $(sed -n '2s/^# *//p' "$section")"
		# shellcheck source=/dev/null
		source "$section"
	done
fi
echo
echo "# containers: $((SECONDS - started)) s"
[ "$skipped" -gt 0 ] && printf '# %d skipped\n' "$skipped"
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]

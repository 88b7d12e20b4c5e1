# shellcheck shell=bash
# older glibc, from pip: the wheel installed into a fresh venv of the older release's own Python
# The wheel's tag, manylinux2014, promises glibc 2.17 and later (tests/sections/wheel.sh reads the symbol versions):
# here the older release of 30-glibc.sh (buster, else bullseye) takes it through its own pip, which refuses a wheel
# whose tag its glibc does not support, and runs what it installed against the test double. Its image,
# localhost/vg-old-py:REL-HASH, is the tools image of 30-glibc.sh ($vg_old_img) plus python3-venv from the mirror,
# reused while that image does not change. The wheel is mounted read-only; every check judges from outside.
#
# Uses from run.sh: ok, bad, skip, LOG, T; from 30-glibc.sh: vg_old_rel, vg_old_img; from lib.sh: ctr_run.
# shellcheck disable=SC2154 # out and rc are set by ctr_run (lib.sh)

# vg_wheel_image REL: make (or reuse) the tools image with python3-venv; its name in $vg_py_img.
vg_wheel_image() {
	local ctx=$CTR_DIR/vg-old-py-$1 file
	file=$(printf 'FROM %s\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y %s && %s\n' \
		"$vg_old_img" "--no-install-recommends python3-venv" "rm -rf /var/lib/apt/lists/*")
	vg_py_img=localhost/vg-old-py:$1-$(echo "$file" | sha256sum | cut -c1-12)
	podman image exists "$vg_py_img" && return 0
	rm -rf "$ctx" && mkdir -p "$ctx" && echo "$file" >"$ctx/Containerfile"
	echo "== podman build $vg_py_img" >>"$LOG"
	podman build --network=host -t "$vg_py_img" "$ctx" >>"$LOG" 2>&1 || return 1
	podman images --format '{{.Repository}}:{{.Tag}}' | grep "^localhost/vg-old-py:$1-" | grep -vxF "$vg_py_img" |
		xargs -r podman rmi >>"$LOG" 2>&1
	return 0
}

vg_wheel_started=$SECONDS
vg_whl=$(ls "$PWD/$T"/../vramguard-*-py3-none-manylinux2014_x86_64.whl 2>/dev/null | head -n 1)
if [ -z "${vg_old_rel:-}" ] || [ -z "${vg_old_img:-}" ]; then
	skip "the wheel on an older glibc" "no older release's tools image (30-glibc.sh)"
elif [ -z "$vg_whl" ]; then
	bad "the wheel on an older glibc: no wheel in $(dirname "$T") (make wheel)"
elif ! vg_wheel_image "$vg_old_rel"; then
	bad "$vg_old_rel: python3-venv in $vg_old_img" "$(tail -n 5 "$LOG")"
else
	w=/whl/$(basename "$vg_whl")
	# A fresh venv, the wheel through pip without an index, then the three ways in, each printing a marker line.
	ctr_run -v "$vg_whl:$w:ro" -e FAKECUDA_MEM=8G "$vg_py_img" /bin/sh -c "set -e
		python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index $w
		echo \"python: \$(python3 --version), pip \$(/tmp/v/bin/pip --version | cut -d' ' -f2)\"
		PATH=/tmp/v/bin:\$PATH; export PATH
		echo \"on PATH: \$(command -v vramguard)\"
		vramguard check
		python -m vramguard run --limit 1G -- quota_demo
		echo \"library_path: \$(python -c 'import vramguard; print(vramguard.library_path())')\"
		python -m vramguard run --limit 1G -- python -c 'import os; print(\"LD_PRELOAD=\" + os.environ[\"LD_PRELOAD\"])'"
	lp=$(sed -n 's/^library_path: //p' <<<"$out")
	if [ "$rc" = 0 ] && grep -q '^on PATH: /tmp/v/bin/vramguard$' <<<"$out" &&
		grep -q "^library: *$lp\$" <<<"$out" && grep -q 'memory 8\.00 GiB' <<<"$out" &&
		grep -q '^allocated 2 x 512 MiB = 1024 MiB, then cuMemAlloc returned 2 ' <<<"$out" &&
		case $lp in /tmp/v/lib/python3*/site-packages/vramguard/_bin/libvramguard.so) true ;; *) false ;; esac &&
		grep -qx "LD_PRELOAD=$lp" <<<"$out"; then
		ok "$vg_old_rel: pip install --no-index $(basename "$vg_whl") into a fresh venv ($(sed -n 's/^python: //p' <<<"$out")): vramguard check, python -m vramguard run --limit 1G -- quota_demo, library_path() in LD_PRELOAD"
	else
		bad "$vg_old_rel: the wheel in a fresh venv (rc $rc)" "$out"
	fi
fi
echo "# the wheel on an older glibc: $((SECONDS - vg_wheel_started)) s"

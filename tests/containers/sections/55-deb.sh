# shellcheck shell=bash
# deb: `make deb`'s package installed with apt in a clean Debian bookworm, used, and purged without a trace
# The package (scripts/deb.sh) is built on the host with `make deb` (lintian clean where lintian is installed), then
# installed with `apt install ./vramguard_*.deb` in a container of the plain bootstrapped bookworm (no network: the
# package needs nothing the base lacks), with the test double of libcuda.so.1 mounted where the NVIDIA container
# toolkit mounts the driver and the host-built quota_demo under /opt/vg-test. `vramguard check` and `vramguard run`
# must find the library at its installed place; `apt purge` must leave none of the files `dpkg -L` listed.
# Every check judges from outside: exit status and output of `podman exec`.
#
# Uses from run.sh: ok, bad, skip, LOG, B, T; from lib.sh: ctr_conf, ctr_base.

# deb_exec CMD: run CMD (sh -c) in the section's container; output in $deb_out, status in $deb_rc.
deb_exec() {
	deb_out=$(podman exec "$deb_ctr" /bin/sh -c "$1" 2>&1)
	deb_rc=$?
	printf '== podman exec %s %s\n%s\n(rc %s)\n' "$deb_ctr" "$1" "$deb_out" "$deb_rc" >>"$LOG"
}

deb_checks() {
	local lib=/usr/lib/x86_64-linux-gnu/vramguard/libvramguard.so drv=/usr/lib/x86_64-linux-gnu/libcuda.so.1
	local list

	deb_exec "cd /pkg && apt install -y ./$deb_name && dpkg-query -W -f '\${Status}' vramguard"
	if [ "$deb_rc" = 0 ] && grep -q 'install ok installed$' <<<"$deb_out"; then
		ok "deb: apt install ./$deb_name in a clean bookworm, without network"
	else
		bad "deb: apt install ./$deb_name (rc $deb_rc)" "$deb_out"
		return
	fi
	deb_exec "dpkg -L vramguard"
	list=$deb_out

	deb_exec "vramguard check"
	# the driver as the loader resolved it: /lib/... or /usr/lib/... (the same directory: /lib is /usr/lib)
	if [ "$deb_rc" = 0 ] && grep -q "^library: *$lib\$" <<<"$deb_out" &&
		grep -q "^libcuda.so.1: .*${drv#/usr} " <<<"$deb_out" && grep -q '^  GPU 0  Fake GPU 0 ' <<<"$deb_out"; then
		ok "deb: vramguard check finds the library in $(dirname "$lib"), the driver (the test double) and its GPU"
	else
		bad "deb: vramguard check (rc $deb_rc)" "$deb_out"
	fi

	deb_exec "vramguard run --limit 1G -- /opt/vg-test/quota_demo"
	if [ "$deb_rc" = 0 ] && grep -q '^allocated 2 x 512 MiB = 1024 MiB, then cuMemAlloc returned 2 ' <<<"$deb_out" &&
		grep -q '^cuMemGetInfo: total 1024 MiB' <<<"$deb_out"; then
		ok "deb: vramguard run --limit 1G -- quota_demo: the quota holds ($(grep -m1 '^allocated' <<<"$deb_out"))"
	else
		bad "deb: vramguard run --limit 1G -- quota_demo (rc $deb_rc)" "$deb_out"
	fi

	# After the purge: no file of the list, no directory of vramguard's own, no trace in dpkg's database.
	deb_exec "apt purge -y vramguard"
	local purge_rc=$deb_rc purge_out=$deb_out
	deb_exec "for p in $(grep -v '^/\.$' <<<"$list" | tr '\n' ' '); do
		if [ -d \"\$p\" ] && [ ! -L \"\$p\" ]; then case \$p in *vramguard*) echo \"left: \$p\";; esac
		elif [ -e \"\$p\" ] || [ -L \"\$p\" ]; then echo \"left: \$p\"; fi
	done; dpkg-query -W vramguard 2>&1 | grep -v 'no packages found' || true"
	if [ "$purge_rc" = 0 ] && [ -z "$deb_out" ] && [ "$deb_rc" = 0 ]; then
		ok "deb: apt purge vramguard leaves none of its $(grep -c . <<<"$list") paths and no dpkg record"
	else
		bad "deb: apt purge vramguard (rc $purge_rc)" "$purge_out"$'\n'"$deb_out"
	fi
}

deb_section() {
	local t=$SECONDS deb
	ctr_conf
	if ! ctr_base bookworm; then
		skip "deb" "no base image localhost/vramguard-base:bookworm (debootstrap failed: see the log)"
		return
	fi
	# quota_demo is not among the test programs `make test-bins` builds
	[ -x "$B/quota_demo" ] || make -s BUILD="$B" "$B/quota_demo" >>"$LOG" 2>&1 ||
		{ bad "deb: build $B/quota_demo" "see $LOG"; return; }
	local made
	if made=$(make -s BUILD="$B" deb 2>&1); then
		deb=$(sed -n 's/^== \(.*\.deb\): .*/\1/p' <<<"$made")
		ok "deb: make deb: $(basename "$deb"), $(stat -c %s "$deb") bytes; $(grep -m1 '^== lintian' <<<"$made" | cut -c4-)"
	else
		bad "deb: make deb" "$made"
		return
	fi
	echo "$made" >>"$LOG"
	doc_size_about "the .deb" "$(stat -c %s "$deb")" '_amd64\.deb`, about'
	deb_name=$(basename "$deb")
	deb_ctr=vg-deb-$$
	podman rm -f "$deb_ctr" >/dev/null 2>&1
	if ! podman run -d --rm --name "$deb_ctr" --network=none --pull=never -v "$PWD/$deb:/pkg/$deb_name:ro" \
		-v "$PWD/$T/libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro" \
		-v "$PWD/$B/quota_demo:/opt/vg-test/quota_demo:ro" localhost/vramguard-base:bookworm sleep 600 >>"$LOG" 2>&1; then
		bad "deb: start a bookworm container" "see $LOG"
		return
	fi
	deb_checks
	podman rm -f -t 0 "$deb_ctr" >>"$LOG" 2>&1
	echo "# deb: $((SECONDS - t)) s"
}

# shellcheck source=tests/lib/docsize.sh
source tests/lib/docsize.sh
deb_section

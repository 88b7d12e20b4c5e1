# shellcheck shell=bash
# The receiver can do nothing its user could not do by hand (sourced by tests/sections/autoscale.sh inside its
# HTTP checks, whose helpers ajob, apost, apay and acount it uses): run as uid 65534, it is refused root's region
# and root's process by `limit set`'s own ownership checks, and nothing changes. (Run as root, the same alerts
# raise both: the checks before this one.)
if ! command -v setpriv >/dev/null || [ "$(id -u)" != 0 ]; then
	skip "autoscale: another user's region and process" "needs root and setpriv (util-linux)"
else
	AJD_ROOT=$AJD
	AJD=$(mktemp -d /tmp/vg-as-owner.XXXXXX)
	chmod 755 "$AJD"        # uid 65534 may look in, not open root's 0600 files
	ajob oreg 70 20 VRAMGUARD_SHARED=oteam VRAMGUARD_SHARED_LIMITS=80M
	ajob oproc 90 20 NVIDIA_GPU_MEMORY_LIMITS=100M
	AOPID=$AJ
	(umask 077 && echo "$ATOK" >"$AJD/token") && chown 65534:65534 "$AJD/token"
	: >"$AD/r4.err"         # its own file, empty: wait_for must see this receiver's port, not the last one's
	setpriv --reuid=65534 --regid=65534 --clear-groups "$VG" autoscale --dir "$AJD" --listen 127.0.0.1:0 \
		--token-file "$AJD/token" --ceiling 1G --step 40M 2>"$AD/r4.err" &
	AR=$!
	APIDS+=("$AR")
	AURL=
	wait_for "$AD/r4.err" 'listening on http://127\.0\.0\.1:[0-9]+/' &&
		AURL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+' "$AD/r4.err" | head -1)
	oshow() { "$VG" limit show --dir "$AJD" 2>&1 | grep -E 'in force|quota' | sort; }
	obefore=$(oshow)
	c1=$(apost "$(apay firing '{"alertname":"VramguardRegionNearBudget","region":"oteam","gpu":"0"}')")
	c2=$(apost "$(apay firing "{\"alertname\":\"VramguardProcessNearQuota\",\"pid\":\"$AOPID\",\"region\":\"\",\"gpu\":\"0\"}")")
	if [ -n "$AURL" ] && [ "$c1$c2" = 200200 ] && [ "$(acount refused_unknown)" = 2 ] && [ "$(acount raised)" = 0 ] &&
		[ "$(grep -c '^vramguard: autoscale: refused_unknown:' "$AD/r4.err")" = 2 ] &&
		[ "$(grep -c '^vramguard: error: permission denied: .* belongs to root (uid 0, mode 0600)' "$AD/r4.err")" = 2 ] &&
		[ "$(oshow)" = "$obefore" ] && [ -n "$obefore" ] && grep -q '^denied' "$AD/oreg.out" &&
		! grep -q '^granted' "$AD/oreg.out" "$AD/oproc.out"; then
		ok "autoscale run as uid 65534: root's region and root's process are refused_unknown, each after limit set's own line 'permission denied: ... belongs to root', their limits unchanged, their jobs still refused"
	else bad "autoscale as another user" "codes $c1 $c2; $(cat "$AD/r4.err"); before: $obefore; after: $(oshow)"; fi
	kill "$AR"
	wait "$AR" 2>/dev/null
	touch "$AD/stop"
	acleanup
	rm -f "$AD/stop"
	rm -rf "$AJD"
	AJD=$AJD_ROOT
fi

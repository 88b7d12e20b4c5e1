# shellcheck shell=bash
# doc_size_about WHAT BYTES PATTERN: docs/install.md states WHAT's size as "about N KB" or "about N MB" on the line
# that matches PATTERN (grep -E), and N is BYTES rounded to two significant figures (KB and MB of 1000), so the page
# says what the build made. Sourced by tests/sections/wheel.sh and tests/containers/sections/55-deb.sh; needs ok and bad.
doc_size_about() {
	local what=$1 bytes=$2 line said want
	line=$(grep -E -m1 "$3" docs/install.md)
	said=$(sed -n 's/.*about \([0-9.]* [KM]B\).*/\1/p' <<<"$line")
	want=$(awk -v b="$bytes" -v u="${said##* }" 'BEGIN {
		d = (u == "MB") ? 1e6 : 1e3; v = b / d; e = 10 ^ (int(log(v) / log(10)) - 1); r = int(v / e + 0.5) * e
		printf "%s %s", r, u }')
	if [ -n "$said" ] && [ "$said" = "$want" ]; then
		ok "docs/install.md: $what is about $said ($bytes bytes)"
	else
		bad "docs/install.md states $what's size as the build made it" "page: '${said:-no \"about N KB|MB\"}', built: $bytes bytes ($want)"
	fi
}

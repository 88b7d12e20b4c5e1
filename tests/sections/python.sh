#!/usr/bin/env bash
# Section python: Python frames in call sites (docs/python.md): tests/integration/python/sites.py calls the double's
# cuMemAlloc_v2 through ctypes.CDLL (GIL released) and ctypes.PyDLL (GIL held), from known lines, from the main
# thread, a threading.Thread and a C thread, and the line-table decoder against each interpreter's own answers
# (lines.py, pylines.c), under every CPython this machine has (Debian's python3 and any other python3.N on PATH or
# under ~/.pyenv). Needs: make test-bins (pyfake, pylines, libvgcthread.so, vramguard).
source tests/lib/section.sh

PYD=$RD/python
# ASan: CPython does not free everything at exit (by design), and LeakSanitizer would report the interpreter's own
# allocations: the interpreter runs set detect_leaks=0 (tests/san/README.md).
PYSAN=
[ "$SAN" = asan ] && PYSAN="ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0"
rm -rf "$PYD" && mkdir -p "$PYD"
PYS=tests/integration/python/sites.py
PYARGS=("$PWD/$T/libcuda.so.1" "$PWD/$T/libvgcthread.so")
pys=()
dpy='' dd=''
declare -A pyseen=()
for py in /usr/bin/python3 /usr/bin/python3.[0-9]* $(compgen -c python3. | sort -u) "$HOME"/.pyenv/versions/*/bin/python3; do
	p=$(command -v "$py" 2>/dev/null) || continue
	[[ "$p" == *-config ]] && continue
	real=$(readlink -f "$p")
	[ -x "$real" ] && [ -z "${pyseen[$real]:-}" ] || continue
	pyseen[$real]=1
	pys+=("$p")
done
if [ ${#pys[@]} -eq 0 ]; then
	skip "python frames" "no python3 on this machine (apt-get install python3)"
fi
for py in "${pys[@]}"; do
	ver=$("$py" -c 'import sys, sysconfig; print("%d.%d%s" % (sys.version_info[:2] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "",)))' 2>/dev/null) || continue
	[ "$("$py" -c 'import platform; print(platform.python_implementation())')" = CPython ] || continue
	d=$PYD/$ver-$(tr -c 'a-z0-9\n' _ <<<"${py//\//_}")
	mkdir -p "$d"
	case $ver in
	3.9 | 3.1[0-3])
		prog "python $ver ($py): CDLL, PyDLL, a method, two lines, a thread, a C thread" $PRE $PYSAN \
			VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$d/r-%n.json" -- "$py" "$PYS" "${PYARGS[@]}"
		prog "  its report names each file, line and function" -- $CHK pysites "$d/r-1.json" "$PYS"
		[ -n "$dpy" ] || { dpy=$py; dd=$d; }
		"$py" tests/integration/python/lines.py >"$d/lines.txt"
		prog "  every instruction's line, decoded as this CPython maps it (its own code objects)" -- \
			"$T/pylines" <"$d/lines.txt"
		;;
	*)
		prog "python $ver ($py), a version without a layout: native frames only" $PRE $PYSAN VRAMGUARD_LOG=info \
			VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$d/r-%n.json" -- "$py" "$PYS" "${PYARGS[@]}"
		expect_err_lines "  one info line says so" "^vramguard: info: python frames: CPython ${ver%t} .*native frames only$" 1
		prog "  no site has Python frames" -- $CHK pysites "$d/r-1.json" "$PYS" off
		;;
	esac
done
py=${pys[0]:-}
if [ -n "$py" ]; then
	prog "VRAMGUARD_PYTHON=off: native frames only" $PRE $PYSAN VRAMGUARD_PYTHON=off VRAMGUARD_LOG=info \
		VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$PYD/off-%n.json" -- "$py" "$PYS" "${PYARGS[@]}"
	prog "  no site has Python frames" -- $CHK pysites "$PYD/off-1.json" "$PYS" off
	expect_err_lines "  and nothing said about Python" "python frames" 0
	d=$dd
	if [ -n "$dpy" ]; then
		cli "vramguard report shows the Python frames first: file:line in function" 0 \
			'^      /.*/tests/integration/python/sites\.py:[0-9]+ in (Trainer\.)?step$' -- $VG report "$d/r-1.json"
		if grep -Eq '^      /.*/sites\.py:[0-9]+ in main$' <<<"$CO" && grep -Eq '^      /.*/sites\.py:[0-9]+ in <module>$' <<<"$CO"; then
			ok "  their callers follow, innermost first"
		else bad "  main and <module> lines expected" "$(grep -m3 'sites\.py' <<<"$CO")"; fi
		prog "the same program again, for a diff" $PRE $PYSAN VRAMGUARD_REPORT_FORMAT=json \
			"VRAMGUARD_REPORT=$PYD/again-%n.json" -- "$dpy" "$PYS" "${PYARGS[@]}"
		cli "vramguard diff of the two runs: every site matched by both stacks" 0 \
			'^  no change in live allocations$' -- $VG diff "$d/r-1.json" "$PYD/again-1.json"
	fi
fi

# An interpreter that is not what the library expects (tests/integration/pyfake.c builds one by hand): never a crash,
# native frames always, and one info line for each kind of refusal.
for m in "good|" "notinit|" "finalizing|" \
	"badstr|a code object of CPython 3\.11 does not look as expected; Python frames are off from now on" \
	"debug|CPython 3\.11's object layout is not the standard one \(a debug build\?\)" \
	"v313ft|CPython 3\.13 is a free-threaded build, not supported yet" \
	"v313bad|CPython 3\.13's published debug offsets differ from the layout vramguard knows" \
	"v38|CPython 3\.8 has no frame layout in this vramguard"; do
	mode=${m%%|*} msg=${m#*|}
	rm -f "$PYD/fake-$mode.json"
	prog "a fake CPython ($mode)" $PRE VRAMGUARD_LOG=info VRAMGUARD_REPORT_FORMAT=json \
		"VRAMGUARD_REPORT=$PYD/fake-$mode.json" -- "$T/pyfake" "$mode"
	if [ -n "$msg" ]; then
		expect_err_lines "  one info line: $mode" "^vramguard: info: python frames: $msg.*native frames only\)?$" 1
	else
		expect_err_lines "  nothing said about Python" "python frames" 0
	fi
	prog "  its sites" -- $CHK pyfake "$PYD/fake-$mode.json" "$([ "$mode" = good ] && echo good || echo none)"
done
done_testing

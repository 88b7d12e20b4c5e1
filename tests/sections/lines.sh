#!/usr/bin/env bash
# Section lines: source lines for native frames (cli/lines.c): the report's `modules` against readelf; `vramguard
# report --lines` and `diff --lines` on tests/integration/srclines.c (built with -g): the lines of known calls, found
# in the source by their markers, an inlined caller; a stripped copy whose debug file is found through --debug-dir by
# build ID and by name; a build-ID mismatch; a library without a build ID; libdw missing; a report from before
# revision 3; hostile reports (module paths that are FIFOs, devices, directories, /proc files, huge files; a
# module whose DWARF sends libdw to a FIFO by itself; a libdw that crashes). Needs: make test-bins (srclines,
# libvgnoid.so, libvgaltlink.so, libvgdwbus.so, vramguard), binutils (objcopy, readelf, nm).
source tests/lib/section.sh

SL=$T/srclines
SLD=$RD/lines
rm -rf "$SLD" && mkdir -p "$SLD/dbg" "$SLD/byname"
src=tests/integration/srclines.c
line_of() { grep -n -- "line: $1 \*/" "$src" | cut -d: -f1; } # MARKER: the line of srclines.c that carries it
call_line() { grep -n -- "$1" "$src" | tail -n 1 | cut -d: -f1; } # TEXT: the last line of srclines.c with it
L_INL=$(line_of inlined_alloc) L_KEEP=$(line_of keeps_inlined) L_PLAIN=$(line_of plain_alloc)
L_MAIN_KEEP=$(call_line 'IT_RC(keeps_inlined()') L_MAIN_PLAIN=$(call_line 'IT_RC(plain_alloc()')
S='tests/integration/srclines\.c'

prog "srclines: allocations at known source lines, JSON report" $PRE VRAMGUARD_REPORT_FORMAT=json \
	"VRAMGUARD_REPORT=$SLD/r.json" -- $SL
prog "  modules: each once, bases agree with the frames, build IDs as readelf -n reads them" -- $CHK modules "$SLD/r.json"
if grep -q '"build_id": "[0-9a-f]\{40\}"' "$SLD/r.json" && grep -q '"path": "[^"]*/libvgnoid\.so", "build_id": ""' \
	"$SLD/r.json"; then ok "  a 40-hex build ID for the program, \"\" for the library linked without one"
else bad "  build IDs: 40 hex digits for srclines, \"\" for libvgnoid.so" "$(grep -A4 '"modules"' "$SLD/r.json")"; fi

cli "report --lines: the plain call names its line" 0 "^      plain_alloc\+0x[0-9a-f]+  $S:$L_PLAIN +/" \
	-- $VG report --lines "$SLD/r.json"
lines_out=$CO
if grep -Eq "^      inlined_alloc  $S:$L_INL +/[^ ]*/srclines \(\+0x[0-9a-f]+\)\$" <<<"$lines_out" &&
	grep -Eq "^        \(inlined into keeps_inlined\+0x[0-9a-f]+ at $S:$L_KEEP\)\$" <<<"$lines_out"; then
	ok "  the inlined function at its line, then 'inlined into' its caller at the call's line"
else bad "  inlined_alloc at line $L_INL, inlined into keeps_inlined at $L_KEEP" "$(grep -A2 'site 1)' <<<"$lines_out")"; fi
if grep -Eq "^      main\+0x[0-9a-f]+  $S:$L_MAIN_KEEP " <<<"$lines_out" &&
	grep -Eq "^      main\+0x[0-9a-f]+  $S:$L_MAIN_PLAIN " <<<"$lines_out"; then
	ok "  the callers in main at lines $L_MAIN_KEEP and $L_MAIN_PLAIN"
else bad "  main's calls at lines $L_MAIN_KEEP and $L_MAIN_PLAIN" "$(grep 'main+' <<<"$lines_out")"; fi
if grep -Eq '^      vgnoid_alloc\+0x[0-9a-f]+ +/[^ ]*/libvgnoid\.so \(\+0x[0-9a-f]+\)$' <<<"$lines_out"; then
	ok "  the library without a build ID: its frame without a line"
else bad "  vgnoid_alloc's frame without a source line" "$(grep vgnoid <<<"$lines_out")"; fi
expect_err_lines "  one note names it: no build ID, no lines" \
	"^vramguard: note: the report records no build ID for 1 module \(libvgnoid\.so\): " 1
cli "report without --lines: as before" 0 '^      plain_alloc\+0x[0-9a-f]+ +/' -- $VG report "$SLD/r.json"
plain_out=$CO
if ! grep -q 'srclines\.c:' <<<"$plain_out" && [ ! -s "$ERR" ]; then ok "  no source lines, nothing on stderr"
else bad "  no lines and a quiet stderr expected" "$(grep 'srclines\.c' <<<"$plain_out"; head -2 "$ERR")"; fi
cli "libdw missing (__VRAMGUARD_LIBDW names no library): the report all the same" 0 'plain_alloc' \
	__VRAMGUARD_LIBDW=libdw-not-here.so.1 -- $VG report --lines "$SLD/r.json"
if [ "$CO" = "$plain_out" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
	grep -q "^vramguard: note: --lines needs elfutils' libdw ('libdw-not-here\.so\.1'), which cannot be loaded here: printing without source lines (install it: apt-get install libdw1" "$ERR"; then
	ok "  one line says what to install; the report is the one without --lines"
else bad "  one note line and the plain report expected" "$(head -3 "$ERR"; diff <(echo "$CO") <(echo "$plain_out") | head -4)"; fi
cli "diff --lines: the frames of a site with their lines" 0 "^      plain_alloc\+0x[0-9a-f]+  $S:$L_PLAIN +/" \
	-- $VG diff --lines --all "$SLD/r.json" "$SLD/r.json"

# A stripped copy: the same build ID, its DWARF in a separate file found through --debug-dir.
cp "$SL" "$SLD/srclines-stripped"
objcopy --only-keep-debug "$SLD/srclines-stripped" "$SLD/srclines.debug"
strip --strip-debug "$SLD/srclines-stripped"
bid=$(readelf -n "$SLD/srclines-stripped" | sed -n 's/^ *Build ID: //p')
mkdir -p "$SLD/dbg/.build-id/${bid:0:2}"
cp "$SLD/srclines.debug" "$SLD/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
cp "$SLD/srclines.debug" "$SLD/byname/srclines-stripped.debug"
prog "a stripped copy of srclines, JSON report" $PRE VRAMGUARD_REPORT_FORMAT=json "VRAMGUARD_REPORT=$SLD/s.json" \
	-- "$SLD/srclines-stripped"
cli "  report --lines without its debug file: no lines" 0 '^      plain_alloc\+0x[0-9a-f]+ +/' \
	-- $VG report --lines "$SLD/s.json"
if ! grep -q 'srclines\.c:' <<<"$CO" &&
	grep -q '^vramguard: note: no debug information found for 1 module (srclines-stripped): ' "$ERR"; then
	ok "  one note: no debug information for srclines-stripped (install it, or --debug-dir)"
else bad "  no lines, one note naming srclines-stripped" "$(grep 'srclines\.c' <<<"$CO"; head -3 "$ERR")"; fi
for how in "dbg|by build ID (DIR/.build-id/xx/rest.debug)" "byname|by name (DIR/NAME.debug)"; do
	cli "  --debug-dir: the debug file found ${how#*|}" 0 "^      plain_alloc\+0x[0-9a-f]+  $S:$L_PLAIN +/" \
		-- $VG report --debug-dir "$SLD/${how%%|*}" "$SLD/s.json"
	if grep -Eq "^        \(inlined into keeps_inlined\+0x[0-9a-f]+ at $S:$L_KEEP\)\$" <<<"$CO" &&
		! grep -q 'srclines-stripped' "$ERR"; then ok "    the inlined caller too, and no note about it"
	else bad "    inlined caller and a quiet stderr expected" "$(grep -A1 'inlined_alloc' <<<"$CO"; head -2 "$ERR")"; fi
done

# The report's build ID is not the file's: one warning per module, no lines (wrong lines are worse than none).
sed "s/\"build_id\": \"$bid\"/\"build_id\": \"$(printf '0%.0s' {1..40})\"/" "$SLD/s.json" >"$SLD/mismatch.json"
cli "a build-ID mismatch: the report all the same" 0 'plain_alloc' \
	-- $VG report --debug-dir "$SLD/dbg" "$SLD/mismatch.json"
if ! grep -q 'srclines\.c:' <<<"$CO"; then ok "  no source lines for the module"
else bad "  no srclines.c lines expected" "$(grep 'srclines\.c:' <<<"$CO")"; fi
expect_err_lines "  one warning for it, with both build IDs" \
	"^vramguard: warning: no source lines for '[^']*/srclines-stripped': the report's build ID is 0{40}, but '[^']*/srclines-stripped' has $bid \(another build; pass --debug-dir " 1

# A report from before revision 3 has no build IDs: nothing to resolve, said once.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["modules"]; r["schema_revision"]=2; json.dump(r, open(sys.argv[2], "w"))' \
	"$SLD/r.json" "$SLD/rev2.json"
cli "a revision-2 report (no modules) with --lines" 0 'plain_alloc' -- $VG report --lines "$SLD/rev2.json"
if ! grep -q 'srclines\.c:' <<<"$CO" && [ "$(wc -l <"$ERR")" -eq 1 ] &&
	grep -q "^vramguard: note: '[^']*/rev2\.json' lists no modules (report revision 2; build IDs came with revision 3)" "$ERR"
then ok "  one note, no lines"; else bad "  one note and no lines expected" "$(head -3 "$ERR")"; fi

# Hostile reports: a report is JSON anyone can write, read by root as readily as by its author, and its modules name
# any path. Each below must end (a `timeout` bounds a hang: on the code before issue 25 these waited forever), with
# exit status 0, the frames printed without lines and one line saying why.
HD=$SLD/hostile
mkdir -p "$HD/dir" "$HD/fifodbg"
mkfifo "$HD/fifo" "$HD/fifodbg/srclines-stripped.debug" "$HD/vgaltlink.fifo"
ln -s fifo "$HD/link"
slpath=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["modules"][0]["path"])' "$SLD/r.json")
# The report r.json with module srclines (and its frames) renamed PATH, its build ID kept (or ID), each frame's
# offset OFFSET when given: hostile_report PATH OUT [ID OFFSET]
hostile_report() {
	python3 - "$SLD/r.json" "$slpath" "$@" <<'PY'
import json, sys
src, old, new, out = sys.argv[1:5]
r = json.load(open(src))
for m in r["modules"]:
    if m["path"] == old:
        m["path"] = new
        m["build_id"] = sys.argv[5] if len(sys.argv) > 5 else m["build_id"]
for s in r["sites"]:
    for f in s["frames"]:
        if f["module"] == old:
            f["module"] = new
            f["module_offset"] = sys.argv[6] if len(sys.argv) > 6 else f["module_offset"]
json.dump(r, open(out, "w"))
PY
}
QLEN='( \([0-9]+ bytes\))?' # what a message adds to a path it quotes cut (vg_cli_q)
HUGE=$HD/sparse
# removed at the end: a 1 TiB file (sparse) left in the build tree is read whole by whatever copies the tree (a
# container build's context ran out of space on it)
at_exit 'rm -f "$HUGE"'
truncate -s 1T "$HUGE" 2>/dev/null || HUGE=
# name|module path|what the one line says of it
hostile_cases=("a FIFO|$HD/fifo|is a FIFO" "a symbolic link to a FIFO|$HD/link|is a FIFO"
	"a character device (/dev/zero)|/dev/zero|is a character device" "a directory|$HD/dir|is a directory"
	"a file on /proc|/proc/version|is on /proc \(a kernel file system\)")
if [ -n "$HUGE" ]; then hostile_cases+=("a sparse file of 1 TiB|$HUGE|is larger than 32 GiB")
else skip "report --lines: a module path that is a sparse file of 1 TiB" "truncate -s 1T failed in $HD"; fi
for c in "${hostile_cases[@]}"; do
	IFS='|' read -r what path why <<<"$c"
	hostile_report "$path" "$HD/h.json"
	base=$(basename "$path")
	cli "report --lines, a module path that is $what: ends, exit 0, its frames printed" 0 \
		"^      plain_alloc\+0x[0-9a-f]+ +[^ ]*/$base \(\+0x" -- timeout 20 $VG report --lines "$HD/h.json"
	if ! grep -q 'srclines\.c:' <<<"$CO"; then ok "  its frames without source lines"
	else bad "  its frames without source lines" "$(grep 'srclines\.c:' <<<"$CO" | head -2)"; fi
	expect_err_lines "  one line says why: '$path' ${why//\\/}" \
		"^vramguard: warning: --lines reads only regular files: 1 file refused \('[^']*/$base'$QLEN $why\): its module's frames get no source lines\$" 1
	n=$(grep -c -- "$base" "$ERR")
	if [ "$n" -eq 1 ]; then ok "  no other line about it"; else bad "  no other line about it" "$(head -4 "$ERR")"; fi
done

# The same report through diff --lines, and the page and exports, which do not read modules for lines.
hostile_report "$HD/fifo" "$HD/fifo.json"
cli "diff --lines, a module path that is a FIFO: ends, exit 0" 0 "^      plain_alloc\+0x[0-9a-f]+ +[^ ]*/fifo \(\+0x" \
	-- timeout 20 $VG diff --lines --all "$HD/fifo.json" "$HD/fifo.json"
expect_err_lines "  one line says why, for both reports" \
	"^vramguard: warning: --lines reads only regular files: 1 file refused \('[^']*/fifo'$QLEN is a FIFO\)" 1
cli "report --html --lines, the same: ends, exit 0" 0 '' \
	-- timeout 20 $VG report --html --lines -o "$HD/fifo.html" "$HD/fifo.json"
if grep -q 'plain_alloc' "$HD/fifo.html"; then ok "  the page names the frames"
else bad "  the page names the frames" "$(head -c 200 "$HD/fifo.html")"; fi
cli "diff --html --lines, the same: ends, exit 0" 0 '' \
	-- timeout 20 $VG diff --html --lines -o "$HD/fifo-diff.html" "$HD/fifo.json" "$HD/fifo.json"
cli "report --format folded --lines, the same: ends, exit 0" 0 'plain_alloc' \
	-- timeout 20 $VG report --format folded --lines "$HD/fifo.json"

# A candidate of --debug-dir that is a FIFO: the stripped copy's NAME.debug.
cli "report --debug-dir DIR, where DIR/NAME.debug is a FIFO: ends, exit 0" 0 '^      plain_alloc\+0x[0-9a-f]+ +/' \
	-- timeout 20 $VG report --debug-dir "$HD/fifodbg" "$SLD/s.json"
expect_err_lines "  one line says why" \
	"^vramguard: warning: --lines reads only regular files: 1 file refused \('[^']*/srclines-stripped\.debug'$QLEN is a FIFO\): its module's frames get no source lines\$" 1

# A regular ELF file whose DWARF sends libdw by itself to a FIFO (tests/integration/altlink/lib.S): no open of ours
# to refuse; the deadline of the whole resolution ends it, and the frames left get no lines.
cp "$T/libvgaltlink.so" "$HD/libvgaltlink.so"
altid=$(readelf -n "$HD/libvgaltlink.so" | sed -n 's/^ *Build ID: //p')
altoff=$(nm "$HD/libvgaltlink.so" | sed -n 's/^0*\([0-9a-f]*\) T vgaltlink_func$/\1/p')
hostile_report "$HD/libvgaltlink.so" "$HD/alt.json" "$altid" "$(printf '0x%x' $((0x$altoff + 2)))"
cli "report --lines --lines-timeout 1, a module whose DWARF names a FIFO as its alt file: ends, exit 0" 0 \
	'^      plain_alloc\+0x[0-9a-f]+ +[^ ]*/libvgaltlink\.so \(\+0x' \
	-- timeout 20 $VG report --lines --lines-timeout 1 "$HD/alt.json"
expect_err_lines "  one line: stopped at the deadline, at that module, with the frames left" \
	"^vramguard: warning: --lines stopped after 1 s \(--lines-timeout SECONDS allows more\), at the frames of '[^']*/libvgaltlink\.so'$QLEN: [0-9]+ frames left without source lines\$" 1
rm -f "$HD/vgaltlink.fifo" && touch "$HD/vgaltlink.fifo"
cli "  the same with that alt file an empty file: its line, no deadline" 0 \
	'^      plain_alloc\+0x[0-9a-f]+  altlink\.c:1[01] +[^ ]*/libvgaltlink\.so \(\+0x' \
	-- timeout 20 $VG report --lines "$HD/alt.json"
expect_quiet_but() { # NAME REGEX: stderr holds nothing but lines matching REGEX
	if ! grep -Ev -- "$2" "$ERR" | grep -q .; then ok "$1"; else bad "$1" "stderr: $(head -3 "$ERR")"; fi
}
expect_quiet_but "  no line about lines stopped or refused" '^vramguard: note: the report records no build ID '
# A crash in libdw (SIGBUS, as on a file its owner truncates under libdw's mapping) ends the resolver, not the command.
cli "report --lines with a libdw that dies of SIGBUS (tests/integration/dwbus): the report all the same, exit 0" 0 \
	"^      plain_alloc\+0x[0-9a-f]+ +/[^ ]*/srclines \(\+0x" "__VRAMGUARD_LIBDW=$PWD/$T/libvgdwbus.so" \
	-- timeout 20 $VG report --lines "$SLD/r.json"
expect_err_lines "  one line: the resolver was killed by signal 7, the frames left" \
	"^vramguard: warning: --lines stopped: its resolver was killed by signal 7 \(Bus error\), at the frames of '[^']*/srclines'$QLEN: [0-9]+ frames left without source lines\$" 1
cli "--lines-timeout 0: a usage error" 2 '' -- $VG report --lines-timeout 0 "$SLD/r.json"
expect_err "  the line names the option and the value" "^vramguard: error: report: invalid --lines-timeout '0' \(expected seconds"

# libdw is the command's alone, loaded on demand: neither the library nor the command needs it to start.
for f in "$LIB" "$VG"; do
	if objdump -p "$f" | grep -E 'NEEDED +lib(dw|elf)' >/dev/null; then
		bad "$(basename "$f") must not need libdw or libelf" "$(objdump -p "$f" | grep NEEDED)"
	else ok "$(basename "$f") does not need libdw or libelf (DT_NEEDED)"; fi
done
done_testing

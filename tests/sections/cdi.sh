#!/usr/bin/env bash
# Section cdi: `vramguard cdi`: the CDI spec's content read back with PyYAML (kind, version, devices, the edits), the
# quoting of odd paths, bad input refused with nothing written, --output's atomic file, an installed command's
# library. Running it under a container engine is tests/containers/sections/20-cdi.sh's part.
# Needs: make test-bins (vramguard), PyYAML.
source tests/lib/section.sh

CDD=$(mktemp -d /tmp/vg-cdi.XXXXXX)
# PyYAML: the first python3 on PATH if it has it, else Debian's (python3-yaml, scripts/setup.sh).
CDPY=python3
python3 -c 'import yaml' 2>/dev/null || CDPY=/usr/bin/python3
# The spec as lines a test can compare: what a CDI runtime reads from it, nothing of its layout.
cdi_read() { # FILE|-
	"$CDPY" -c '
import sys, yaml
s = yaml.safe_load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1]))
print("cdiVersion", s["cdiVersion"]); print("kind", s["kind"])
for d in s["devices"]:
    print("device", d["name"], " ".join(d["containerEdits"]["env"]))
e = s["containerEdits"]
print("env", " ".join(e["env"]))
for m in e["mounts"]:
    print("mount", m["hostPath"], m["containerPath"], ",".join(m["options"]))
print("keys", " ".join(sorted(s)))
' "$1"
}
cdi_same() { # NAME EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -6)"; fi
}

LIBREAL=$(realpath "$LIB")
IN=/usr/lib/vramguard/libvramguard.so
cli "cdi: two sizes and a per-GPU list on standard output" 0 '^cdiVersion: "0\.5\.0"$' -- \
	$VG cdi --limit 4G --limit 8192 --limit 0:4G,1:2G --limit 50%
cdi_same "  PyYAML reads it: kind, one device per SPEC (named after it), the library mounted read-only" \
	"cdiVersion 0.5.0
kind vramguard.dev/quota
device 4G NVIDIA_GPU_MEMORY_LIMITS=4G
device 8192 NVIDIA_GPU_MEMORY_LIMITS=8192
device 0:4G_1:2G NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G
device 50pct NVIDIA_GPU_MEMORY_LIMITS=50%
env LD_PRELOAD=$IN
mount $LIBREAL $IN ro,nosuid,nodev,bind
keys cdiVersion containerEdits devices kind" "$(cdi_read - <<<"$CO" 2>&1)"
if [ -s "$ERR" ]; then bad "  nothing on stderr" "$(head -3 "$ERR")"; else ok "  nothing on stderr"; fi

cli "cdi --shared team: every device also joins the region" 0 'VRAMGUARD_SHARED=team' -- \
	$VG cdi --limit 4G --shared team --lib "$LIB"
cdi_same "  VRAMGUARD_SHARED among the shared edits, after LD_PRELOAD" "env LD_PRELOAD=$IN VRAMGUARD_SHARED=team" \
	"$(cdi_read - <<<"$CO" 2>&1 | grep '^env ')"

if vg_install "$W/inst"; then
	cli "cdi from an installed, relocated command: the library in its ../lib" 0 '^kind: ' -- \
		"$W/inst/opt/vg/bin/vramguard" cdi --limit 4G
	cdi_same "  is the hostPath" "mount $W/inst/opt/vg/lib/libvramguard.so $IN ro,nosuid,nodev,bind" \
		"$(cdi_read - <<<"$CO" 2>&1 | grep '^mount ')"
else bad "cdi from an installed command: make install DESTDIR=$W/inst failed"; fi

# A library path with every character YAML treats specially: quotes, backslash, '#', ': ', a tab, '&*!|>'.
ODD="$CDD/we\"ird \\ #dir: &*!|> $(printf '\t')x"
mkdir -p "$ODD" && cp "$LIB" "$ODD/libvramguard.so"
cli "cdi --lib: a path with quotes, backslash, '#', ': ' and a tab" 0 '^kind: ' -- \
	$VG cdi --limit 4G --lib "$ODD/libvramguard.so"
cdi_same "  reads back as the same path" "mount $ODD/libvramguard.so $IN ro,nosuid,nodev,bind" \
	"$(cdi_read - <<<"$CO" 2>&1 | grep '^mount ')"

OUTD=$CDD/cdi
cli "cdi --output DIR: nothing on standard output" 0 '^$' -- $VG cdi --limit 4G --limit 8G --output "$OUTD"
if [ "$(ls -A "$OUTD")" = vramguard.dev-quota.yaml ] && [ "$(stat -c %a "$OUTD/vramguard.dev-quota.yaml")" = 644 ]; then
	ok "  DIR (made) holds vramguard.dev-quota.yaml, mode 0644, and no temporary file"
else bad "  DIR's content" "$(ls -lA "$OUTD")"; fi
cdi_same "  the file reads back with both devices" "device 4G NVIDIA_GPU_MEMORY_LIMITS=4G
device 8G NVIDIA_GPU_MEMORY_LIMITS=8G" "$(cdi_read "$OUTD/vramguard.dev-quota.yaml" 2>&1 | grep '^device ')"
before=$(md5sum <"$OUTD/vramguard.dev-quota.yaml")

cli "cdi: a bad SPEC among good ones" 2 '^$' -- $VG cdi --limit 4G --limit 4XB --output "$OUTD"
expect_err_lines "  one line, the library's message" \
	"^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB': unknown unit 'XB' \(expected e\.g\. " 1
if [ "$(md5sum <"$OUTD/vramguard.dev-quota.yaml")" = "$before" ] && [ "$(ls -A "$OUTD" | wc -l)" = 1 ]; then
	ok "  the spec written before is untouched, no temporary file"
else bad "  the spec changed or a file was left" "$(ls -lA "$OUTD")"; fi
cli "cdi: a bad SPEC writes no directory either" 2 '^$' -- $VG cdi --limit 0:4G,0:4G --output "$CDD/new"
if [ -e "$CDD/new" ]; then bad "  --output DIR should not be made"; else ok "  --output DIR not made"; fi
cli "cdi: a valid SPEC that cannot name a device (a space)" 2 '^$' -- $VG cdi --limit ' 4G'
expect_err_lines "  one line quoting it" "^vramguard: error: cdi: cannot name a CDI device after --limit ' 4G' " 1
cli "cdi: two spellings of one device" 2 '^$' -- $VG cdi --limit 0:4G --limit 0=4G
expect_err_lines "  one line naming both" \
	"^vramguard: error: cdi: --limit '0:4G' and --limit '0=4G' make the same device '0:4G'\$" 1
cli "cdi: a bad --shared" 2 '^$' -- $VG cdi --limit 4G --shared 'a b'
expect_err_lines "  one line" "^vramguard: error: cdi: invalid --shared 'a b': " 1
cli "cdi: a relative --lib" 2 '^$' -- $VG cdi --limit 4G --lib build/libvramguard.so
expect_err_lines "  one line" "^vramguard: error: cdi: --lib 'build/libvramguard.so' is not an absolute path" 1
cli "cdi: a missing --lib" 1 '^$' -- $VG cdi --limit 4G --lib /nonexistent/libvramguard.so
expect_err_lines "  one line" "^vramguard: error: cdi: --lib '/nonexistent/libvramguard.so': No such file" 1
cli "cdi: no --limit is a usage error" 2 '^$' -- $VG cdi --output "$CDD/none"
expect_err "  saying so" "^vramguard: error: cdi: no --limit given"
# Unwritable outputs: a path under a file (mkdir fails whoever runs it), and /proc (no files can be made there).
: >"$CDD/file"
cli "cdi --output under a file" 1 '^$' -- $VG cdi --limit 4G --output "$CDD/file/cdi"
expect_err_lines "  one line" "^vramguard: error: cdi: cannot make directory '$CDD/file/cdi': Not a directory\$" 1
cli "cdi --output /proc (unwritable)" 1 '^$' -- $VG cdi --limit 4G --output /proc
if [ "$(wc -l <"$ERR")" = 1 ] && grep -q "^vramguard: error: cdi: cannot write in '/proc': " "$ERR"; then
	ok "  one line"; else bad "  one line" "$(head -3 "$ERR")"; fi
cli "help cdi" 0 '--limit SPEC' -- $VG help cdi
cli "--help lists cdi" 0 '^  cdi +a CDI spec' -- $VG --help
# shellcheck disable=SC2154 # nlongbad: long_case's count of failures, tests/lib/section.sh's
ncdilong=$nlongbad
long_case "cdi: --limit 'x+\.\.\.x+' \(5000 bytes\) is too long" -- $VG cdi --limit "$LONG"
long_case "invalid NVIDIA_GPU_MEMORY_LIMITS 'x+\.\.\.x+' \(200 bytes\)" -- $VG cdi --limit "${LONG:0:200}"
long_case "cdi: --lib '/x+\.\.\.x+' \(5001 bytes\) is not|cdi: --lib '/x+\.\.\.x+' \(5001 bytes\): File name too long" \
	-- $VG cdi --limit 4G --lib "/$LONG"
[ "$nlongbad" -eq "$ncdilong" ] && ok "cdi: a 5 000-character SPEC or --lib: stderr lines bounded, naming what is wrong"
rm -rf "$CDD"
done_testing

#!/usr/bin/env bash
# `make deb`: build/vramguard_VERSION_amd64.deb with dpkg-deb from the library and the command already built.
# Layout: the command in /usr/bin, the library in /usr/lib/x86_64-linux-gnu/vramguard/ (a private directory, not on
# the loader's path: `vramguard run` finds it from /usr/bin, cli/cli.c vg_cli_find_library), the man page gzipped,
# README, docs and examples in /usr/share/doc/vramguard with a DEP-5 copyright and changelog.Debian.gz. Depends
# from dpkg-shlibdeps (libc6 (>= 2.17): the symbol versions config/glibc_compat.h pins); libdw1 suggested, which
# the command dlopens only for `--lines`. Both binaries are stripped (the package carries no debug symbols).
# lintian's overrides, each with its reason: scripts/deb/lintian-overrides. lintian -I still names, as information,
# the build's hardening flags (no _FORTIFY_SOURCE, the command without -z now): the package ships the binaries the
# Makefile builds, unchanged.
# Usage: scripts/deb.sh BUILD_DIR (the Makefile's $(BUILD)); prints the package's path.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
arch=amd64
multiarch=x86_64-linux-gnu
[ "$(dpkg --print-architecture 2>/dev/null)" = "$arch" ] || { echo "deb: needs an $arch Debian host" >&2; exit 1; }
version=$(sed -n 's/^#define VG_VERSION "\(.*\)".*/\1/p' config/config.h)
[ -n "$version" ] || { echo "deb: no VG_VERSION in config/config.h" >&2; exit 1; }
for c in dpkg-deb dpkg-shlibdeps strip; do
	command -v "$c" >/dev/null || { echo "deb: $c not found: install dpkg-dev and binutils (bash scripts/setup.sh)" >&2; exit 1; }
done
debver=$version-1
pkg=vramguard
root=$B/deb/root
out=$B/${pkg}_${debver}_${arch}.deb
rm -rf "$B/deb" "$B/${pkg}_"*.deb
doc=$root/usr/share/doc/$pkg
libdir=$root/usr/lib/$multiarch/$pkg
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$libdir" "$root/usr/share/man/man1" "$doc" \
	"$root/usr/share/lintian/overrides"
install -m 0755 "$B/vramguard" "$root/usr/bin/vramguard"
install -m 0644 "$B/libvramguard.so" "$libdir/libvramguard.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/vramguard" \
	"$libdir/libvramguard.so"
gzip -9n <docs/vramguard.1 >"$root/usr/share/man/man1/vramguard.1.gz"
chmod 0644 "$root/usr/share/man/man1/vramguard.1.gz"

# Docs: the README, the user documentation (Markdown), the examples (as documents: no file executable).
install -m 0644 README.md "$doc/README.md"
install -d -m 0755 "$doc/docs"
install -m 0644 docs/*.md "$doc/docs/"
git ls-files -z examples 2>/dev/null | grep -qz . && files=$(git ls-files examples) || files=$(find examples -type f)
while IFS= read -r f; do
	[ -f "$f" ] || continue
	install -D -m 0644 "$f" "$doc/$f"
done <<<"$files"
# Debian's rule for /usr/share/doc: text over 4 kB is compressed (not the examples: they are used as they are).
find "$doc" -maxdepth 2 -name '*.md' -size +4k ! -path "$doc/examples/*" -exec gzip -9n {} +

date=$(git log -1 --format=%aD 2>/dev/null || date -R)
maint="vramguard maintainers <maintainers@users.noreply.a-seed-62169b54.example>"
gzip -9n >"$doc/changelog.Debian.gz" <<C
$pkg ($debver) unstable; urgency=medium

  * Package of vramguard $version built from its own tree with \`make deb\`.

 -- $maint  $date
C
sed "s/@YEAR@/$(date -d "$date" +%Y)/" scripts/deb/copyright >"$doc/copyright"
install -m 0644 scripts/deb/lintian-overrides "$root/usr/share/lintian/overrides/$pkg"
chmod 0644 "$doc/changelog.Debian.gz" "$doc/copyright"

# Depends: what the two binaries need (dpkg-shlibdeps reads a debian/control; it gets one of its own).
shl=$B/deb/shlibs
mkdir -p "$shl/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: %s\n' "$pkg" "$pkg" "$arch" >"$shl/debian/control"
depends=$(cd "$shl" && dpkg-shlibdeps -O "$OLDPWD/$root/usr/bin/vramguard" \
	"$OLDPWD/$libdir/libvramguard.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<C
Package: $pkg
Version: $debver
Architecture: $arch
Maintainer: $maint
Installed-Size: $size
Depends: $depends
Suggests: libdw1
Section: utils
Priority: optional
Description: VRAM quotas and leak reports for CUDA programs
 vramguard is a library preloaded into a CUDA program (LD_PRELOAD) that
 interposes the CUDA driver API: it enforces a per-process or shared VRAM
 quota, tracks every allocation with its call stack and writes leak and
 usage reports (text, JSON, HTML).
 .
 The vramguard command runs a program under the library with a limit
 (vramguard run --limit 4G -- PROGRAM), checks the setup, reads and compares
 reports, shows the live usage of shared regions and changes their limits.
C
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "$out"

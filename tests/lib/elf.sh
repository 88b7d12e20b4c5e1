# shellcheck shell=bash
# Checks on what an ELF file asks of the system that runs it, for the sections that ship one: tests/sections/docs.sh
# (the library and the command as built) and tests/sections/wheel.sh (the same two inside the wheel, whose tag
# manylinux2014 promises glibc 2.17 and only the libraries of PEP 599's list). Sourced after tests/lib/section.sh.

# WHAT FILE: no symbol version newer than GLIBC_2.17 (config/glibc_compat.h, cli/start.c; run on glibc 2.31 by
# tests/containers/sections/30-glibc.sh), else the loader refuses the file on glibc 2.28 / 2.31 images.
glibc_at_most() {
	local vs newest over
	# "VERSION SYMBOL" for every dynamic symbol with a GLIBC_ version, referenced or defined
	vs=$(objdump -T "$2" | awk 'match($0, /GLIBC_[0-9.]+/) { print substr($0, RSTART, RLENGTH), $NF }')
	newest=$(cut -d' ' -f1 <<<"$vs" | sort -uV | tail -n 1)
	over=$(while read -r v sym; do
		[ "$(printf '%s\nGLIBC_2.17\n' "$v" | sort -V | tail -n 1)" = GLIBC_2.17 ] || echo "$sym@$v"
	done <<<"$vs")
	if [ -n "$vs" ] && [ -z "$over" ]; then
		ok "$1: GLIBC_2.17 at most, $(wc -l <<<"$vs") symbols (newest $newest)"
	else
		bad "$1 needs a glibc newer than 2.17: it will not start on glibc 2.28 / 2.31 images" \
			"${over:-no GLIBC_ symbol versions found in $2}"
	fi
}

# The libraries a manylinux2014 file may need (PEP 599), and the x86-64 loader.
VG_MANYLINUX2014_LIBS="libgcc_s.so.1 libstdc++.so.6 libm.so.6 libdl.so.2 librt.so.1 libc.so.6 libnsl.so.1 \
libutil.so.1 libpthread.so.0 libresolv.so.2 libX11.so.6 libXext.so.6 libXrender.so.1 libICE.so.6 libSM.so.6 \
libGL.so.1 libgobject-2.0.so.0 libgthread-2.0.so.0 libglib-2.0.so.0 ld-linux-x86-64.so.2"

# WHAT FILE: every DT_NEEDED entry is one of VG_MANYLINUX2014_LIBS.
needed_manylinux2014() {
	local needed lib outside=
	needed=$(objdump -p "$2" | awk '$1 == "NEEDED" { print $2 }')
	for lib in $needed; do
		case " $VG_MANYLINUX2014_LIBS " in *" $lib "*) ;; *) outside+=" $lib" ;; esac
	done
	if [ -n "$needed" ] && [ -z "$outside" ]; then
		ok "$1: needs only manylinux2014 libraries ($(echo $needed))"
	else
		bad "$1 needs a library outside manylinux2014's list (PEP 599)" "${outside:-no NEEDED entries in $2}"
	fi
}

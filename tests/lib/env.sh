# shellcheck shell=bash
# The environment the CPU suite's checks run in, whatever the caller's (tests/run.sh and every section, through
# tests/lib/section.sh). CUDA images set LD_LIBRARY_PATH to the real driver's folder, a shell may carry a quota or
# a preload of its own, a locale changes what awk and sort do, a umask what modes files get: each of these once
# changed a check's result. Dropped: the dynamic loader's variables, every NVIDIA_*, CUDA_* (but CUDA_HOME, a build
# setting), VRAMGUARD_* and FAKECUDA_* variable, Python's, the shell's start-up files, the locale; set: LC_ALL=C,
# TMPDIR=/tmp, umask 022. The sanitizer builds' settings (VG_SAN, VG_SAN_PRELOAD, ASAN_OPTIONS...) and BUILD stay.
vg_clean_env() {
	local v
	for v in $(compgen -e); do
		case $v in
		CUDA_HOME) ;;
		NVIDIA_* | CUDA_* | VRAMGUARD_* | FAKECUDA_* | LD_PRELOAD | LD_LIBRARY_PATH | LD_AUDIT | LD_BIND_NOW | \
			LD_DEBUG* | LD_PROFILE* | GLIBC_TUNABLES | MALLOC_* | PYTHON* | BASH_ENV | ENV | CDPATH | \
			POSIXLY_CORRECT | GREP_OPTIONS | GREP_COLOR* | LANG | LANGUAGE | LC_* | TZ | KUBECONFIG | \
			PROMETHEUS_* | DOCKER_HOST | CONTAINER_HOST)
			unset "$v" ;;
		esac
	done
	export LC_ALL=C TMPDIR=/tmp
	umask 022
}

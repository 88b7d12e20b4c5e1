/* stat(2), lstat(2) and fstat(2) as system calls, for the library and the command alike. glibc's stat, lstat and
 * fstat are symbols only since 2.33 (before, <sys/stat.h> turned them into calls to __xstat & co.), so calling them
 * would tie both to glibc 2.33+ (config/glibc_compat.h). The kernel's struct stat is glibc's on x86-64 and aarch64,
 * and both have newfstatat; errors come back in errno with -1, as from libc. */
#ifndef VG_CONFIG_STAT_H
#define VG_CONFIG_STAT_H

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int vg_stat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

static inline int vg_lstat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

static inline int vg_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

#endif

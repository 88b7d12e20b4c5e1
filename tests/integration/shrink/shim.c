/* Preloaded into the `vramguard` command by tests/sections/attack.sh: the owner of a region file truncates it at
 * the worst moment for the reader, every time, so that what a racing attacker hits now and then happens on every
 * run. VG_SHRINK_FILE names the file; VG_SHRINK_AT says when it is cut to VG_SHRINK_TO bytes (default 0):
 *   map     right after the command maps it (the checks on the fresh mapping then fault);
 *   read    right before the command reads it with pread (a reader's copy comes out short);
 *   lock    right before the command takes the region's lock in the mapping (the fault is inside glibc);
 *   locked  right after it took the lock (the fault comes with the lock held: the robust list points into it);
 *   first   at whichever of map and read comes first (a reader that maps the file, or one that reads it).
 * Each is done once per process (VG_SHRINK_ONCE=0: every time). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uintptr_t map_lo, map_hi;        /* the last mapping of the file */
static int done;

static const char *at(void)
{
	const char *a = getenv("VG_SHRINK_AT");
	return a ? a : "";
}

static int is_file(int fd)
{
	const char *p = getenv("VG_SHRINK_FILE");
	struct stat a, b;
	return p && fd >= 0 && fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void shrink(const char *when)
{
	const char *once = getenv("VG_SHRINK_ONCE");
	bool first = !strcmp(at(), "first") && (!strcmp(when, "map") || !strcmp(when, "read"));
	if ((strcmp(at(), when) != 0 && !first) || (done && !(once && !strcmp(once, "0"))))
		return;
	done = 1;
	const char *to = getenv("VG_SHRINK_TO");
	if (truncate(getenv("VG_SHRINK_FILE"), to ? atoll(to) : 0) != 0)
		_exit(99);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	void *m = real(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && (flags & MAP_SHARED) && is_file(fd)) {
		map_lo = (uintptr_t)m;
		map_hi = map_lo + len;
		shrink("map");
	}
	return m;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, void *, size_t, off_t);
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
	if (is_file(fd))
		shrink("read");
	return real(fd, buf, n, off);
}
ssize_t pread64(int fd, void *buf, size_t n, off_t off) __attribute__((alias("pread")));

static int in_map(const void *p)
{
	return (uintptr_t)p >= map_lo && (uintptr_t)p < map_hi;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	if (in_map(m))
		shrink("lock");
	int rc = real(m);
	if (in_map(m) && rc == 0)
		shrink("locked");
	return rc;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
	static int (*real)(pthread_mutex_t *, const struct timespec *);
	if (!real)
		real = (int (*)(pthread_mutex_t *, const struct timespec *))dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
	if (in_map(m))
		shrink("lock");
	int rc = real(m, ts);
	if (in_map(m) && rc == 0)
		shrink("locked");
	return rc;
}

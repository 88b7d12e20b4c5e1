/* Regions shared between processes: see region.h for the model. Everything read from the file is checked before
 * use; indices come from our own validated copies (nslots, our slot), never from the file at use time. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "accounting/atomic.h"
#include "accounting/clock.h"
#include "accounting/lockorder.h"
#include "accounting/region.h"
#include "config/config.h"
#include "config/fsguard.h"

#define VG_REGION_MAX_FILE ((size_t)24 << 20)

_Static_assert(sizeof(struct vg_region_slot) % 8 == 0, "slot size");
_Static_assert(sizeof(struct vg_region_hdr) + (size_t)VG_REGION_SLOTS_MAX * sizeof(struct vg_region_slot) <=
		       VG_REGION_MAX_FILE, "the largest region fits the size an opener accepts");
_Static_assert(VG_MAX_DEVICES == 64, "devmap covers the tracked ordinals");

/* A path as messages quote it: whole up to 80 bytes, else its start and end with its length (vg_quote), so that a
 * line stays short. The buffer lives until the end of the enclosing block. */
#define VG_QP(p) vg_quote((p), (char[VG_QUOTE_BUF]){ 0 }, VG_QUOTE_BUF)

static void vg_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vg_err(char *err, size_t len, const char *fmt, ...)
{
	if (!err || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static uint64_t vg_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * VG_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static size_t vg_region_size(uint32_t nslots)
{
	return sizeof(struct vg_region_hdr) + (size_t)nslots * sizeof(struct vg_region_slot);
}

/* ---- process identity ---- */

/* Field 22 of /proc/PID/stat (start time); *zombie set when the process has exited: state Z or X with no thread
 * left (a leader that called pthread_exit() shows Z while its other threads run, num_threads in field 20). 0 if
 * unreadable. */
static uint64_t vg_proc_stat(pid_t pid, int *zombie)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');    /* the command may contain spaces and parentheses */
	if (!p || p[1] != ' ')
		return 0;
	p += 2;                         /* field 3: state */
	bool exited = *p == 'Z' || *p == 'X';
	long threads = 0;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return 0;
		p++;
		if (field + 1 == 20)
			threads = strtol(p, NULL, 10);
	}
	if (zombie)
		*zombie = exited && threads <= 1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || end == p)
		return 0;
	return v ? (uint64_t)v : 1;     /* a start time of 0 (pid 1 at boot) is still a process */
}

uint64_t vg_proc_start(pid_t pid)
{
	return vg_proc_stat(pid, NULL);
}

void vg_proc_cmdline(pid_t pid, bool one_line, char *out, size_t len)
{
	char path[64] = "/proc/self/cmdline";
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || (one_line && out[i] == '\n'))
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

uint64_t vg_proc_pidns(void)
{
	/* "pid:[4026531836]": the namespace's inode (readlink, not stat: see glibc_compat.h). */
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strchr(buf, '[');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* fstat(2) as a system call: glibc's fstat symbol is 2.33+ and the library must load on older ones. The kernel's
 * struct stat is glibc's on x86-64 and aarch64. */
static int vg_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

/* lstat(2) likewise (newfstatat: x86-64 and aarch64 both have it). */
static int vg_lstat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int vg_region_control_path(const char *dir, pid_t pid, uint64_t start, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%sproc.%d.%llu", dir && *dir ? dir : VG_REGION_DIR, VG_REGION_PREFIX, (int)pid,
			 (unsigned long long)start);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* Our slot, read once. exit() runs vg_region_leave in a destructor while the process's other threads may still
 * allocate and free: leave gives the slot up under the lock, so a charge re-reads it under the lock (and uses that
 * one value) rather than charge a slot that is free again, or index slot[-1]. */
static int vg_my_slot(const struct vg_region *r)
{
	return __atomic_load_n(&r->slot, __ATOMIC_ACQUIRE);
}

static void vg_set_my_slot(struct vg_region *r, int slot)
{
	__atomic_store_n(&r->slot, slot, __ATOMIC_RELEASE);
}

/* ---- liveness locks ---- */

/* The byte a member locks for as long as it lives: the first byte of its slot. */
static off_t vg_slot_off(uint32_t i)
{
	return (off_t)(offsetof(struct vg_region_hdr, slot) + (size_t)i * sizeof(struct vg_region_slot));
}

/* An open-file-description lock (F_OFD_SETLK: Linux 3.15) on slot i's byte: F_WRLCK or F_UNLCK. 0 or -errno
 * (-EAGAIN: someone else holds it; -EINVAL: no OFD locks here). It lives as long as the open file description: our
 * descriptor *and our mapping* (mmap holds a reference). So closing another descriptor of the file (a second handle,
 * the application reading the file) does not drop it, death and exec do (the mapping goes, the descriptor is
 * close-on-exec), and a forked child, which inherits both, must unmap and close them at once (vg_region_close in
 * interposer/shared.c's fork handler) or it would keep a dead parent looking alive. */
static int vg_live_lock(int fd, uint32_t i, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = vg_slot_off(i), .l_len = 1, .l_pid = 0 };
	if (fd < 0)
		return -EBADF;
	while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
		if (errno != EINTR)
			return errno == EACCES ? -EAGAIN : -errno;
	}
	return 0;
}

/* Does anyone else (another descriptor, of any process) hold slot i's byte? 1 yes, 0 no, -1 cannot tell. */
static int vg_live_held(int fd, uint32_t i)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vg_slot_off(i), .l_len = 1, .l_pid = 0 };
	if (fd < 0)
		return -1;
	while (fcntl(fd, F_OFD_GETLK, &fl) != 0)
		if (errno != EINTR)
			return -1;
	return fl.l_type != F_UNLCK;
}

/* The process in slot i. Its liveness lock is the answer wherever the member runs (our own handle's lock would not
 * show: that slot is never asked about). Slots without a lock are judged by PID and start time: gone, another process
 * under that PID, or a zombie (its GPU memory was freed when it exited); without a lock, a slot of another PID
 * namespace cannot be judged from here. */
static int vg_slot_life_of(const struct vg_region *r, uint32_t i, uint64_t pidns)
{
	const struct vg_region_slot *s = &r->h->slot[i];
	if (atomic_load(&s->state) != VG_SLOT_ACTIVE)
		return VG_LIFE_DEAD;
	bool same_ns = !s->pidns || !pidns || s->pidns == pidns;
	if (s->live_lock && (int)i != vg_my_slot(r)) {
		int held = vg_live_held(r->fd, i);
		if (held >= 0)
			return held ? VG_LIFE_ALIVE : VG_LIFE_DEAD;
	}
	if (!same_ns)
		return VG_LIFE_UNVERIFIABLE;
	int zombie = 0;
	uint64_t start = vg_proc_stat(s->pid, &zombie);
	return start == 0 || start != s->start || zombie ? VG_LIFE_DEAD : VG_LIFE_ALIVE;
}

int vg_region_slot_life(const struct vg_region *r, int slot)
{
	if (!r->h || slot < 0 || (uint32_t)slot >= r->nslots)
		return VG_LIFE_DEAD;
	return vg_slot_life_of(r, (uint32_t)slot, vg_proc_pidns());
}

bool vg_region_slot_alive(const struct vg_region *r, int slot)
{
	return vg_region_slot_life(r, slot) != VG_LIFE_DEAD;
}

/* ---- validation ---- */

static bool vg_terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int vg_region_check(const void *map, size_t size, char *err, size_t errlen)
{
	const struct vg_region_hdr *h = map;
	if (size < sizeof(*h)) {
		vg_err(err, errlen, "file too small for a region (%zu bytes)", size);
		return -EINVAL;
	}
	if (h->magic != VG_REGION_MAGIC) {
		vg_err(err, errlen, "not a vramguard region (bad magic number)");
		return -EINVAL;
	}
	if (h->version != VG_REGION_VERSION) {
		vg_err(err, errlen, "region layout version %u, this vramguard understands %d: use one vramguard version "
		       "for every process of the region, or remove the file when none uses it", h->version,
		       VG_REGION_VERSION);
		return -EPROTO;
	}
	if (h->hdr_size != sizeof(struct vg_region_hdr) || h->slot_size != sizeof(struct vg_region_slot) ||
	    h->dev_size != sizeof(struct vg_region_dev) || h->mutex_size != sizeof(pthread_mutex_t) ||
	    h->ndevs != VG_REGION_DEVS) {
		vg_err(err, errlen, "region made by an incompatible build (layout sizes differ)");
		return -EPROTO;
	}
	if (h->kind != VG_REGION_SHARED && h->kind != VG_REGION_CONTROL) {
		vg_err(err, errlen, "corrupt region: kind %u", h->kind);
		return -EINVAL;
	}
	if (h->nslots < 1 || h->nslots > VG_REGION_SLOTS_MAX || (h->kind == VG_REGION_CONTROL && h->nslots != 1)) {
		vg_err(err, errlen, "corrupt region: %u slots", h->nslots);
		return -EINVAL;
	}
	if ((h->flags & ~(uint32_t)VG_REGION_PERSISTENT) || (h->kind == VG_REGION_CONTROL && h->flags)) {
		vg_err(err, errlen, "corrupt region: flags %#x", h->flags);
		return -EINVAL;
	}
	if (h->file_size != vg_region_size(h->nslots) || size != h->file_size) {
		vg_err(err, errlen, "corrupt region: size %zu, header says %llu for %u slots", size,
		       (unsigned long long)h->file_size, h->nslots);
		return -EINVAL;
	}
	if (!vg_terminated(h->name, sizeof(h->name)) || !vg_terminated(h->created_spec, sizeof(h->created_spec)) ||
	    !vg_terminated(h->spec, sizeof(h->spec))) {
		vg_err(err, errlen, "corrupt region: unterminated name or limit");
		return -EINVAL;
	}
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		const struct vg_region_dev *v = &h->dev[d];
		if (!vg_terminated(v->uuid, sizeof(v->uuid)) || v->ordinal < -1 || v->ordinal >= VG_MAX_DEVICES) {
			vg_err(err, errlen, "corrupt region: device entry %d", d);
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct vg_region_slot *s = &h->slot[i];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st > VG_SLOT_ACTIVE || !vg_terminated(s->cmd, sizeof(s->cmd)) || s->live_lock > 1 ||
		    !vg_terminated(s->limit_spec, sizeof(s->limit_spec)) || (st == VG_SLOT_ACTIVE && s->pid <= 0)) {
			vg_err(err, errlen, "corrupt region: slot %u", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- lock ---- */

static void vg_region_repair(struct vg_region_hdr *h, uint32_t nslots)
{
	/* The last holder died inside a critical section: the totals are whatever the slots say. */
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < nslots; i++)
			if (atomic_load(&h->slot[i].state) == VG_SLOT_ACTIVE)
				sum += atomic_load(&h->slot[i].used[d]);
		atomic_store(&h->dev[d].used, sum);
	}
}

static void vg_apply_debt(struct vg_region *r);

/* The totals change under the lock, but vg_region_force adds to them without it when the lock cannot be had:
 * they are changed with read-modify-write operations (vg_atomic_sub_sat, vg_atomic_max) so that no add is lost. */

static uint64_t vg_mono_ns(void)
{
	return vg_now_ns(CLOCK_MONOTONIC);
}

/* After a lock timeout, releases stop waiting for a while (they are kept as debt and applied by the next lock):
 * a stopped member must not cost every cuMemFree of the others two seconds. */
#define VG_REGION_STUCK_NS (5ull * VG_NS_PER_SEC)

/* After pthread_mutex_trylock/timedlock returned rc: repair what a dead holder left, apply the releases kept as
 * debt. 0 with the lock held, or the error. */
static int vg_region_locked(struct vg_region *r, int rc)
{
	if (rc == EOWNERDEAD) {
		vg_region_repair(r->h, r->nslots);
		pthread_mutex_consistent(&r->h->lock);
		rc = 0;
	}
	if (rc != 0) {
		vg_lock_note_drop(VG_RANK_REGION);
		return -rc;
	}
	vg_apply_debt(r);
	return 0;
}

static int vg_region_trylock(struct vg_region *r)
{
	vg_lock_note_take(VG_RANK_REGION, false);
	return vg_region_locked(r, pthread_mutex_trylock(&r->h->lock));
}

/* The lock, waiting at most VG_REGION_LOCK_TIMEOUT_MS (then -ETIMEDOUT, and releases only try it for a while). A
 * free lock is taken without reading the clock. */
static int vg_region_lock(struct vg_region *r)
{
	vg_lock_note_take(VG_RANK_REGION, false);
	int rc = pthread_mutex_trylock(&r->h->lock);
	if (rc != EBUSY)
		return vg_region_locked(r, rc);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += VG_REGION_LOCK_TIMEOUT_MS / VG_MS_PER_SEC;
	ts.tv_nsec += (long)(VG_REGION_LOCK_TIMEOUT_MS % VG_MS_PER_SEC) * VG_NS_PER_MS;
	if (ts.tv_nsec >= VG_NS_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= VG_NS_PER_SEC;
	}
	do
		rc = pthread_mutex_timedlock(&r->h->lock, &ts);
	while (rc == EINTR);
	if (rc == ETIMEDOUT)
		atomic_store(&r->stuck_until_ns, vg_mono_ns() + VG_REGION_STUCK_NS);
	return vg_region_locked(r, rc);
}

static void vg_region_unlock(struct vg_region *r)
{
	pthread_mutex_unlock(&r->h->lock);
	vg_lock_note_drop(VG_RANK_REGION);
}

/* The lock for a command's change, saying why not in err. */
static int vg_region_lock_say(struct vg_region *r, char *err, size_t errlen)
{
	int rc = vg_region_lock(r);
	if (rc)
		vg_err(err, errlen, "%s: cannot take the region's lock: %s", VG_QP(r->path), strerror(-rc));
	return rc;
}

/* The start of `vramguard region`'s operations: r opened for changes (VG_OPEN_ADMIN), its lock taken. */
static int vg_admin_lock(struct vg_region *r, char *err, size_t errlen)
{
	if (!r->h || r->access != VG_OPEN_ADMIN) {
		vg_err(err, errlen, "%s is not open for changes", VG_QP(r->path));
		return -EBADF;
	}
	return vg_region_lock_say(r, err, errlen);
}

/* ---- open / create ---- */

static int vg_init_mutex(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);
	if (!rc)
		rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return rc;
}

static void vg_copy_str(char *dst, size_t n, const char *src)
{
	size_t l = src ? strnlen(src, n - 1) : 0;
	if (l)
		memcpy(dst, src, l);
	dst[l] = '\0';
}

/* Make the file complete under a temporary name, then link it into place: nobody sees a half-made region. 0,
 * -EEXIST (someone else made it first; err untouched), or -errno with err. */
static int vg_region_create(const char *path, const struct vg_region_make *m, char *err, size_t errlen)
{
	char tmp[600];
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) : 1;
	uint32_t nslots = m->kind == VG_REGION_CONTROL ? 1 : m->nslots ? m->nslots : VG_REGION_SLOTS_DEFAULT;
	unsigned mode = m->mode;
	if (m->kind != VG_REGION_SHARED && m->kind != VG_REGION_CONTROL) {
		vg_err(err, errlen, "cannot create %s: no region kind given", VG_QP(path));
		return -EINVAL;
	}
	if (nslots > VG_REGION_SLOTS_MAX) {
		vg_err(err, errlen, "cannot create %s with %u process slots (at most %d)", VG_QP(path), nslots,
		       VG_REGION_SLOTS_MAX);
		return -EINVAL;
	}
	size_t size = vg_region_size(nslots);
	if (mode & 0002) {
		vg_err(err, errlen, "cannot create %s with mode %04o: every user could write it (use 0600 or 0660)",
		       VG_QP(path), mode & 07777);
		return -EINVAL;
	}
	/* The temporary file is made in the region's directory (link(2) does not cross file systems): "." for a
	 * relative name without one. */
	snprintf(tmp, sizeof(tmp), "%.*s/.vramguard.tmp.%d.%llx", (int)dirlen, slash ? path : ".", (int)getpid(),
		 (unsigned long long)vg_now_ns(CLOCK_MONOTONIC));
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0666);
	if (fd < 0) {
		int e = errno;
		vg_err(err, errlen, "cannot create %s: its temporary file beside it: %s", VG_QP(path), strerror(e));
		return -e;
	}
	int e = 0;
	void *map = MAP_FAILED;
	if (fchmod(fd, mode & 0666) != 0) {
		e = errno;
		vg_err(err, errlen, "cannot create %s: cannot set its mode: %s", VG_QP(path), strerror(e));
		goto out;
	}
	/* Allocate every page now: tmpfs allocates on first touch, so a full /dev/shm would otherwise show up as SIGBUS
	 * in the memset below (inside the application), where this way it is ENOSPC here. */
	struct vg_fsguard g;
	vg_fsguard_enter(&g);           /* past RLIMIT_FSIZE: EFBIG here, not SIGXFSZ killing the job */
	e = posix_fallocate(fd, 0, (off_t)size);
	vg_fsguard_leave(&g);
	if (e != 0) {
		vg_err(err, errlen, "cannot create %s: cannot allocate its %zu bytes: %s", VG_QP(path), size, strerror(e));
		goto out;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		e = errno;
		vg_err(err, errlen, "cannot create %s: cannot map it: %s", VG_QP(path), strerror(e));
		goto out;
	}
	memset(map, 0, size);
	struct vg_region_hdr *h = map;
	h->version = VG_REGION_VERSION;
	h->kind = (uint32_t)m->kind;
	h->hdr_size = sizeof(struct vg_region_hdr);
	h->slot_size = sizeof(struct vg_region_slot);
	h->dev_size = sizeof(struct vg_region_dev);
	h->mutex_size = sizeof(pthread_mutex_t);
	h->nslots = nslots;
	h->ndevs = VG_REGION_DEVS;
	h->file_size = size;
	h->flags = m->kind == VG_REGION_SHARED ? m->flags & VG_REGION_PERSISTENT : 0;
	h->created_ns = vg_now_ns(CLOCK_REALTIME);
	h->creator_pid = (int32_t)getpid();
	h->creator_uid = (uint32_t)geteuid();
	vg_copy_str(h->name, sizeof(h->name), m->name);
	vg_copy_str(h->created_spec, sizeof(h->created_spec), m->spec);
	vg_copy_str(h->spec, sizeof(h->spec), m->spec);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		h->dev[d].ordinal = -1;
		atomic_store(&h->dev[d].limit, VG_REGION_NONE);
	}
	int mrc = vg_init_mutex(&h->lock);
	if (mrc) {
		e = mrc;
		vg_err(err, errlen, "cannot make the region's lock: %s", strerror(e));
		goto out;
	}
	/* No fence needed: nobody can map the file before link(2) publishes it (and -fsanitize=thread warns on one). */
	h->magic = VG_REGION_MAGIC;
	if (link(tmp, path) != 0) {
		e = errno;
		if (e != EEXIST)
			vg_err(err, errlen, "cannot publish %s: %s", VG_QP(path), strerror(e));
	}
out:
	if (map != MAP_FAILED)
		munmap(map, size);
	close(fd);
	unlink(tmp);
	return -e;
}

int vg_region_create_new(const char *path, const struct vg_region_make *make, char *err, size_t errlen)
{
	int rc = vg_region_create(path, make, err, errlen);
	if (rc == -EEXIST)
		vg_err(err, errlen, "%s already exists", VG_QP(path));
	return rc;
}

static bool vg_in_group(gid_t gid)
{
	if (gid == getegid())
		return true;
	gid_t groups[256];
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* Whose file may we use, and for what? See enum vg_region_access. Checked on the opened descriptor's stat, never
 * on the path (which may have changed since). */
static int vg_region_trust(const struct stat *st, const char *path, int access, int kind, unsigned want_mode,
			   char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		vg_err(err, errlen, "%s is not a regular file", VG_QP(path));
		return -EINVAL;
	}
	/* Reading (top, limit show) trusts nothing but the validated layout. */
	if (access == VG_OPEN_READ)
		return 0;
	/* Anyone could have written a world-writable file: not even root uses one. */
	if (st->st_mode & 0002) {
		vg_err(err, errlen, "%s is writable by every user (mode %04o): refusing it; remove it and let vramguard "
		       "create it (VRAMGUARD_SHARED_MODE=0600 or 0660)", VG_QP(path), (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	uid_t me = geteuid();
	unsigned uid = (unsigned)st->st_uid, perm = (unsigned)(st->st_mode & 07777);
	bool group_rw = (st->st_mode & 0060) == 0060 && vg_in_group(st->st_gid);
	if (access == VG_OPEN_ADMIN) {
		if (me == 0 || st->st_uid == me || st->st_uid == 0 || group_rw)
			return 0;       /* root administers every user's regions */
		vg_err(err, errlen, "%s belongs to uid %u (mode %04o) and is not shared with this user's groups: "
		       "refusing it", VG_QP(path), uid, perm);
		return -EPERM;
	}
	if (kind == VG_REGION_CONTROL) {
		/* Our own segment, which we create 0600: a file of someone else, or one others may write, was planted. */
		if (st->st_uid == me && !(st->st_mode & 0022))
			return 0;
		vg_err(err, errlen, "%s is not this process's own control segment (it belongs to uid %u, mode %04o; "
		       "this process runs as uid %u): refusing it", VG_QP(path), uid, perm, (unsigned)me);
		return -EPERM;
	}
	if (st->st_uid == me || st->st_uid == 0)
		return 0;
	if ((want_mode & 0060) && group_rw)
		return 0;
	if (!(want_mode & 0060))
		vg_err(err, errlen, "%s belongs to uid %u (mode %04o), not to this user (uid %u): refusing to join it; "
		       "another user's region is joined only with VRAMGUARD_SHARED_MODE=0660 on both sides, by members of "
		       "the file's group (or use a region name of your own)", VG_QP(path), uid, perm, (unsigned)me);
	else
		vg_err(err, errlen, "%s belongs to uid %u (mode %04o, group %u), not to this user (uid %u), and is not "
		       "writable by a group this process is in: refusing to join it", VG_QP(path), uid, perm,
		       (unsigned)st->st_gid, (unsigned)me);
	return -EPERM;
}

/* Where a region should not live: a network file system cannot keep a mapped file coherent between hosts (nor the
 * lock in it); a disk-backed one works but is slow and keeps a crashed job's file across reboots. "" in memory. */
static int vg_region_fs_check(int fd, char *note, size_t len)
{
	struct statfs sf;
	note[0] = '\0';
	if (fstatfs(fd, &sf) != 0)
		return 0;
	unsigned long t = (unsigned long)sf.f_type;
	switch (t) {
	case 0x01021994:        /* tmpfs */
	case 0x858458f6:        /* ramfs */
		return 0;
	case 0x6969:            /* NFS */
	case 0xff534d42:        /* CIFS */
	case 0xfe534d42:        /* SMB2 */
	case 0x517b:            /* SMB */
	case 0x564c:            /* NCP */
	case 0x00c36400:        /* Ceph */
	case 0x47504653:        /* GPFS */
	case 0x0bd00bd0:        /* Lustre */
		snprintf(note, len, "it is on a network file system (type %#lx), where processes on different hosts "
			 "would not see one region: use a memory-backed directory such as /dev/shm", t);
		return -EREMOTE;
	}
	const char *name = t == 0xef53 ? "ext2/3/4" : t == 0x58465342 ? "xfs" : t == 0x9123683e ? "btrfs" :
			   t == 0x794c7630 ? "overlayfs" : t == 0x65735546 ? "fuse" : NULL;
	if (name)
		snprintf(note, len, "it is on a disk-backed file system (%s), not in memory: it works, but a crashed "
			 "job's file outlives reboots; /dev/shm or a tmpfs is the place for regions", name);
	else
		snprintf(note, len, "it is on a file system of type %#lx, not tmpfs: it works if every member sees the "
			 "same file, but /dev/shm or a tmpfs is the place for regions", t);
	return 0;
}

/* Why open(2) refused path (EACCES): whose file it is, from lstat (for the message only). */
static void vg_open_denied(const char *path, int e, char *err, size_t errlen)
{
	struct stat st;
	if (e == EACCES && vg_lstat(path, &st) == 0)
		vg_err(err, errlen, "cannot open %s: %s (it belongs to uid %u, mode %04o; this process runs as uid %u): "
		       "another user's region; use a name of your own, or have its owner or root remove it", VG_QP(path),
		       strerror(e), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
	else if (e == ELOOP)
		vg_err(err, errlen, "%s is a symbolic link: refusing it", VG_QP(path));
	else
		vg_err(err, errlen, "cannot open %s: %s", VG_QP(path), strerror(e));
}

int vg_region_open(struct vg_region *r, const char *path, int access, int kind, const struct vg_region_make *make,
		   bool *created, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->slot = -1;
	memset(r->devmap, -1, sizeof(r->devmap));
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&r->own_quota[d], VG_REGION_NONE);
	if (created)
		*created = false;
	if (strlen(path) >= sizeof(r->path)) {
		vg_err(err, errlen, "region path too long");
		return -ENAMETOOLONG;
	}
	bool writable = access != VG_OPEN_READ, create = access == VG_OPEN_JOIN && make;
	unsigned want_mode = make ? make->mode : 0;
	/* Each turn that finds the file gone right after someone else made it means that its last member left in
	 * between (short jobs coming and going): try again, a bounded number of times. */
	for (int attempt = 0; attempt < 32; attempt++) {
		int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 && errno == ENOENT && create) {
			int rc = vg_region_create(path, make, err, errlen);
			if (rc == 0 && created)
				*created = true;
			if (rc != 0 && rc != -EEXIST)
				return rc;
			continue;       /* made it, or lost the race to another creator: open what is there */
		}
		if (fd < 0) {
			int e = errno;
			vg_open_denied(path, e, err, errlen);
			if (created)
				*created = false;
			return -e;
		}
		struct stat st;
		if (vg_fstat(fd, &st) != 0) {
			int e = errno;
			close(fd);
			vg_err(err, errlen, "cannot stat %s: %s", VG_QP(path), strerror(e));
			return -e;
		}
		int rc = vg_region_trust(&st, path, access, kind, want_mode, err, errlen);
		if (rc == 0 && ((size_t)st.st_size < sizeof(struct vg_region_hdr) ||
				(size_t)st.st_size > VG_REGION_MAX_FILE)) {
			vg_err(err, errlen, "%s: not a vramguard region (size %lld bytes)", VG_QP(path),
			       (long long)st.st_size);
			rc = -EINVAL;
		}
		if (rc == 0 && writable && vg_region_fs_check(fd, r->fs_note, sizeof(r->fs_note)) != 0) {
			vg_err(err, errlen, "refusing %s: %s", VG_QP(path), r->fs_note);
			rc = -EREMOTE;
		}
		if (rc) {
			close(fd);
			return rc;
		}
		size_t size = (size_t)st.st_size;
		void *map = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			int e = errno;
			close(fd);
			vg_err(err, errlen, "cannot map %s: %s", VG_QP(path), strerror(e));
			return -e;
		}
		char why[200];
		rc = vg_region_check(map, size, why, sizeof(why));
		if (rc == 0 && kind && ((const struct vg_region_hdr *)map)->kind != (uint32_t)kind) {
			snprintf(why, sizeof(why), "it is a %s, not a %s",
				 kind == VG_REGION_SHARED ? "process's control segment" : "shared region",
				 kind == VG_REGION_SHARED ? "shared region" : "control segment");
			rc = -EINVAL;
		}
		if (rc) {
			munmap(map, size);
			close(fd);
			vg_err(err, errlen, "refusing %s: %s", VG_QP(path), why);
			return rc;
		}
		r->h = map;
		r->size = size;
		r->fd = fd;
		r->fdev = (uint64_t)st.st_dev;
		r->fino = (uint64_t)st.st_ino;
		r->kind = (int)r->h->kind;
		r->access = access;
		r->nslots = r->h->nslots;
		r->writable = writable;
		r->owner = getpid();
		memcpy(r->path, path, strlen(path) + 1);
		r->seen_limit_seq = atomic_load(&r->h->limit_seq);
		return 0;
	}
	vg_err(err, errlen, "%s keeps disappearing while being opened", VG_QP(path));
	return -EAGAIN;
}

void vg_region_close(struct vg_region *r)
{
	if (r->h)
		munmap(r->h, r->size);
	if (r->fd >= 0)
		close(r->fd);   /* drops our liveness lock, if we still hold one */
	r->h = NULL;
	r->fd = -1;
	r->slot = -1;
}

/* ---- slots ---- */

static void vg_slot_clear(struct vg_region *r, uint32_t i)
{
	struct vg_region_hdr *h = r->h;
	struct vg_region_slot *s = &h->slot[i];
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t u = atomic_load(&s->used[d]);
		vg_atomic_sub_sat(&h->dev[d].used, u);
		atomic_store(&s->used[d], 0);
		atomic_store(&s->peak[d], 0);
		atomic_store(&s->quota[d], VG_REGION_NONE);
	}
	atomic_store(&s->denied, 0);
	atomic_store(&s->last_report_ns, 0);
	/* pid and start stay until the next join overwrites them: an opener checks the file without the lock, and an
	 * active slot whose pid reads 0 would make it refuse the region as corrupt. The state says the slot is free. */
	s->cmd[0] = '\0';
	s->limit_spec[0] = '\0';
	s->live_lock = 0;
	atomic_store(&s->bound, 0);
	atomic_store(&s->applied_seq, atomic_load(&s->limit_seq));
	atomic_store(&s->state, VG_SLOT_FREE);
	atomic_fetch_add(&h->generation, 1);
}

/* Under the lock. */
static int vg_reclaim_locked(struct vg_region *r)
{
	uint64_t ns = vg_proc_pidns();
	int n = 0, mine = vg_my_slot(r);
	for (uint32_t i = 0; i < r->nslots; i++) {
		if ((int)i == mine || atomic_load(&r->h->slot[i].state) != VG_SLOT_ACTIVE)
			continue;
		if (vg_slot_life_of(r, i, ns) == VG_LIFE_DEAD) {
			vg_slot_clear(r, i);
			n++;
		}
	}
	if (n)
		atomic_fetch_add(&r->h->reclaimed, (uint64_t)n);
	return n;
}

int vg_region_members(const struct vg_region *r)
{
	if (!r->h)
		return 0;
	uint64_t ns = vg_proc_pidns();
	int n = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		n += vg_slot_life_of(r, i, ns) != VG_LIFE_DEAD;
	return n;
}

int vg_region_reclaim(struct vg_region *r)
{
	if (!r->h || !r->writable || vg_region_lock(r) != 0)
		return 0;
	int n = vg_reclaim_locked(r);
	vg_region_unlock(r);
	return n;
}

/* Under the lock: active slots (alive or unverifiable; the dead are reclaimed first by the callers). */
static int vg_members_locked(const struct vg_region *r)
{
	int n = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		n += atomic_load(&r->h->slot[i].state) == VG_SLOT_ACTIVE;
	return n;
}

/* Under the lock: mark the region removed, then unlink its name if the name still is this file (someone may have
 * removed it and made a new one meanwhile: that one is not ours to remove). */
static void vg_remove_locked(struct vg_region *r)
{
	struct stat st;
	atomic_store(&r->h->removed, 1);
	if (vg_lstat(r->path, &st) == 0 && (uint64_t)st.st_dev == r->fdev && (uint64_t)st.st_ino == r->fino)
		unlink(r->path);
}

/* Under the lock: is slot still this process's (not evicted and given to another)? */
static bool vg_slot_mine(const struct vg_region *r, int slot)
{
	const struct vg_region_slot *s = &r->h->slot[slot];
	return atomic_load(&s->state) == VG_SLOT_ACTIVE && s->pid == (int32_t)r->member && s->start == r->self_start;
}

/* Under the lock: claim a free slot for pid/start and take its liveness lock (a free slot whose byte is still
 * locked belongs to an evicted process that runs on: skipped). The slot's bound bits follow our device map, for a
 * process joining again after an eviction. 0 or -ENOSPC. */
static int vg_claim_locked(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd)
{
	int got = -1, lk = -1;
	bool self = pid == getpid();    /* only a process itself can hold its lock (tests join for others) */
	for (uint32_t i = 0; i < r->nslots && got < 0; i++) {
		if (atomic_load(&r->h->slot[i].state) != VG_SLOT_FREE)
			continue;
		lk = self ? vg_live_lock(r->fd, i, F_WRLCK) : vg_live_held(r->fd, i) == 1 ? -EAGAIN : -EPERM;
		if (lk != -EAGAIN)
			got = (int)i;
	}
	if (got < 0)
		return -ENOSPC;
	struct vg_region_slot *s = &r->h->slot[got];
	s->pid = (int32_t)pid;
	s->start = start;
	s->pidns = vg_proc_pidns();
	s->uid = (uint32_t)geteuid();
	s->joined_ns = vg_now_ns(CLOCK_REALTIME);
	s->live_lock = lk == 0;
	vg_copy_str(s->cmd, sizeof(s->cmd), cmd);
	uint32_t bound = 0;
	for (int d = 0; d < VG_MAX_DEVICES; d++)
		if (r->devmap[d] >= 0)
			bound |= 1u << r->devmap[d];
	atomic_store(&s->bound, bound);
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&s->quota[d], atomic_load(&r->own_quota[d]));
	r->seen_slot_seq = atomic_load(&s->limit_seq);
	atomic_store(&s->state, VG_SLOT_ACTIVE);
	atomic_fetch_add(&r->h->generation, 1);
	atomic_fetch_add(&r->h->joins, 1);
	r->owner = getpid();
	r->member = pid;
	r->self_start = start;
	vg_set_my_slot(r, got);
	return 0;
}

/* Under the lock, with no member left: a region whose members have all exited starts from nothing. A persistent one
 * keeps its budget; any other one that had members takes spec (NULL: keeps its own) as if it were new. */
/* Under the lock: the totals from the active slots alone (in use = their sum, peak = in use, no denials). */
static void vg_totals_rebuild_locked(struct vg_region *r)
{
	vg_region_repair(r->h, r->nslots);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		atomic_store(&r->h->dev[d].peak, atomic_load(&r->h->dev[d].used));
		atomic_store(&r->h->dev[d].denied, 0);
	}
}

static void vg_start_over_locked(struct vg_region *r, const char *spec)
{
	struct vg_region_hdr *h = r->h;
	vg_totals_rebuild_locked(r);    /* no member: zero */
	if ((h->flags & VG_REGION_PERSISTENT) || atomic_load(&h->joins) == 0 || h->kind != VG_REGION_SHARED)
		return;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		/* The GPUs register again, with limits resolved from the new spec. */
		struct vg_region_dev *v = &h->dev[d];
		memset(v->uuid, 0, sizeof(v->uuid));
		v->ordinal = -1;
		v->total = 0;
		atomic_store(&v->limit, VG_REGION_NONE);
	}
	if (spec) {
		vg_copy_str(h->created_spec, sizeof(h->created_spec), spec);
		vg_copy_str(h->spec, sizeof(h->spec), spec);
	}
	h->created_ns = vg_now_ns(CLOCK_REALTIME);
	h->creator_pid = (int32_t)getpid();
	h->creator_uid = (uint32_t)geteuid();
	r->started_over = true;
}

int vg_region_join(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd, const char *spec, char *err,
		   size_t errlen)
{
	if (!r->h || !r->writable)
		return -EBADF;
	int rc = vg_region_lock(r);
	if (rc) {
		vg_err(err, errlen, "%s: the region's lock is held by a process that does not let go (stopped?): %s",
		       VG_QP(r->path), strerror(-rc));
		return rc;
	}
	if (atomic_load(&r->h->removed)) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s was removed while this process was joining it", VG_QP(r->path));
		return -ESTALE;
	}
	vg_reclaim_locked(r);
	/* A slot with our own PID and start time is this process before an exec: its memory went with the old image. */
	uint64_t ns = vg_proc_pidns();
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct vg_region_slot *s = &r->h->slot[i];
		if (atomic_load(&s->state) == VG_SLOT_ACTIVE && s->pid == (int32_t)pid && s->start == start &&
		    (!s->pidns || !ns || s->pidns == ns))
			vg_slot_clear(r, i);
	}
	r->started_over = false;
	if (vg_members_locked(r) == 0)
		vg_start_over_locked(r, spec);
	if (vg_claim_locked(r, pid, start, cmd) != 0) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s is full: %u processes have joined it and all are alive (a region's process slots "
		       "are set when it is made: `vramguard region create NAME --slots N`, or VRAMGUARD_SHARED_SLOTS for the "
		       "process that creates it)", VG_QP(r->path), r->nslots);
		return -ENOSPC;
	}
	vg_region_unlock(r);
	return 0;
}

void vg_region_leave(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0 || r->owner != getpid())
		return;
	if (vg_region_lock(r) == 0) {
		/* Under the lock: no charge of another thread lands in the slot once it is cleared (see vg_my_slot). */
		vg_set_my_slot(r, -1);
		if (vg_slot_mine(r, slot))
			vg_slot_clear(r, (uint32_t)slot);
		vg_live_lock(r->fd, (uint32_t)slot, F_UNLCK);
		bool last = r->kind == VG_REGION_CONTROL;
		if (!last && !(r->h->flags & VG_REGION_PERSISTENT)) {
			vg_reclaim_locked(r);   /* members that died without leaving do not keep it */
			last = vg_members_locked(r) == 0;
		}
		if (last)
			vg_remove_locked(r);
		vg_region_unlock(r);
		return;
	}
	vg_set_my_slot(r, -1);  /* the lock is stuck: the slot is reclaimed once this process is gone */
}

int vg_region_remove(struct vg_region *r, bool force, int *members, char *err, size_t errlen)
{
	if (members)
		*members = 0;
	int rc = vg_admin_lock(r, err, errlen);
	if (rc)
		return rc;
	vg_reclaim_locked(r);
	int n = vg_members_locked(r);
	if (members)
		*members = n;
	if (n && !force) {
		vg_region_unlock(r);
		vg_err(err, errlen, "%s has %d live member%s", VG_QP(r->path), n, n == 1 ? "" : "s");
		return -EBUSY;
	}
	vg_remove_locked(r);
	vg_region_unlock(r);
	return 0;
}

int vg_region_clean(struct vg_region *r, uint64_t min_age_ns, bool *removed)
{
	*removed = false;
	if (!r->h || r->access != VG_OPEN_ADMIN || vg_region_lock(r) != 0)
		return 0;
	int n = 0;
	if (!atomic_load(&r->h->removed)) {
		n = vg_reclaim_locked(r);
		uint64_t age = vg_now_ns(CLOCK_REALTIME) - r->h->created_ns;
		if (!(r->h->flags & VG_REGION_PERSISTENT) && vg_members_locked(r) == 0 &&
		    (atomic_load(&r->h->joins) > 0 || age >= min_age_ns)) {
			vg_remove_locked(r);
			*removed = true;
		}
	}
	vg_region_unlock(r);
	return n;
}

int vg_region_reset(struct vg_region *r, char *err, size_t errlen)
{
	int rc = vg_admin_lock(r, err, errlen);
	if (rc)
		return rc;
	vg_reclaim_locked(r);
	vg_totals_rebuild_locked(r);
	vg_region_unlock(r);
	return 0;
}

/* A command's change to slot, which must still hold pid/start (checked under the lock: the process may have left
 * and another taken the slot since the command looked). 0 with the lock held, or -EINVAL (no such slot), -ESRCH
 * ("process PID left PATH" and after), or the lock's error, with err. */
static int vg_slot_lock_held(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *after, char *err,
			     size_t errlen)
{
	if (!r->h || !r->writable || slot < 0 || (uint32_t)slot >= r->nslots) {
		vg_err(err, errlen, "no such process slot in %s", VG_QP(r->path));
		return -EINVAL;
	}
	int rc = vg_region_lock_say(r, err, errlen);
	if (rc)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	if (atomic_load(&s->state) != VG_SLOT_ACTIVE || s->pid != (int32_t)pid || s->start != start) {
		vg_region_unlock(r);
		vg_err(err, errlen, "process %d left %s %s", (int)pid, VG_QP(r->path), after);
		return -ESRCH;
	}
	return 0;
}

int vg_region_evict(struct vg_region *r, int slot, pid_t pid, uint64_t start, bool force,
		    uint64_t freed[VG_REGION_DEVS], char *err, size_t errlen)
{
	memset(freed, 0, VG_REGION_DEVS * sizeof(freed[0]));
	if (r->kind != VG_REGION_SHARED) {
		vg_err(err, errlen, "no such process slot in %s", VG_QP(r->path));
		return -EINVAL;
	}
	if (r->access != VG_OPEN_ADMIN) {
		vg_err(err, errlen, "%s is not open for changes", VG_QP(r->path));
		return -EBADF;
	}
	int rc = vg_slot_lock_held(r, slot, pid, start, "meanwhile", err, errlen);
	if (rc)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	if (!force && vg_slot_life_of(r, (uint32_t)slot, vg_proc_pidns()) == VG_LIFE_ALIVE) {
		vg_region_unlock(r);
		vg_err(err, errlen, "process %d is alive (it holds its liveness lock)", (int)pid);
		return -EBUSY;
	}
	for (int d = 0; d < VG_REGION_DEVS; d++)
		freed[d] = atomic_load(&s->used[d]);
	vg_slot_clear(r, (uint32_t)slot);
	atomic_fetch_add(&r->h->evicted, 1);
	vg_region_unlock(r);
	return 0;
}

int vg_region_find_pid(struct vg_region *r, pid_t pid)
{
	if (!r->h)
		return -1;
	uint64_t ns = vg_proc_pidns();
	int other = -1;
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct vg_region_slot *s = &r->h->slot[i];
		if (atomic_load(&s->state) != VG_SLOT_ACTIVE || s->pid != (int32_t)pid ||
		    vg_slot_life_of(r, i, ns) == VG_LIFE_DEAD)
			continue;
		if (!s->pidns || !ns || s->pidns == ns)
			return (int)i;
		if (other < 0)
			other = (int)i;
	}
	return other;
}

/* ---- devices and limits ---- */

static uint64_t vg_spec_limit(const char *spec, int ordinal, const char *uuid, uint64_t total, int *said)
{
	struct vg_limits l;
	char e[VG_ERR_MAX];
	*said = 0;
	if (!spec || !*spec)
		return VG_REGION_NONE;
	if (vg_parse_limits("region limit", spec, (uint64_t)1 << 20, &l, e, sizeof(e)) != 0)
		return VG_REGION_NONE;  /* validated before it was stored */
	return vg_limits_for(&l, ordinal, uuid, total, NULL, said);
}

int vg_region_bind(struct vg_region *r, int dev, const char *uuid, uint64_t total, uint64_t own_limit)
{
	int slot = vg_my_slot(r);
	if (!r->h || dev < 0 || dev >= VG_MAX_DEVICES || slot < 0)
		return -EINVAL;
	if (r->devmap[dev] >= 0) {
		vg_region_set_quota(r, dev, own_limit);
		return r->devmap[dev];
	}
	char key[VG_REGION_UUID_MAX];
	if (uuid && *uuid)
		vg_copy_str(key, sizeof(key), uuid);
	else
		snprintf(key, sizeof(key), "ordinal:%d", dev);
	int rc = vg_region_lock(r);
	if (rc)
		return rc;
	struct vg_region_hdr *h = r->h;
	int idx = -1, fr = -1;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		if (h->dev[d].uuid[0] == '\0') {
			if (fr < 0)
				fr = d;
		} else if (strncmp(h->dev[d].uuid, key, sizeof(key)) == 0) {
			idx = d;
			break;
		}
	}
	if (idx < 0 && fr >= 0) {
		idx = fr;
		struct vg_region_dev *v = &h->dev[idx];
		vg_copy_str(v->uuid, sizeof(v->uuid), key);
		v->ordinal = dev;
		v->total = total;
		int said;
		uint64_t lim = h->kind == VG_REGION_SHARED ? vg_spec_limit(h->spec, dev, uuid, total, &said) : VG_REGION_NONE;
		atomic_store(&v->limit, lim);
	}
	vg_region_unlock(r);
	if (idx < 0)
		return -ENOSPC;
	r->devmap[dev] = (int8_t)idx;
	atomic_fetch_or(&r->h->slot[slot].bound, 1u << idx);
	vg_region_set_quota(r, dev, own_limit);
	return idx;
}

void vg_region_set_quota(struct vg_region *r, int dev, uint64_t own_limit)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	atomic_store(&r->own_quota[r->devmap[dev]], own_limit);
	atomic_store(&r->h->slot[slot].quota[r->devmap[dev]], own_limit);
}

void vg_region_publish(struct vg_region *r, int dev, int count_mode, uint64_t alloc, uint64_t driver)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	atomic_store_explicit(&s->count_mode, (uint32_t)count_mode, memory_order_relaxed);
	atomic_store_explicit(&s->alloc[r->devmap[dev]], alloc, memory_order_relaxed);
	atomic_store_explicit(&s->driver[r->devmap[dev]], driver, memory_order_relaxed);
}

bool vg_region_control_counters(struct vg_region *r, int dev, _Atomic uint64_t **used, _Atomic uint64_t **peak)
{
	int slot = vg_my_slot(r);
	if (!r->h || r->kind != VG_REGION_CONTROL || slot < 0 || dev < 0 || dev >= VG_MAX_DEVICES || r->devmap[dev] < 0)
		return false;
	*used = &r->h->slot[slot].used[r->devmap[dev]];
	*peak = &r->h->slot[slot].peak[r->devmap[dev]];
	return true;
}

/* Under the lock: take back releases that could not get it earlier. */
static void vg_apply_debt(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (slot < 0)
		return;
	struct vg_region_slot *s = &r->h->slot[slot];
	bool mine = vg_slot_mine(r, slot);
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		uint64_t b = atomic_load_explicit(&r->debt[d], memory_order_relaxed);
		if (!b)
			continue;
		b = atomic_exchange(&r->debt[d], 0);
		if (!mine)
			continue;       /* evicted: what the slot held was released with it */
		/* Never more than we were charged: the rest of the total is other processes' shares. */
		uint64_t su = atomic_load(&s->used[d]), take = su < b ? su : b;
		atomic_fetch_sub(&s->used[d], take);
		vg_atomic_sub_sat(&r->h->dev[d].used, take);
	}
}

/* Under the lock: our slot was taken from us (`vramguard region evict --force`), and what it held released with
 * it. Give up its liveness byte and join again. Our slot now, or -1 if the region is full. */
static int vg_rejoin_locked(struct vg_region *r, int old)
{
	char cmd[VG_REGION_CMD_MAX];
	vg_live_lock(r->fd, (uint32_t)old, F_UNLCK);
	vg_set_my_slot(r, -1);
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&r->debt[d], 0);
	vg_proc_cmdline(0, true, cmd, sizeof(cmd));
	if (vg_claim_locked(r, r->member, r->self_start, cmd) != 0)
		return -1;
	atomic_fetch_add(&r->rejoined, 1);
	return vg_my_slot(r);
}

/* Under the lock: our slot (joined again if it was taken from us), -1 if we left it (exiting), -EUSERS if it was
 * taken from us and the region is full now. */
static int vg_slot_locked(struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (slot < 0 || vg_slot_mine(r, slot))
		return slot;
	slot = vg_rejoin_locked(r, slot);
	return slot >= 0 ? slot : -EUSERS;
}

/* Under the lock; slot read under it too. */
static void vg_charge_locked(struct vg_region *r, int slot, int idx, uint64_t bytes)
{
	struct vg_region_dev *v = &r->h->dev[idx];
	struct vg_region_slot *s = &r->h->slot[slot];
	uint64_t du = atomic_fetch_add(&v->used, bytes) + bytes;   /* an add, not a store: see vg_region_force */
	vg_atomic_max(&v->peak, du);
	uint64_t su = atomic_fetch_add(&s->used[idx], bytes) + bytes;
	vg_atomic_max(&s->peak[idx], su);
}

/* The region device of CUDA ordinal dev, and our slot (read once: *slot), or -1. */
static int vg_region_idx(struct vg_region *r, int dev, int *slot)
{
	if (!r || !r->h || dev < 0 || dev >= VG_MAX_DEVICES || (*slot = vg_my_slot(r)) < 0)
		return -1;
	return r->devmap[dev];
}

/* A control segment has no budget: it only shows this process's usage (no lock; this process is its only writer). */
static void vg_control_charge(struct vg_region *r, int slot, int idx, uint64_t bytes)
{
	struct vg_region_slot *s = &r->h->slot[slot];
	vg_atomic_max(&s->peak[idx], atomic_fetch_add(&s->used[idx], bytes) + bytes);
}

int vg_region_reserve(struct vg_region *r, int dev, uint64_t bytes, uint64_t *used, uint64_t *limit)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return 0;
	if (r->kind == VG_REGION_CONTROL) {
		vg_control_charge(r, slot, idx, bytes);
		return 0;
	}
	int rc = vg_region_lock(r);
	if (rc)
		return rc;
	if ((slot = vg_slot_locked(r)) < 0) {
		vg_region_unlock(r);
		/* Left the region meanwhile (exiting): nothing to charge. Evicted with the region full: not countable. */
		return slot == -EUSERS ? -EUSERS : 0;
	}
	struct vg_region_dev *v = &r->h->dev[idx];
	for (int pass = 0; pass < 2; pass++) {
		uint64_t lim = atomic_load(&v->limit), u = atomic_load(&v->used);
		if (lim == VG_REGION_NONE || (bytes <= lim && u <= lim - bytes)) {
			vg_charge_locked(r, slot, idx, bytes);
			vg_region_unlock(r);
			return 0;
		}
		if (used)
			*used = u;
		if (limit)
			*limit = lim;
		/* Reclaim before refusing: a dead member's share never causes a refusal. It reads /proc/PID/stat of each
		 * member (about 10 us each; a full region of 128 costs about 1 ms), only on this refusal path. */
		if (pass > 0 || vg_reclaim_locked(r) == 0)
			break;          /* nobody to reclaim: the budget really is spent */
	}
	atomic_fetch_add(&v->denied, 1);
	vg_region_unlock(r);
	return -ENOSPC;
}

void vg_region_force(struct vg_region *r, int dev, uint64_t bytes)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return;
	if (r->kind == VG_REGION_CONTROL) {
		vg_control_charge(r, slot, idx, bytes);
		return;
	}
	if (vg_region_lock(r) == 0) {
		if ((slot = vg_slot_locked(r)) >= 0)
			vg_charge_locked(r, slot, idx, bytes);
		vg_region_unlock(r);
		return;
	}
	/* Could not lock: cancel against pending releases, or charge without the lock on the atomics. */
	uint64_t d = atomic_load(&r->debt[idx]);
	while (d && !atomic_compare_exchange_weak(&r->debt[idx], &d, d >= bytes ? d - bytes : 0))
		;
	if (d < bytes) {
		atomic_fetch_add(&r->h->dev[idx].used, bytes - d);
		if (vg_slot_mine(r, slot))      /* without the lock: at worst the slot's own figure misses it */
			atomic_fetch_add(&r->h->slot[slot].used[idx], bytes - d);
	}
}

void vg_region_release(struct vg_region *r, int dev, uint64_t bytes)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0)
		return;
	if (r->kind == VG_REGION_CONTROL) {
		vg_atomic_sub_sat(&r->h->slot[slot].used[idx], bytes);
		return;
	}
	atomic_fetch_add(&r->debt[idx], bytes);
	/* Taking the lock applies the debt. While the lock is known stuck, a release only tries it. */
	int rc = vg_region_trylock(r);
	if (rc == -EBUSY && atomic_load_explicit(&r->stuck_until_ns, memory_order_relaxed) <= vg_mono_ns())
		rc = vg_region_lock(r);
	if (rc == 0)
		vg_region_unlock(r);
}

bool vg_region_avail(struct vg_region *r, int dev, uint64_t *avail, uint64_t *limit)
{
	int slot, idx = vg_region_idx(r, dev, &slot);
	if (idx < 0 || r->kind != VG_REGION_SHARED)
		return false;
	uint64_t lim = atomic_load(&r->h->dev[idx].limit);
	if (lim == VG_REGION_NONE)
		return false;
	uint64_t u = atomic_load(&r->h->dev[idx].used);
	*avail = lim > u ? lim - u : 0;
	*limit = lim;
	return true;
}

void vg_region_note_denied(struct vg_region *r)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (r && r->h && slot >= 0)
		atomic_fetch_add(&r->h->slot[slot].denied, 1);
}

void vg_region_note_report(struct vg_region *r, uint64_t realtime_ns)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (r && r->h && slot >= 0)
		atomic_store(&r->h->slot[slot].last_report_ns, realtime_ns);
}

/* ---- live limits ---- */

int vg_region_spec_check(const char *spec, struct vg_limits *l, char *err, size_t errlen)
{
	if (!spec || strlen(spec) >= VG_REGION_SPEC_MAX) {
		vg_err(err, errlen, "limit spec too long (at most %d bytes)", VG_REGION_SPEC_MAX - 1);
		return -EINVAL;
	}
	if (spec[strspn(spec, " \t")] == '\0') {
		/* It would leave the GPUs' budgets as they are but give GPUs registered later none. */
		vg_err(err, errlen, "empty limit (expected e.g. 8G, 0:4G,1:2G, 50%% or unlimited)");
		return -EINVAL;
	}
	char e[VG_ERR_MAX];
	if (vg_parse_limits("limit", spec, (uint64_t)1 << 20, l, e, sizeof(e)) != 0) {
		const char *m = strncmp(e, "vramguard: error: ", 18) == 0 ? e + 18 : e;
		vg_err(err, errlen, "%s", m);
		return -EINVAL;
	}
	return 0;
}

int vg_region_set_limit(struct vg_region *r, const char *spec, char *err, size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_spec_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	if (!r->h || !r->writable || r->kind != VG_REGION_SHARED) {
		vg_err(err, errlen, "%s is not a shared region opened for writing", VG_QP(r->path));
		return -EBADF;
	}
	if ((rc = vg_region_lock_say(r, err, errlen)) != 0)
		return rc;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		struct vg_region_dev *v = &r->h->dev[d];
		char uuid[VG_REGION_UUID_MAX];
		vg_copy_str(uuid, sizeof(uuid), v->uuid);      /* bounded: the file may have changed since open */
		if (!uuid[0])
			continue;
		int said;
		uint64_t lim = vg_limits_for(&l, v->ordinal, strncmp(uuid, "ordinal:", 8) ? uuid : NULL, v->total, NULL,
					     &said);
		if (said)
			atomic_store(&v->limit, lim);
	}
	/* A spec with keys only changes those GPUs; GPUs registered later keep the old bare default. */
	char next[VG_REGION_SPEC_MAX], old[VG_REGION_SPEC_MAX];
	vg_copy_str(next, sizeof(next), spec);
	vg_copy_str(old, sizeof(old), r->h->spec);
	if (l.dflt.kind == VG_LIMIT_UNSET) {
		char *save = NULL;
		for (char *tok = strtok_r(old, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			if (*tok && !strchr(tok, ':') && !strchr(tok, '=')) {
				size_t a = strlen(tok), b = strlen(spec);
				if (a + 1 + b < sizeof(next)) {
					memcpy(next, tok, a);
					next[a] = ',';
					memcpy(next + a + 1, spec, b + 1);
				}
				break;
			}
		}
	}
	vg_copy_str(r->h->spec, sizeof(r->h->spec), next);
	atomic_fetch_add(&r->h->limit_seq, 1);
	vg_region_unlock(r);
	return 0;
}

int vg_region_set_slot_limit(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *spec, char *err,
			     size_t errlen)
{
	struct vg_limits l;
	int rc = vg_region_spec_check(spec, &l, err, errlen);
	if (rc)
		return rc;
	if ((rc = vg_slot_lock_held(r, slot, pid, start, "before the limit could be set", err, errlen)) != 0)
		return rc;
	struct vg_region_slot *s = &r->h->slot[slot];
	vg_copy_str(s->limit_spec, sizeof(s->limit_spec), spec);
	atomic_fetch_add(&s->limit_seq, 1);
	vg_region_unlock(r);
	return 0;
}

bool vg_region_poll(const struct vg_region *r)
{
	int slot = vg_my_slot(r);
	if (!r->h || slot < 0)
		return false;
	return atomic_load_explicit(&r->h->slot[slot].limit_seq, memory_order_relaxed) !=
		       atomic_load_explicit(&r->seen_slot_seq, memory_order_relaxed) ||
	       atomic_load_explicit(&r->h->limit_seq, memory_order_relaxed) !=
		       atomic_load_explicit(&r->seen_limit_seq, memory_order_relaxed);
}

bool vg_region_pending_limit(struct vg_region *r, char *spec, size_t len)
{
	int slot = r ? vg_my_slot(r) : -1;
	if (!r || !r->h || slot < 0)
		return false;
	struct vg_region_slot *s = &r->h->slot[slot];
	uint32_t seq = atomic_load_explicit(&s->limit_seq, memory_order_acquire);
	uint32_t seen = atomic_load(&r->seen_slot_seq);
	if (seq == seen || len == 0)
		return false;
	if (vg_region_lock(r) != 0)
		return false;           /* try again next time */
	seq = atomic_load(&s->limit_seq);
	bool mine = atomic_compare_exchange_strong(&r->seen_slot_seq, &seen, seq);   /* one thread applies it */
	if (mine) {
		vg_copy_str(spec, len < sizeof(s->limit_spec) ? len : sizeof(s->limit_spec), s->limit_spec);
		atomic_store(&s->applied_seq, seq);
	}
	vg_region_unlock(r);
	return mine && spec[0] != '\0';
}

void vg_region_spec_copy(struct vg_region *r, char *spec, size_t len)
{
	if (len == 0)
		return;
	spec[0] = '\0';
	if (!r || !r->h)
		return;
	bool locked = vg_region_lock(r) == 0;
	vg_copy_str(spec, len < sizeof(r->h->spec) ? len : sizeof(r->h->spec), r->h->spec);
	if (locked)
		vg_region_unlock(r);
}

bool vg_region_limit_changed(struct vg_region *r)
{
	if (!r || !r->h)
		return false;
	uint32_t seq = atomic_load_explicit(&r->h->limit_seq, memory_order_acquire);
	uint32_t seen = atomic_load_explicit(&r->seen_limit_seq, memory_order_relaxed);
	return seq != seen && atomic_compare_exchange_strong(&r->seen_limit_seq, &seen, seq);
}

/* ---- reading without joining ---- */

/* Region device of uuid in h, -1 if none (case-insensitive; the file's strings copied out bounded first). */
static int vg_region_dev_of(const struct vg_region_hdr *h, const char *uuid)
{
	char key[VG_REGION_UUID_MAX];
	if (!uuid || !*uuid)
		return -1;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		memcpy(key, h->dev[d].uuid, sizeof(key));
		key[sizeof(key) - 1] = '\0';
		if (key[0] && strcasecmp(key, uuid) == 0)
			return d;
	}
	return -1;
}

bool vg_region_gpu_usage(const struct vg_region *r, const char *uuid, int ordinal, uint64_t total, uint64_t *used,
			 uint64_t *limit)
{
	if (!r || !r->h || r->kind != VG_REGION_SHARED)
		return false;
	int d = vg_region_dev_of(r->h, uuid);
	if (d >= 0) {
		*used = atomic_load(&r->h->dev[d].used);
		*limit = atomic_load(&r->h->dev[d].limit);
		return true;
	}
	/* Not registered yet: what its spec would give it. A copy taken without the lock may be half rewritten by a
	 * `limit set --shared` (it then fails to parse: no budget this time). */
	char spec[VG_REGION_SPEC_MAX];
	memcpy(spec, r->h->spec, sizeof(spec));
	spec[sizeof(spec) - 1] = '\0';
	int said = 0;
	uint64_t lim = vg_spec_limit(spec, ordinal, uuid, total, &said);
	if (!said || lim == VG_REGION_NONE)
		return false;
	*used = 0;
	*limit = lim;
	return true;
}

int vg_region_dir_usage(const char *dir, const char *uuid, pid_t skip, uint64_t *used, uint32_t *procs)
{
	*used = 0;
	if (procs)
		*procs = 0;
	if (!dir || !*dir)
		dir = VG_REGION_DIR;
	DIR *dp = opendir(dir);
	if (!dp)
		return -errno;
	uint64_t ns = vg_proc_pidns(), skip_start = 0;     /* read from /proc only if a slot has skip's PID */
	size_t plen = strlen(VG_REGION_PREFIX);
	struct dirent *e;
	char path[VG_SHARED_PATH_MAX], err[VG_ERR_MAX];
	while ((e = readdir(dp))) {
		/* .vramguard.tmp.* (a region being made) does not start with the prefix */
		if (strncmp(e->d_name, VG_REGION_PREFIX, plen) != 0 || !e->d_name[plen])
			continue;
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		struct vg_region r;
		if (vg_region_open(&r, path, VG_OPEN_READ, 0, NULL, NULL, err, sizeof(err)) != 0)
			continue;
		int d = vg_region_dev_of(r.h, uuid);
		for (uint32_t i = 0; d >= 0 && i < r.nslots; i++) {
			const struct vg_region_slot *s = &r.h->slot[i];
			if (atomic_load(&s->state) != VG_SLOT_ACTIVE || !(atomic_load(&s->bound) >> d & 1u))
				continue;
			if (skip > 0 && s->pid == skip && (!s->pidns || !ns || s->pidns == ns)) {
				if (!skip_start)
					skip_start = vg_proc_start(skip);
				if (s->start == skip_start)
					continue;
			}
			if (vg_slot_life_of(&r, i, ns) == VG_LIFE_DEAD)
				continue;
			*used += atomic_load(&s->used[d]);
			if (procs)
				(*procs)++;
		}
		vg_region_close(&r);
	}
	closedir(dp);
	return 0;
}

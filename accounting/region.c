/* Regions shared between processes: see region.h for the model. This file validates a region file and opens,
 * creates and closes one; region_proc.c knows processes and their liveness locks, region_lock.c holds the lock,
 * region_slots.c joins and leaves, region_charge.c charges, region_limit.c changes limits live, region_usage.c
 * reads without joining (each calls only those before it). Everything read from the file is checked before use;
 * indices come from our own validated copies (nslots, our slot), never from the file at use time. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/statfs.h>

#include "accounting/fault.h"
#include "accounting/lockorder.h"
#include "accounting/region_impl.h"
#include "config/fsguard.h"

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
	    !vg_terminated(h->spec, sizeof(h->spec)) || !vg_terminated(h->compute_spec, sizeof(h->compute_spec))) {
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
		    !vg_terminated(s->limit_spec, sizeof(s->limit_spec)) ||
		    !vg_terminated(s->compute_spec, sizeof(s->compute_spec)) || (st == VG_SLOT_ACTIVE && s->pid <= 0)) {
			vg_err(err, errlen, "corrupt region: slot %u", i);
			return -EINVAL;
		}
	}
	return 0;
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
		 (unsigned long long)vg_clock_ns(CLOCK_MONOTONIC));
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
	h->created_ns = vg_clock_ns(CLOCK_REALTIME);
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

/* pread exactly n bytes at off: 0, or -1 with errno (ESTALE: the file ended first). */
static int vg_pread_all(int fd, void *buf, size_t n, size_t off)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = ESTALE;
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

/* Copy the header of the region file src (size bytes) and its slots in use into dst (zeroed, as big): a free slot's
 * pages of the copy are never touched. */
static void vg_region_copy_used(char *dst, const char *src, size_t size)
{
	const size_t hdr = sizeof(struct vg_region_hdr), ss = sizeof(struct vg_region_slot);
	memcpy(dst, src, hdr);
	for (size_t off = hdr; off < size; off += ss) {
		size_t n = size - off < ss ? size - off : ss;
		const struct vg_region_slot *sl = (const void *)(src + off);
		if (n < ss || atomic_load_explicit(&sl->state, memory_order_relaxed) != VG_SLOT_FREE)
			memcpy(dst + off, src + off, n);
	}
}

struct vg_copy_args {
	char *dst;
	const char *src;
	size_t size;
};

static int vg_copy_fn(void *arg)
{
	struct vg_copy_args *a = arg;
	vg_region_copy_used(a->dst, a->src, a->size);
	return 0;
}

/* A reader's copy of the file (VG_OPEN_READ): private memory that no change to the file can take away, where a
 * shared mapping faults once its owner truncates it. The header and the slots in use are copied; a free slot is left
 * zero (free), so that a scrape of a node with large, mostly empty regions costs what their members do. Where the
 * command installed the fault guard, they are copied from a shared mapping under it (only the slots' first words are
 * read); elsewhere (the library, which reads control segments of a page or two) the file is read whole. MAP_FAILED with errno (ESTALE: the file got
 * shorter). */
static void *vg_region_copy(int fd, size_t size)
{
	if (size < sizeof(struct vg_region_hdr)) {
		errno = ESTALE;
		return MAP_FAILED;
	}
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return m;
	int e = 0;
	if (vg_fault_installed()) {
		char *src = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (src == MAP_FAILED) {
			e = errno;
		} else {
			struct vg_copy_args a = { m, src, size };
			bool pinned = false;    /* no lock is taken here */
			if (vg_fault_run(src, size, vg_copy_fn, &a, &pinned) == -ESTALE)
				e = ESTALE;
			if (!pinned)
				munmap(src, size);
		}
	} else if (vg_pread_all(fd, m, size, 0) != 0) {
		e = errno;
	}
	if (e) {
		munmap(m, size);
		errno = e;
		return MAP_FAILED;
	}
	mprotect(m, size, PROT_READ);
	return m;
}

struct vg_check_args {
	const void *map;
	size_t size;
	char *why;
	size_t whylen;
};

static int vg_check_fn(void *arg)
{
	struct vg_check_args *a = arg;
	return vg_region_check(a->map, a->size, a->why, a->whylen);
}

/* The file just opened as fd, before it is mapped: whose it is (vg_region_trust), a region's size, and for a
 * writer a memory-backed file system. *st gets its status. 0, or the error with err said. */
static int vg_open_vet(struct vg_region *r, int fd, const char *path, int access, int kind, unsigned want_mode,
		       struct stat *st, char *err, size_t errlen)
{
	if (vg_fstat(fd, st) != 0) {
		int e = errno;
		vg_err(err, errlen, "cannot stat %s: %s", VG_QP(path), strerror(e));
		return -e;
	}
	int rc = vg_region_trust(st, path, access, kind, want_mode, err, errlen);
	if (rc == 0 && ((size_t)st->st_size < sizeof(struct vg_region_hdr) || (size_t)st->st_size > VG_REGION_MAX_FILE)) {
		vg_err(err, errlen, "%s: not a vramguard region (size %lld bytes)", VG_QP(path), (long long)st->st_size);
		rc = -EINVAL;
	}
	if (rc == 0 && access != VG_OPEN_READ && vg_region_fs_check(fd, r->fs_note, sizeof(r->fs_note)) != 0) {
		vg_err(err, errlen, "refusing %s: %s", VG_QP(path), r->fs_note);
		rc = -EREMOTE;
	}
	return rc;
}

/* Map fd's size bytes (a writer shares the file; a reader takes a private copy) and check every header field, with
 * a truncation by the owner meanwhile caught (vg_fault_run). *mapp on success; else nothing stays mapped (but a
 * mapping vg_fault_run pinned) and err says why. */
static int vg_open_map(int fd, const char *path, size_t size, bool writable, int kind, void **mapp, char *err,
		       size_t errlen)
{
	void *map = writable ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : vg_region_copy(fd, size);
	if (map == MAP_FAILED) {
		int e = errno;
		if (e == ESTALE)
			vg_err(err, errlen, "%s was truncated while it was being read (it is shorter than its %zu "
			       "bytes now)", VG_QP(path), size);
		else
			vg_err(err, errlen, "cannot %s %s: %s", writable ? "map" : "read", VG_QP(path), strerror(e));
		return -e;
	}
	char why[200];
	struct vg_check_args ca = { map, size, why, sizeof(why) };
	bool pinned = false;
	int rc = writable ? vg_fault_run(map, size, vg_check_fn, &ca, &pinned) : vg_check_fn(&ca);
	if (rc == -ESTALE) {
		if (!pinned)
			munmap(map, size);
		vg_err(err, errlen, "%s was truncated while it was being checked (by its owner?): nothing was done with "
		       "it; try again", VG_QP(path));
		return rc;
	}
	if (rc == 0 && kind && ((const struct vg_region_hdr *)map)->kind != (uint32_t)kind) {
		snprintf(why, sizeof(why), "it is a %s, not a %s",
			 kind == VG_REGION_SHARED ? "process's control segment" : "shared region",
			 kind == VG_REGION_SHARED ? "shared region" : "control segment");
		rc = -EINVAL;
	}
	if (rc) {
		munmap(map, size);
		vg_err(err, errlen, "refusing %s: %s", VG_QP(path), why);
		return rc;
	}
	*mapp = map;
	return 0;
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
		void *map = NULL;
		int rc = vg_open_vet(r, fd, path, access, kind, want_mode, &st, err, errlen);
		if (rc == 0)
			rc = vg_open_map(fd, path, (size_t)st.st_size, writable, kind, &map, err, errlen);
		if (rc) {
			close(fd);
			return rc;
		}
		r->h = map;
		r->size = (size_t)st.st_size;
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

struct vg_guarded_args {
	struct vg_region *r;
	int (*fn)(struct vg_region *r, void *arg);
	void *arg;
};

static int vg_guarded_fn(void *arg)
{
	struct vg_guarded_args *a = arg;
	return a->fn(a->r, a->arg);
}

int vg_region_guarded(struct vg_region *r, int (*fn)(struct vg_region *r, void *arg), void *arg)
{
	if (!r->h)
		return fn(r, arg);
	struct vg_guarded_args a = { r, fn, arg };
	bool pinned = false;
	unsigned held = vg_lock_note_count(VG_RANK_REGION);
	int rc = vg_fault_run(r->h, r->size, vg_guarded_fn, &a, &pinned);
	if (rc == -ESTALE) {
		r->changed = true;
		r->pinned = pinned;
		vg_lock_note_reset(VG_RANK_REGION, held);      /* the lock it was taking or held is lost with the file */
	}
	return rc;
}

void vg_region_close(struct vg_region *r)
{
	if (r->h && !r->pinned)
		munmap(r->h, r->size);
	if (r->fd >= 0)
		close(r->fd);   /* drops our liveness lock, if we still hold one */
	r->h = NULL;
	r->fd = -1;
	r->slot = -1;
}

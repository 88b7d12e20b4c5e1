/* The per-GPU activity file (gpu_share.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/gpu_share.h"
#include "config/stat.h"

#define VG_GPU_SHARE_HDR 64     /* bytes before the slots (unused: room for a version) */

/* An OFD lock on byte i of the slots' area: cmd F_OFD_SETLK (type F_WRLCK) or F_OFD_GETLK. */
static int vg_gs_lock(int fd, int cmd, int i, struct flock *fl)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = F_WRLCK;
	fl->l_whence = SEEK_SET;
	fl->l_start = VG_GPU_SHARE_HDR + (off_t)i * 8;
	fl->l_len = 1;
	int r;
	while ((r = fcntl(fd, cmd, fl)) != 0 && errno == EINTR)
		;
	return r;
}

/* The file's name for uuid: only [A-Za-z0-9-] kept from it, so that it is a plain name in dir. */
static int vg_gs_path(char *path, size_t len, const char *dir, const char *uuid)
{
	char clean[64];
	size_t n = 0;
	for (const char *p = uuid; *p && n + 1 < sizeof(clean); p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-')
			clean[n++] = *p;
	clean[n] = 0;
	if (n == 0)
		return -EINVAL;
	int w = snprintf(path, len, "%s/%s%s", dir, VG_GPU_SHARE_PREFIX, clean);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* Open the file, made first if missing: O_NOFOLLOW and no O_CREAT on an existing name (fs.protected_regular
 * refuses that in a sticky directory for another user's file); a regular file only. */
static int vg_gs_open(const char *path)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
		if (fd >= 0)
			(void)fchmod(fd, 0666);         /* whatever the umask: every user's processes meet here */
		else if (errno == EEXIST)
			fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (vg_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int vg_gpu_share_join(struct vg_gpu_share *g, const char *dir, const char *uuid, char *why, size_t whylen)
{
	g->fd = -1;
	g->slot = -1;
	g->active = false;
	g->word = 0;
	g->live = g->dead = 0;
	char path[512];
	int r = vg_gs_path(path, sizeof(path), dir, uuid);
	if (r == 0 && (r = vg_gs_open(path)) >= 0) {
		int fd = r;
		struct flock fl;
		for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++) {
			if (vg_gs_lock(fd, F_OFD_SETLK, i, &fl) != 0)
				continue;
			uint32_t zero[2] = { 0, 0 };
			if (pwrite(fd, zero, sizeof(zero), VG_GPU_SHARE_HDR + (off_t)i * 8) != (ssize_t)sizeof(zero)) {
				r = -EIO;
				break;
			}
			g->fd = fd;
			g->slot = i;
			vg_gpu_share_check(g);
			return 0;
		}
		if (r >= 0)
			r = -EBUSY;
		close(fd);
	}
	snprintf(why, whylen, "%s: %s", path, r == -EBUSY ? "all 64 slots taken" : strerror(-r));
	return r;
}

void vg_gpu_share_set(struct vg_gpu_share *g, bool active)
{
	if (g->fd < 0 || g->active == active)
		return;
	uint32_t v = active;
	if (pwrite(g->fd, &v, sizeof(v), VG_GPU_SHARE_HDR + (off_t)g->slot * 8) == (ssize_t)sizeof(v))
		g->active = active;
}

/* Is slot i's lock held by another description now? */
static bool vg_gs_held(const struct vg_gpu_share *g, int i)
{
	struct flock fl;
	/* Another description's lock shows as F_WRLCK; a free byte, or our own lock, as F_UNLCK. */
	return vg_gs_lock(g->fd, F_OFD_GETLK, i, &fl) == 0 && fl.l_type != F_UNLCK;
}

/* Does slot i count: its lock held at the last check, or now, looked at once when the slot is first seen to say it
 * has work (or wants the GPU) since the last check? */
static bool vg_gs_live(struct vg_gpu_share *g, int i)
{
	uint64_t bit = (uint64_t)1 << i;
	if (!((g->live | g->dead) & bit))
		*(vg_gs_held(g, i) ? &g->live : &g->dead) |= bit;
	return g->live & bit;
}

unsigned vg_gpu_share_count(struct vg_gpu_share *g)
{
	if (g->fd < 0)
		return 1;
	uint32_t s[VG_GPU_SHARE_SLOTS * 2];
	ssize_t n = pread(g->fd, s, sizeof(s), VG_GPU_SHARE_HDR);
	unsigned count = 0;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS && (i + 1) * 8 <= n; i++)
		if (i != g->slot && s[2 * i] == 1 && vg_gs_live(g, i))
			count++;
	return count + 1;
}

void vg_gpu_share_set_tag(struct vg_gpu_share *g, uint32_t tag, bool wants)
{
	uint32_t w = tag ? (tag & ~VG_GPU_SHARE_WANTS) | (wants ? VG_GPU_SHARE_WANTS : 0) : 0;
	if (g->fd < 0 || g->word == w)
		return;
	if (pwrite(g->fd, &w, sizeof(w), VG_GPU_SHARE_HDR + (off_t)g->slot * 8 + 4) == (ssize_t)sizeof(w))
		g->word = w;
}

unsigned vg_gpu_share_count_tag(struct vg_gpu_share *g, uint32_t tag)
{
	tag &= ~VG_GPU_SHARE_WANTS;
	if (g->fd < 0 || tag == 0)
		return 1;
	uint32_t s[VG_GPU_SHARE_SLOTS * 2];
	ssize_t n = pread(g->fd, s, sizeof(s), VG_GPU_SHARE_HDR);
	unsigned count = 0;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS && (i + 1) * 8 <= n; i++)
		if (i != g->slot && s[2 * i + 1] == (tag | VG_GPU_SHARE_WANTS) && vg_gs_live(g, i))
			count++;
	return count + 1;
}

void vg_gpu_share_check(struct vg_gpu_share *g)
{
	if (g->fd < 0)
		return;
	uint64_t live = 0;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++)
		if (i != g->slot && vg_gs_held(g, i))
			live |= (uint64_t)1 << i;
	g->live = live;
	g->dead = 0;
}

void vg_gpu_share_leave(struct vg_gpu_share *g)
{
	if (g->fd < 0)
		return;
	vg_gpu_share_set(g, false);
	close(g->fd);   /* drops the lock */
	g->fd = -1;
	g->slot = -1;
}

/* Regions: the processes behind the slots. A process is its PID and start time; a member's liveness is the
 * open-file-description lock it holds on its slot for as long as it lives (region.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "accounting/region_impl.h"

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
	/* Cut short: never in the middle of a character (a label value that is not UTF-8 makes Prometheus refuse the
	 * exporter's whole scrape). A whole command line ends with its NUL, which no cut moves. */
	if ((size_t)n == len - 1)
		n = (ssize_t)vg_utf8_cut(out, (size_t)n);
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || (one_line && out[i] == '\n'))
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

pid_t vg_proc_inner_pid(pid_t pid, int *depth)
{
	char path[64], st[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fields = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (depth)
			*depth = 0;
		return pid;
	}
	ssize_t n = read(fd, st, sizeof(st) - 1);
	close(fd);
	st[n > 0 ? n : 0] = '\0';
	const char *ns = strstr(st, "\nNSpid:");
	long inner = pid;
	for (const char *q = ns ? ns + 7 : NULL; q && *q && *q != '\n';) {
		char *end;
		long v = strtol(q, &end, 10);
		if (end == q)
			break;
		inner = v;
		fields++;
		q = end;
	}
	if (depth)
		*depth = fields;
	return inner > 0 && inner <= INT32_MAX ? (pid_t)inner : pid;
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

int vg_region_control_path(const char *dir, pid_t pid, uint64_t start, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%sproc.%d.%llu", dir && *dir ? dir : VG_REGION_DIR, VG_REGION_PREFIX, (int)pid,
			 (unsigned long long)start);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
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
int vg_live_lock(int fd, uint32_t i, short type)
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
int vg_live_held(int fd, uint32_t i)
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
int vg_slot_life_of(const struct vg_region *r, uint32_t i, uint64_t pidns)
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

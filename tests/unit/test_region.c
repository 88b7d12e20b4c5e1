/* Unit tests for accounting/region.c: cross-process regions (paths, creation and validation of the file, atomic
 * charging between processes, reclaiming the shares of dead processes, lock owner death and timeouts, live limits,
 * control segments). Forks real processes; every region file lives in a private temporary directory. No CUDA. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accounting/region.h"
#include "config/config.h"
#include "tests/unit/unit.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define UUID_A "GPU-00000000-0000-0000-0000-00000000000a"
#define UUID_B "GPU-00000000-0000-0000-0000-00000000000b"
#define UUID_C "GPU-00000000-0000-0000-0000-00000000000c"

static char tdir[256];

/* How vg_region_open makes a region that does not exist yet. */
#define MAKE(k, m, n, s) (&(struct vg_region_make){ .kind = (k), .mode = (m), .name = (n), .spec = (s) })
/* The same, persistent (it outlives its members, as `vramguard region create` makes it). */
#define MAKE_P(k, m, n, s)                                                                                            \
	(&(struct vg_region_make){ .kind = (k), .mode = (m), .name = (n), .spec = (s), .flags = VG_REGION_PERSISTENT })
static char err[VG_ERR_MAX];

/* ---- helpers ---- */

static void tpath(char *out, const char *name)
{
	snprintf(out, 512, "%s/%s", tdir, name);
}

static int open_shared(struct vg_region *r, const char *path, const char *spec, bool *created)
{
	err[0] = '\0';
	return vg_region_open(r, path, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE(VG_REGION_SHARED, 0600, "test", spec),
			     created, err, sizeof(err));
}

/* An existing region of any kind, for writing, never created: to join it, or to administer it. */
static int attach(struct vg_region *r, const char *path)
{
	err[0] = '\0';
	return vg_region_open(r, path, VG_OPEN_JOIN, 0, NULL, NULL, err, sizeof(err));
}

static int admin(struct vg_region *r, const char *path)
{
	err[0] = '\0';
	return vg_region_open(r, path, VG_OPEN_ADMIN, 0, NULL, NULL, err, sizeof(err));
}

static int join_self(struct vg_region *r)
{
	err[0] = '\0';
	return vg_region_join(r, getpid(), vg_proc_start(getpid()), "test_region", NULL, err, sizeof(err));
}

/* Open, join and bind CUDA ordinal 0 to uuid: the region device index, or a negative number. */
static int setup(struct vg_region *r, const char *path, const char *spec, const char *uuid)
{
	if (open_shared(r, path, spec, NULL) != 0)
		return -1000;
	if (join_self(r) != 0)
		return -1001;
	return vg_region_bind(r, 0, uuid, 80 * GiB, VG_REGION_NONE);
}

static uint64_t dev_used(const struct vg_region *r, int idx)
{
	return atomic_load(&r->h->dev[idx].used);
}

static int slot_count(const struct vg_region *r, uint32_t state)
{
	int n = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		n += atomic_load(&r->h->slot[i].state) == state;
	return n;
}

static int free_slot(const struct vg_region *r)
{
	for (uint32_t i = 0; i < r->nslots; i++)
		if (atomic_load(&r->h->slot[i].state) == VG_SLOT_FREE)
			return (int)i;
	return -1;
}

/* Write an active slot by hand, the way another process would have, and add its usage to the device total. */
static void put_slot(struct vg_region *r, int i, pid_t pid, uint64_t start, uint64_t pidns, int idx, uint64_t used)
{
	struct vg_region_slot *s = &r->h->slot[i];
	s->pid = (int32_t)pid;
	s->start = start;
	s->pidns = pidns;
	snprintf(s->cmd, sizeof(s->cmd), "by hand");
	for (int d = 0; d < VG_REGION_DEVS; d++)
		atomic_store(&s->quota[d], VG_REGION_NONE);
	if (idx >= 0) {
		atomic_store(&s->used[idx], used);
		atomic_fetch_add(&r->h->dev[idx].used, used);
	}
	atomic_store(&s->state, VG_SLOT_ACTIVE);
}

/* Exit status of a child, 128 + signal if it was killed, -1 if waitpid fails. */
static int wait_child(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* fork() for the tests: the child dies with us, and nothing buffered is written twice. */
static pid_t xfork(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		abort();
	}
	if (p == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return p;
}

/* A child that only sleeps: a live process whose identity can be written into slots. */
static pid_t sleeper(void)
{
	pid_t p = xfork();
	if (p == 0) {
		for (;;)
			pause();
	}
	return p;
}

static void kill_wait(pid_t p)
{
	kill(p, SIGKILL);
	wait_child(p);
}

static int xpipe(int fd[2])
{
	if (pipe(fd) != 0) {
		perror("pipe");
		abort();
	}
	return 0;
}

static char read_byte(int fd)
{
	char c = 0;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	return c;
}

static void write_byte(int fd, char c)
{
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
}

/* The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), 0 if the process is gone; *threads gets field 20. */
static char proc_state_threads(pid_t pid, long *threads)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	char state = p[2];
	for (int field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	*threads = p ? strtol(p + 1, NULL, 10) : 0;
	return state;
}

static char proc_state(pid_t pid)
{
	long threads;
	return proc_state_threads(pid, &threads);
}

/* Wait (at most 5 s) until pid shows state Z, with every thread gone (exited) or with some left (only its main
 * thread has exited). The leader of a killed process turns Z while its other threads may still be on their way
 * out (a sanitizer runtime has its own). */
static bool wait_zombie(pid_t pid, bool exited)
{
	for (int i = 0; i < 5000; i++) {
		long t;
		if (proc_state_threads(pid, &t) == 'Z' && (exited ? t == 1 : t > 1))
			return true;
		usleep(1000);
	}
	return false;
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = unit_read_file(from, &len);
	unlink(to);
	if (!data || unit_write_file(to, data, len) != 0) {
		fprintf(stderr, "cannot copy %s to %s\n", from, to);
		abort();
	}
	chmod(to, 0600);
	free(data);
}

static int count_tmp_files(void)
{
	DIR *d = opendir(tdir);
	int n = 0;
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, ".vramguard.tmp.", 15) == 0;
	closedir(d);
	return n;
}

/* Run as root: open path as an ordinary user (USER_UID, group USER_GID) in a child; its result, err its reason. */
#define USER_UID 12345
#define USER_GID 12345
static int attach_as_user(const char *path, bool writable)
{
	int fd[2];
	xpipe(fd);
	pid_t p = xfork();
	if (p == 0) {
		struct vg_region r;
		close(fd[0]);
		if (setgroups(0, NULL) != 0 || setgid(USER_GID) != 0 || setuid(USER_UID) != 0)
			_exit(255);
		int rc = vg_region_open(&r, path, writable ? VG_OPEN_ADMIN : VG_OPEN_READ, 0, NULL, NULL, err, sizeof(err));
		if (write(fd[1], err, strlen(err) + 1) < 0)
			_exit(254);
		_exit(-rc);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = '\0';
	close(fd[0]);
	int st = wait_child(p);
	return st >= 254 ? -1000 : -st;
}

/* ---- 1. paths ---- */

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	for (const char *const *p = fake_env; p && *p; p += 2)
		if (strcmp(p[0], name) == 0)
			return p[1];
	return NULL;
}

static void test_paths(void)
{
	char out[512];
	CHECK(vg_region_path(NULL, "job", out, sizeof(out), err, sizeof(err)) == 0);
	CHECK_STR(out, "/dev/shm/vramguard.job");
	CHECK(vg_region_path("", "a-B_9.x", out, sizeof(out), err, sizeof(err)) == 0);
	CHECK_STR(out, "/dev/shm/vramguard.a-B_9.x");
	CHECK(vg_region_path("/run/x", "job", out, sizeof(out), err, sizeof(err)) == 0);
	CHECK_STR(out, "/run/x/vramguard.job");
	CHECK(vg_region_path(NULL, "/tmp/some/region", out, sizeof(out), err, sizeof(err)) == 0);
	CHECK_STR(out, "/tmp/some/region");
	char name63[64];
	memset(name63, 'n', 63);
	name63[63] = '\0';
	CHECK(vg_region_path(NULL, name63, out, sizeof(out), err, sizeof(err)) == 0);

	static const char *const bad[] = { "", "a/b", "..", ".", ".hidden", "proc.12.34", "a b", "a$b", "x\ny",
					   "caf\xc3\xa9", NULL };
	for (int i = 0; bad[i]; i++) {
		err[0] = '\0';
		out[0] = 'X';
		int rc = vg_region_path(NULL, bad[i], out, sizeof(out), err, sizeof(err));
		if (rc != -EINVAL || !err[0])
			UNIT_FAIL_("name '%s' accepted (rc %d)", bad[i], rc);
		else
			UNIT_PASS_(bad[i]);
	}
	char name64[65];
	memset(name64, 'n', 64);
	name64[64] = '\0';
	CHECK(vg_region_path(NULL, name64, out, sizeof(out), err, sizeof(err)) == -EINVAL);
	CHECK(vg_region_path(NULL, "/tmp/dir/", out, sizeof(out), err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "'/tmp/dir/'");
	CHECK(vg_region_path(NULL, "job", out, 12, err, sizeof(err)) == -EINVAL);      /* does not fit */
	char longpath[600];
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK(vg_region_path(NULL, longpath, out, sizeof(out), err, sizeof(err)) == -EINVAL);

	/* Control segments: DIR/vramguard.proc.PID.START. */
	CHECK(vg_region_control_path(NULL, 12, 34, out, sizeof(out)) == 0);
	CHECK_STR(out, "/dev/shm/vramguard.proc.12.34");
	CHECK(vg_region_control_path("/run/x", 12, 34, out, sizeof(out)) == 0);
	CHECK_STR(out, "/run/x/vramguard.proc.12.34");
	CHECK(vg_region_control_path("/run/x", 12, 34, out, 27) == -ENAMETOOLONG);
	CHECK(vg_region_control_path("/run/x", 12, 34, out, 28) == 0);

	/* The whole message, as the user sees it, quotes the bad value. */
	static struct vg_config cfg;
	const char *env1[] = { "VRAMGUARD_SHARED", "team/a", NULL };
	fake_env = env1;
	CHECK(vg_config_load(&cfg, fake_getenv, 0) == -EINVAL);
	CHECK_CONTAINS(cfg.error, "VRAMGUARD_SHARED 'team/a'");
	const char *env2[] = { "VRAMGUARD_SHARED", "proc.1.2", NULL };
	fake_env = env2;
	CHECK(vg_config_load(&cfg, fake_getenv, 0) == -EINVAL);
	CHECK_CONTAINS(cfg.error, "'proc.1.2'");
	const char *env3[] = { "VRAMGUARD_SHARED", "team-a", "VRAMGUARD_SHM_DIR", "/run/vg", NULL };
	fake_env = env3;
	CHECK(vg_config_load(&cfg, fake_getenv, 0) == 0);
	CHECK_STR(cfg.shared_path, "/run/vg/vramguard.team-a");
	fake_env = NULL;
}

/* ---- 2. create and open ---- */

static void test_create_open(void)
{
	char path[512], other[512];
	struct vg_region r, r2;
	bool created = false;

	tpath(path, "vramguard.one");
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, &created, err, sizeof(err)) == -ENOENT);
	CHECK_CONTAINS(err, path);
	CHECK(open_shared(&r, path, "1000", &created) == 0);
	CHECK(created);
	CHECK(r.h != NULL && r.kind == VG_REGION_SHARED && r.nslots == VG_REGION_SLOTS_DEFAULT && r.slot == -1);
	CHECK_EQ_U64(r.size, sizeof(struct vg_region_hdr) + VG_REGION_SLOTS_DEFAULT * sizeof(struct vg_region_slot));
	CHECK_STR(r.h->name, "test");
	CHECK_STR(r.h->spec, "1000");
	CHECK_STR(r.h->created_spec, "1000");
	CHECK(r.h->creator_pid == getpid());
	CHECK(r.h->dev[0].ordinal == -1 && atomic_load(&r.h->dev[0].limit) == VG_REGION_NONE);
	created = true;
	CHECK(open_shared(&r2, path, "other spec ignored", &created) == 0);
	CHECK(!created);
	CHECK_STR(r2.h->spec, "1000");                  /* the first creator's budget stands */
	vg_region_close(&r2);
	CHECK(r2.h == NULL);
	CHECK(count_tmp_files() == 0);

	/* Modes exactly as asked, whatever the umask. */
	struct stat st;
	mode_t old = umask(0077);
	tpath(other, "vramguard.m660");
	CHECK(vg_region_open(&r2, other, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE(VG_REGION_SHARED, 0660, "m", ""),
			     &created, err, sizeof(err)) == 0);
	CHECK(stat(other, &st) == 0 && (st.st_mode & 07777) == 0660);
	vg_region_close(&r2);
	umask(0);
	tpath(other, "vramguard.m600");
	CHECK(vg_region_open(&r2, other, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE(VG_REGION_SHARED, 0600, "m", ""),
			     &created, err, sizeof(err)) == 0);
	CHECK(stat(other, &st) == 0 && (st.st_mode & 07777) == 0600);
	vg_region_close(&r2);
	/* A mode that lets every user write is refused up front, not made and then refused by ourselves. */
	tpath(other, "vramguard.m666");
	CHECK(vg_region_open(&r2, other, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE(VG_REGION_SHARED, 0666, "m", ""),
			     &created, err, sizeof(err)) < 0);
	CHECK_CONTAINS(err, "0666");
	CHECK(access(other, F_OK) != 0);
	umask(old);

	/* Read-only: readable, but no joining. */
	CHECK(vg_region_open(&r2, path, VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(!r2.writable);
	CHECK(vg_region_join(&r2, getpid(), vg_proc_start(getpid()), "x", NULL, err, sizeof(err)) == -EBADF);
	CHECK(vg_region_reclaim(&r2) == 0);
	vg_region_close(&r2);

	/* A relative path is created next to itself (the temporary file too). */
	char cwd[512];
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(tdir) == 0);
	created = false;
	CHECK(open_shared(&r2, "vramguard.relative", "", &created) == 0 && created);
	vg_region_close(&r2);
	CHECK(access("vramguard.relative", F_OK) == 0);
	CHECK(chdir(cwd) == 0);

	/* A symbolic link is refused, even to a good region. */
	tpath(other, "vramguard.link");
	CHECK(symlink(path, other) == 0);
	CHECK(open_shared(&r2, other, "", &created) == -ELOOP);
	CHECK_CONTAINS(err, "symbolic link");
	CHECK_CONTAINS(err, other);
	CHECK(attach(&r2, other) == -ELOOP);
	unlink(other);

	/* Writable by every user: refused to a writer (as root, checked as an ordinary user in a child). */
	tpath(other, "vramguard.ww");
	copy_file(path, other);
	chmod(other, 0606);
	if (geteuid() != 0) {
		CHECK(attach(&r2, other) == -EPERM);
		CHECK_CONTAINS(err, "writable by every user");
		CHECK_CONTAINS(err, other);
	} else {
		CHECK(chmod(tdir, 0711) == 0);          /* let the user in */
		CHECK(chown(other, USER_UID, USER_GID) == 0);
		CHECK(attach_as_user(other, true) == -EPERM);
		CHECK_CONTAINS(err, "writable by every user");
		CHECK_CONTAINS(err, other);
		CHECK(attach_as_user(other, false) == 0);       /* reading trusts only the layout */
		/* Someone else's, group-writable for a group of ours: shared with us. */
		CHECK(chown(other, 4242, USER_GID) == 0);
		chmod(other, 0660);
		CHECK(attach_as_user(other, true) == 0);
		/* Root administers anyone's (vramguard top, limit set), but joins another user's only as a member of
		 * its group that asked for group sharing (VRAMGUARD_SHARED_MODE=0660). */
		chmod(other, 0600);
		CHECK(admin(&r2, other) == 0);
		vg_region_close(&r2);
		CHECK(attach(&r2, other) == -EPERM);
		CHECK_CONTAINS(err, "belongs to uid 4242");
		CHECK_CONTAINS(err, "refusing to join it");
		CHECK(chmod(tdir, 0700) == 0);
	}
	chmod(other, 0600);
	CHECK(admin(&r2, other) == 0);                  /* the copy itself is fine */
	vg_region_close(&r2);
	unlink(other);

	/* Ours but not a region. */
	size_t len;
	char *good = unit_read_file(path, &len);
	CHECK(good && len == r.size);
	char *junk = unit_xcalloc(1, len);
	unsigned seed = 1;
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		junk[i] = (char)(seed >> 16);
	}
	tpath(other, "vramguard.junk");
	CHECK(unit_write_file(other, junk, len) == 0);
	chmod(other, 0600);
	CHECK(attach(&r2, other) == -EINVAL);
	CHECK_CONTAINS(err, "bad magic");
	CHECK(unit_write_file(other, good, 100) == 0);         /* too small */
	CHECK(attach(&r2, other) == -EINVAL);
	CHECK_CONTAINS(err, other);
	CHECK(unit_write_file(other, "", 0) == 0);             /* empty */
	CHECK(attach(&r2, other) == -EINVAL);
	CHECK(unit_write_file(other, good, len) == 0);
	CHECK(truncate(other, 17 << 20) == 0);                  /* too big (sparse) */
	CHECK(attach(&r2, other) == -EINVAL);
	CHECK_CONTAINS(err, "size");
	unlink(other);
	CHECK(mkdir(other, 0700) == 0);                         /* a directory */
	CHECK(attach(&r2, other) < 0);
	CHECK(open_shared(&r2, other, "", &created) < 0);
	rmdir(other);
	free(junk);
	free(good);

	/* Kinds do not mix. */
	char ctl[512];
	tpath(ctl, "vramguard.proc.1.2");
	CHECK(vg_region_open(&r2, ctl, VG_OPEN_JOIN, VG_REGION_CONTROL, MAKE(VG_REGION_CONTROL, 0600, "", ""),
			     &created, err, sizeof(err)) == 0);
	CHECK(created && r2.kind == VG_REGION_CONTROL && r2.nslots == 1);
	vg_region_close(&r2);
	CHECK(open_shared(&r2, ctl, "", &created) == -EINVAL);
	CHECK_CONTAINS(err, "control segment");
	CHECK(r2.h == NULL);
	CHECK(vg_region_open(&r2, path, VG_OPEN_JOIN, VG_REGION_CONTROL, MAKE(VG_REGION_CONTROL, 0600, "", ""),
			     &created, err, sizeof(err)) ==
	      -EINVAL);
	CHECK_CONTAINS(err, "not a control segment");
	CHECK(attach(&r2, ctl) == 0 && r2.kind == VG_REGION_CONTROL);   /* kind 0: whatever it is */
	vg_region_close(&r2);
	vg_region_close(&r);
}

/* Concurrent creators: exactly one makes the file, everyone gets a valid region, no temporary file is left. The
 * region is persistent, so that the last one to leave does not remove it for the next to make it again (that race
 * is test_lifecycle_race's). */
static void test_create_race(void)
{
	enum { PROCS = 8, ROUNDS = 12 };
	int bad_rounds = 0;
	for (int round = 0; round < ROUNDS; round++) {
		char path[512], name[64];
		snprintf(name, sizeof(name), "vramguard.race%d", round);
		tpath(path, name);
		int go[2];
		xpipe(go);
		pid_t kids[PROCS];
		for (int k = 0; k < PROCS; k++) {
			kids[k] = xfork();
			if (kids[k] == 0) {
				close(go[1]);
				read_byte(go[0]);       /* everyone starts at once */
				struct vg_region r;
				bool created = false;
				char e[VG_ERR_MAX];
				int rc = vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE_P(VG_REGION_SHARED, 0600, "race", "1G"),
						     &created, e, sizeof(e));
				if (rc != 0) {
					fprintf(stderr, "creator: %s\n", e);
					_exit(10);
				}
				if (vg_region_check(r.h, r.size, e, sizeof(e)) != 0 || strcmp(r.h->spec, "1G") != 0)
					_exit(11);
				if (vg_region_join(&r, getpid(), vg_proc_start(getpid()), "race", NULL, e, sizeof(e)) != 0)
					_exit(12);
				vg_region_leave(&r);
				_exit(created ? 1 : 0);
			}
		}
		close(go[0]);
		close(go[1]);
		int creators = 0, failures = 0;
		for (int k = 0; k < PROCS; k++) {
			int st = wait_child(kids[k]);
			if (st == 1)
				creators++;
			else if (st != 0)
				failures++;
		}
		if (creators != 1 || failures != 0) {
			bad_rounds++;
			fprintf(stderr, "round %d: %d creators, %d failures\n", round, creators, failures);
		}
		struct vg_region r;
		CHECK(attach(&r, path) == 0 && slot_count(&r, VG_SLOT_ACTIVE) == 0);
		vg_region_close(&r);
	}
	CHECK(bad_rounds == 0);
	CHECK(count_tmp_files() == 0);
}

/* ---- 3. corruption ---- */

static char good_path[512], bad_path[512];

/* Copy the good region, overwrite len bytes at off, open it: the result, err holds the reason. */
static int corrupt(size_t off, const void *bytes, size_t len)
{
	copy_file(good_path, bad_path);
	int fd = open(bad_path, O_RDWR);
	if (fd < 0 || pwrite(fd, bytes, len, (off_t)off) != (ssize_t)len)
		abort();
	close(fd);
	struct vg_region r;
	int rc = attach(&r, bad_path);
	if (rc == 0)
		vg_region_close(&r);
	return rc;
}

static int corrupt_u32(size_t off, uint32_t v)
{
	return corrupt(off, &v, sizeof(v));
}

#define HDR(f) offsetof(struct vg_region_hdr, f)
#define SLOT(i, f) (HDR(slot) + (size_t)(i) * sizeof(struct vg_region_slot) + offsetof(struct vg_region_slot, f))
#define DEV(i, f) (HDR(dev) + (size_t)(i) * sizeof(struct vg_region_dev) + offsetof(struct vg_region_dev, f))

#define EXPECT_REFUSED(call, want_rc, words)                                                                          \
	do {                                                                                                          \
		int rc_ = (call);                                                                                     \
		if (rc_ != (want_rc))                                                                                 \
			UNIT_FAIL_("%s: rc %d, want %d (%s)", #call, rc_, (int)(want_rc), err);                      \
		else                                                                                                  \
			UNIT_PASS_(#call);                                                                            \
		CHECK_CONTAINS(err, words);                                                                           \
		CHECK_CONTAINS(err, "refusing ");                                                                     \
	} while (0)

static void test_corruption(void)
{
	struct vg_region r;
	tpath(good_path, "vramguard.good");
	tpath(bad_path, "vramguard.bad");
	int idx = setup(&r, good_path, "1000", UUID_A);
	CHECK(idx == 0);
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);
	/* The good file, as a live region leaves it, opens. */
	CHECK(corrupt(HDR(name), "test", 5) == 0);
	uint64_t magic = 0x1122334455667788ull;
	EXPECT_REFUSED(corrupt(HDR(magic), &magic, 8), -EINVAL, "bad magic");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 8), -EPROTO, "version 8");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 6), -EPROTO, "version 6");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 5), -EPROTO, "version 5");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 4), -EPROTO, "version 4");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 3), -EPROTO, "version 3");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 2), -EPROTO, "version 2");
	EXPECT_REFUSED(corrupt_u32(HDR(version), 1), -EPROTO, "version 1");
	EXPECT_REFUSED(corrupt_u32(HDR(hdr_size), sizeof(struct vg_region_hdr) + 8), -EPROTO, "layout");
	EXPECT_REFUSED(corrupt_u32(HDR(slot_size), sizeof(struct vg_region_slot) - 8), -EPROTO, "layout");
	EXPECT_REFUSED(corrupt_u32(HDR(dev_size), 1), -EPROTO, "layout");
	EXPECT_REFUSED(corrupt_u32(HDR(mutex_size), 48), -EPROTO, "layout");
	EXPECT_REFUSED(corrupt_u32(HDR(ndevs), 8), -EPROTO, "layout");
	EXPECT_REFUSED(corrupt_u32(HDR(kind), 7), -EINVAL, "kind 7");
	EXPECT_REFUSED(corrupt_u32(HDR(kind), VG_REGION_CONTROL), -EINVAL, "1024 slots");  /* a control has 1 */
	EXPECT_REFUSED(corrupt_u32(HDR(nslots), 0), -EINVAL, "0 slots");
	EXPECT_REFUSED(corrupt_u32(HDR(nslots), VG_REGION_SLOTS_MAX + 1), -EINVAL, "16385 slots");
	EXPECT_REFUSED(corrupt_u32(HDR(flags), 2), -EINVAL, "flags");
	EXPECT_REFUSED(corrupt_u32(SLOT(3, live_lock), 2), -EINVAL, "slot 3");
	EXPECT_REFUSED(corrupt_u32(HDR(nslots), 64), -EINVAL, "size");      /* file_size no longer matches */
	uint64_t fsz = r.size + 64;
	EXPECT_REFUSED(corrupt(HDR(file_size), &fsz, 8), -EINVAL, "size");
	/* The file itself shorter or longer than its header says. */
	copy_file(good_path, bad_path);
	CHECK(truncate(bad_path, (off_t)r.size - 8) == 0);
	struct vg_region r2;
	EXPECT_REFUSED(attach(&r2, bad_path), -EINVAL, "size");
	copy_file(good_path, bad_path);
	CHECK(truncate(bad_path, (off_t)r.size + 4096) == 0);
	EXPECT_REFUSED(attach(&r2, bad_path), -EINVAL, "size");

	char fill[VG_REGION_SPEC_MAX];
	memset(fill, 'A', sizeof(fill));
	EXPECT_REFUSED(corrupt(HDR(name), fill, VG_REGION_NAME_MAX), -EINVAL, "unterminated");
	EXPECT_REFUSED(corrupt(HDR(created_spec), fill, VG_REGION_SPEC_MAX), -EINVAL, "unterminated");
	EXPECT_REFUSED(corrupt(HDR(spec), fill, VG_REGION_SPEC_MAX), -EINVAL, "unterminated");
	EXPECT_REFUSED(corrupt(HDR(compute_spec), fill, VG_REGION_SPEC_MAX), -EINVAL, "unterminated");
	EXPECT_REFUSED(corrupt(DEV(3, uuid), fill, VG_REGION_UUID_MAX), -EINVAL, "device entry 3");
	EXPECT_REFUSED(corrupt_u32(DEV(5, ordinal), (uint32_t)-2), -EINVAL, "device entry 5");
	EXPECT_REFUSED(corrupt_u32(DEV(0, ordinal), VG_MAX_DEVICES), -EINVAL, "device entry 0");
	EXPECT_REFUSED(corrupt(SLOT(7, cmd), fill, VG_REGION_CMD_MAX), -EINVAL, "slot 7");
	EXPECT_REFUSED(corrupt(SLOT(9, limit_spec), fill, VG_REGION_SPEC_MAX), -EINVAL, "slot 9");
	EXPECT_REFUSED(corrupt(SLOT(10, compute_spec), fill, VG_REGION_SPEC_MAX), -EINVAL, "slot 10");
	EXPECT_REFUSED(corrupt_u32(SLOT(11, state), 2), -EINVAL, "slot 11");
	EXPECT_REFUSED(corrupt_u32(SLOT(13, state), VG_SLOT_ACTIVE), -EINVAL, "slot 13");     /* pid 0 */
	/* Our own slot is active: make its pid 0, then negative. */
	EXPECT_REFUSED(corrupt_u32(SLOT(r.slot, pid), 0), -EINVAL, "slot 0");
	EXPECT_REFUSED(corrupt_u32(SLOT(r.slot, pid), (uint32_t)-5), -EINVAL, "slot 0");
	/* The last slot's last byte: the whole file is checked. */
	EXPECT_REFUSED(corrupt(SLOT(VG_REGION_SLOTS_DEFAULT - 1, compute_spec), fill, VG_REGION_SPEC_MAX), -EINVAL,
		       "slot 1023");

	/* vg_region_check on memory directly. */
	char *buf = unit_xcalloc(1, r.size);
	memcpy(buf, r.h, r.size);
	CHECK(vg_region_check(buf, r.size, err, sizeof(err)) == 0);
	CHECK(vg_region_check(buf, r.size - 1, err, sizeof(err)) == -EINVAL);
	CHECK(vg_region_check(buf, 16, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "too small");
	free(buf);
	unlink(bad_path);
	vg_region_leave(&r);
	vg_region_close(&r);
}

/* ---- 4. atomic charging across processes ---- */

#define CHARGE_KIDS 6

static int charge_child(const char *path, unsigned seed, int iters, int gofd)
{
	struct vg_region r;
	char e[VG_ERR_MAX];
	if (vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) != 0)
		return 100;
	if (vg_region_join(&r, getpid(), vg_proc_start(getpid()), "charge", NULL, e, sizeof(e)) != 0)
		return 101;
	int idx = vg_region_bind(&r, 0, UUID_A, 80 * GiB, VG_REGION_NONE);
	if (idx < 0)
		return 102;
	uint64_t lim = atomic_load(&r.h->dev[idx].limit);
	read_byte(gofd);
	uint64_t held[256], mine = 0;
	int n = 0, bad = 0;
	for (int i = 0; i < iters; i++) {
		seed = seed * 1103515245u + 12345u;
		if (n == 256 || (n > 0 && (seed >> 16) % 5 < 2)) {
			int k = (int)((seed >> 8) % (unsigned)n);
			vg_region_release(&r, 0, held[k]);
			mine -= held[k];
			held[k] = held[--n];
		} else {
			uint64_t sz = ((seed >> 16) % 7 + 1) * MiB, u = 0, l = 0;
			int rc = vg_region_reserve(&r, 0, sz, &u, &l);
			if (rc == 0) {
				held[n++] = sz;
				mine += sz;
				if (atomic_load(&r.h->dev[idx].used) > lim)
					bad |= 1;       /* over the budget, seen from outside the lock */
			} else if (rc == -ENOSPC) {
				if (u + sz <= l || l != lim)
					bad |= 2;       /* denied although it fitted */
			} else {
				bad |= 4;
			}
		}
		if (atomic_load(&r.h->slot[r.slot].used[idx]) != mine)
			bad |= 8;               /* our share is exactly what we hold */
	}
	while (n > 0)
		vg_region_release(&r, 0, held[--n]);
	if (atomic_load(&r.h->slot[r.slot].used[idx]) != 0)
		bad |= 16;
	vg_region_leave(&r);
	vg_region_close(&r);
	return bad;
}

static void test_charging(void)
{
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.charge");
	CHECK(open_shared(&r, path, UUID_A ":1000", NULL) == 0);
	CHECK(join_self(&r) == 0);      /* a member throughout: a child that leaves early does not remove the region */
	int go[2];
	xpipe(go);
	pid_t kids[CHARGE_KIDS];
	for (int k = 0; k < CHARGE_KIDS; k++) {
		kids[k] = xfork();
		if (kids[k] == 0) {
			close(go[1]);
			_exit(charge_child(path, 7919u * (unsigned)(k + 1), 2500, go[0]));
		}
	}
	close(go[0]);
	close(go[1]);
	for (int k = 0; k < CHARGE_KIDS; k++) {
		int st = wait_child(kids[k]);
		if (st != 0)
			UNIT_FAIL_("charging child %d exited with %d (1 over budget, 2 wrong denial, 4 error, 8/16 share)", k,
				   st);
		else
			UNIT_PASS_("charging child exited 0");
	}
	CHECK_STR(r.h->dev[0].uuid, UUID_A);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].limit), 1000 * MiB);
	CHECK_EQ_U64(dev_used(&r, 0), 0);
	CHECK(atomic_load(&r.h->dev[0].peak) <= 1000 * MiB);
	CHECK(atomic_load(&r.h->dev[0].peak) > 900 * MiB);     /* the budget was really contended */
	CHECK(atomic_load(&r.h->dev[0].denied) > 0);
	CHECK(slot_count(&r, VG_SLOT_ACTIVE) == 1);     /* ours */
	vg_region_leave(&r);
	vg_region_close(&r);
}

/* Children that never release and never leave: what they were granted adds up to what the region says. */
static void test_charging_hold(void)
{
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.hold");
	CHECK(open_shared(&r, path, "1000", NULL) == 0);
	int go[2], res[2], hold[2];
	xpipe(go);
	xpipe(res);
	xpipe(hold);
	pid_t kids[CHARGE_KIDS];
	for (int k = 0; k < CHARGE_KIDS; k++) {
		kids[k] = xfork();
		if (kids[k] == 0) {
			close(go[1]);
			close(res[0]);
			close(hold[1]);
			struct vg_region c;
			char e[VG_ERR_MAX];
			uint64_t got = 0;
			unsigned seed = 104729u * (unsigned)(k + 1);
			if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) ||
			    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "hold", NULL, e, sizeof(e)) ||
			    vg_region_bind(&c, 0, UUID_B, 80 * GiB, VG_REGION_NONE) < 0)
				_exit(100);
			read_byte(go[0]);
			for (int i = 0; i < 400; i++) {
				seed = seed * 1103515245u + 12345u;
				uint64_t sz = ((seed >> 16) % 7 + 1) * MiB;
				int rc = vg_region_reserve(&c, 0, sz, NULL, NULL);
				if (rc == 0)
					got += sz;
				else if (rc != -ENOSPC)
					_exit(101);
			}
			if (write(res[1], &got, sizeof(got)) != sizeof(got))
				_exit(102);
			close(res[1]);
			/* Stay alive until the parent has looked: a dead process's share is fair game for the others'
			 * reclaim, and the parent's check would not hold. */
			read_byte(hold[0]);
			_exit(0);               /* without leaving: the share stays until reclaimed */
		}
	}
	close(go[0]);
	close(go[1]);
	close(res[1]);
	uint64_t sum = 0, got;
	int reports = 0;
	while (reports < CHARGE_KIDS && read(res[0], &got, sizeof(got)) == sizeof(got)) {
		sum += got;
		reports++;
	}
	close(res[0]);
	close(hold[0]);
	CHECK(reports == CHARGE_KIDS);
	CHECK(sum <= 1000 * MiB);
	CHECK(sum >= 994 * MiB);        /* 2400 tries of 1..7 MiB fill it up to the last MiB */
	CHECK_EQ_U64(dev_used(&r, 0), sum);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].peak), sum);
	CHECK(slot_count(&r, VG_SLOT_ACTIVE) == CHARGE_KIDS);
	close(hold[1]);
	for (int k = 0; k < CHARGE_KIDS; k++)
		CHECK(wait_child(kids[k]) == 0);
	CHECK_EQ_U64(dev_used(&r, 0), sum);             /* exited without leaving: nobody has reclaimed yet */
	uint64_t before = atomic_load(&r.h->reclaimed);
	CHECK(vg_region_reclaim(&r) == CHARGE_KIDS);
	CHECK_EQ_U64(atomic_load(&r.h->reclaimed), before + CHARGE_KIDS);
	CHECK_EQ_U64(dev_used(&r, 0), 0);
	CHECK(slot_count(&r, VG_SLOT_ACTIVE) == 0);
	vg_region_close(&r);
}

/* ---- 5. SIGKILL, zombies, and a process whose main thread exited ---- */

/* A child that joins, reserves mb MiB on UUID_C, says 'r' on fd and sleeps. */
static pid_t holder(const char *path, uint64_t mb, int fd)
{
	pid_t p = xfork();
	if (p == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) ||
		    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "holder", NULL, e, sizeof(e)) ||
		    vg_region_bind(&c, 0, UUID_C, 80 * GiB, VG_REGION_NONE) < 0 ||
		    vg_region_reserve(&c, 0, mb * MiB, NULL, NULL) != 0)
			write_byte(fd, 'x');
		else
			write_byte(fd, 'r');
		for (;;)
			pause();
	}
	return p;
}

static void *thread_pause(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void test_sigkill(void)
{
	char path[512];
	struct vg_region r;
	int pfd[2];
	uint64_t used = 0, limit = 0;
	tpath(path, "vramguard.kill");
	int idx = setup(&r, path, "1000", UUID_C);
	CHECK(idx >= 0);
	xpipe(pfd);

	pid_t kid = holder(path, 600, pfd[1]);
	CHECK(read_byte(pfd[0]) == 'r');
	CHECK(vg_region_reserve(&r, 0, 500 * MiB, &used, &limit) == -ENOSPC);
	CHECK_EQ_U64(used, 600 * MiB);
	CHECK_EQ_U64(limit, 1000 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[idx].denied), 1);
	CHECK(vg_region_find_pid(&r, kid) >= 0);
	uint64_t before = atomic_load(&r.h->reclaimed);
	kill_wait(kid);
	CHECK(vg_region_find_pid(&r, kid) == -1);
	/* The would-deny path reclaims the dead share and then grants. */
	CHECK(vg_region_reserve(&r, 0, 500 * MiB, &used, &limit) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->reclaimed), before + 1);
	CHECK_EQ_U64(dev_used(&r, idx), 500 * MiB);
	CHECK(vg_region_reclaim(&r) == 0);
	vg_region_release(&r, 0, 500 * MiB);
	CHECK_EQ_U64(dev_used(&r, idx), 0);

	/* Killed but not reaped yet (a zombie): its memory went when it exited, so it counts as dead. */
	kid = holder(path, 600, pfd[1]);
	CHECK(read_byte(pfd[0]) == 'r');
	kill(kid, SIGKILL);
	CHECK(wait_zombie(kid, true));
	before = atomic_load(&r.h->reclaimed);
	CHECK(vg_region_reserve(&r, 0, 500 * MiB, NULL, NULL) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->reclaimed), before + 1);
	CHECK(proc_state(kid) == 'Z');                  /* still unreaped */
	wait_child(kid);
	vg_region_release(&r, 0, 500 * MiB);

	/* A process whose main thread called pthread_exit() while another thread lives shows state Z in
	 * /proc/PID/stat too, but it is alive and still holds its memory: its share must stay. */
	kid = xfork();
	if (kid == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		pthread_t t;
		if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) ||
		    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "threads", NULL, e, sizeof(e)) ||
		    vg_region_bind(&c, 0, UUID_C, 80 * GiB, VG_REGION_NONE) < 0 ||
		    vg_region_reserve(&c, 0, 300 * MiB, NULL, NULL) != 0 ||
		    pthread_create(&t, NULL, thread_pause, NULL) != 0)
			write_byte(pfd[1], 'x');
		else
			write_byte(pfd[1], 'r');
		pthread_exit(NULL);
	}
	CHECK(read_byte(pfd[0]) == 'r');
	CHECK(wait_zombie(kid, false));
	CHECK(vg_region_reclaim(&r) == 0);
	CHECK_EQ_U64(dev_used(&r, idx), 300 * MiB);
	CHECK(vg_region_reserve(&r, 0, 800 * MiB, NULL, NULL) == -ENOSPC);
	CHECK_EQ_U64(dev_used(&r, idx), 300 * MiB);
	CHECK(vg_region_find_pid(&r, kid) >= 0);
	kill_wait(kid);
	CHECK(vg_region_reclaim(&r) == 1);
	CHECK_EQ_U64(dev_used(&r, idx), 0);

	close(pfd[0]);
	close(pfd[1]);
	vg_region_leave(&r);
	vg_region_close(&r);
}

/* ---- 6. PID reuse, namespaces, exec ---- */

static void test_pid_reuse(void)
{
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.reuse");
	int idx = setup(&r, path, "1000", UUID_A);
	CHECK(idx >= 0);
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);
	pid_t me = getpid();
	uint64_t start = vg_proc_start(me), ns = vg_proc_pidns();
	CHECK(start > 0);
	CHECK(ns > 0);
	CHECK(vg_region_find_pid(&r, me) == r.slot);

	/* A live PID with another start time: another process now has that PID, the share is reclaimed. */
	int i = free_slot(&r);
	CHECK(i >= 0 && i != r.slot);
	put_slot(&r, i, me, start + 12345, ns, idx, 100 * MiB);
	CHECK_EQ_U64(dev_used(&r, idx), 110 * MiB);
	CHECK(vg_region_find_pid(&r, me) == r.slot);    /* the stale slot is not "us" */
	uint64_t before = atomic_load(&r.h->reclaimed);
	CHECK(vg_region_reclaim(&r) == 1);
	CHECK_EQ_U64(atomic_load(&r.h->reclaimed), before + 1);
	CHECK_EQ_U64(dev_used(&r, idx), 10 * MiB);
	CHECK(atomic_load(&r.h->slot[i].state) == VG_SLOT_FREE);

	/* The same live PID with its right start time: kept. */
	pid_t kid = sleeper();
	uint64_t kstart = vg_proc_start(kid);
	CHECK(kstart > 0);
	put_slot(&r, i, kid, kstart, ns, idx, 100 * MiB);
	CHECK(vg_region_reclaim(&r) == 0);
	CHECK(vg_region_find_pid(&r, kid) == i);
	CHECK_EQ_U64(dev_used(&r, idx), 110 * MiB);
	kill_wait(kid);
	CHECK(vg_region_find_pid(&r, kid) == -1);
	/* Now dead, but written from another PID namespace: we cannot judge it, so it stays. */
	r.h->slot[i].pidns = ns + 1;
	CHECK(vg_region_reclaim(&r) == 0);
	CHECK(atomic_load(&r.h->slot[i].state) == VG_SLOT_ACTIVE);
	/* A slot that does not say its namespace is judged as ours. */
	r.h->slot[i].pidns = 0;
	CHECK(vg_region_reclaim(&r) == 1);
	CHECK_EQ_U64(dev_used(&r, idx), 10 * MiB);

	/* exec keeps PID and start time: joining again replaces the slot of the old image, and its usage goes. The
	 * exec unmapped the old image's region and closed its descriptor (close-on-exec): its liveness lock is gone. */
	struct vg_region r2;
	int old = r.slot;
	vg_region_close(&r);
	CHECK(attach(&r2, path) == 0);
	CHECK(vg_region_join(&r2, me, start, "after exec", NULL, err, sizeof(err)) == 0);
	CHECK(r2.slot == old);                          /* the first free slot: the old one */
	CHECK_EQ_U64(atomic_load(&r2.h->slot[old].used[idx]), 0);
	CHECK_EQ_U64(dev_used(&r2, idx), 0);
	CHECK_STR(r2.h->slot[old].cmd, "after exec");
	CHECK(slot_count(&r2, VG_SLOT_ACTIVE) == 1);
	vg_region_leave(&r2);
	CHECK(slot_count(&r2, VG_SLOT_ACTIVE) == 0);
	CHECK(access(path, F_OK) != 0);                 /* its last member left: the region is removed */
	vg_region_close(&r2);
}

/* ---- 7. the lock's owner dies inside the critical section ---- */

static void test_owner_death(void)
{
#if defined(__SANITIZE_THREAD__)
	/* TSan's pthread_mutex_timedlock does not handle EOWNERDEAD (its pthread_mutex_lock does): it would report
	 * the repaired lock's unlock as "unlock of an unlocked mutex". */
	fprintf(stderr, "skipped the lock owner death test under ThreadSanitizer\n");
	return;
#endif
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.death");
	int idx = setup(&r, path, "1000", UUID_A);
	CHECK(idx >= 0);
	CHECK(vg_region_reserve(&r, 0, 100 * MiB, NULL, NULL) == 0);
	pid_t kid = xfork();
	if (kid == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) ||
		    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "dies", NULL, e, sizeof(e)) ||
		    vg_region_bind(&c, 0, UUID_A, 80 * GiB, VG_REGION_NONE) != idx ||
		    vg_region_reserve(&c, 0, 200 * MiB, NULL, NULL) != 0 || pthread_mutex_lock(&c.h->lock) != 0)
			_exit(1);
		/* Half an update: the slot says 250 MiB, the total is garbage. */
		atomic_store(&c.h->slot[c.slot].used[idx], 250 * MiB);
		atomic_store(&c.h->dev[idx].used, 12345);
		_exit(0);       /* holding the lock */
	}
	CHECK(wait_child(kid) == 0);
	CHECK_EQ_U64(dev_used(&r, idx), 12345);
	/* The next locker gets EOWNERDEAD, repairs the total from the slots and goes on. */
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);
	CHECK_EQ_U64(dev_used(&r, idx), 360 * MiB);     /* ours 110 + the dead one's 250 */
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);     /* the lock is usable again */
	CHECK(vg_region_reclaim(&r) == 1);
	CHECK_EQ_U64(dev_used(&r, idx), 120 * MiB);
	vg_region_leave(&r);
	CHECK_EQ_U64(dev_used(&r, idx), 0);
	vg_region_close(&r);
}

/* ---- 8. the lock is held too long ---- */

struct timeout_call {
	struct vg_region *r;
	int what, rc;
	char err[VG_ERR_MAX];
};

static void *timeout_thread(void *arg)
{
	struct timeout_call *c = arg;
	switch (c->what) {
	case 0:
		c->rc = vg_region_reserve(c->r, 0, 10 * MiB, NULL, NULL);
		break;
	case 1:
		vg_region_release(c->r, 0, 100 * MiB);
		break;
	case 2:
		usleep(100000);         /* after the release has recorded its debt */
		vg_region_force(c->r, 0, 5 * MiB);
		break;
	case 3:
		c->rc = vg_region_join(c->r, getpid(), vg_proc_start(getpid()), "late", NULL, c->err, sizeof(c->err));
		break;
	}
	return NULL;
}

static void test_lock_timeout(void)
{
	char path[512];
	struct vg_region r, r2;
	tpath(path, "vramguard.timeout");
	int idx = setup(&r, path, "1000", UUID_A);
	CHECK(idx >= 0);
	CHECK(vg_region_reserve(&r, 0, 100 * MiB, NULL, NULL) == 0);
	CHECK(attach(&r2, path) == 0);
	int locked[2], release[2];
	xpipe(locked);
	xpipe(release);
	pid_t kid = xfork();
	if (kid == 0) {
		/* A process that holds the lock and does not let go (stopped, or stuck). */
		if (pthread_mutex_lock(&r.h->lock) != 0)
			_exit(1);
		write_byte(locked[1], 'L');
		read_byte(release[0]);
		pthread_mutex_unlock(&r.h->lock);
		_exit(0);
	}
	CHECK(read_byte(locked[0]) == 'L');
	/* Four calls at once, each gives up after VG_REGION_LOCK_TIMEOUT_MS. */
	struct timeout_call calls[4] = { { &r, 0, 1, "" }, { &r, 1, 1, "" }, { &r, 2, 1, "" }, { &r2, 3, 1, "" } };
	pthread_t th[4];
	for (int k = 0; k < 4; k++)
		CHECK(pthread_create(&th[k], NULL, timeout_thread, &calls[k]) == 0);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	CHECK(calls[0].rc == -ETIMEDOUT);
	CHECK(calls[3].rc == -ETIMEDOUT);
	CHECK_CONTAINS(calls[3].err, "does not let go");
	CHECK(r2.slot == -1);
	/* The release is owed (less the forced charge that cancelled against it); nothing changed in the file. */
	CHECK_EQ_U64(atomic_load(&r.debt[idx]), 95 * MiB);
	CHECK_EQ_U64(dev_used(&r, idx), 100 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[r.slot].used[idx]), 100 * MiB);
	write_byte(release[1], 'U');
	CHECK(wait_child(kid) == 0);
	/* The next lock pays the debt. */
	CHECK(vg_region_reserve(&r, 0, 1 * MiB, NULL, NULL) == 0);
	CHECK_EQ_U64(atomic_load(&r.debt[idx]), 0);
	CHECK_EQ_U64(dev_used(&r, idx), 6 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[r.slot].used[idx]), 6 * MiB);
	CHECK(join_self(&r2) == 0);                     /* r2 is this process too: replaces r's slot */
	vg_region_leave(&r2);
	vg_region_close(&r2);
	CHECK_EQ_U64(dev_used(&r, idx), 0);
	for (int k = 0; k < 2; k++) {
		close(locked[k]);
		close(release[k]);
	}
	vg_region_close(&r);
}

/* ---- 9. live limits ---- */

struct changed_arg {
	struct vg_region *r;
	pthread_barrier_t *b;
	int fired;
};

static void *changed_thread(void *arg)
{
	struct changed_arg *a = arg;
	pthread_barrier_wait(a->b);
	a->fired = vg_region_limit_changed(a->r);
	return NULL;
}

static void test_live_limits(void)
{
	char path[512];
	struct vg_region r, r2;
	uint64_t used, limit, avail;
	tpath(path, "vramguard.limits");
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE_P(VG_REGION_SHARED, 0600, "limits", "1000"),
			     NULL, err, sizeof(err)) == 0);       /* persistent: it is joined again after its last leave */
	vg_region_close(&r);
	int a = setup(&r, path, "1000", UUID_A);
	int b = vg_region_bind(&r, 1, UUID_B, 80 * GiB, 4 * GiB);
	CHECK(a == 0 && b == 1);
	CHECK(vg_region_bind(&r, 1, UUID_B, 80 * GiB, 3 * GiB) == 1);  /* again: same device, quota updated */
	CHECK_EQ_U64(atomic_load(&r.h->slot[r.slot].quota[b]), 3 * GiB);
	CHECK(r.h->dev[b].ordinal == 1);
	CHECK(attach(&r2, path) == 0);
	CHECK(!vg_region_limit_changed(&r));
	CHECK(!vg_region_limit_changed(&r2));
	CHECK(vg_region_reserve(&r, 0, 1500 * MiB, &used, &limit) == -ENOSPC);
	CHECK_EQ_U64(limit, 1000 * MiB);
	CHECK(vg_region_avail(&r, 0, &avail, &limit) && avail == 1000 * MiB && limit == 1000 * MiB);

	/* Raise: what failed now fits. Every handle hears of it once. */
	uint32_t seq = atomic_load(&r.h->limit_seq);
	CHECK(vg_region_set_limit(&r2, "2000", err, sizeof(err)) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->limit_seq), seq + 1);
	CHECK_STR(r.h->spec, "2000");
	CHECK_STR(r.h->created_spec, "1000");
	CHECK_EQ_U64(atomic_load(&r.h->dev[a].limit), 2000 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[b].limit), 2000 * MiB);
	CHECK(vg_region_limit_changed(&r));
	CHECK(!vg_region_limit_changed(&r));
	CHECK(vg_region_limit_changed(&r2));
	CHECK(!vg_region_limit_changed(&r2));
	CHECK(vg_region_reserve(&r, 0, 1500 * MiB, NULL, NULL) == 0);

	/* Lower below the usage: nothing is taken away, nothing more is granted. */
	CHECK(vg_region_set_limit(&r, "1000", err, sizeof(err)) == 0);
	CHECK_EQ_U64(dev_used(&r, a), 1500 * MiB);
	CHECK(vg_region_reserve(&r, 0, 1 * MiB, &used, &limit) == -ENOSPC);
	CHECK_EQ_U64(used, 1500 * MiB);
	CHECK_EQ_U64(limit, 1000 * MiB);
	CHECK(vg_region_avail(&r, 0, &avail, &limit) && avail == 0);
	CHECK_EQ_U64(dev_used(&r, a), 1500 * MiB);
	vg_region_release(&r, 0, 1500 * MiB);
	CHECK(vg_region_limit_changed(&r));

	/* Two threads of one process look at once: one of them logs it. */
	int once = 0;
	for (int round = 0; round < 50; round++) {
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, 2);
		CHECK(vg_region_set_limit(&r2, round % 2 ? "1000" : "1100", err, sizeof(err)) == 0);
		struct changed_arg x = { &r, &bar, 0 }, y = { &r, &bar, 0 };
		pthread_t tx, ty;
		pthread_create(&tx, NULL, changed_thread, &x);
		pthread_create(&ty, NULL, changed_thread, &y);
		pthread_join(tx, NULL);
		pthread_join(ty, NULL);
		pthread_barrier_destroy(&bar);
		once += x.fired + y.fired == 1;
	}
	CHECK(once == 50);
	/* Two changes before anyone looks: one notice. */
	CHECK(vg_region_set_limit(&r2, "1000", err, sizeof(err)) == 0);
	CHECK(vg_region_set_limit(&r2, "1000", err, sizeof(err)) == 0);
	CHECK(vg_region_limit_changed(&r));
	CHECK(!vg_region_limit_changed(&r));

	/* Bad specs change nothing. */
	seq = atomic_load(&r.h->limit_seq);
	CHECK(vg_region_set_limit(&r, "12XB", err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "XB");
	CHECK(strncmp(err, "vramguard: error: ", 18) != 0);     /* the caller adds its own prefix */
	char toolong[400];
	memset(toolong, '1', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	CHECK(vg_region_set_limit(&r, toolong, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "too long");
	CHECK(vg_region_set_limit(&r, "", err, sizeof(err)) == -EINVAL);
	CHECK_EQ_U64(atomic_load(&r.h->limit_seq), seq);
	CHECK_STR(r.h->spec, "1000");
	CHECK(!vg_region_limit_changed(&r));

	/* Keyed specs: "0:" is the GPU registered with ordinal 0, a UUID key that GPU; the others keep theirs. */
	CHECK(vg_region_set_limit(&r, "0:3G", err, sizeof(err)) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[a].limit), 3 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[b].limit), 1000 * MiB);
	CHECK(vg_region_set_limit(&r, UUID_B ":5G", err, sizeof(err)) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[a].limit), 3 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[b].limit), 5 * GiB);
	CHECK(vg_region_set_limit(&r, "50%", err, sizeof(err)) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[a].limit), 40 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[b].limit), 40 * GiB);
	CHECK(vg_region_set_limit(&r, "1:unlimited", err, sizeof(err)) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[b].limit), VG_REGION_NONE);
	CHECK(!vg_region_avail(&r, 1, &avail, &limit));
	/* A GPU registered later takes the spec in force. */
	CHECK(vg_region_set_limit(&r, "2G," UUID_A ":1G", err, sizeof(err)) == 0);
	int c = vg_region_bind(&r, 2, UUID_C, 16 * GiB, VG_REGION_NONE);
	CHECK(c == 2);
	CHECK_EQ_U64(atomic_load(&r.h->dev[c].limit), 2 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[a].limit), 1 * GiB);
	/* No UUID: keyed "ordinal:N". */
	int d = vg_region_bind(&r, 7, NULL, 16 * GiB, VG_REGION_NONE);
	CHECK(d == 3);
	CHECK_STR(r.h->dev[d].uuid, "ordinal:7");

	/* Only a writable shared region takes a region-wide limit. */
	pid_t me = getpid();
	uint64_t start = vg_proc_start(me);
	struct vg_region ro;
	CHECK(vg_region_open(&ro, path, VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(vg_region_set_limit(&ro, "1G", err, sizeof(err)) == -EBADF);
	CHECK(vg_region_set_slot_limit(&ro, r.slot, me, start, "1G", err, sizeof(err)) < 0);
	vg_region_close(&ro);

	/* Per process: the request is stored in the slot and picked up once. */
	char spec[VG_REGION_SPEC_MAX];
	CHECK(!vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK(vg_region_slot_alive(&r2, r.slot));
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me, start, "4G", err, sizeof(err)) == 0);
	CHECK(atomic_load(&r.h->slot[r.slot].applied_seq) != atomic_load(&r.h->slot[r.slot].limit_seq));
	CHECK(vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK_STR(spec, "4G");
	CHECK(atomic_load(&r.h->slot[r.slot].applied_seq) == atomic_load(&r.h->slot[r.slot].limit_seq));
	CHECK(!vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me, start, "1G", err, sizeof(err)) == 0);
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me, start, "0:2G,1:3G", err, sizeof(err)) == 0);
	char small[5];
	CHECK(vg_region_pending_limit(&r, small, sizeof(small)));       /* the latest, cut to fit */
	CHECK_STR(small, "0:2G");
	CHECK(!vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me, start, "lots", err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "lots");
	CHECK(vg_region_set_slot_limit(&r2, -1, me, start, "1G", err, sizeof(err)) == -EINVAL);
	CHECK(vg_region_set_slot_limit(&r2, VG_REGION_SLOTS_DEFAULT, me, start, "1G", err, sizeof(err)) == -EINVAL);
	/* The slot must still hold that process. */
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me, start + 1, "1G", err, sizeof(err)) == -ESRCH);
	CHECK_CONTAINS(err, "left");
	CHECK(vg_region_set_slot_limit(&r2, r.slot, me + 1, start, "1G", err, sizeof(err)) == -ESRCH);
	CHECK(vg_region_set_slot_limit(&r2, r.slot + 1, me, start, "1G", err, sizeof(err)) == -ESRCH);   /* free */
	CHECK(!vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK(!vg_region_pending_limit(&r2, spec, sizeof(spec)));       /* not joined */
	/* A request left for a process that has gone is not inherited by the next one in that slot. */
	int mine = r.slot;
	CHECK(vg_region_set_slot_limit(&r2, mine, me, start, "7G", err, sizeof(err)) == 0);
	vg_region_leave(&r);
	CHECK(!vg_region_slot_alive(&r2, mine));
	CHECK(vg_region_set_slot_limit(&r2, mine, me, start, "7G", err, sizeof(err)) == -ESRCH);
	CHECK(join_self(&r) == 0 && r.slot == mine);
	CHECK(!vg_region_pending_limit(&r, spec, sizeof(spec)));
	vg_region_leave(&r);
	CHECK(!vg_region_slot_alive(&r2, -1));
	CHECK(!vg_region_slot_alive(&r2, VG_REGION_SLOTS_DEFAULT));
	vg_region_close(&r2);
	vg_region_close(&r);
}

/* ---- 9b. live compute shares (`limit set --compute`) ---- */

static void test_live_compute(void)
{
	char path[512], spec[VG_REGION_SPEC_MAX];
	struct vg_region r, r2, ro;
	tpath(path, "vramguard.compute");
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_SHARED, MAKE_P(VG_REGION_SHARED, 0600, "compute", "1000"),
			     NULL, err, sizeof(err)) == 0);       /* persistent: it is joined again after its last leave */
	vg_region_close(&r);
	CHECK(setup(&r, path, "1000", UUID_A) == 0);
	CHECK(attach(&r2, path) == 0);
	pid_t me = getpid();
	uint64_t start = vg_proc_start(me);

	/* The region's share: read once at first (none yet), then at each change. */
	CHECK(vg_region_compute_changed(&r, spec, sizeof(spec)) && spec[0] == '\0');
	CHECK(!vg_region_compute_changed(&r, spec, sizeof(spec)));
	CHECK(vg_region_set_compute(&r2, "40%", err, sizeof(err)) == 0);
	CHECK(vg_region_compute_changed(&r, spec, sizeof(spec)));
	CHECK_STR(spec, "40%");
	CHECK(!vg_region_compute_changed(&r, spec, sizeof(spec)));
	/* Checked by the library's parser before anything is written. */
	uint32_t seq = atomic_load(&r.h->compute_seq);
	static const char *const bad[] = { "", " ", "0%", "101%", "50", "50.5%", "5O%", "50%,,1:20%", "4G", "0:30%,0:40%" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(vg_region_set_compute(&r2, bad[i], err, sizeof(err)) == -EINVAL);
		CHECK(vg_region_set_slot_compute(&r2, r.slot, me, start, bad[i], err, sizeof(err)) == -EINVAL);
		CHECK(strchr(err, '\n') == NULL);
	}
	CHECK_CONTAINS(err, "duplicate device key");
	char toolong[400];
	memset(toolong, '1', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	CHECK(vg_region_set_compute(&r2, toolong, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "too long");
	CHECK_EQ_U64(atomic_load(&r.h->compute_seq), seq);
	CHECK_STR(r.h->compute_spec, "40%");
	CHECK(!vg_region_compute_changed(&r, spec, sizeof(spec)));
	CHECK(vg_region_open(&ro, path, VG_OPEN_READ, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(vg_region_set_compute(&ro, "10%", err, sizeof(err)) == -EBADF);
	CHECK(vg_region_set_slot_compute(&ro, r.slot, me, start, "10%", err, sizeof(err)) < 0);
	vg_region_close(&ro);
	CHECK(vg_region_set_compute(&r2, "unlimited", err, sizeof(err)) == 0);
	CHECK(vg_region_compute_changed(&r, spec, sizeof(spec)));
	CHECK_STR(spec, "unlimited");

	/* Per process: stored in the slot, picked up once. */
	CHECK(!vg_region_pending_compute(&r, spec, sizeof(spec)));
	CHECK(vg_region_set_slot_compute(&r2, r.slot, me, start, "0:30%,1:70%", err, sizeof(err)) == 0);
	CHECK(atomic_load(&r.h->slot[r.slot].compute_applied_seq) != atomic_load(&r.h->slot[r.slot].compute_seq));
	CHECK(vg_region_pending_compute(&r, spec, sizeof(spec)));
	CHECK_STR(spec, "0:30%,1:70%");
	CHECK(atomic_load(&r.h->slot[r.slot].compute_applied_seq) == atomic_load(&r.h->slot[r.slot].compute_seq));
	CHECK(!vg_region_pending_compute(&r, spec, sizeof(spec)));
	CHECK(!vg_region_pending_compute(&r2, spec, sizeof(spec)));     /* not joined */
	/* The slot must still hold that process. */
	CHECK(vg_region_set_slot_compute(&r2, r.slot, me, start + 1, "10%", err, sizeof(err)) == -ESRCH);
	CHECK(vg_region_set_slot_compute(&r2, r.slot + 1, me, start, "10%", err, sizeof(err)) == -ESRCH);
	CHECK(!vg_region_pending_compute(&r, spec, sizeof(spec)));
	/* The region's tag in the GPUs' activity files: the same for every member, 31 bits, never 0. */
	uint32_t tag = vg_region_tag(&r);
	CHECK(tag != 0 && tag == vg_region_tag(&r2) && !(tag & 0x80000000u));
	/* A request left for a process that has gone is not inherited by the next one in that slot. */
	int mine = r.slot;
	CHECK(vg_region_set_slot_compute(&r2, mine, me, start, "10%", err, sizeof(err)) == 0);
	vg_region_leave(&r);
	CHECK(r2.h->slot[mine].compute_spec[0] == '\0');
	CHECK(join_self(&r) == 0 && r.slot == mine);
	CHECK(!vg_region_pending_compute(&r, spec, sizeof(spec)));
	vg_region_leave(&r);
	vg_region_close(&r2);
	vg_region_close(&r);
}

/* ---- 10. a full region ---- */

static void test_full(void)
{
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.full");
	CHECK(open_shared(&r, path, "1000", NULL) == 0);
	enum { SLEEPERS = 3 };
	pid_t kids[SLEEPERS];
	uint64_t starts[SLEEPERS], ns = vg_proc_pidns();
	for (int k = 0; k < SLEEPERS; k++) {
		kids[k] = sleeper();
		starts[k] = vg_proc_start(kids[k]);
	}
	for (int i = 0; i < VG_REGION_SLOTS_DEFAULT; i++)
		put_slot(&r, i, kids[i % SLEEPERS], starts[i % SLEEPERS], ns, -1, 0);
	CHECK(join_self(&r) == -ENOSPC);
	CHECK_CONTAINS(err, "is full");
	CHECK_CONTAINS(err, path);
	CHECK(r.slot == -1);
	CHECK(slot_count(&r, VG_SLOT_ACTIVE) == VG_REGION_SLOTS_DEFAULT);
	uint64_t before = atomic_load(&r.h->reclaimed);
	kill_wait(kids[1]);
	CHECK(join_self(&r) == 0);                      /* reclaims the dead one's slots first */
	CHECK_EQ_U64(atomic_load(&r.h->reclaimed), before + (VG_REGION_SLOTS_DEFAULT + 1) / SLEEPERS);
	CHECK(r.slot == 1);
	vg_region_leave(&r);
	kill_wait(kids[0]);
	kill_wait(kids[2]);
	CHECK(vg_region_reclaim(&r) == VG_REGION_SLOTS_DEFAULT - (VG_REGION_SLOTS_DEFAULT + 1) / SLEEPERS);
	CHECK(slot_count(&r, VG_SLOT_ACTIVE) == 0);
	vg_region_close(&r);
}

/* ---- 11. control segments ---- */

static void test_control(void)
{
	char path[512];
	struct vg_region r;
	bool created = false;
	uint64_t avail, limit;
	snprintf(path, sizeof(path), "%s/vramguard.proc.%d.%llu", tdir, (int)getpid(),
		 (unsigned long long)vg_proc_start(getpid()));
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_CONTROL, MAKE(VG_REGION_CONTROL, 0600, "", ""),
			     &created, err, sizeof(err)) == 0);
	CHECK(created && r.nslots == 1);
	CHECK(vg_region_bind(&r, 0, UUID_A, 80 * GiB, 4 * GiB) == -EINVAL);    /* not joined yet */
	CHECK(join_self(&r) == 0 && r.slot == 0);
	pid_t kid = sleeper();
	CHECK(vg_region_join(&r, kid, vg_proc_start(kid), "other", NULL, err, sizeof(err)) == -ENOSPC);
	kill_wait(kid);
	CHECK(r.slot == 0);
	CHECK(vg_region_bind(&r, 0, UUID_A, 80 * GiB, 4 * GiB) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].limit), VG_REGION_NONE);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].quota[0]), 4 * GiB);
	vg_region_set_quota(&r, 0, 2 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].quota[0]), 2 * GiB);
	/* Never denies, whatever the size; records usage and peak in the slot. */
	CHECK(vg_region_reserve(&r, 0, 100 * GiB, NULL, NULL) == 0);
	CHECK(vg_region_reserve(&r, 0, 100 * GiB, NULL, NULL) == 0);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].used[0]), 200 * GiB);
	vg_region_release(&r, 0, 150 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].used[0]), 50 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].peak[0]), 200 * GiB);
	vg_region_force(&r, 0, 1 * GiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].used[0]), 51 * GiB);
	vg_region_release(&r, 0, 100 * GiB);            /* never below zero */
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].used[0]), 0);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].used), 0);
	CHECK(!vg_region_avail(&r, 0, &avail, &limit));
	/* Reports and denials the command shows. */
	vg_region_note_denied(&r);
	vg_region_note_report(&r, 42);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].denied), 1);
	CHECK_EQ_U64(atomic_load(&r.h->slot[0].last_report_ns), 42);
	/* `limit set --pid` reaches the process through its control segment; `--shared` does not apply. */
	CHECK(vg_region_set_limit(&r, "1G", err, sizeof(err)) == -EBADF);
	CHECK(vg_region_set_slot_limit(&r, 0, getpid(), vg_proc_start(getpid()), "2G", err, sizeof(err)) == 0);
	char spec[VG_REGION_SPEC_MAX];
	CHECK(vg_region_pending_limit(&r, spec, sizeof(spec)));
	CHECK_STR(spec, "2G");
	CHECK(vg_region_find_pid(&r, getpid()) == 0);
	vg_region_leave(&r);
	CHECK(atomic_load(&r.h->slot[0].state) == VG_SLOT_FREE);
	vg_region_close(&r);
	unlink(path);
}

/* ---- accounting details ---- */

static void test_details(void)
{
	char path[512];
	struct vg_region r, r2;
	uint64_t used, limit;
	tpath(path, "vramguard.details");
	int idx = setup(&r, path, UUID_A ":100", UUID_A);
	CHECK(idx == 0);
	/* Untracked ordinals and unbound devices pass, uncounted. */
	CHECK(vg_region_reserve(&r, 5, 1 * GiB, NULL, NULL) == 0);
	CHECK(vg_region_reserve(&r, -1, 1 * GiB, NULL, NULL) == 0);
	CHECK(vg_region_reserve(&r, VG_MAX_DEVICES, 1 * GiB, NULL, NULL) == 0);
	CHECK(vg_region_bind(&r, VG_MAX_DEVICES, UUID_B, 0, 0) == -EINVAL);
	CHECK(vg_region_bind(&r, -1, UUID_B, 0, 0) == -EINVAL);
	/* Sizes at the edges: exactly the budget, one byte over, and absurd. */
	CHECK(vg_region_reserve(&r, 0, 100 * MiB + 1, &used, &limit) == -ENOSPC);
	CHECK(vg_region_reserve(&r, 0, UINT64_MAX, &used, &limit) == -ENOSPC);
	CHECK(vg_region_reserve(&r, 0, 100 * MiB, &used, &limit) == 0);
	CHECK(vg_region_reserve(&r, 0, 1, &used, &limit) == -ENOSPC);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].denied), 3);
	vg_region_release(&r, 0, 100 * MiB);
	/* A forced charge goes over the budget (undoing a failed free). */
	vg_region_force(&r, 0, 150 * MiB);
	CHECK_EQ_U64(dev_used(&r, 0), 150 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].peak), 150 * MiB);
	vg_region_release(&r, 0, 150 * MiB);

	/* Releasing more than this process was charged takes nothing from the others' shares. */
	pid_t kid = sleeper();
	CHECK(attach(&r2, path) == 0);
	CHECK(vg_region_join(&r2, kid, vg_proc_start(kid), "other", NULL, err, sizeof(err)) == 0);
	CHECK(vg_region_bind(&r2, 3, UUID_A, 80 * GiB, VG_REGION_NONE) == idx);
	CHECK(r.h->dev[idx].ordinal == 0);              /* the first registrant's ordinal stays */
	CHECK(vg_region_reserve(&r2, 3, 60 * MiB, NULL, NULL) == 0);
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);
	vg_region_release(&r, 0, 50 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->slot[r.slot].used[idx]), 0);
	CHECK_EQ_U64(dev_used(&r, idx), 60 * MiB);
	CHECK(vg_region_find_pid(&r, kid) == r2.slot);
	vg_region_leave(&r2);
	CHECK_EQ_U64(dev_used(&r, idx), 0);
	vg_region_close(&r2);
	kill_wait(kid);

	/* All VG_REGION_DEVS devices in use. */
	for (int d = 1; d < VG_REGION_DEVS; d++) {
		char u[VG_REGION_UUID_MAX];
		snprintf(u, sizeof(u), "GPU-00000000-0000-0000-0000-%012d", d);
		CHECK(vg_region_bind(&r, d, u, 80 * GiB, VG_REGION_NONE) == d);
	}
	CHECK(vg_region_bind(&r, 20, UUID_C, 80 * GiB, VG_REGION_NONE) == -ENOSPC);
	CHECK(vg_region_reserve(&r, 20, 1 * GiB, NULL, NULL) == 0);     /* unbound: not counted */

	/* A forked child does not leave for its parent. */
	pid_t p = xfork();
	if (p == 0) {
		vg_region_leave(&r);
		_exit(r.slot >= 0 ? 0 : 1);
	}
	CHECK(wait_child(p) == 0);
	CHECK(atomic_load(&r.h->slot[r.slot].state) == VG_SLOT_ACTIVE);
	vg_region_leave(&r);
	CHECK(r.slot == -1);
	vg_region_leave(&r);                            /* twice: nothing */
	CHECK(vg_region_reserve(&r, 0, 1 * GiB, NULL, NULL) == 0);      /* not joined: not counted */
	CHECK_EQ_U64(dev_used(&r, 0), 0);
	vg_region_close(&r);
	vg_region_close(&r);                            /* twice: nothing */
	CHECK(vg_region_reserve(&r, 0, 1, NULL, NULL) == 0);
}

/* A region stays valid for openers while processes join and leave it: vg_region_check runs without the lock. */
static void test_open_while_leaving(void)
{
	char path[512];
	struct vg_region r;
	tpath(path, "vramguard.churn");
	CHECK(open_shared(&r, path, "1000", NULL) == 0);
	CHECK(join_self(&r) == 0);      /* a member that stays: the others' leaving never removes the region */
	int stop[2];
	xpipe(stop);
	pid_t kid = xfork();
	if (kid == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		close(stop[1]);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)))
			_exit(1);
		char ch;
		while (read(stop[0], &ch, 1) < 0 && errno == EAGAIN) {
			if (vg_region_join(&c, getpid(), vg_proc_start(getpid()), "churn", NULL, e, sizeof(e)))
				_exit(2);
			vg_region_leave(&c);
		}
		_exit(0);
	}
	close(stop[0]);
	int refused = 0;
	char why[VG_ERR_MAX] = "";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200; i++) {
			struct vg_region o;
			if (attach(&o, path) == 0)
				vg_region_close(&o);
			else if (refused++ == 0)
				snprintf(why, sizeof(why), "%s", err);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 300);
	close(stop[1]);
	CHECK(wait_child(kid) == 0);
	if (refused)
		UNIT_FAIL_("%d opens refused while another process joined and left: %s", refused, why);
	else
		UNIT_PASS_("no open refused while another process joined and left");
	vg_region_close(&r);
}

/* ---- 13. lifecycle: liveness locks, removal, starting over, slot counts, eviction ---- */

/* A child that joins path and waits: 'j' once joined (its liveness lock taken), dies on SIGKILL. */
static pid_t member_child(const char *path, int *ready_fd)
{
	int fd[2];
	xpipe(fd);
	pid_t p = xfork();
	if (p == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		close(fd[0]);
		if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) ||
		    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "member", NULL, e, sizeof(e)))
			_exit(1);
		write_byte(fd[1], 'j');
		for (;;)
			pause();
	}
	close(fd[1]);
	*ready_fd = fd[0];
	return p;
}

static void test_lifecycle(void)
{
	char path[512];
	struct vg_region r, a;
	uint64_t freed[VG_REGION_DEVS];

	/* A member's liveness lock: alive while it runs, dead the moment it is killed, whatever its PID namespace
	 * says (a slot written as another namespace's is judged by its lock, not left alone). */
	tpath(path, "vramguard.life");
	CHECK(setup(&r, path, "100M", UUID_A) == 0);
	int rfd;
	pid_t kid = member_child(path, &rfd);
	CHECK(read_byte(rfd) == 'j');
	int ks = vg_region_find_pid(&r, kid);
	CHECK(ks >= 0 && r.h->slot[ks].live_lock == 1);
	r.h->slot[ks].pidns = vg_proc_pidns() + 1;       /* as if it ran in another PID namespace */
	CHECK(vg_region_slot_life(&r, ks) == VG_LIFE_ALIVE);
	CHECK(vg_region_reclaim(&r) == 0);
	kill_wait(kid);
	close(rfd);
	CHECK(vg_region_slot_life(&r, ks) == VG_LIFE_DEAD);
	CHECK(vg_region_reclaim(&r) == 1);
	/* Without a lock, another namespace's slot cannot be judged: unverifiable, never reclaimed, evictable. */
	int i = free_slot(&r);
	put_slot(&r, i, 4242, 1, vg_proc_pidns() + 1, 0, 30 * MiB);
	CHECK(vg_region_slot_life(&r, i) == VG_LIFE_UNVERIFIABLE);
	CHECK(vg_region_slot_alive(&r, i));
	CHECK(vg_region_reclaim(&r) == 0);
	CHECK(vg_region_find_pid(&r, 4242) == i);
	CHECK(admin(&a, path) == 0);
	CHECK(vg_region_evict(&a, i, 4242, 2, false, freed, err, sizeof(err)) == -ESRCH);   /* not that process */
	CHECK(vg_region_evict(&a, i, 4242, 1, false, freed, err, sizeof(err)) == 0);
	CHECK_EQ_U64(freed[0], 30 * MiB);
	CHECK_EQ_U64(dev_used(&r, 0), 0);
	CHECK_EQ_U64(atomic_load(&r.h->evicted), 1);
	/* A live member is evicted only with force; it joins again at its next charge, its old share gone. */
	CHECK(vg_region_reserve(&r, 0, 10 * MiB, NULL, NULL) == 0);
	CHECK(vg_region_evict(&a, r.slot, getpid(), r.self_start, false, freed, err, sizeof(err)) == -EBUSY);
	CHECK_CONTAINS(err, "alive");
	int before = r.slot;
	CHECK(vg_region_evict(&a, r.slot, getpid(), r.self_start, true, freed, err, sizeof(err)) == 0);
	CHECK_EQ_U64(freed[0], 10 * MiB);
	vg_region_release(&r, 0, 10 * MiB);              /* a free of what the evicted slot held: not taken again */
	CHECK_EQ_U64(dev_used(&r, 0), 0);
	CHECK(vg_region_reserve(&r, 0, 5 * MiB, NULL, NULL) == 0);
	CHECK(r.slot >= 0 && atomic_load(&r.h->slot[r.slot].state) == VG_SLOT_ACTIVE);
	CHECK(r.slot == before || atomic_load(&r.h->slot[before].state) == VG_SLOT_FREE);
	CHECK_EQ_U64(atomic_load(&r.rejoined), 1);
	CHECK_EQ_U64(atomic_load(&r.h->slot[r.slot].used[0]), 5 * MiB);
	CHECK(atomic_load(&r.h->slot[r.slot].bound) == 1u);      /* its GPU stays registered */
	CHECK_EQ_U64(dev_used(&r, 0), 5 * MiB);
	/* remove: refused while a member lives, unless forced; reset rebuilds the totals from the members. */
	int members = -1;
	atomic_store(&r.h->dev[0].used, 1ull << 62);     /* poisoned */
	CHECK(vg_region_reset(&a, err, sizeof(err)) == 0);
	CHECK_EQ_U64(dev_used(&r, 0), 5 * MiB);
	CHECK_EQ_U64(atomic_load(&r.h->dev[0].peak), 5 * MiB);
	CHECK(vg_region_remove(&a, false, &members, err, sizeof(err)) == -EBUSY && members == 1);
	CHECK(access(path, F_OK) == 0);
	/* The last member leaving removes a region that is not persistent. */
	vg_region_leave(&r);
	CHECK(access(path, F_OK) != 0);
	CHECK(atomic_load(&r.h->removed) == 1);
	/* A process that opened the file before it went, joins after: told to start over (-ESTALE). */
	CHECK(join_self(&a) == -ESTALE);
	CHECK_CONTAINS(err, "removed");
	vg_region_close(&a);
	vg_region_close(&r);

	/* A region whose members all died starts over with the next joiner's budget; a persistent one keeps its own,
	 * its totals from zero. */
	tpath(path, "vramguard.over");
	CHECK(setup(&r, path, "100M", UUID_A) == 0);
	kid = member_child(path, &rfd);
	CHECK(read_byte(rfd) == 'j');
	vg_region_leave(&r);                            /* the child is left */
	CHECK(access(path, F_OK) == 0);
	atomic_store(&r.h->dev[0].used, 77 * MiB);      /* what the child "held" */
	kill_wait(kid);
	close(rfd);
	CHECK(attach(&a, path) == 0);
	CHECK(vg_region_join(&a, getpid(), vg_proc_start(getpid()), "next", "40M", err, sizeof(err)) == 0);
	CHECK(a.started_over);
	CHECK_STR(a.h->spec, "40M");
	CHECK_STR(a.h->created_spec, "40M");
	CHECK_EQ_U64(dev_used(&a, 0), 0);
	CHECK(a.h->dev[0].uuid[0] == '\0');             /* GPUs register again, with the new budget */
	CHECK(vg_region_bind(&a, 0, UUID_A, 80 * GiB, VG_REGION_NONE) == 0);
	CHECK_EQ_U64(atomic_load(&a.h->dev[0].limit), 40 * MiB);
	vg_region_leave(&a);
	vg_region_close(&a);
	vg_region_close(&r);
	tpath(path, "vramguard.keep");
	const struct vg_region_make keep = { .kind = VG_REGION_SHARED, .mode = 0600, .name = "keep", .spec = "100M",
					     .nslots = 3, .flags = VG_REGION_PERSISTENT };
	CHECK(vg_region_create_new(path, &keep, err, sizeof(err)) == 0);
	CHECK(vg_region_create_new(path, &keep, err, sizeof(err)) == -EEXIST);
	CHECK_CONTAINS(err, "already exists");
	CHECK(attach(&r, path) == 0 && r.nslots == 3);
	CHECK_EQ_U64(r.size, sizeof(struct vg_region_hdr) + 3 * sizeof(struct vg_region_slot));
	kid = member_child(path, &rfd);
	CHECK(read_byte(rfd) == 'j');
	CHECK(attach(&a, path) == 0);
	CHECK(vg_region_join(&a, getpid(), vg_proc_start(getpid()), "next", "40M", err, sizeof(err)) == 0);
	atomic_store(&a.h->dev[0].used, 77 * MiB);
	vg_region_leave(&a);
	vg_region_close(&a);
	kill_wait(kid);
	close(rfd);
	CHECK(access(path, F_OK) == 0);                 /* persistent: not removed by its last member */
	CHECK(join_self(&r) == 0);
	CHECK(!r.started_over);
	CHECK_STR(r.h->spec, "100M");                   /* its own budget */
	CHECK_EQ_U64(dev_used(&r, 0), 0);               /* totals from nothing */
	/* Three slots: a fourth member is refused, saying how to get more. */
	pid_t k2[2];
	int f2[2];
	for (int k = 0; k < 2; k++) {
		k2[k] = member_child(path, &f2[k]);
		CHECK(read_byte(f2[k]) == 'j');
	}
	CHECK(attach(&a, path) == 0);
	pid_t k3 = sleeper();
	CHECK(vg_region_join(&a, k3, vg_proc_start(k3), "fourth", NULL, err, sizeof(err)) == -ENOSPC);
	CHECK_CONTAINS(err, "3 processes have joined it");
	CHECK_CONTAINS(err, "VRAMGUARD_SHARED_SLOTS");
	vg_region_close(&a);
	kill_wait(k3);
	for (int k = 0; k < 2; k++) {
		kill_wait(k2[k]);
		close(f2[k]);
	}
	vg_region_leave(&r);
	CHECK(admin(&a, path) == 0);
	CHECK(vg_region_remove(&a, false, &members, err, sizeof(err)) == 0 && members == 0);
	CHECK(access(path, F_OK) != 0);
	vg_region_close(&a);
	vg_region_close(&r);
	const struct vg_region_make huge = { .kind = VG_REGION_SHARED, .mode = 0600, .name = "huge", .spec = "",
					     .nslots = VG_REGION_SLOTS_MAX + 1 };
	CHECK(vg_region_create_new(path, &huge, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "at most 16384");
}

/* Processes that make, join and leave one region over and over, far faster than jobs do: the last to leave removes
 * it, a process that opened it just before retries (-ESTALE) and makes a new one. Nobody fails, no member's region
 * is removed under it, and nothing is left at the end. (How many retries a process needs is the caller's policy:
 * interposer/shared.c tries 16 times, then again at the next allocation.) */
static void test_lifecycle_race(void)
{
	enum { PROCS = 6, ITERS = 60 };
	char path[512];
	tpath(path, "vramguard.churnlife");
	pid_t kids[PROCS];
	for (int k = 0; k < PROCS; k++) {
		kids[k] = xfork();
		if (kids[k] == 0) {
			char e[VG_ERR_MAX];
			for (int it = 0; it < ITERS; it++) {
				struct vg_region c;
				int rc = -ESTALE;
				for (int a = 0; a < 1000 && rc == -ESTALE; a++) {
					if (vg_region_open(&c, path, VG_OPEN_JOIN, VG_REGION_SHARED,
							   MAKE(VG_REGION_SHARED, 0600, "churnlife", "1G"), NULL, e, sizeof(e)))
						_exit(10);
					rc = vg_region_join(&c, getpid(), vg_proc_start(getpid()), "job", "1G", e, sizeof(e));
					if (rc == -ESTALE)
						vg_region_close(&c);
				}
				if (rc)
					_exit(11);
				if (vg_region_bind(&c, 0, UUID_A, 80 * GiB, VG_REGION_NONE) < 0 ||
				    vg_region_reserve(&c, 0, MiB, NULL, NULL) != 0)
					_exit(12);
				if (atomic_load(&c.h->removed))
					_exit(13);      /* a member's region is never removed under it */
				vg_region_release(&c, 0, MiB);
				vg_region_leave(&c);
				vg_region_close(&c);
			}
			_exit(0);
		}
	}
	int fails = 0;
	for (int k = 0; k < PROCS; k++) {
		int st = wait_child(kids[k]);
		if (st != 0) {
			fails++;
			fprintf(stderr, "lifecycle race: process %d exited %d\n", k, st);
		}
	}
	CHECK(fails == 0);
	CHECK(access(path, F_OK) != 0);                 /* the last one out removed it */
	CHECK(count_tmp_files() == 0);
}

/* A control segment must be this process's own: one planted by another user, or writable by others, is refused. */
static void test_control_trust(void)
{
	char path[512];
	struct vg_region r;
	const struct vg_region_make ctl = { .kind = VG_REGION_CONTROL, .mode = 0600, .name = "", .spec = "" };
	tpath(path, "vramguard.proc.1.1");
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_CONTROL, &ctl, NULL, err, sizeof(err)) == 0);
	vg_region_close(&r);
	chmod(path, 0620);
	CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_CONTROL, &ctl, NULL, err, sizeof(err)) == -EPERM);
	CHECK_CONTAINS(err, "not this process's own control segment");
	chmod(path, 0600);
	if (geteuid() == 0) {
		CHECK(chown(path, 4242, 4242) == 0);
		CHECK(vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_CONTROL, &ctl, NULL, err, sizeof(err)) == -EPERM);
		CHECK_CONTAINS(err, "belongs to uid 4242");
		CHECK(admin(&r, path) == 0);            /* root administers it (limit set --pid, top) */
		vg_region_close(&r);
	}
	unlink(path);
}

static void test_proc(void)
{
	CHECK(vg_proc_start(getpid()) > 0);
	CHECK(vg_proc_start(getpid()) == vg_proc_start(getpid()));
	CHECK(vg_proc_start(1) > 0);                    /* start time 0 (boot) still reads as a process */
	pid_t p = xfork();
	if (p == 0)
		_exit(0);
	wait_child(p);
	CHECK(vg_proc_start(p) == 0);                   /* reaped: gone (its PID is not reused this fast) */
	CHECK(vg_proc_start(0) == 0);
	CHECK(vg_proc_start(-1) == 0);
	CHECK(vg_proc_pidns() > 0);
}

static void rm_tree(void)
{
	DIR *d = opendir(tdir);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[512];
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", tdir, e->d_name);
		if (unlink(p) != 0)
			rmdir(p);
	}
	closedir(d);
	if (rmdir(tdir) != 0)
		UNIT_FAIL_("cannot remove %s", tdir);
}

/* ---- what NVML is told: reading a directory of regions without joining ---- */

/* A child that joins a region in dir and holds mb MiB on uuid: its own control segment (shared NULL), or the shared
 * region DIR/vramguard.SHARED with budget spec. Writes 'r' (or 'x') to fd, then sleeps. */
static pid_t dir_member(const char *dir, const char *shared, const char *spec, const char *uuid, uint64_t mb, int fd)
{
	pid_t p = xfork();
	if (p == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX], path[1024];
		int kind = shared ? VG_REGION_SHARED : VG_REGION_CONTROL;
		if (shared)
			snprintf(path, sizeof(path), "%s/vramguard.%s", dir, shared);
		else
			vg_region_control_path(dir, getpid(), vg_proc_start(getpid()), path, sizeof(path));
		if (vg_region_open(&c, path, VG_OPEN_JOIN, kind, MAKE(kind, 0600, shared ? shared : "", spec), NULL, e,
				   sizeof(e)) ||
		    vg_region_join(&c, getpid(), vg_proc_start(getpid()), "member", NULL, e, sizeof(e)) ||
		    vg_region_bind(&c, 0, uuid, 80 * GiB, VG_REGION_NONE) < 0 ||
		    vg_region_reserve(&c, 0, mb * MiB, NULL, NULL) != 0)
			write_byte(fd, 'x');
		else
			write_byte(fd, 'r');
		for (;;)
			pause();
	}
	return p;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_dir_usage(void)
{
	char dir[512], path[1024], p2[1024];
	uint64_t used = 1, limit = 1;
	uint32_t procs = 1;
	int pfd[2];
	tpath(dir, "usage");
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(vg_region_dir_usage(dir, UUID_A, 0, &used, &procs) == 0);
	CHECK_EQ_U64(used, 0);
	CHECK_EQ_U64(procs, 0);
	tpath(path, "no-such-dir");
	CHECK(vg_region_dir_usage(path, UUID_A, 0, &used, &procs) == -ENOENT);
	CHECK_EQ_U64(used, 0);

	/* Three processes with control segments, one member of a shared region, and this process's own segment. */
	xpipe(pfd);
	pid_t a1 = dir_member(dir, NULL, "", UUID_A, 100, pfd[1]);
	pid_t a2 = dir_member(dir, NULL, "", UUID_A, 200, pfd[1]);
	pid_t b = dir_member(dir, NULL, "", UUID_B, 50, pfd[1]);
	pid_t s1 = dir_member(dir, "job", "1G", UUID_A, 300, pfd[1]);
	for (int i = 0; i < 4; i++)
		CHECK(read_byte(pfd[0]) == 'r');
	struct vg_region self;
	vg_region_control_path(dir, getpid(), vg_proc_start(getpid()), path, sizeof(path));
	CHECK(vg_region_open(&self, path, VG_OPEN_JOIN, VG_REGION_CONTROL, MAKE(VG_REGION_CONTROL, 0600, "", ""), NULL,
			     err, sizeof(err)) == 0);
	CHECK(join_self(&self) == 0);
	CHECK(vg_region_bind(&self, 0, UUID_A, 80 * GiB, VG_REGION_NONE) == 0);
	CHECK(vg_region_reserve(&self, 0, 400 * MiB, NULL, NULL) == 0);

	CHECK(vg_region_dir_usage(dir, UUID_A, 0, &used, &procs) == 0);
	CHECK_EQ_U64(used, 1000 * MiB);
	CHECK_EQ_U64(procs, 4);
	CHECK(vg_region_dir_usage(dir, UUID_A, getpid(), &used, &procs) == 0);   /* everyone but us */
	CHECK_EQ_U64(used, 600 * MiB);
	CHECK_EQ_U64(procs, 3);
	CHECK(vg_region_dir_usage(dir, UUID_B, getpid(), &used, NULL) == 0);
	CHECK_EQ_U64(used, 50 * MiB);
	CHECK(vg_region_dir_usage(dir, "gpu-00000000-0000-0000-0000-00000000000A", getpid(), &used, &procs) == 0);
	CHECK_EQ_U64(used, 600 * MiB);                  /* UUIDs compare case-insensitively */
	CHECK(vg_region_dir_usage(dir, UUID_C, 0, &used, &procs) == 0);
	CHECK_EQ_U64(used, 0);
	CHECK_EQ_U64(procs, 0);

	/* Not regions, or not to be read twice: a file of junk, a temporary file, a symbolic link to a segment, a file
	 * without the prefix. */
	snprintf(p2, sizeof(p2), "%s/vramguard.junk", dir);
	CHECK(unit_write_file(p2, "not a region at all", 19) == 0);
	snprintf(p2, sizeof(p2), "%s/.vramguard.tmp.123", dir);
	copy_file(path, p2);
	snprintf(p2, sizeof(p2), "%s/vramguard.link", dir);
	CHECK(symlink(path, p2) == 0);
	snprintf(p2, sizeof(p2), "%s/other.copy", dir);
	copy_file(path, p2);
	CHECK(vg_region_dir_usage(dir, UUID_A, 0, &used, &procs) == 0);
	CHECK_EQ_U64(used, 1000 * MiB);
	CHECK_EQ_U64(procs, 4);

	/* A dead member's slot (SIGKILL: its segment stays behind) is not counted. */
	kill_wait(a2);
	CHECK(vg_region_dir_usage(dir, UUID_A, 0, &used, &procs) == 0);
	CHECK_EQ_U64(used, 800 * MiB);
	CHECK_EQ_U64(procs, 3);

	/* A process stopped while it holds the shared region's lock: reading never waits for it. */
	pid_t stuck = xfork();
	if (stuck == 0) {
		struct vg_region c;
		char e[VG_ERR_MAX];
		snprintf(p2, sizeof(p2), "%s/vramguard.job", dir);
		if (vg_region_open(&c, p2, VG_OPEN_ADMIN, VG_REGION_SHARED, NULL, NULL, e, sizeof(e)) == 0 &&
		    pthread_mutex_lock(&c.h->lock) == 0)
			write_byte(pfd[1], 'l');
		else
			write_byte(pfd[1], 'x');
		raise(SIGSTOP);
		for (;;)
			pause();
	}
	CHECK(read_byte(pfd[0]) == 'l');
	double t0 = now_s();
	CHECK(vg_region_dir_usage(dir, UUID_A, 0, &used, &procs) == 0);
	CHECK(now_s() - t0 < 0.5);
	CHECK_EQ_U64(used, 800 * MiB);

	/* The region's own figures, read-only: a registered GPU, one that is not (its spec's budget), a control segment. */
	struct vg_region ro;
	snprintf(p2, sizeof(p2), "%s/vramguard.job", dir);
	CHECK(vg_region_open(&ro, p2, VG_OPEN_READ, 0, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(vg_region_gpu_usage(&ro, UUID_A, -1, 80 * GiB, &used, &limit));
	CHECK_EQ_U64(used, 300 * MiB);
	CHECK_EQ_U64(limit, 1 * GiB);
	CHECK(vg_region_gpu_usage(&ro, "GPU-00000000-0000-0000-0000-00000000000A", -1, 80 * GiB, &used, &limit));
	CHECK_EQ_U64(used, 300 * MiB);
	CHECK(vg_region_gpu_usage(&ro, UUID_C, -1, 80 * GiB, &used, &limit));
	CHECK_EQ_U64(used, 0);
	CHECK_EQ_U64(limit, 1 * GiB);
	vg_region_close(&ro);
	CHECK(!vg_region_gpu_usage(&self, UUID_A, 0, 80 * GiB, &used, &limit));
	kill_wait(stuck);

	/* A budget keyed by ordinal applies to an unregistered GPU only through its ordinal. */
	tpath(p2, "vramguard.keyed");
	struct vg_region k;
	CHECK(open_shared(&k, p2, "0:2G", NULL) == 0);
	used = limit = 7;
	CHECK(vg_region_gpu_usage(&k, UUID_C, 0, 80 * GiB, &used, &limit));
	CHECK_EQ_U64(limit, 2 * GiB);
	CHECK(!vg_region_gpu_usage(&k, UUID_C, 1, 80 * GiB, &used, &limit));
	CHECK(!vg_region_gpu_usage(&k, UUID_C, -1, 80 * GiB, &used, &limit));
	vg_region_close(&k);
	unlink(p2);

	kill_wait(a1);
	kill_wait(b);
	kill_wait(s1);
	vg_region_leave(&self);
	vg_region_close(&self);
	close(pfd[0]);
	close(pfd[1]);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		snprintf(p2, sizeof(p2), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' || e->d_name[1] == 'v')
			unlink(p2);
	}
	if (d)
		closedir(d);
	CHECK(rmdir(dir) == 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(tdir, sizeof(tdir), "%s/vg-region-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(tdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* No leftover child may outlive a failed run: every child dies with us (PR_SET_PDEATHSIG). */
	test_proc();
	test_paths();
	test_create_open();
	test_create_race();
	test_corruption();
	test_charging();
	test_charging_hold();
	test_sigkill();
	test_pid_reuse();
	test_owner_death();
	test_lock_timeout();
	test_live_limits();
	test_live_compute();
	test_full();
	test_control();
	test_details();
	test_open_while_leaving();
	test_lifecycle();
	test_lifecycle_race();
	test_control_trust();
	test_dir_usage();
	rm_tree();
	return UNIT_DONE();
}

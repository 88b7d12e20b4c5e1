/* Source lines for `report --lines` and `diff --lines` (cli/lines.h): what the renderers ask for each frame, with the
 * notes on what got no lines. The lookups themselves (libdw, cli/lines_dw.c) run in a child process started at the
 * first frame: a report is written by anyone and names any path, and libdw, given a file, may open others by
 * itself (a .gnu_debugaltlink's, a split unit's .dwo) or read a mapping its owner truncates. The child is asked one
 * frame at a time and killed at the deadline (--lines-timeout) for the whole resolution; the frames after it get no
 * lines, said in one line. The command is single-threaded: the state is this file's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/lines.h"
#include "cli/lines_dw.h"

/* One module of a report, by path and build ID (a diff's two reports may name one path with two builds). */
struct vg_lines_mod {
	char path[256], build_id[80];
	enum vg_lines_verdict verdict;  /* VG_LINES_UNKNOWN until the resolver has looked it up */
};

enum vg_lines_state { VG_RES_IDLE, VG_RES_RUNNING, VG_RES_STOPPED };

static struct {
	bool loaded;
	double timeout, deadline;       /* seconds; deadline: set at the first question to the resolver */
	enum vg_lines_state state;
	pid_t pid;
	int fd;
	char stopped[160];              /* why the resolver stopped before its end ("" while it runs) */
	char reading[256];              /* the module of the last question */
	size_t left;                    /* frames that got no lines because it stopped */
	struct vg_lines_mod *mods;
	size_t nmods, cap;
	size_t nodebug, noid, refused;  /* modules without debug information, without a build ID, with a file refused */
	char nodebug_names[256], noid_names[256], refused_names[400];
} vg_lines;

/* "libc.so.6, libcuda.so.1" grows by item, bounded (the count says how many there were). */
static void vg_lines_list_add(char *list, size_t cap, const char *item)
{
	size_t len = strlen(list);
	if (len + strlen(item) + 8 >= cap) {
		if (len + 6 < cap && !strstr(list, ", ..."))
			snprintf(list + len, cap - len, ", ...");
		return;
	}
	snprintf(list + len, cap - len, "%s%s", len ? ", " : "", item);
}

static void vg_lines_name_add(char *list, size_t cap, const char *path)
{
	const char *base = strrchr(path, '/');
	vg_lines_list_add(list, cap, base ? base + 1 : path);
}

/* ---- the resolver, a child process ---- */

/* The resolver is gone, or must go: killed at the deadline (timeout), or ended by itself (a crash in libdw, SIGBUS
 * on a file truncated under its mapping). What happened is kept for vg_lines_end's line. */
static void vg_lines_lost(bool timeout)
{
	int st = 0;
	kill(vg_lines.pid, SIGKILL);    /* a resolver that ended is a zombie until waited for: its status stays */
	close(vg_lines.fd);
	waitpid(vg_lines.pid, &st, 0);
	vg_lines.state = VG_RES_STOPPED;
	if (timeout)
		snprintf(vg_lines.stopped, sizeof(vg_lines.stopped), "stopped after %g s (--lines-timeout SECONDS allows "
			 "more)", vg_lines.timeout);
	else if (WIFSIGNALED(st))
		snprintf(vg_lines.stopped, sizeof(vg_lines.stopped), "stopped: its resolver was killed by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(vg_lines.stopped, sizeof(vg_lines.stopped), "stopped: its resolver exited with status %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static int vg_lines_start(void)
{
	int sv[2];
	pid_t parent = getpid(), pid = -1;
	const char *step = "socketpair";
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		step = "fork";
		pid = fork();
	}
	if (pid < 0) {
		int e = errno;
		if (!strcmp(step, "fork")) {
			close(sv[0]);
			close(sv[1]);
		}
		vg_lines.state = VG_RES_STOPPED;
		snprintf(vg_lines.stopped, sizeof(vg_lines.stopped), "could not start its resolver (%s: %s)", step,
			 strerror(e));
		return -1;
	}
	if (pid == 0) {
		/* Nothing of the parent's output: a reader of its stdout must see the end when the parent ends. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		close(sv[0]);
		vg_lines_dw_serve(sv[1]);
		_exit(0);       /* no atexit handlers, no stdio buffers of the parent's flushed twice */
	}
	close(sv[1]);
	vg_lines.pid = pid;
	vg_lines.fd = sv[0];
	vg_lines.state = VG_RES_RUNNING;
	return 0;
}

/* Ask the resolver for a frame of module m: 0 with *a filled, or -1 (stopped; the reason kept). */
static int vg_lines_ask(const struct vg_lines_mod *m, uint64_t offset, struct vg_lines_ans *a)
{
	static struct vg_lines_req q;
	if (vg_lines.state == VG_RES_STOPPED)
		return -1;
	memcpy(vg_lines.reading, m->path, sizeof(vg_lines.reading));
	if (vg_lines.state == VG_RES_IDLE && vg_lines_start() != 0)
		return -1;
	if (!vg_lines.deadline)
		vg_lines.deadline = vg_cli_now() + vg_lines.timeout;
	memset(&q, 0, sizeof(q));
	memcpy(q.path, m->path, sizeof(q.path));
	memcpy(q.build_id, m->build_id, sizeof(q.build_id));
	q.offset = offset;
	for (size_t sent = 0; sent < sizeof(q);) {
		ssize_t n = send(vg_lines.fd, (char *)&q + sent, sizeof(q) - sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			vg_lines_lost(false);
			return -1;
		}
		sent += (size_t)n;
	}
	for (size_t got = 0; got < sizeof(*a);) {
		double left = vg_lines.deadline - vg_cli_now();
		if (left <= 0) {
			vg_lines_lost(true);
			return -1;
		}
		struct pollfd p = { .fd = vg_lines.fd, .events = POLLIN };
		int n = poll(&p, 1, left > 3600 ? 3600 * 1000 : (int)(left * 1000) + 1);
		if (n == 0 || (n < 0 && errno == EINTR))
			continue;
		ssize_t k = n < 0 ? -1 : recv(vg_lines.fd, (char *)a + got, sizeof(*a) - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			vg_lines_lost(false);
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

/* ---- a frame ---- */

static struct vg_lines_mod *vg_lines_mod(const struct vg_report_module *rm)
{
	for (size_t i = 0; i < vg_lines.nmods; i++)
		if (!strcmp(vg_lines.mods[i].path, rm->path) && !strcmp(vg_lines.mods[i].build_id, rm->build_id))
			return &vg_lines.mods[i];
	if (vg_lines.nmods == vg_lines.cap) {
		size_t cap = vg_lines.cap ? 2 * vg_lines.cap : 16;
		struct vg_lines_mod *v = realloc(vg_lines.mods, cap * sizeof(*v));
		if (!v)
			return NULL;
		vg_lines.mods = v;
		vg_lines.cap = cap;
	}
	struct vg_lines_mod *m = &vg_lines.mods[vg_lines.nmods++];
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", rm->path);
	snprintf(m->build_id, sizeof(m->build_id), "%s", rm->build_id);
	if (!m->build_id[0]) {
		/* Nothing to check a file against: a rebuilt binary would give wrong lines. */
		m->verdict = VG_LINES_NODEBUG;
		vg_lines.noid++;
		vg_lines_name_add(vg_lines.noid_names, sizeof(vg_lines.noid_names), m->path);
	}
	return m;
}

/* The resolver's first answer about a module: what it found, said once. */
static void vg_lines_verdict(struct vg_lines_mod *m, struct vg_lines_ans *a)
{
	char item[200];
	a->file[sizeof(a->file) - 1] = a->why[sizeof(a->why) - 1] = '\0';
	m->verdict = (enum vg_lines_verdict)a->verdict;
	switch (m->verdict) {
	case VG_LINES_OTHER_ID:
		fprintf(stderr, "vramguard: warning: no source lines for %s: the report's build ID is %s, but %s has %s "
			"(another build; pass --debug-dir with the debug file of the build that ran)\n", vg_cli_q(m->path),
			m->build_id, vg_cli_q(a->file), a->why[0] ? a->why : "none");
		break;
	case VG_LINES_REFUSED:
		vg_lines.refused++;
		snprintf(item, sizeof(item), "%s %s", vg_cli_q(a->file), a->why);
		vg_lines_list_add(vg_lines.refused_names, sizeof(vg_lines.refused_names), item);
		break;
	case VG_LINES_OK:
		break;
	default:
		m->verdict = VG_LINES_NODEBUG;
		vg_lines.nodebug++;
		vg_lines_name_add(vg_lines.nodebug_names, sizeof(vg_lines.nodebug_names), m->path);
		break;
	}
}

static int vg_lines_frame(const struct vg_report *r, const struct vg_report_frame *f, struct vg_srcline *out)
{
	static struct vg_lines_ans a;
	const struct vg_report_module *rm = NULL;
	for (size_t i = 0; r && r->modules && i < r->nmodules && !rm; i++)
		if (!strcmp(r->modules[i].path, f->module))
			rm = &r->modules[i];
	struct vg_lines_mod *m = rm ? vg_lines_mod(rm) : NULL;
	if (!m || f->module_offset == 0 || (m->verdict != VG_LINES_UNKNOWN && m->verdict != VG_LINES_OK))
		return -1;
	if (vg_lines_ask(m, f->module_offset, &a) != 0) {
		vg_lines.left++;
		return -1;
	}
	if (m->verdict == VG_LINES_UNKNOWN)
		vg_lines_verdict(m, &a);
	if (!a.found)
		return -1;
	*out = a.line;
	out->file[sizeof(out->file) - 1] = out->function[sizeof(out->function) - 1] = '\0';
	out->outer[sizeof(out->outer) - 1] = '\0';
	if (out->ncallers > VG_SRCLINE_INLINED)
		out->ncallers = VG_SRCLINE_INLINED;
	for (size_t i = 0; i < out->ncallers; i++) {
		out->callers[i].function[sizeof(out->callers[i].function) - 1] = '\0';
		out->callers[i].file[sizeof(out->callers[i].file) - 1] = '\0';
	}
	return 0;
}

/* ---- public ---- */

int vg_lines_begin(const char *const *dirs, size_t ndirs, double timeout)
{
	/* __VRAMGUARD_LIBDW: the tests' way to have libdw missing (tests/sections/lines.sh). */
	const char *name = getenv("__VRAMGUARD_LIBDW");
	char err[128];
	name = name && name[0] ? name : "libdw.so.1";
	memset(&vg_lines, 0, sizeof(vg_lines));
	vg_lines.timeout = timeout > 0 ? timeout : VG_LINES_TIMEOUT;
	if (vg_lines_dw_begin(name, dirs, ndirs, err, sizeof(err)) != 0) {
		if (!strcmp(err, "cannot be loaded"))
			fprintf(stderr, "vramguard: note: --lines needs elfutils' libdw (%s), which cannot be loaded here: "
				"printing without source lines (install it: apt-get install libdw1, or dnf install "
				"elfutils-libs)\n", vg_cli_q(name));
		else
			fprintf(stderr, "vramguard: note: --lines: %s %s (elfutils too old): printing without source "
				"lines\n", vg_cli_q(name), err);
		return -1;
	}
	vg_lines.loaded = true;
	vg_report_srcline_hook = vg_lines_frame;
	return 0;
}

void vg_lines_check_report(const char *file, const struct vg_report *r)
{
	if (!vg_lines.loaded || r->nmodules || !r->nsites)
		return;
	fprintf(stderr, "vramguard: note: %s lists no modules (report revision %u; build IDs came with revision 3): "
		"its frames get no source lines\n", vg_cli_q(file), (unsigned)r->schema_revision);
}

void vg_lines_end(void)
{
	if (vg_lines.state == VG_RES_RUNNING) {
		close(vg_lines.fd);     /* the resolver reads the end, and exits */
		waitpid(vg_lines.pid, NULL, 0);
	}
	if (vg_lines.stopped[0])
		fprintf(stderr, "vramguard: warning: --lines %s, at the frames of %s: %zu %s left without source lines\n",
			vg_lines.stopped, vg_cli_q(vg_lines.reading), vg_lines.left, vg_lines.left == 1 ? "frame" : "frames");
	if (vg_lines.refused)
		fprintf(stderr, "vramguard: warning: --lines reads only regular files: %zu %s refused (%s): %s frames get "
			"no source lines\n", vg_lines.refused, vg_lines.refused == 1 ? "file" : "files",
			vg_lines.refused_names, vg_lines.refused == 1 ? "its module's" : "their modules'");
	if (vg_lines.nodebug)
		fprintf(stderr, "vramguard: note: no debug information found for %zu %s (%s): %s frames get no source lines "
			"(install %s debug package, or pass --debug-dir DIR with .build-id/xx/rest.debug or NAME.debug)\n",
			vg_lines.nodebug, vg_lines.nodebug == 1 ? "module" : "modules", vg_lines.nodebug_names,
			vg_lines.nodebug == 1 ? "its" : "their", vg_lines.nodebug == 1 ? "its" : "their");
	if (vg_lines.noid)
		fprintf(stderr, "vramguard: note: the report records no build ID for %zu %s (%s): without one a file "
			"cannot be checked against the build that ran, so %s frames get no source lines\n", vg_lines.noid,
			vg_lines.noid == 1 ? "module" : "modules", vg_lines.noid_names, vg_lines.noid == 1 ? "its" : "their");
	free(vg_lines.mods);
	memset(&vg_lines, 0, sizeof(vg_lines));
	vg_report_srcline_hook = NULL;
	/* libdw stays loaded until the command exits (it is about to): dlclose would need GLIBC_2.34 here. */
}

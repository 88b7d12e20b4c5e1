/* When reports are written (VRAMGUARD_REPORT_ON): at exit (an atexit handler registered at the first CUDA use, so it
 * runs while the driver is still alive), on a signal, at a soft limit's crossing and at a denial. The last three
 * never write in the thread that asks (a signal handler; an allocating thread, maybe inside a driver call): it asks
 * (reporter_ask.c), and the reporter thread here, started with every signal blocked, builds the report
 * (snapshot.c) and writes it. Where they go: stderr, nowhere, or a file created exclusively (never in a setuid
 * program: the loader does not read VRAMGUARD_REPORT there, see the options table). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interposer/base.h"
#include "interposer/reporter.h"
#include "interposer/reporter_ask.h"
#include "interposer/shared.h"
#include "interposer/snapshot.h"
#include "interposer/thread.h"
#include "accounting/lockorder.h"
#include "config/template.h"
#include "report/log.h"
#include "report/path.h"
#include "report/report.h"

static int vg_report_pid;                       /* the process that may report; a forked child never does */
static _Atomic uint64_t vg_report_seq;
static pthread_mutex_t vg_report_lock = PTHREAD_MUTEX_INITIALIZER;
static int vg_pipe_rd = -1;                     /* the reporter thread's end; reporter_ask.c writes to the other */

/* The step of publishing a report that failed: its message names what went wrong. */
enum vg_publish_step {
	VG_PUBLISH_TMP,         /* creating the temporary file */
	VG_PUBLISH_WRITE,       /* writing the report (the partial file is removed) */
	VG_PUBLISH_CREATE,      /* creating the final name */
};

/* Create path exclusively and write data to it: an existing file or a symlink (planted or not) is never written
 * through. The report is written under a temporary name beside it and published with link(2), which also never
 * replaces an existing name: readers (`vramguard dump`) never see a partial report, and a report that cannot be
 * written whole (full disk) leaves nothing behind. Past RLIMIT_FSIZE the writes fail with EFBIG instead of raising
 * SIGXFSZ in the job (vg_write_all blocks it around each write). Returns 0 or -errno; *step says which step failed. */
static int vg_publish(const char *path, uint64_t seq, const struct vg_strbuf *b, enum vg_publish_step *step)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.vgtmp.%d.%llu", path, (int)getpid(), (unsigned long long)seq);
	*step = VG_PUBLISH_TMP;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)vg_cfg.report_mode);
	if (fd < 0)
		return -errno;
	*step = VG_PUBLISH_WRITE;
	int rc = vg_write_all(fd, b->data, b->len);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0) {
		*step = VG_PUBLISH_CREATE;
		if (link(tmp, path) != 0) {
			rc = -errno;
			if (rc == -EPERM || rc == -ENOTSUP || rc == -EXDEV || rc == -EMLINK) {
				/* No hard links here (some FUSE and vfat mounts): write the final name directly. */
				unlink(tmp);
				fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					  (mode_t)vg_cfg.report_mode);
				if (fd < 0)
					return -errno;
				*step = VG_PUBLISH_WRITE;
				rc = vg_write_all(fd, b->data, b->len);
				if (close(fd) != 0 && rc == 0)
					rc = -errno;
				if (rc != 0)
					unlink(path);
				return rc;
			}
		}
	}
	unlink(tmp);
	return rc;
}

/* The report's name is taken: say what is in the way (q is the path, quoted). open and readlink only: stat's
 * symbols are too new for old glibc (config/glibc_compat.h). */
static void vg_report_taken(const char *path, const char *q, bool tmp)
{
	char c;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		vg_log(VG_LOG_WARN, "report not written: %s is a directory (VRAMGUARD_REPORT must name a file, e.g. "
		       "DIR/vg-%%p-%%n.json)", q);
	} else if (readlink(path, &c, 1) >= 0) {
		vg_log(VG_LOG_WARN, "report not written: %s is a symbolic link (vramguard never writes through one)", q);
	} else if (tmp) {
		vg_log(VG_LOG_WARN, "report not written: its temporary file %s.vgtmp.%d.* exists, left by an earlier "
		       "process with this PID: remove it", q, (int)getpid());
	} else {
		bool p = vg_template_has(vg_cfg.report_path, 'p'), n = vg_template_has(vg_cfg.report_path, 'n');
		vg_log(VG_LOG_WARN, "report not written: cannot create %s: %s (vramguard never overwrites a file; %s)", q,
		       strerror(EEXIST), p && n ? "it is an earlier process's with this PID: move it away, or add %h to "
		       "VRAMGUARD_REPORT" : p ? "put %n in VRAMGUARD_REPORT" : n ? "put %p in VRAMGUARD_REPORT" :
		       "put %p and %n in VRAMGUARD_REPORT");
	}
}

/* Write one rendered report to its destination; one warning line on any failure. Paths and templates are quoted
 * bounded (vg_quote): a 1 000-byte template still gives a short line. */
static void vg_report_emit(const char *reason, uint64_t seq, const struct vg_strbuf *b)
{
	if (vg_cfg.report_dest == VG_REPORT_STDERR) {
		(void)vg_write_all(STDERR_FILENO, b->data, b->len);
		return;
	}
	char host[256] = "";
	char path[4096], q[VG_QUOTE_BUF];
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	if (vg_report_path_expand(vg_cfg.report_path, (int)getpid(), seq, reason, host, path, sizeof(path)) != 0) {
		vg_log(VG_LOG_WARN, "report not written: VRAMGUARD_REPORT %s expands to a path that is too long",
		       vg_quote(vg_cfg.report_path, q, sizeof(q)));
		return;
	}
	enum vg_publish_step step = VG_PUBLISH_TMP;
	int rc = vg_publish(path, seq, b, &step);
	vg_quote(path, q, sizeof(q));
	if (rc == -EEXIST)
		vg_report_taken(path, q, step == VG_PUBLISH_TMP);
	else if (rc != 0 && step != VG_PUBLISH_WRITE)
		vg_log(VG_LOG_WARN, "report not written: cannot create %s: %s", q, strerror(-rc));
	else if (rc != 0)
		vg_log(VG_LOG_WARN, "report not written: %s: %s (the partial file was removed)", q, strerror(-rc));
	else
		vg_log(VG_LOG_INFO, "report (%s) written to %s", reason, q);
}

void vg_report_now(const char *reason)
{
	if (vg_cfg.report_dest == VG_REPORT_OFF)
		return;
	vg_lock(&vg_report_lock, VG_RANK_REPORT);
	uint64_t seq = atomic_fetch_add(&vg_report_seq, 1) + 1;
	struct vg_report r;
	struct vg_strbuf b = { 0 };
	int rc = vg_snapshot(&r, reason, seq);
	if (vg_cfg.report_format == VG_FORMAT_JSON)
		vg_report_render_json(&r, &b);
	else
		vg_report_render_text(&r, &b);
	if (b.failed || !b.data)
		vg_log(VG_LOG_WARN, "report (%s) not written: out of memory", reason);
	else {
		vg_report_emit(reason, seq, &b);
		vg_shared_note_report();
	}
	if (rc != 0)
		vg_log(VG_LOG_WARN, "the %s report is incomplete: out of memory while collecting it", reason);
	vg_strbuf_free(&b);
	vg_report_free(&r);
	vg_unlock(&vg_report_lock, VG_RANK_REPORT);
}

static _Atomic int vg_exit_reported;
static _Atomic int vg_exit_armed;       /* 0: none, 1: after cuInit, 2: after the first allocation too */

static void vg_reports_pending(void);

static void vg_report_at_exit(void)
{
	if (getpid() != vg_report_pid || atomic_exchange(&vg_exit_reported, 1))
		return;
	/* A job that dies right after its denial (an OOM exception ending the program) exits before the reporter thread
	 * got to it: the evidence is written here, then the exit report. */
	vg_reports_pending();
	if (vg_cfg.report_on & VG_REPORT_ON_EXIT)
		vg_report_now("exit");
}

/* atexit handlers run last-registered first, and the driver registers its own teardown during cuInit (measured:
 * a handler registered at the first cuGetProcAddress ran after it and saw CUDA_ERROR_DEINITIALIZED). So the
 * handler is registered after cuInit succeeds, and once more at the first allocation, in case the driver or
 * the runtime registers more teardown when the context is created. Whichever runs first writes the report. */
void vg_reporter_arm_exit(void)
{
	if (VG_LIKELY(atomic_load_explicit(&vg_exit_armed, memory_order_relaxed) >= 2))
		return;
	if (vg_cfg.report_dest == VG_REPORT_OFF ||
	    !(vg_cfg.report_on & (VG_REPORT_ON_EXIT | VG_REPORT_ON_DENIAL | VG_REPORT_ON_THRESHOLD | VG_REPORT_ON_GROWTH))) {
		/* Nothing to arm, ever (the configuration is read once): the fast test above from now on. */
		atomic_store_explicit(&vg_exit_armed, 2, memory_order_relaxed);
		return;
	}
	if (vg_report_pid != (int)getpid())
		return;
	vg_lock(&vg_report_lock, VG_RANK_REPORT);
	int armed = atomic_load(&vg_exit_armed);
	if (armed < 2 && atexit(vg_report_at_exit) == 0)
		atomic_store(&vg_exit_armed, armed + 1);
	vg_unlock(&vg_report_lock, VG_RANK_REPORT);
}

/* ---- the reporter thread: signals and soft limits ---- */

/* The reports asked for and not yet written, each kind once (the flags are set before their byte is written). */
static void vg_reports_pending(void)
{
	if (vg_reporter_asked(VG_ASK_DENIAL))
		vg_report_now("denial");
	if (vg_reporter_asked(VG_ASK_SOFT_LIMIT))
		vg_report_now("soft-limit");
	if (vg_reporter_asked(VG_ASK_THRESHOLD))
		vg_report_now("threshold");
	if (vg_reporter_asked(VG_ASK_GROWTH))
		vg_report_now("growth");
}

static void *vg_reporter_main(void *arg)
{
	(void)arg;
	char buf[256];
	struct pollfd pfd = { .fd = vg_pipe_rd, .events = POLLIN };
	for (;;) {
		int n = poll(&pfd, 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
			return NULL;
		/* Many requests in a burst make one report each kind: drain what is already queued (the read end never
		 * blocks), then look at the flags (set before their byte was written). */
		while (read(vg_pipe_rd, buf, sizeof(buf)) > 0)
			;
		if (vg_reporter_asked(VG_ASK_SIGNAL))
			vg_report_now("signal");
		vg_reports_pending();
	}
}

/* Is the report signal still at its default disposition (ours to take)? Says so once if not. */
static bool vg_signal_free(void)
{
	struct sigaction old;
	if (sigaction(vg_cfg.signal, NULL, &old) != 0)
		return false;
	if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
		vg_log(VG_LOG_WARN, "%s already has a handler in this process; reports on signal are off (choose "
		       "another signal with VRAMGUARD_SIGNAL)", vg_cfg.signal_name);
		return false;
	}
	return true;
}

/* Any soft limit configured (an explicit "unlimited" too: cheap, and what it resolves to is per device). */
static bool vg_soft_limits_set(void)
{
	return vg_cfg.requests.n > 0 || vg_cfg.requests.dflt.kind != VG_LIMIT_UNSET ||
	       vg_cfg.request_one.kind != VG_LIMIT_UNSET || vg_cfg.warn_at.n > 0 ||
	       vg_cfg.warn_at.dflt.kind != VG_LIMIT_UNSET;
}

/* The thread and its pipe; what is what they serve, for the message if they cannot be had. */
static int vg_reporter_thread_start(const char *what)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		vg_log(VG_LOG_WARN, "%s are off: pipe: %s", what, strerror(errno));
		return -1;
	}
	/* Neither end blocks: the thread sleeps in poll(), and the handler must never wait. */
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(p[1], F_SETFL, O_NONBLOCK);
	vg_pipe_rd = p[0];
	int rc = vg_thread_start("vramguard", vg_reporter_main, NULL);
	if (rc != 0) {
		close(p[0]);
		close(p[1]);
		vg_pipe_rd = -1;
		vg_log(VG_LOG_WARN, "%s are off: cannot start the reporter thread: %s", what, strerror(rc));
		return -1;
	}
	vg_reporter_listen(p[1]);
	return 0;
}

void vg_reporter_start(void)
{
	if (vg_cfg.report_dest == VG_REPORT_OFF)
		return;
	vg_report_pid = (int)getpid();
	unsigned on = vg_cfg.report_on;
	bool sig = (on & VG_REPORT_ON_SIGNAL) && vg_cfg.signal > 0 && vg_signal_free();
	bool soft = (on & VG_REPORT_ON_THRESHOLD) && vg_soft_limits_set(), denial = (on & VG_REPORT_ON_DENIAL) != 0;
	bool growth = (on & VG_REPORT_ON_GROWTH) != 0;
	if (!sig && !soft && !denial && !growth)
		return;
	/* "reports (on SIGUSR1, at soft limits, at denials, on growth)", for the message if the thread cannot be had */
	char what[160];
	snprintf(what, sizeof(what), "reports (%s%s%s%s%s%s%s%s)", sig ? "on " : "", sig ? vg_cfg.signal_name : "",
		 sig && (soft || denial || growth) ? ", " : "", soft ? "at soft limits" : "",
		 soft && (denial || growth) ? ", " : "", denial ? "at denials" : "", denial && growth ? ", " : "",
		 growth ? "on growth" : "");
	if (vg_reporter_thread_start(what) != 0 || !sig)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vg_reporter_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(vg_cfg.signal, &sa, NULL) != 0)
		vg_log(VG_LOG_WARN, "reports on %s are off: sigaction: %s", vg_cfg.signal_name, strerror(errno));
}

void vg_reporter_atfork_child(void)
{
	/* The child shares the parent's pipe and has no reporter thread: it must not wake the parent's, and it never
	 * reports the parent's memory at exit (vg_report_pid stays the parent's). */
	vg_reporter_ask_atfork_child();
	if (vg_pipe_rd >= 0)
		close(vg_pipe_rd);
	vg_pipe_rd = -1;
	pthread_mutex_init(&vg_report_lock, NULL);
}

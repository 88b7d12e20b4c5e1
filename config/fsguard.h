/* vramguard's own file writes must never kill the job: past RLIMIT_FSIZE the kernel sends SIGXFSZ, whose default
 * action kills, to the writing thread (write(2), fallocate(2)) and fails the call with EFBIG. The guard blocks
 * SIGXFSZ in the calling thread only, and consumes afterwards a SIGXFSZ that our write made pending; the process's
 * disposition is never touched, so the application's own writes behave as before. Header-only, so that every layer
 * (report/, accounting/, interposer/) can use it. Costs four system calls: for writes that are not on a hot path. */
#ifndef VG_FSGUARD_H
#define VG_FSGUARD_H

#include <signal.h>
#include <stdbool.h>
#include <time.h>

struct vg_fsguard {
	sigset_t old;           /* the thread's mask before */
	bool was_pending;       /* a SIGXFSZ was pending before: it is the application's, leave it */
	bool blocked;           /* the mask was changed */
};

static inline void vg_fsguard_enter(struct vg_fsguard *g)
{
	sigset_t x, pend;
	sigemptyset(&x);
	sigaddset(&x, SIGXFSZ);
	g->blocked = pthread_sigmask(SIG_BLOCK, &x, &g->old) == 0;
	g->was_pending = g->blocked && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
}

static inline void vg_fsguard_leave(struct vg_fsguard *g)
{
	if (!g->blocked)
		return;
	sigset_t x, pend;
	sigemptyset(&x);
	sigaddset(&x, SIGXFSZ);
	if (!g->was_pending && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
		struct timespec zero = { 0, 0 };
		(void)sigtimedwait(&x, NULL, &zero);    /* ours: the write already failed with EFBIG */
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

#endif

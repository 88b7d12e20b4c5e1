/* Asking for a report (reporter_ask.h): a flag per kind of request and one byte in the reporter thread's pipe.
 * Everything here is async-signal-safe. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

#include "interposer/reporter_ask.h"

static volatile int vg_pipe_wr = -1;            /* read by the signal handler */
/* What the reporter thread is asked for: the byte in the pipe only wakes it. */
static _Atomic int vg_want[VG_ASK_COUNT];

static void vg_reporter_wake(void)
{
	int fd = vg_pipe_wr;
	if (fd >= 0) {
		char c = 1;
		(void)!write(fd, &c, 1);        /* pipe full (a storm): the pending wake-up covers it */
	}
}

void vg_reporter_ask(enum vg_ask what)
{
	int saved = errno;
	atomic_store_explicit(&vg_want[what], 1, memory_order_relaxed);      /* lock-free: async-signal-safe */
	vg_reporter_wake();
	errno = saved;
}

void vg_reporter_on_signal(int sig)
{
	(void)sig;
	vg_reporter_ask(VG_ASK_SIGNAL);
}

bool vg_reporter_running(void)
{
	return vg_pipe_wr >= 0;
}

void vg_reporter_listen(int wr)
{
	vg_pipe_wr = wr;
}

bool vg_reporter_asked(enum vg_ask what)
{
	return atomic_exchange(&vg_want[what], 0) != 0;
}

void vg_reporter_ask_atfork_child(void)
{
	int wr = vg_pipe_wr;
	vg_pipe_wr = -1;
	if (wr >= 0)
		close(wr);
}

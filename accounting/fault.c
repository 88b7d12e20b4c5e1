/* Memory another process can take away (fault.h): a SIGBUS guard with sigsetjmp, per thread, nestable. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "accounting/fault.h"

struct vg_fault_guard {
	sigjmp_buf jb;
	uintptr_t lo, hi;
	struct vg_fault_guard *outer;
};

static __thread struct vg_fault_guard *vg_fault_top;
static atomic_bool vg_fault_on;

/* Async-signal-safe: a fault inside a guarded range of this thread jumps to the innermost guard covering it;
 * any other is given back to the default action (the faulting instruction runs again and the process dies of it). */
static void vg_fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr;
	for (struct vg_fault_guard *g = vg_fault_top; g; g = g->outer)
		if (a >= g->lo && a < g->hi) {
			if (si->si_code > 0) {  /* raised by the kernel for an access, not sent */
				vg_fault_top = g;
				siglongjmp(g->jb, 1);
			}
		}
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

int vg_fault_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = vg_fault_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return -errno;
	atomic_store(&vg_fault_on, true);
	return 0;
}

/* Does the thread's robust-mutex list (the kernel's record of the robust mutexes it holds, kept by glibc in the
 * mutexes themselves) reach into [lo, hi)? Read after the range was made private, so every entry is readable; the
 * walk is bounded as the kernel's is. */
static bool vg_fault_robust_in(uintptr_t lo, uintptr_t hi)
{
	struct robust_list_head *head;
	size_t len;
	if (syscall(SYS_get_robust_list, 0, &head, &len) != 0 || !head)
		return true;    /* cannot tell: keep the range */
	uintptr_t pending = (uintptr_t)head->list_op_pending & ~(uintptr_t)1;
	if (pending >= lo && pending < hi)
		return true;
	const struct robust_list *e = head->list.next;
	for (int n = 0; n < 2048 && e && e != &head->list; n++) {
		uintptr_t a = (uintptr_t)e & ~(uintptr_t)1;
		if (a >= lo && a < hi)
			return true;
		e = ((const struct robust_list *)a)->next;
	}
	return false;
}

bool vg_fault_installed(void)
{
	return atomic_load_explicit(&vg_fault_on, memory_order_relaxed);
}

int vg_fault_run(void *lo, size_t len, int (*fn)(void *arg), void *arg, bool *pinned)
{
	if (pinned)
		*pinned = false;
	if (!atomic_load_explicit(&vg_fault_on, memory_order_relaxed))
		return fn(arg);
	struct vg_fault_guard g = { .lo = (uintptr_t)lo, .hi = (uintptr_t)lo + len, .outer = vg_fault_top };
	/* volatile: read after the jump back */
	struct vg_fault_guard *volatile outer = g.outer;
	if (sigsetjmp(g.jb, 1) == 0) {
		vg_fault_top = &g;
		int rc = fn(arg);
		vg_fault_top = outer;
		return rc;
	}
	vg_fault_top = outer;
	/* The file under the range is shorter than the range: give the range private zeroed pages in place, so that
	 * nothing left pointing into it faults again. */
	if (mmap(lo, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
		/* Cannot happen short of running out of memory; leave it to the default action, as if unguarded. */
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
	bool pin = vg_fault_robust_in(g.lo, g.hi);
	if (pinned)
		*pinned = pin;
	return -ESTALE;
}

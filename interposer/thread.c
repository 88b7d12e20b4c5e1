/* The library's own threads (thread.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "interposer/thread.h"

int vg_thread_start(const char *name, void *(*fn)(void *), void *arg)
{
	/* Created with every signal blocked, which the thread inherits; the caller's mask is restored after. */
	sigset_t all, prev;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &prev);
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (rc == 0)
		pthread_setname_np(th, name);
	return rc;
}

/* The library's own threads (thread.c): the sampler (devmem.c) and the reporter (reporter.c). */
#ifndef VG_THREAD_H
#define VG_THREAD_H

/* Start fn(arg) on a detached thread named name that never receives a signal: the application's signals are not
 * ours to take. 0, or the error number pthread_create gave. */
int vg_thread_start(const char *name, void *(*fn)(void *), void *arg);

#endif

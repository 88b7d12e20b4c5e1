/* Bind the libc symbols whose default version is new to their original versions, so that the library and the
 * command built on a new glibc still run in RHEL 8 / Ubuntu 20.04 / Debian 11 images (glibc 2.28 / 2.31): the dl*
 * and pthread functions moved into libc as GLIBC_2.34, pthread_sigmask got GLIBC_2.32. Force-included (-include)
 * into every object of the library and the command by the Makefile, which is why it lives in config/, the bottom
 * layer: every folder may see it. Both link with --no-as-needed -ldl -lpthread, so an older glibc finds the
 * functions where they were then (libdl.so.2, libpthread.so.0). tests/run.sh checks with objdump that neither
 * references anything newer than GLIBC_2.17.
 *
 * What has no old version to bind to is replaced, not pinned: stat, lstat and fstat became symbols only in 2.33
 * (before, <sys/stat.h> inlined calls to __xstat), so our code calls them as system calls (config/stat.h); the
 * command's start-up, whose __libc_start_main@GLIBC_2.34 exists only because crt1.o no longer passes an init
 * function, is cli/start.c.
 *
 * dlsym is pinned only where VG_GLIBC_PIN_DLSYM is defined (the command): the library defines dlsym itself
 * (interposer/dlsym.S), and its own calls to dlsym must reach that one, not libc's. */
#ifndef VG_GLIBC_COMPAT_H
#define VG_GLIBC_COMPAT_H

#if defined(__x86_64__)
__asm__(".symver dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver dlvsym, dlvsym@GLIBC_2.2.5");
__asm__(".symver dlerror, dlerror@GLIBC_2.2.5");
__asm__(".symver dladdr, dladdr@GLIBC_2.2.5");
__asm__(".symver dladdr1, dladdr1@GLIBC_2.3.3");
__asm__(".symver dlinfo, dlinfo@GLIBC_2.3.3");
#ifdef VG_GLIBC_PIN_DLSYM
__asm__(".symver dlsym, dlsym@GLIBC_2.2.5");
#endif
__asm__(".symver pthread_create, pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_sigmask, pthread_sigmask@GLIBC_2.2.5");
__asm__(".symver pthread_setname_np, pthread_setname_np@GLIBC_2.12");
__asm__(".symver pthread_key_create, pthread_key_create@GLIBC_2.2.5");
__asm__(".symver pthread_once, pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_setspecific, pthread_setspecific@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_init, pthread_mutexattr_init@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_destroy, pthread_mutexattr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_setpshared, pthread_mutexattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_setrobust, pthread_mutexattr_setrobust@GLIBC_2.12");
__asm__(".symver pthread_mutex_consistent, pthread_mutex_consistent@GLIBC_2.12");
__asm__(".symver pthread_mutex_timedlock, pthread_mutex_timedlock@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_trylock, pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver pthread_condattr_setclock, pthread_condattr_setclock@GLIBC_2.3.3");
#elif defined(__aarch64__)
__asm__(".symver dlopen, dlopen@GLIBC_2.17");
__asm__(".symver dlvsym, dlvsym@GLIBC_2.17");
__asm__(".symver dlerror, dlerror@GLIBC_2.17");
__asm__(".symver dladdr, dladdr@GLIBC_2.17");
__asm__(".symver dladdr1, dladdr1@GLIBC_2.17");
__asm__(".symver dlinfo, dlinfo@GLIBC_2.17");
#ifdef VG_GLIBC_PIN_DLSYM
__asm__(".symver dlsym, dlsym@GLIBC_2.17");
#endif
__asm__(".symver pthread_create, pthread_create@GLIBC_2.17");
__asm__(".symver pthread_sigmask, pthread_sigmask@GLIBC_2.17");
__asm__(".symver pthread_setname_np, pthread_setname_np@GLIBC_2.17");
__asm__(".symver pthread_key_create, pthread_key_create@GLIBC_2.17");
__asm__(".symver pthread_once, pthread_once@GLIBC_2.17");
__asm__(".symver pthread_setspecific, pthread_setspecific@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_init, pthread_mutexattr_init@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_destroy, pthread_mutexattr_destroy@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_setpshared, pthread_mutexattr_setpshared@GLIBC_2.17");
__asm__(".symver pthread_mutexattr_setrobust, pthread_mutexattr_setrobust@GLIBC_2.17");
__asm__(".symver pthread_mutex_consistent, pthread_mutex_consistent@GLIBC_2.17");
__asm__(".symver pthread_mutex_timedlock, pthread_mutex_timedlock@GLIBC_2.17");
__asm__(".symver pthread_mutex_trylock, pthread_mutex_trylock@GLIBC_2.17");
__asm__(".symver pthread_condattr_setclock, pthread_condattr_setclock@GLIBC_2.17");
#endif

#endif

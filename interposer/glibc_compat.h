/* Bind the libc symbols whose default version is new (the dl* and pthread functions moved into libc as GLIBC_2.34,
 * pthread_sigmask got GLIBC_2.32) to their original versions, so a library built on a new glibc still loads in
 * RHEL 8 / Ubuntu 20.04 images (glibc 2.28 / 2.31). Force-included into every library object by the Makefile;
 * the library links with --no-as-needed -ldl -lpthread so older glibc finds them there. tests/run.sh checks
 * that nothing newer than GLIBC_2.17 is referenced. (stat and fstat are not used: before 2.33 they were not symbols; accounting/region.c calls the fstat system call.) */
#ifndef VG_GLIBC_COMPAT_H
#define VG_GLIBC_COMPAT_H

#if defined(__x86_64__)
__asm__(".symver dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver dlvsym, dlvsym@GLIBC_2.2.5");
__asm__(".symver dlerror, dlerror@GLIBC_2.2.5");
__asm__(".symver dladdr, dladdr@GLIBC_2.2.5");
__asm__(".symver dladdr1, dladdr1@GLIBC_2.3.3");
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

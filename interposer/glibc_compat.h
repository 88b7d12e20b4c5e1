/* Bind the few libc symbols whose default version is new (dlopen and dlvsym moved into libc as GLIBC_2.34) to
 * their original versions, so a library built on a new glibc still loads in RHEL 8 / Ubuntu 20.04 images
 * (glibc 2.28 / 2.31). tests/run.sh checks that no newer version is referenced. Link with --no-as-needed -ldl
 * so older glibc finds them in libdl. */
#ifndef VG_GLIBC_COMPAT_H
#define VG_GLIBC_COMPAT_H

#if defined(__x86_64__)
__asm__(".symver dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver dlvsym, dlvsym@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver dlopen, dlopen@GLIBC_2.17");
__asm__(".symver dlvsym, dlvsym@GLIBC_2.17");
#endif

#endif

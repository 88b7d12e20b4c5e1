/* The command's start-up, made to run on glibc before 2.34 (config/glibc_compat.h pins everything else).
 *
 * crt1.o's _start calls __libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end). Before 2.34, init
 * was __libc_csu_init, linked into the program from libc_nonshared.a: it ran the program's _init and .init_array,
 * which the dynamic loader leaves to the program. 2.34 moved that walk into libc, and its crt1.o passes init =
 * NULL; the new symbol version __libc_start_main@GLIBC_2.34 exists so that such a program cannot start on an old
 * libc that would silently skip its constructors. So we do what the old crt1.o and libc_nonshared did: the link
 * wraps crt1.o's call (-Wl,--wrap=__libc_start_main, Makefile), and the wrapper calls the original version with an
 * init of our own that runs _init and .init_array. A glibc from 2.34 on runs the same init through its original
 * version (init != NULL: the walk is the program's, as before), so one binary starts the same on both. fini stays
 * NULL: the loader runs the program's .fini_array and _fini at exit on every version. */
#include <stddef.h>

typedef int vg_main_fn(int, char **, char **);
typedef void vg_init_fn(int, char **, char **);

/* Names the toolchain fixes: crti.o's _init (the .init section), the linker's bounds of .init_array, ld's
 * __wrap_ / __real_ pair. */
extern void _init(void) __attribute__((visibility("hidden")));
extern vg_init_fn *const __init_array_start[] __attribute__((visibility("hidden")));
extern vg_init_fn *const __init_array_end[] __attribute__((visibility("hidden")));
int __wrap___libc_start_main(vg_main_fn *mainfn, int argc, char **argv, vg_init_fn *init, void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end);
int vg_libc_start_main(vg_main_fn *mainfn, int argc, char **argv, vg_init_fn *init, void (*fini)(void),
		       void (*rtld_fini)(void), void *stack_end);

#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
__asm__(".symver vg_libc_start_main, __libc_start_main@GLIBC_2.2.5");
#else
__asm__(".symver vg_libc_start_main, __libc_start_main@GLIBC_2.17");
#endif

/* What __libc_csu_init did for a dynamically linked program (.preinit_array is the loader's). */
static void vg_start_init(int argc, char **argv, char **envp)
{
	_init();
	for (vg_init_fn *const *f = __init_array_start; f < __init_array_end; f++)
		(*f)(argc, argv, envp);
}

int __wrap___libc_start_main(vg_main_fn *mainfn, int argc, char **argv, vg_init_fn *init, void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end)
{
	/* An old crt1.o passes its own init: keep it. */
	return vg_libc_start_main(mainfn, argc, argv, init ? init : vg_start_init, fini, rtld_fini, stack_end);
}
#else
/* Elsewhere no older version is pinned: the call goes to the default one unchanged. */
int __real___libc_start_main(vg_main_fn *mainfn, int argc, char **argv, vg_init_fn *init, void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end);
int __wrap___libc_start_main(vg_main_fn *mainfn, int argc, char **argv, vg_init_fn *init, void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end)
{
	return __real___libc_start_main(mainfn, argc, argv, init, fini, rtld_fini, stack_end);
}
#endif

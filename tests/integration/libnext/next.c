/* A second preload library in the style of many interposers: it finds the function it wraps with
 * dlsym(RTLD_NEXT, ...). Loaded after libvramguard.so, "next" must be libc, never this library itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int next_state; /* 0 untested, 1 ok, 2 got itself back */

pid_t getppid(void)
{
	pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getppid");
	if (real == getppid || real == NULL) {
		next_state = 2;
		return -1;      /* calling it would recurse forever */
	}
	next_state = 1;
	return real();
}

__attribute__((destructor)) static void next_report(void)
{
	const char *msg = next_state == 1 ? "libnext: RTLD_NEXT ok\n"
			 : next_state == 2 ? "libnext: RTLD_NEXT returned the caller itself\n"
					   : "libnext: not called\n";
	(void)!write(2, msg, strlen(msg));
}

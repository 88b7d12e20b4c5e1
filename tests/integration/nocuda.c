/* A process that never uses CUDA, under the preload: dlsym keeps working for every kind of name, nothing loads
 * libcuda, no thread is started and nothing is printed (run.sh checks stderr). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <unistd.h>

#include "tests/integration/itest.h"

static int threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	void *m = dlopen("libm.so.6", RTLD_NOW);
	IT_CHECK(m != NULL, "dlopen libm");
	double (*c)(double) = (double (*)(double))dlsym(m, "cos");
	IT_CHECK(c && c(0.0) == 1.0, "dlsym(libm, \"cos\") works");
	IT_CHECK(dlsym(m, "cuNotThere") == NULL && dlerror() != NULL, "a cu* miss on another handle fails normally");
	IT_CHECK(dlsym(RTLD_DEFAULT, "printf") != NULL, "RTLD_DEFAULT lookups work");
	IT_CHECK(dlsym(RTLD_NEXT, "getpid") != NULL, "RTLD_NEXT lookups work");
	IT_CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL, "libcuda was never loaded");
	IT_CHECK(threads() == 1, "no thread started (%d)", threads());
	return it_failed;
}

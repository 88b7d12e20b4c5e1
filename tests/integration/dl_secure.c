/* Secure mode: run setuid (AT_SECURE) with VRAMGUARD_REPORT pointing at a file. glibc ignores LD_PRELOAD for such
 * programs, so the library arrives the way /etc/ld.so.preload would bring it: loaded by path (argv[2]) after the
 * driver (argv[1], the test double, by absolute path since LD_LIBRARY_PATH is ignored too). The report must go to
 * stderr, never to the file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

#include <cudaTypedefs.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	printf("AT_SECURE=%lu\n", getauxval(AT_SECURE));
	void *cuda = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	void *vg = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!cuda || !vg) {
		printf("dlopen failed: %s\n", dlerror());
		return 2;
	}
	PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(vg, "cuInit");
	PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(vg, "cuMemAlloc_v2");
	CUdeviceptr p;
	int rc = init ? (int)init(0) : -1;
	int rc2 = alloc ? (int)alloc(&p, 1 << 20) : -1;
	printf("cuInit %d, cuMemAlloc_v2 %d\n", rc, rc2);
	return rc == 0 && rc2 == 0 ? 0 : 1;
}

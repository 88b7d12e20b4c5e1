/* Secure mode: a probe that tests/run.sh runs setuid-root (AT_SECURE) as nobody, and not setuid as a control, with
 * variables naming files (VRAMGUARD_REPORT, VRAMGUARD_SHARED, VRAMGUARD_SHM_DIR, ...). glibc ignores LD_PRELOAD for
 * such programs, so the library arrives the way /etc/ld.so.preload would bring it: loaded by path (argv[2]) after
 * the driver (argv[1], the test double, by absolute path since LD_LIBRARY_PATH is ignored too). The probe only
 * reports what happened; run.sh decides what should have: an allocation within the quota, one over it (the quota
 * must still hold), the control segments of this pid found while it runs (argv[3..]: directories to look in),
 * since a control segment is removed at exit, and likewise the mode of the file an absolute VRAMGUARD_SHARED names
 * (a region is removed when its last member exits). A segment is this process's only with its PID *and* its start
 * time: a killed process with the same PID may have left one behind (the CI run that failed on a stale
 * vramguard.proc.PID.* of another run). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cudaTypedefs.h>

/* Field 22 of /proc/self/stat, the start time in clock ticks since boot, as the library names the segment. */
static unsigned long long start_time(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');    /* the command name may hold spaces and parentheses */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

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
	CUdeviceptr p, q;
	int rc = init ? (int)init(0) : -1;
	int rc2 = alloc ? (int)alloc(&p, 1 << 20) : -1;
	int rc3 = alloc ? (int)alloc(&q, (size_t)8 << 30) : -1; /* run.sh sets a 4 GiB quota on a 16 GiB device */
	printf("cuInit %d, cuMemAlloc_v2 %d, over quota %d\n", rc, rc2, rc3);
	const char *shared = getenv("VRAMGUARD_SHARED");
	struct stat st;
	if (shared && shared[0] == '/' && stat(shared, &st) == 0)
		printf("shared region file: mode %o\n", (unsigned)(st.st_mode & 07777));
	char name[64];
	snprintf(name, sizeof(name), "vramguard.proc.%d.%llu", (int)getpid(), start_time());
	for (int i = 3; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, name) == 0)
				printf("control segment: %s/%s\n", argv[i], e->d_name);
		if (d)
			closedir(d);
	}
	return rc == 0 && rc2 == 0 ? 0 : 1;
}

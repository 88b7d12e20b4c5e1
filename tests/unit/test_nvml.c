/* Unit tests for interposer/nvml/nvml.c, our own NVML access for the sampler, against the test double of NVML
 * (tests/fakecuda/fakenvml.h) found through this binary's rpath. Built three times (the Makefile):
 *   test_nvml          the fake with R615's nvmlDeviceGetMemoryLimits_v1, and the fake libcuda for usage
 *   test_nvml_r580     the fake of a driver before R615 (no such function)
 *   test_nvml_missing  no NVML at all */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interposer/nvml/nvml.h"
#include "tests/unit/unit.h"

#if !defined(TEST_NVML_MISSING)
#include <cuda.h>
#define FAKENVML_NO_ABI         /* the NVML types are interposer/nvml/nvml.h's here */
#include "tests/fakecuda/fakenvml.h"
/* The fake's test helpers, looked up once NVML is loaded (the binary does not link NVML: nothing may load it but
 * vg_nvml_load). */
static long (*nvml_calls)(const char *);
static const char *(*nvml_last_namespace)(void);
#define fakenvml_calls(n) nvml_calls(n)
#define fakenvml_last_namespace() nvml_last_namespace()
#endif


#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define UUID0 "GPU-00000000-0000-0000-0000-000000000000"

/* In the library, route.c's; here nothing is interposed. */
void *(*vg_resolve_real_dlsym(void))(void *, const char *)
{
	return dlsym;
}

static void test_cgroup_path(void)
{
	char p[4096];
	int rc = vg_nvml_cgroup_path(p, sizeof(p));
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[4096];
	bool v2 = false;
	while (f && fgets(line, sizeof(line), f))
		v2 |= strncmp(line, "0::/", 4) == 0;
	if (f)
		fclose(f);
	if (!v2) {
		CHECK(rc == -ENOENT);
		return;
	}
	CHECK(rc == 0);
	CHECK(p[0] == '/' && (strlen(p) == 1 || p[strlen(p) - 1] != '/'));
	struct stat st;
	char ctl[4200];
	snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", p);
	/* the directory of a cgroup v2 (every one has cgroup.controllers), where a cgroup2 file system is mounted */
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	if (access(ctl, F_OK) != 0)
		fprintf(stderr, "note: %s has no cgroup.controllers (no cgroup2 mount in this namespace?)\n", p);
	char small[4];
	CHECK(vg_nvml_cgroup_path(small, sizeof(small)) == -ENAMETOOLONG || strlen(p) < sizeof(small));
}

#if defined(TEST_NVML_MISSING)

int main(void)
{
	CHECK_STR(vg_nvml_error(), "");
	uint64_t b = 1, hard = 1, soft = 1;
	if (vg_nvml_load()) {
		fprintf(stderr, "note: a system libnvidia-ml.so.1 was found; the missing-NVML checks do not apply\n");
		CHECK(true);
		return UNIT_DONE();
	}
	CHECK(!vg_nvml_load());         /* tried once */
	CHECK_CONTAINS(vg_nvml_error(), "libnvidia-ml.so.1");
	CHECK(vg_nvml_process_used(UUID0, &b) == -ENOSYS);
	CHECK_EQ_U64(b, 0);
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == -ENOSYS);
	CHECK_EQ_U64(hard, UINT64_MAX);
	CHECK_EQ_U64(soft, 0);
	CHECK(!vg_nvml_real_loaded());
	CHECK(dlerror() == NULL);       /* our failed lookups leave nothing for the application to find */
	test_cgroup_path();
	return UNIT_DONE();
}

#else

static void test_process_used(void)
{
	uint64_t b = 7;
	CUdeviceptr p;
	CHECK(cuInit(0) == CUDA_SUCCESS);
	/* a CUDA process with nothing allocated yet is listed with 0 bytes by the fake */
	CHECK(vg_nvml_process_used(UUID0, &b) == 0);
	CHECK_EQ_U64(b, 0);
	CHECK(cuMemAlloc_v2(&p, 100 * MiB) == CUDA_SUCCESS);
	CHECK(vg_nvml_process_used(UUID0, &b) == 0);
	CHECK_EQ_U64(b, 100 * MiB);
	long v3 = fakenvml_calls("nvmlDeviceGetComputeRunningProcesses_v3");
	CHECK(v3 >= 1);
	/* uppercase: NVML's own comparison (the fake's is exact) */
	CHECK(vg_nvml_process_used("GPU-00000009-0000-0000-0000-000000000009", &b) == -ENODEV);
	CHECK(vg_nvml_process_used("", &b) == -ENODEV);

	/* a PID namespace NVML cannot translate: not listed */
	setenv("FAKENVML_HIDE_SELF", "1", 1);
	b = 7;
	CHECK(vg_nvml_process_used(UUID0, &b) == -ESRCH);
	CHECK_EQ_U64(b, 0);
	unsetenv("FAKENVML_HIDE_SELF");

	/* more processes than the first buffer holds: asked again with a larger one */
	setenv("FAKENVML_EXTRA_PROCS", "300", 1);
	long before = fakenvml_calls("nvmlDeviceGetComputeRunningProcesses_v3");
	CHECK(vg_nvml_process_used(UUID0, &b) == 0);
	CHECK_EQ_U64(b, 100 * MiB);
	CHECK(fakenvml_calls("nvmlDeviceGetComputeRunningProcesses_v3") == before + 2);
	setenv("FAKENVML_EXTRA_PROCS", "70000", 1);    /* beyond the bound: gives up */
	CHECK(vg_nvml_process_used(UUID0, &b) == -EOVERFLOW);
	unsetenv("FAKENVML_EXTRA_PROCS");

	/* an NVML without _v3 and _v2: the v1 entry point, 16-byte entries */
	struct vg_nvml_real_table saved = vg_nvml_real;
	vg_nvml_real.nvmlDeviceGetComputeRunningProcesses_v3 = NULL;
	vg_nvml_real.nvmlDeviceGetComputeRunningProcesses_v2 = NULL;
	setenv("FAKENVML_EXTRA_PROCS", "3", 1);
	before = fakenvml_calls("nvmlDeviceGetComputeRunningProcesses");
	CHECK(vg_nvml_process_used(UUID0, &b) == 0);
	CHECK_EQ_U64(b, 100 * MiB);
	CHECK(fakenvml_calls("nvmlDeviceGetComputeRunningProcesses") == before + 1);
	vg_nvml_real.nvmlDeviceGetComputeRunningProcesses = NULL;
	CHECK(vg_nvml_process_used(UUID0, &b) == -ENOSYS);
	vg_nvml_real = saved;
	unsetenv("FAKENVML_EXTRA_PROCS");
	CHECK(cuMemFree_v2(p) == CUDA_SUCCESS);
	CHECK(vg_nvml_process_used(UUID0, &b) == 0);
	CHECK_EQ_U64(b, 0);
}

static void test_driver_limits(void)
{
	uint64_t hard = 1, soft = 1;
	char cg[4096];
	bool v2 = vg_nvml_cgroup_path(cg, sizeof(cg)) == 0;
#if defined(TEST_NVML_R580)
	CHECK(vg_nvml_real.nvmlDeviceGetMemoryLimits_v1 == NULL);
	unsetenv("FAKENVML_MEMORY_LIMIT");
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == -ENOSYS);
	setenv("FAKENVML_MEMORY_LIMIT", "2G", 1);
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == -ENOSYS);
	CHECK_EQ_U64(hard, UINT64_MAX);
	CHECK_EQ_U64(soft, 0);
	unsetenv("FAKENVML_MEMORY_LIMIT");
	(void)v2;
#else
	if (!v2) {
		fprintf(stderr, "note: no cgroup v2 here: the driver limits are not asked for\n");
		CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == -ENOENT);
		return;
	}
	unsetenv("FAKENVML_MEMORY_LIMIT");
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == -EOPNOTSUPP);
	CHECK_EQ_U64(hard, UINT64_MAX);
	CHECK_EQ_U64(soft, 0);
	CHECK_STR(fakenvml_last_namespace(), cg);       /* the process's own cgroup, by its full path */
	setenv("FAKENVML_MEMORY_LIMIT", "2G,1G", 1);
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == 0);
	CHECK_EQ_U64(hard, 2 * GiB);
	CHECK_EQ_U64(soft, 1 * GiB);
	setenv("FAKENVML_MEMORY_LIMIT", "3G", 1);
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == 0);
	CHECK_EQ_U64(hard, 3 * GiB);
	CHECK_EQ_U64(soft, 3 * GiB);
	setenv("FAKENVML_MEMORY_LIMIT", "max", 1);
	CHECK(vg_nvml_driver_limits(UUID0, &hard, &soft) == 0);
	CHECK_EQ_U64(hard, UINT64_MAX);
	CHECK_EQ_U64(soft, 0);
	CHECK(vg_nvml_driver_limits("GPU-00000009-0000-0000-0000-000000000009", &hard, &soft) == -ENODEV);
	unsetenv("FAKENVML_MEMORY_LIMIT");
#endif
}

int main(void)
{
	unsetenv("FAKENVML_HIDE_SELF");
	unsetenv("FAKENVML_EXTRA_PROCS");
	CHECK(!vg_nvml_real_loaded());  /* nothing loaded NVML yet: not loaded for this */
	CHECK(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
	CHECK(vg_nvml_load());
	CHECK_STR(vg_nvml_error(), "");
	CHECK(vg_nvml_load());
	CHECK(vg_nvml_real_loaded());
	CHECK(vg_nvml_real.nvmlDeviceGetMemoryInfo_v2 != NULL && vg_nvml_real.nvmlDeviceGetUUID != NULL);
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
	nvml_calls = (long (*)(const char *))(h ? dlsym(h, "fakenvml_calls") : NULL);
	nvml_last_namespace = (const char *(*)(void))(h ? dlsym(h, "fakenvml_last_namespace") : NULL);
	if (!nvml_calls || !nvml_last_namespace) {
		UNIT_FAIL_("libnvidia-ml.so.1 is not the test double (no fakenvml_calls)");
		return UNIT_DONE();
	}
	CHECK(fakenvml_calls("nvmlInit_v2") == 1);
	test_process_used();
	test_driver_limits();
	test_cgroup_path();
	return UNIT_DONE();
}

#endif

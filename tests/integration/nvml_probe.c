/* Reads NVML's memory info of one GPU every way a program can reach NVML, under the preload against the test double
 * (tests/fakecuda/fakenvml.h), and checks each answer. Built twice (the Makefile):
 *   nvml_link  linked against libnvidia-ml.so.1 and libcuda.so.1, like a framework: the exported names (our exports
 *              come first under LD_PRELOAD), then dlopen + dlsym by three names (libnvidia-ml.so.1, libnvidia-ml.so,
 *              the absolute path). --alloc MIB first allocates that much through CUDA.
 *   nvml_smi   linked against neither, like nvidia-smi: it dlopens libnvidia-ml.so and looks every function up on
 *              the handle; then libnvidia-ml.so.1. Before that it checks that our exported NVML names do nothing
 *              harmful while NVML is not loaded. --cuda yes|no: whether libcuda must have been loaded by the end.
 * usage: PROG [--alloc MIB] [--index N] [--reserved MIB] [--cuda yes|no] TOTAL_MIB USED_MIB
 * Every answer must say total TOTAL_MIB, used USED_MIB, free the difference; _v2 also reserved --reserved MIB
 * (default 0) and its version field as the caller set it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

#include "tests/integration/itest.h"

#include "tests/fakecuda/fakenvml.h"     /* NVML's types as the tests see them; no fake function is called */

struct nvml {
	const char *how;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*info)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*info_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
};

static unsigned long long want_total, want_used, want_reserved;
static unsigned index_;

static void check(const struct nvml *n)
{
	nvmlDevice_t d = NULL;
	IT_CHECK(n->init && n->by_index && n->info && n->info_v2, "%s: the four functions found", n->how);
	if (!n->init || !n->by_index || !n->info || !n->info_v2)
		return;
	IT_CHECK(n->init() == 0 && n->by_index(index_, &d) == 0, "%s: nvmlInit_v2, handle of index %u", n->how, index_);
	nvmlMemory_t m = { 0, 0, 0 };
	nvmlReturn_t rc = n->info(d, &m);
	IT_CHECK(rc == 0 && m.total == want_total && m.used == want_used && m.free == m.total - m.used,
		 "%s: nvmlDeviceGetMemoryInfo total %llu MiB, used %llu MiB, free %llu MiB (got rc %d: %llu, %llu, %llu "
		 "bytes)", n->how, want_total >> 20, want_used >> 20, (want_total - want_used) >> 20, rc, m.total, m.used,
		 m.free);
	nvmlMemory_v2_t v = { .version = nvmlMemory_v2 };
	rc = n->info_v2(d, &v);
	IT_CHECK(rc == 0 && v.version == nvmlMemory_v2 && v.total == want_total && v.used == want_used &&
			 v.free == v.total - v.used && v.reserved == want_reserved,
		 "%s: nvmlDeviceGetMemoryInfo_v2 the same, reserved %llu MiB, version kept (got rc %d: %llu, %llu, %llu, "
		 "reserved %llu, version %#x)", n->how, want_reserved >> 20, rc, v.total, v.used, v.free, v.reserved,
		 v.version);
	v.version = 1;
	IT_CHECK(n->info_v2(d, &v) != 0, "%s: _v2 with a wrong version fails as NVML says", n->how);
}

static void by_dlopen(const char *name, const char *how)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	IT_CHECK(h != NULL, "%s: dlopen(\"%s\")", how, name);
	if (!h)
		return;
	struct nvml n = {
		how,
		(nvmlReturn_t(*)(void))dlsym(h, "nvmlInit_v2"),
		(nvmlReturn_t(*)(unsigned int, nvmlDevice_t *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2"),
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(h, "nvmlDeviceGetMemoryInfo"),
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2"),
	};
	check(&n);
	IT_CHECK(dlsym(h, "nvmlNoSuchFunction") == NULL && dlerror() != NULL, "%s: a missing nvml* name fails normally",
		 how);
}

int main(int argc, char **argv)
{
	unsigned long long alloc = 0;
	const char *cuda = NULL;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		if (!strcmp(argv[i], "--alloc"))
			alloc = strtoull(argv[i + 1], NULL, 10) * MiB;
		else if (!strcmp(argv[i], "--index"))
			index_ = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--reserved"))
			want_reserved = strtoull(argv[i + 1], NULL, 10) * MiB;
		else if (!strcmp(argv[i], "--cuda"))
			cuda = argv[i + 1];
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: %s [--alloc MIB] [--index N] [--reserved MIB] [--cuda yes|no] TOTAL_MIB USED_MIB\n",
			argv[0]);
		return 2;
	}
	want_total = strtoull(argv[i], NULL, 10) * MiB;
	want_used = strtoull(argv[i + 1], NULL, 10) * MiB;

#ifdef NVML_LINKED
	if (alloc) {
		CUdeviceptr p;
		IT_CHECK(cuInit(0) == CUDA_SUCCESS && cuMemAlloc_v2(&p, alloc) == CUDA_SUCCESS,
			 "cuMemAlloc_v2 %llu MiB", alloc >> 20);
	}
	struct nvml linked = { "linked (exported names)", nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2,
			       nvmlDeviceGetMemoryInfo, nvmlDeviceGetMemoryInfo_v2 };
	check(&linked);
	struct nvml deflt = {
		"dlsym(RTLD_DEFAULT)",
		(nvmlReturn_t(*)(void))dlsym(RTLD_DEFAULT, "nvmlInit_v2"),
		(nvmlReturn_t(*)(unsigned int, nvmlDevice_t *))dlsym(RTLD_DEFAULT, "nvmlDeviceGetHandleByIndex_v2"),
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(RTLD_DEFAULT, "nvmlDeviceGetMemoryInfo"),
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(RTLD_DEFAULT, "nvmlDeviceGetMemoryInfo_v2"),
	};
	check(&deflt);
	by_dlopen("libnvidia-ml.so.1", "dlopen(libnvidia-ml.so.1) + dlsym");
	by_dlopen("libnvidia-ml.so", "dlopen(libnvidia-ml.so) + dlsym");
	Dl_info di;
	if (dladdr((void *)nvmlInit_v2, &di) && di.dli_fname && di.dli_fname[0] == '/')
		by_dlopen(di.dli_fname, "dlopen(absolute path) + dlsym");
	else
		IT_CHECK(0, "the path of the linked NVML (dladdr)");
#else
	(void)alloc;
	/* NVML is not loaded yet: a lookup of an NVML name on the global scope finds our export, and leaves no error. */
	void *self = dlopen(NULL, RTLD_NOW);
	dlerror();
	nvmlReturn_t (*early)(nvmlDevice_t, nvmlMemory_t *) =
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(self, "nvmlDeviceGetMemoryInfo");
	const char *e = dlerror();
	if (early) {
		nvmlMemory_t m;
		IT_CHECK(e == NULL && early(NULL, &m) == 1,
			 "before NVML is loaded: the exported name answers NVML_ERROR_UNINITIALIZED, no dlerror");
	} else {
		IT_CHECK(e != NULL, "before NVML is loaded: no nvmlDeviceGetMemoryInfo (not under the preload)");
	}
	IT_CHECK(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL, "nothing loaded NVML for us");
	by_dlopen("libnvidia-ml.so", "nvidia-smi's way: dlopen(libnvidia-ml.so) + dlsym");
	by_dlopen("libnvidia-ml.so.1", "dlopen(libnvidia-ml.so.1) + dlsym");
#endif
	if (cuda) {
		bool loaded = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL;
		IT_CHECK(loaded == !strcmp(cuda, "yes"), "libcuda %s (%s)", !strcmp(cuda, "yes") ? "was loaded" : "was never loaded",
			 loaded ? "loaded" : "not loaded");
	}
	return it_failed;
}

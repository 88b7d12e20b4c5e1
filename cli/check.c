/* `vramguard check`: what the library would do on this machine: the configuration from the environment, the
 * library `run` would load, libcuda.so.1 and NVML, and each visible device with its memory, quota and compute
 * share. Creates no CUDA context. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"
#include "config/policy.h"

typedef int nvml_ret;
typedef struct nvml_dev *nvml_dev;
struct nvml_memory {
	unsigned long long total, free, used;
};

static void print_bytes(const char *label, uint64_t v)
{
	char b[32];
	printf("%s%s", label, vg_format_bytes(v, b, sizeof(b)));
}

/* check must see the driver as it is: if the library is preloaded into this command (LD_PRELOAD inherited from a
 * vramguard-run shell, say), run again without it. */
static void check_without_preload(char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	if (!dlsym(RTLD_DEFAULT, "vg_instance_marker") || getenv("__VRAMGUARD_CHECK_REEXEC") || !pre)
		return;
	char *keep = malloc(strlen(pre) + 1);
	if (!keep)
		return;
	size_t o = 0;
	for (const char *p = pre; *p;) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		size_t n = (size_t)(e - p);
		if (n && !(n >= 15 && !strncmp(e - 15, "libvramguard.so", 15))) {
			if (o)
				keep[o++] = ':';
			memcpy(keep + o, p, n);
			o += n;
		}
		p = e;
	}
	keep[o] = '\0';
	if (o)
		setenv("LD_PRELOAD", keep, 1);
	else
		unsetenv("LD_PRELOAD");
	free(keep);
	setenv("__VRAMGUARD_CHECK_REEXEC", "1", 1);
	execv("/proc/self/exe", argv - 1);      /* argv was shifted past the program name */
}

/* NVML, if it is there: what check asks of it. */
struct check_nvml {
	bool ok;                        /* initialised */
	nvml_ret (*by_uuid)(const char *, nvml_dev *);
	nvml_ret (*mem)(nvml_dev, struct nvml_memory *);
};

/* The library `run` would load, and the configuration from the environment: vg_config_load's status. */
static int check_config(struct vg_config *cfg)
{
	char lib[PATH_MAX];
	if (vg_cli_find_library(lib, sizeof(lib)) == 0)
		printf("library:  %s\n", lib);
	else
		printf("library:  not found next to this command or in its ../lib\n");
	int cfg_rc = vg_config_load(cfg, vg_cli_env_get, 0);
	printf("configuration (from the environment):\n");
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];
		if (strchr(o->name, '<')) {
			/* CUDA_DEVICE_MEMORY_LIMIT_<i>, CUDA_DEVICE_SM_LIMIT_<i>: list the ones that are set */
			int prefix = (int)(strchr(o->name, '<') - o->name);
			for (int d = 0; d < VG_MAX_DEVICES; d++) {
				char name[64];
				snprintf(name, sizeof(name), "%.*s%d", prefix, o->name, d);
				if (getenv(name))
					printf("  %-28s %s\n", name, getenv(name));
			}
			continue;
		}
		const char *v = getenv(o->name);
		printf("  %-28s %s%s\n", o->name, v && *v ? v : o->dflt, v && *v ? "" : " (default)");
	}
	if (cfg_rc != 0) {
		printf("  %s\n", cfg->error);
		return cfg_rc;
	}
	printf("  valid\n");
	if (cfg->note[0])
		printf("  note: %s\n", cfg->note);
	if (cfg->count == VG_COUNT_DEVICE)
		printf("  the quota counts the device memory a process holds (VRAMGUARD_COUNT=device: allocations, "
		       "pools' reserved memory, graph memory, the driver's own, re-measured every %u ms)\n",
		       cfg->device_poll_ms);
	else
		printf("  the quota counts the bytes a process asks for (VRAMGUARD_COUNT=allocations)\n");
	return 0;
}

/* libcuda.so.1 and its version: the handle, or NULL (said). */
static void *check_driver(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cuda) {
		printf("libcuda.so.1: not found (no NVIDIA driver here): %s\n", dlerror());
		return NULL;
	}
	struct link_map *lm = NULL;
	dlinfo(cuda, RTLD_DI_LINKMAP, &lm);
	int ver = 0;
	CUresult (*drv_ver)(int *) = (CUresult(*)(int *))dlsym(cuda, "cuDriverGetVersion");
	if (drv_ver)
		drv_ver(&ver);
	printf("libcuda.so.1: %s (CUDA %d.%d)\n", lm && lm->l_name[0] ? lm->l_name : "found", ver / 1000,
	       (ver % 1000) / 10);
	return cuda;
}

static void check_nvml_open(struct check_nvml *nv)
{
	void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	nvml_ret (*init)(void) = nvml ? (nvml_ret(*)(void))dlsym(nvml, "nvmlInit_v2") : NULL;
	nvml_ret (*drv)(char *, unsigned) =
		nvml ? (nvml_ret(*)(char *, unsigned))dlsym(nvml, "nvmlSystemGetDriverVersion") : NULL;
	nv->by_uuid = nvml ? (nvml_ret(*)(const char *, nvml_dev *))dlsym(nvml, "nvmlDeviceGetHandleByUUID") : NULL;
	nv->mem = nvml ? (nvml_ret(*)(nvml_dev, struct nvml_memory *))dlsym(nvml, "nvmlDeviceGetMemoryInfo") : NULL;
	nv->ok = init && init() == 0;
	if (nv->ok) {
		char dv[96] = "?";
		if (drv)
			drv(dv, sizeof(dv));
		printf("NVML:         found (driver %s)\n", dv);
	} else {
		printf("NVML:         %s\n", nvml ? "found but not initialised" : "not found (memory in use not shown)");
	}
}

/* ---- the device policy: what the library would apply to device d (quota, request, warn-at; compute share) ---- */
static void check_policy(const struct vg_config *cfg, int d, const char *uuid, size_t tot)
{
	struct vg_device_policy p;
	vg_config_device_policy(cfg, d, uuid, tot, &p);         /* the library's own rule, config/policy.c */
	if (p.limit == UINT64_MAX)
		printf(", quota: unlimited");
	else
		print_bytes(", quota ", p.limit), printf(" (%s)", p.limit_source ? p.limit_source : "?");
	if (p.request == UINT64_MAX)
		printf(", request: none");
	else
		print_bytes(", request ", p.request), printf(" (%s)%s", p.request_source ? p.request_source : "?",
							     p.limit != UINT64_MAX && p.request >= p.limit ?
							     ": not below the quota, never triggers" : "");
	/* VRAMGUARD_WARN_AT: the device's soft limit is the lower of it and the request (p.soft) */
	if (p.warn != UINT64_MAX)
		print_bytes(", warn at ", p.warn), printf(" (%s)%s", p.warn_source ? p.warn_source : "?",
							  p.request != UINT64_MAX && p.soft == p.request ?
							  ": the request is lower and applies" : "");
	putchar('\n');
	/* the compute share, on a line of its own (the quota's line stays as it was) */
	if (p.compute_pct)
		printf("         compute %u%% of the GPU's time (%s)%s\n", p.compute_pct,
		       p.compute_source ? p.compute_source : "?",
		       p.compute_pct == 100 ? ": measured, never delayed" : "");
	else if (p.compute_source)
		printf("         compute: no limit (%s)\n", p.compute_source);
	else
		printf("         compute: no limit\n");
}

/* ---- the device's UUID, as NVML and the configuration spell it ---- */
static void check_uuid(CUresult (*uuidf)(CUuuid *, CUdevice), int d, char *uuid, size_t len)
{
	CUuuid u;
	if (uuidf && uuidf(&u, d) == CUDA_SUCCESS)
		vg_format_uuid(u.bytes, uuid, len);
}

/* Each visible device, with its memory and the policy (cuInit and device queries create no context). */
static void check_devices(void *cuda, const struct check_nvml *nv, const struct vg_config *cfg, int cfg_rc)
{
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
	CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(cuda, "cuDeviceGetCount");
	CUresult (*name)(char *, int, CUdevice) = (CUresult(*)(char *, int, CUdevice))dlsym(cuda, "cuDeviceGetName");
	CUresult (*total)(size_t *, CUdevice) = (CUresult(*)(size_t *, CUdevice))dlsym(cuda, "cuDeviceTotalMem_v2");
	CUresult (*uuidf)(CUuuid *, CUdevice) = (CUresult(*)(CUuuid *, CUdevice))dlsym(cuda, "cuDeviceGetUuid_v2");
	int n = 0;
	CUresult rc = init && count ? init(0) : CUDA_ERROR_NOT_FOUND;
	if (rc == CUDA_SUCCESS)
		rc = count(&n);
	if (rc != CUDA_SUCCESS) {
		printf("devices:      none usable (cuInit/cuDeviceGetCount returned %d)\n", (int)rc);
		return;
	}
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	printf("devices:      %d visible%s%s%s\n", n, cvd ? " (CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "", cvd ? ")" : "");
	for (int d = 0; d < n; d++) {
		char nm[256] = "?", uuid[VG_UUID_MAX] = "";
		size_t tot = 0;
		if (name)
			name(nm, sizeof(nm), d);
		if (total)
			total(&tot, d);
		check_uuid(uuidf, d, uuid, sizeof(uuid));
		printf("  GPU %d  %s  %s\n", d, nm, uuid[0] ? uuid : "(no uuid)");
		print_bytes("         memory ", tot);
		nvml_dev h;
		struct nvml_memory m;
		if (nv->ok && nv->by_uuid && nv->mem && uuid[0] && nv->by_uuid(uuid, &h) == 0 && nv->mem(h, &m) == 0)
			print_bytes(", in use on the card ", m.used);
		if (cfg_rc == 0)
			check_policy(cfg, d, uuid, tot);
		else
			printf(", quota: configuration invalid\n");
	}
}

int vg_cli_check(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return vg_cli_help("check");
	if (argc > 1)
		return vg_cli_usage(vg_cli_usage_of("check"), "check: unexpected argument %s", vg_cli_q(argv[1]));
	check_without_preload(argv);
	unsetenv("__VRAMGUARD_CHECK_REEXEC");
	printf("vramguard %s\n", VG_VERSION);
	if (dlsym(RTLD_DEFAULT, "vg_instance_marker"))
		printf("note:     libvramguard.so is preloaded into this command (/etc/ld.so.preload?): the device memory "
		       "below is what it reports\n");
	struct vg_config cfg;
	int cfg_rc = check_config(&cfg);
	void *cuda = check_driver();
	if (cuda) {
		struct check_nvml nv;
		check_nvml_open(&nv);
		check_devices(cuda, &nv, &cfg, cfg_rc);
	}
	return cfg_rc ? 2 : 0;
}

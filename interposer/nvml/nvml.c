/* The real NVML table, and our own read-only NVML access for the background sampler: this process's usage as the
 * driver counts it, and the driver-enforced container limits of R615+. Nothing here is on an allocation path.
 * The wrappers that change what NVML tells the application are in nvml_hooks.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting/lockorder.h"
#include "interposer/nvml/nvml.h"

struct vg_nvml_real_table vg_nvml_real;

/* 1 once vg_nvml_real is filled; it is written once, under vg_nvml_pub_lock, which is never held across dlopen
 * (dlsym may call vg_nvml_real_loaded while another thread holds the loader's lock). */
static _Atomic int vg_nvml_real_ready;
static pthread_mutex_t vg_nvml_pub_lock = PTHREAD_MUTEX_INITIALIZER;

static void vg_nvml_fill(void *h)
{
	void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
	if (!real_dlsym)
		return;
	struct vg_nvml_real_table t;
#define VG_NVML_X_RESOLVE(name, ret, params) t.name = (vg_nvml_fn_##name)real_dlsym(h, #name);
	VG_NVML_HOOKS(VG_NVML_X_RESOLVE)
	VG_NVML_REALS(VG_NVML_X_RESOLVE)
#undef VG_NVML_X_RESOLVE
	(void)dlerror();        /* the names an older NVML lacks: not the application's error */
	vg_lock(&vg_nvml_pub_lock, VG_RANK_NVML_PUB);
	if (!atomic_load(&vg_nvml_real_ready)) {
		vg_nvml_real = t;
		atomic_store_explicit(&vg_nvml_real_ready, 1, memory_order_release);
	}
	vg_unlock(&vg_nvml_pub_lock, VG_RANK_NVML_PUB);
	/* h stays open: the functions in the table must outlive any dlclose of the application. */
}

bool vg_nvml_real_loaded(void)
{
	if (__builtin_expect(atomic_load_explicit(&vg_nvml_real_ready, memory_order_acquire) != 0, 1))
		return true;
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h) {
		(void)dlerror();        /* an application that checks dlerror() after its own dlsym must not see ours */
		return false;
	}
	vg_nvml_fill(h);
	return atomic_load_explicit(&vg_nvml_real_ready, memory_order_acquire) != 0;
}

/* ---- loading it ourselves ---- */

static pthread_mutex_t vg_nvml_load_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int vg_nvml_state;       /* 0 not tried, 1 loaded and initialised, -1 failed (vg_nvml_why says why) */
static char vg_nvml_why[256];

bool vg_nvml_load(void)
{
	int st = atomic_load_explicit(&vg_nvml_state, memory_order_acquire);
	if (st)
		return st > 0;
	/* Held across dlopen and nvmlInit_v2: only the sampler's calls take it, never dlsym's route. */
	vg_lock(&vg_nvml_load_lock, VG_RANK_NVML_LOAD);
	st = atomic_load(&vg_nvml_state);
	if (!st) {
		void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			const char *e = dlerror();
			snprintf(vg_nvml_why, sizeof(vg_nvml_why), "%s", e ? e : "libnvidia-ml.so.1: cannot be loaded");
			st = -1;
		} else {
			vg_nvml_fill(h);
			nvmlReturn_t rc = VG_NVML_ERROR_FUNCTION_NOT_FOUND;
			if (atomic_load_explicit(&vg_nvml_real_ready, memory_order_acquire) && vg_nvml_real.nvmlInit_v2)
				rc = vg_nvml_real.nvmlInit_v2();
			if (rc == VG_NVML_SUCCESS) {
				st = 1;
			} else {
				const char *s = vg_nvml_real.nvmlErrorString ? vg_nvml_real.nvmlErrorString(rc) : NULL;
				snprintf(vg_nvml_why, sizeof(vg_nvml_why), "nvmlInit_v2 failed: %s (%d)", s ? s : "unknown error",
					 (int)rc);
				st = -1;
			}
		}
		atomic_store_explicit(&vg_nvml_state, st, memory_order_release);
	}
	vg_unlock(&vg_nvml_load_lock, VG_RANK_NVML_LOAD);
	return st > 0;
}

const char *vg_nvml_error(void)
{
	return atomic_load_explicit(&vg_nvml_state, memory_order_acquire) < 0 ? vg_nvml_why : "";
}

/* The handle of the GPU uuid: 0, -ENODEV, -EIO. */
static int vg_nvml_handle(const char *uuid, nvmlDevice_t *dev)
{
	if (!uuid || !*uuid)
		return -ENODEV;
	if (!vg_nvml_real.nvmlDeviceGetHandleByUUID)
		return -ENOSYS;
	nvmlReturn_t rc = vg_nvml_real.nvmlDeviceGetHandleByUUID(uuid, dev);
	if (rc == VG_NVML_SUCCESS)
		return 0;
	return rc == VG_NVML_ERROR_NOT_FOUND || rc == VG_NVML_ERROR_INVALID_ARGUMENT ? -ENODEV : -EIO;
}

/* ---- this process's usage ---- */

#define VG_NVML_PIDS_MAX 8

/* The PIDs this process has: getpid() and those of /proc/self/status NSpid (one per PID namespace, from the one
 * /proc was mounted in down to ours). Returns how many. */
static int vg_nvml_own_pids(unsigned int *pids, int max)
{
	int n = 0;
	pids[n++] = (unsigned int)getpid();
	FILE *f = fopen("/proc/self/status", "re");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		char *p = line + 6, *end;
		for (;;) {
			errno = 0;
			unsigned long v = strtoul(p, &end, 10);
			if (end == p || errno)
				break;
			p = end;
			bool seen = false;
			for (int i = 0; i < n; i++)
				seen |= pids[i] == (unsigned int)v;
			if (!seen && n < max)
				pids[n++] = (unsigned int)v;
		}
		break;
	}
	if (f)
		fclose(f);
	return n;
}

int vg_nvml_process_used(const char *uuid, uint64_t *bytes)
{
	*bytes = 0;
	if (!vg_nvml_load())
		return -ENOSYS;
	nvmlDevice_t dev;
	int rc = vg_nvml_handle(uuid, &dev);
	if (rc)
		return rc;
	/* v3 and v2 fill 24-byte entries, v1 16-byte ones; read both through the first two fields. */
	struct {
		vg_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v2 v2;
		vg_nvml_fn_nvmlDeviceGetComputeRunningProcesses v1;
	} fns[3] = {
		{ vg_nvml_real.nvmlDeviceGetComputeRunningProcesses_v3, NULL },
		{ vg_nvml_real.nvmlDeviceGetComputeRunningProcesses_v2, NULL },
		{ NULL, vg_nvml_real.nvmlDeviceGetComputeRunningProcesses },
	};
	unsigned int pids[VG_NVML_PIDS_MAX];
	int npids = vg_nvml_own_pids(pids, VG_NVML_PIDS_MAX);
	for (int f = 0; f < 3; f++) {
		if (!fns[f].v2 && !fns[f].v1)
			continue;
		size_t esize = fns[f].v2 ? sizeof(nvmlProcessInfo_v2_t) : sizeof(nvmlProcessInfo_v1_t);
		unsigned int cap = 64;
		void *buf = NULL;
		nvmlReturn_t nrc = VG_NVML_ERROR_INSUFFICIENT_SIZE;
		unsigned int count = 0;
		for (int attempt = 0; attempt < 6 && nrc == VG_NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
			void *nb = realloc(buf, (size_t)cap * esize);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			count = cap;
			nrc = fns[f].v2 ? fns[f].v2(dev, &count, buf) : fns[f].v1(dev, &count, buf);
			if (nrc == VG_NVML_ERROR_INSUFFICIENT_SIZE) {
				/* count says how many there are now; more may start before we ask again */
				unsigned int want = count > cap ? count + count / 4 + 8 : cap * 2;
				if (cap >= 65536)
					break;
				cap = want > 65536 ? 65536 : want;
			}
		}
		if (nrc == VG_NVML_ERROR_FUNCTION_NOT_FOUND || nrc == VG_NVML_ERROR_NOT_SUPPORTED) {
			free(buf);
			continue;       /* an older entry point may still answer */
		}
		if (nrc != VG_NVML_SUCCESS) {
			free(buf);
			return nrc == VG_NVML_ERROR_INSUFFICIENT_SIZE ? -EOVERFLOW : -EIO;
		}
		bool found = false, unknown = false;
		uint64_t sum = 0;
		for (unsigned int i = 0; i < count && i < cap; i++) {
			const char *e = (const char *)buf + (size_t)i * esize;
			unsigned int pid;
			unsigned long long used;
			memcpy(&pid, e, sizeof(pid));
			memcpy(&used, e + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof(used));
			for (int k = 0; k < npids; k++) {
				if (pid != pids[k])
					continue;
				found = true;
				if (used == VG_NVML_VALUE_NOT_AVAILABLE)
					unknown = true;
				else
					sum += used;
				break;
			}
		}
		free(buf);
		if (!found)
			return -ESRCH;
		if (unknown && sum == 0)
			return -ENODATA;
		*bytes = sum;
		return 0;
	}
	return -ENOSYS;
}

/* ---- driver-enforced limits (R615+) ---- */

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void vg_unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The cgroup2 mount of this mount namespace: its mount point and the cgroup it shows as its root. false if none. */
static bool vg_cgroup2_mount(char *point, size_t plen, char *root, size_t rlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS */
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int field = 1; tok && field < 4; field++)
			tok = strtok_r(NULL, " ", &save);
		char *r = tok, *p = tok ? strtok_r(NULL, " ", &save) : NULL;
		if (!r || !p)
			continue;
		vg_unescape(r);
		vg_unescape(p);
		if (strlen(p) < plen && strlen(r) < rlen) {
			memcpy(point, p, strlen(p) + 1);
			memcpy(root, r, strlen(r) + 1);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

int vg_nvml_cgroup_path(char *out, size_t len)
{
	char rel[2048] = "", point[1024] = "/sys/fs/cgroup", root[1024] = "/";
	bool have = false;
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[2048];
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(rel, sizeof(rel), "%s", line + 3);
		have = rel[0] == '/';
		break;
	}
	if (f)
		fclose(f);
	if (!have)
		return -ENOENT;
	vg_cgroup2_mount(point, sizeof(point), root, sizeof(root));
	/* The mount shows the cgroup `root` at `point` (in a cgroup namespace both are usually "/"). */
	const char *tail = rel;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0 && strncmp(rel, root, rl) == 0 && (rel[rl] == '/' || rel[rl] == '\0'))
		tail = rel + rl;
	while (*tail == '/')
		tail++;
	size_t pl = strlen(point);
	while (pl > 1 && point[pl - 1] == '/')
		point[--pl] = '\0';
	int n = *tail ? snprintf(out, len, "%s/%s", point, tail) : snprintf(out, len, "%s", point);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

int vg_nvml_driver_limits(const char *uuid, uint64_t *hard, uint64_t *soft)
{
	*hard = UINT64_MAX;
	*soft = 0;
	if (!vg_nvml_load() || !vg_nvml_real.nvmlDeviceGetMemoryLimits_v1)
		return -ENOSYS;
	char ns[4096];
	int rc = vg_nvml_cgroup_path(ns, sizeof(ns));
	if (rc)
		return rc;
	nvmlDevice_t dev;
	if ((rc = vg_nvml_handle(uuid, &dev)) != 0)
		return rc;
	nvmlGetMemoryLimits_v1_t l = { .nameSpace = ns, .softLimit = 0, .hardLimit = VG_NVML_MEMORY_LIMIT_MAX };
	nvmlReturn_t nrc = vg_nvml_real.nvmlDeviceGetMemoryLimits_v1(dev, &l);
	switch (nrc) {
	case VG_NVML_SUCCESS:
		*hard = l.hardLimit;    /* VG_NVML_MEMORY_LIMIT_MAX == UINT64_MAX: no limit */
		*soft = l.softLimit;
		return 0;
	case VG_NVML_ERROR_NOT_FOUND:   /* nothing recorded for this cgroup: no limit */
		return 0;
	case VG_NVML_ERROR_FUNCTION_NOT_FOUND:
		return -ENOSYS;
	case VG_NVML_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case VG_NVML_ERROR_NO_PERMISSION:
		return -EACCES;
	default:
		return -EIO;
	}
}

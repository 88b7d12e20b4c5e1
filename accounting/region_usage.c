/* Regions read without joining, never locked: what NVML is told under the preload (interposer/nvml/nvml_hooks.c),
 * from the region files of a directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>

#include "accounting/region_impl.h"

/* ---- reading without joining ---- */

/* Region device of uuid in h, -1 if none (case-insensitive; the file's strings copied out bounded first). */
static int vg_region_dev_of(const struct vg_region_hdr *h, const char *uuid)
{
	char key[VG_REGION_UUID_MAX];
	if (!uuid || !*uuid)
		return -1;
	for (int d = 0; d < VG_REGION_DEVS; d++) {
		memcpy(key, h->dev[d].uuid, sizeof(key));
		key[sizeof(key) - 1] = '\0';
		if (key[0] && strcasecmp(key, uuid) == 0)
			return d;
	}
	return -1;
}

bool vg_region_gpu_usage(const struct vg_region *r, const char *uuid, int ordinal, uint64_t total, uint64_t *used,
			 uint64_t *limit)
{
	if (!r || !r->h || r->kind != VG_REGION_SHARED)
		return false;
	int d = vg_region_dev_of(r->h, uuid);
	if (d >= 0) {
		*used = atomic_load(&r->h->dev[d].used);
		*limit = atomic_load(&r->h->dev[d].limit);
		return true;
	}
	/* Not registered yet: what its spec would give it. A copy taken without the lock may be half rewritten by a
	 * `limit set --shared` (it then fails to parse: no budget this time). */
	char spec[VG_REGION_SPEC_MAX];
	memcpy(spec, r->h->spec, sizeof(spec));
	spec[sizeof(spec) - 1] = '\0';
	int said = 0;
	uint64_t lim = vg_spec_limit(spec, ordinal, uuid, total, &said);
	if (!said || lim == VG_REGION_NONE)
		return false;
	*used = 0;
	*limit = lim;
	return true;
}

int vg_region_dir_usage(const char *dir, const char *uuid, pid_t skip, uint64_t *used, uint32_t *procs)
{
	*used = 0;
	if (procs)
		*procs = 0;
	if (!dir || !*dir)
		dir = VG_REGION_DIR;
	DIR *dp = opendir(dir);
	if (!dp)
		return -errno;
	uint64_t ns = vg_proc_pidns(), skip_start = 0;     /* read from /proc only if a slot has skip's PID */
	size_t plen = strlen(VG_REGION_PREFIX);
	struct dirent *e;
	char path[VG_SHARED_PATH_MAX], err[VG_ERR_MAX];
	while ((e = readdir(dp))) {
		/* .vramguard.tmp.* (a region being made) does not start with the prefix */
		if (strncmp(e->d_name, VG_REGION_PREFIX, plen) != 0 || !e->d_name[plen])
			continue;
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		struct vg_region r;
		if (vg_region_open(&r, path, VG_OPEN_READ, 0, NULL, NULL, err, sizeof(err)) != 0)
			continue;
		int d = vg_region_dev_of(r.h, uuid);
		for (uint32_t i = 0; d >= 0 && i < r.nslots; i++) {
			const struct vg_region_slot *s = &r.h->slot[i];
			if (atomic_load(&s->state) != VG_SLOT_ACTIVE || !(atomic_load(&s->bound) >> d & 1u))
				continue;
			if (skip > 0 && s->pid == skip && (!s->pidns || !ns || s->pidns == ns)) {
				if (!skip_start)
					skip_start = vg_proc_start(skip);
				if (s->start == skip_start)
					continue;
			}
			if (vg_slot_life_of(&r, i, ns) == VG_LIFE_DEAD)
				continue;
			*used += atomic_load(&s->used[d]);
			if (procs)
				(*procs)++;
		}
		vg_region_close(&r);
	}
	closedir(dp);
	return 0;
}

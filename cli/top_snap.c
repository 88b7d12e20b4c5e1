/* `vramguard top`'s snapshot: every region of the directory (cli/scan.h) and, per GPU across them all, what the
 * live processes use and which budgets apply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/top_snap.h"

static struct vg_top_gpu *top_gpu_for(struct vg_top_snap *sn, const struct vg_dev_view *d)
{
	for (size_t i = 0; i < sn->ngpu; i++)
		if (!strcmp(sn->gpu[i].uuid, d->uuid))
			return &sn->gpu[i];
	if (sn->ngpu == sizeof(sn->gpu) / sizeof(sn->gpu[0]))
		return NULL;
	struct vg_top_gpu *g = &sn->gpu[sn->ngpu++];
	memset(g, 0, sizeof(*g));
	memcpy(g->uuid, d->uuid, sizeof(g->uuid));
	g->first = *d;
	return g;
}

bool vg_top_budget_next(const struct vg_top_snap *sn, const struct vg_top_gpu *g, size_t *at,
			struct vg_top_budget *bu)
{
	for (; *at < sn->scan.n * VG_REGION_DEVS; ++*at) {
		const struct vg_scan_region *sr = &sn->scan.v[*at / VG_REGION_DEVS];
		if (sr->control)
			continue;
		struct vg_dev_view v;
		if (!vg_dev_read(&sr->r, (int)(*at % VG_REGION_DEVS), &v))
			continue;
		if (v.limit == VG_REGION_NONE || strcmp(v.uuid, g->uuid) != 0)
			continue;
		++*at;
		bu->sr = sr;
		bu->limit = v.limit;
		bu->used = v.used;
		return true;
	}
	return false;
}

static int top_gpu_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vg_top_gpu *)a)->uuid, ((const struct vg_top_gpu *)b)->uuid);
}

uint64_t vg_top_effective(const struct vg_scan_region *sr, const struct vg_slot_view *v, int d)
{
	uint64_t own = v->quota[d];
	uint64_t lim = vg_dev_limit(&sr->r, d);
	return own < lim ? own : lim;
}

int vg_top_take(struct vg_top_snap *sn, const struct vg_top_opts *o, char *err, size_t errlen)
{
	memset(sn, 0, sizeof(*sn));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sn->now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (vg_scan_open(&sn->scan, o->dir, o->names, o->nnames, VG_SCAN_DIR | VG_SCAN_CLEAN, err, errlen) != 0)
		return -EINVAL;
	for (size_t i = 0; i < sn->scan.n; i++) {
		struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct vg_slot_view v;
			if (!vg_slot_read(&sr->r, k, &v))
				continue;
			if (!v.alive) {
				sn->nexited++;
				continue;
			}
			sn->nproc++;
			if (v.life == VG_LIFE_UNVERIFIABLE && !sr->control)
				sn->nunverifiable++;
			for (int d = 0; d < VG_REGION_DEVS; d++) {
				struct vg_dev_view dv;
				if (!vg_slot_uses(&sr->r, &v, d) || !vg_dev_read(&sr->r, d, &dv))
					continue;
				struct vg_top_gpu *g = top_gpu_for(sn, &dv);
				if (g) {
					g->used += v.used[d];
					g->procs++;
				}
			}
		}
		/* GPUs with a budget are listed even when nobody uses them now. */
		for (int d = 0; d < VG_REGION_DEVS && !sr->control; d++) {
			struct vg_dev_view dv;
			if (vg_dev_read(&sr->r, d, &dv) && dv.limit != VG_REGION_NONE)
				top_gpu_for(sn, &dv);
		}
	}
	qsort(sn->gpu, sn->ngpu, sizeof(sn->gpu[0]), top_gpu_cmp);
	return 0;
}

/* Per-site growth (accounting/growth.h has the model): the followed pairs, their judgement, the forecast, and the
 * tally of live bytes by (site, device) that candidates come from. */
#include "accounting/growth.h"

#include <stdlib.h>
#include <string.h>

#define VG_GW_K VG_GROWTH_INTERVALS
#define VG_GW_NS_PER_SEC 1e9

_Static_assert(VG_GROWTH_POINTS > VG_GROWTH_INTERVALS, "a series holds at least one window");

void vg_growth_init(struct vg_growth *g, uint64_t window_ns)
{
	memset(g, 0, sizeof(*g));
	g->window_ns = window_ns < VG_GW_K ? VG_GW_K : window_ns;
	g->step_ns = g->window_ns / VG_GW_K;
}

bool vg_growth_due(const struct vg_growth *g, uint64_t now_ns)
{
	if (!g->npoints)
		return true;
	uint64_t last = g->time_ns[(g->npoints - 1) % VG_GROWTH_POINTS];
	return now_ns >= last && now_ns - last >= g->step_ns;
}

static int vg_gw_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double vg_growth_theil_sen(const uint64_t *t, const uint64_t *v, size_t n)
{
	double s[VG_GROWTH_FIT_POINTS * (VG_GROWTH_FIT_POINTS - 1) / 2];      /* 1.7 KiB of stack: the sampler thread's */
	size_t m = 0;
	if (n > VG_GROWTH_FIT_POINTS)
		n = VG_GROWTH_FIT_POINTS;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (t[j] > t[i])
				s[m++] = ((double)v[j] - (double)v[i]) * VG_GW_NS_PER_SEC / (double)(t[j] - t[i]);
	if (!m)
		return 0;
	qsort(s, m, sizeof(s[0]), vg_gw_cmp_double);
	return m % 2 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
}

/* The rate of a growing slot: the fit over its points since it has been growing, at most VG_GROWTH_FIT_POINTS. */
static double vg_gw_fit(const struct vg_growth *g, const struct vg_growth_slot *s)
{
	uint64_t t[VG_GROWTH_FIT_POINTS], v[VG_GROWTH_FIT_POINTS], first = s->growing_from;
	if (g->npoints - first > VG_GROWTH_FIT_POINTS)
		first = g->npoints - VG_GROWTH_FIT_POINTS;
	size_t n = 0;
	for (uint64_t p = first; p < g->npoints; p++, n++) {
		t[n] = g->time_ns[p % VG_GROWTH_POINTS];
		v[n] = s->live[p % VG_GROWTH_POINTS];
	}
	return vg_growth_theil_sen(t, v, n);
}

/* The slot's last window: VG_GW_K + 1 points (it has them: followed for a whole window). */
static void vg_gw_window(const struct vg_growth *g, const struct vg_growth_slot *s, uint64_t *t, uint64_t *w)
{
	for (size_t i = 0; i <= VG_GW_K; i++) {
		uint64_t p = g->npoints - 1 - VG_GW_K + i;
		t[i] = g->time_ns[p % VG_GROWTH_POINTS];
		w[i] = s->live[p % VG_GROWTH_POINTS];
	}
}

static bool vg_gw_has_window(const struct vg_growth *g, const struct vg_growth_slot *s)
{
	return g->npoints >= s->since + VG_GW_K + 1;
}

/* Judge a slot on its last window (growth.h, *Growing*). */
static void vg_gw_judge(const struct vg_growth *g, struct vg_growth_slot *s)
{
	uint64_t t[VG_GW_K + 1], w[VG_GW_K + 1], high = 0;
	unsigned rises = 0;
	bool kept = true;
	if (!vg_gw_has_window(g, s)) {
		s->growing = false;
		s->rate = 0;
		s->growing_since_ns = 0;
		return;
	}
	vg_gw_window(g, s, t, w);
	for (size_t i = 1; i <= VG_GW_K; i++) {
		rises += w[i] > w[i - 1];
		if (i >= 2 && w[i - 2] > high)
			high = w[i - 2];
		if (w[i] <= high || w[i] <= w[0])      /* back at a level it had two or more intervals before */
			kept = false;
	}
	bool growing = 2 * rises > VG_GW_K && kept && vg_growth_theil_sen(t, w, VG_GW_K + 1) > 0;
	if (growing && !s->growing) {
		s->growing_from = g->npoints - 1 - VG_GW_K;
		s->growing_since_ns = t[0];
	}
	s->growing = growing;
	s->rate = growing ? vg_gw_fit(g, s) : 0;
	if (!(s->rate > 0))
		s->growing = false;
	if (!s->growing)
		s->growing_since_ns = 0;
}

static int vg_gw_find(const struct vg_growth *g, uint32_t site, int dev)
{
	for (int i = 0; i < VG_GROWTH_SITES; i++)
		if (g->slot[i].site == site && g->slot[i].dev == dev)
			return i;
	return -1;
}

/* The slot a candidate may take: a free one, else the evictable one holding least (growth.h, *Which pairs*), if the
 * candidate is a riser or holds more; -1 if none. */
static int vg_gw_victim(const struct vg_growth *g, const struct vg_growth_cand *c)
{
	int best = -1;
	uint64_t last = g->npoints - 1, least = UINT64_MAX;
	for (int i = 0; i < VG_GROWTH_SITES; i++) {
		const struct vg_growth_slot *s = &g->slot[i];
		if (!s->site)
			return i;
		if (s->growing || !vg_gw_has_window(g, s))
			continue;
		uint64_t now = s->live[last % VG_GROWTH_POINTS], then = s->live[(last - VG_GW_K) % VG_GROWTH_POINTS];
		if (now > then || now >= least)
			continue;
		least = now;
		best = i;
	}
	return best >= 0 && (c->rose > 0 || c->live > least) ? best : -1;
}

void vg_growth_point(struct vg_growth *g, uint64_t now_ns, const struct vg_growth_cand *cands, size_t n)
{
	uint64_t p = g->npoints++;
	g->time_ns[p % VG_GROWTH_POINTS] = now_ns;
	for (int i = 0; i < VG_GROWTH_SITES; i++) {
		struct vg_growth_slot *s = &g->slot[i];
		if (!s->site)
			continue;
		uint64_t live = 0;
		for (size_t k = 0; k < n; k++)
			if (cands[k].site == s->site && cands[k].dev == s->dev) {
				live = cands[k].live;
				break;
			}
		s->live[p % VG_GROWTH_POINTS] = live;
	}
	for (size_t k = 0; k < n; k++) {
		const struct vg_growth_cand *c = &cands[k];
		if (!c->site || !c->live || vg_gw_find(g, c->site, c->dev) >= 0)
			continue;
		int v = vg_gw_victim(g, c);
		if (v < 0)
			continue;
		struct vg_growth_slot *s = &g->slot[v];
		memset(s, 0, sizeof(*s));
		s->site = c->site;
		s->dev = c->dev;
		s->since = p;
		s->live[p % VG_GROWTH_POINTS] = c->live;
	}
	for (int i = 0; i < VG_GROWTH_SITES; i++)
		if (g->slot[i].site)
			vg_gw_judge(g, &g->slot[i]);
}

size_t vg_growth_series(const struct vg_growth *g, int slot, uint64_t *time_ns, uint64_t *live)
{
	const struct vg_growth_slot *s = &g->slot[slot];
	if (!s->site || !g->npoints)
		return 0;
	uint64_t first = s->since, end = g->npoints;
	if (end - first > VG_GROWTH_POINTS)
		first = end - VG_GROWTH_POINTS;
	size_t n = 0;
	for (uint64_t p = first; p < end; p++, n++) {
		time_ns[n] = g->time_ns[p % VG_GROWTH_POINTS];
		live[n] = s->live[p % VG_GROWTH_POINTS];
	}
	return n;
}

double vg_growth_rate(const struct vg_growth *g, int dev)
{
	double r = 0;
	for (int i = 0; i < VG_GROWTH_SITES; i++)
		if (g->slot[i].site && g->slot[i].dev == dev && g->slot[i].growing)
			r += g->slot[i].rate;
	return r;
}

bool vg_growth_forecast(uint64_t used, uint64_t quota, double rate, uint64_t *seconds)
{
	if (!quota || quota == UINT64_MAX || !(rate > 0))
		return false;
	double s = used >= quota ? 0 : (double)(quota - used) / rate;
	*seconds = s >= (double)VG_GROWTH_FORECAST_MAX ? VG_GROWTH_FORECAST_MAX : (uint64_t)(s + 0.5);
	if (*seconds == 0 && used < quota)      /* 0 says "there already": not yet is at least a second */
		*seconds = 1;
	return true;
}

int vg_growth_report_due(struct vg_growth *g, uint64_t now_ns)
{
	int best = -1;
	if (g->reported_ns && (now_ns < g->reported_ns || now_ns - g->reported_ns < g->window_ns))
		return -1;
	for (int i = 0; i < VG_GROWTH_SITES; i++)
		if (g->slot[i].site && g->slot[i].growing && (best < 0 || g->slot[i].rate > g->slot[best].rate))
			best = i;
	if (best >= 0)
		g->reported_ns = now_ns ? now_ns : 1;
	return best;
}

/* ---- the tally ---- */

static uint64_t vg_gw_key(uint32_t site, int dev)
{
	return (uint64_t)site << 16 | (uint16_t)dev;
}

static size_t vg_gw_slot_of(const struct vg_growth_tally *t, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 32) & (t->cap - 1);
	while (t->v[i].key && t->v[i].key != key)
		i = (i + 1) & (t->cap - 1);
	return i;
}

static bool vg_gw_grow(struct vg_growth_tally *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct vg_growth_tally_entry *old = t->v, *v = calloc(cap, sizeof(*v));
	if (!v)
		return false;
	size_t oldcap = t->cap;
	t->v = v;
	t->cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			t->v[vg_gw_slot_of(t, old[i].key)] = old[i];
	free(old);
	return true;
}

void vg_growth_tally_add(struct vg_growth_tally *t, uint32_t site, int dev, uint64_t bytes)
{
	if (!site)
		return;
	if (2 * (t->n + 1) > t->cap && !vg_gw_grow(t)) {
		t->failed = true;
		return;
	}
	uint64_t key = vg_gw_key(site, dev);
	size_t i = vg_gw_slot_of(t, key);
	if (!t->v[i].key) {
		t->v[i].key = key;
		t->n++;
	}
	t->v[i].live += bytes;
}

uint64_t vg_growth_tally_get(const struct vg_growth_tally *t, uint32_t site, int dev)
{
	if (!t->cap || !site)
		return 0;
	size_t i = vg_gw_slot_of(t, vg_gw_key(site, dev));
	return t->v[i].key ? t->v[i].live : 0;
}

void vg_growth_tally_clear(struct vg_growth_tally *t)
{
	if (t->v)
		memset(t->v, 0, t->cap * sizeof(*t->v));
	t->n = 0;
	t->failed = false;
}

void vg_growth_tally_free(struct vg_growth_tally *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Keep the m best of what is offered in top[] (by score, largest first; *n so far). */
static void vg_gw_top(struct vg_growth_cand *top, size_t *n, size_t m, const struct vg_growth_cand *c,
		      uint64_t score, uint64_t (*score_of)(const struct vg_growth_cand *))
{
	size_t i;
	if (*n < m) {
		i = (*n)++;
	} else {
		if (score_of(&top[m - 1]) >= score)
			return;
		i = m - 1;
	}
	while (i > 0 && score_of(&top[i - 1]) < score) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *c;
}

static uint64_t vg_gw_by_live(const struct vg_growth_cand *c)
{
	return c->live;
}

static uint64_t vg_gw_by_rise(const struct vg_growth_cand *c)
{
	return c->rose;
}

static bool vg_gw_listed(const struct vg_growth_cand *out, size_t n, const struct vg_growth_cand *c)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].site == c->site && out[i].dev == c->dev)
			return true;
	return false;
}

size_t vg_growth_candidates(const struct vg_growth *g, const struct vg_growth_tally *now,
			    const struct vg_growth_tally *prev, struct vg_growth_cand *out)
{
	struct vg_growth_cand holders[VG_GROWTH_SITES], risers[VG_GROWTH_SITES];
	size_t n = 0, nh = 0, nr = 0;
	for (int i = 0; i < VG_GROWTH_SITES; i++) {
		const struct vg_growth_slot *s = &g->slot[i];
		if (s->site)
			out[n++] = (struct vg_growth_cand){ s->site, s->dev, vg_growth_tally_get(now, s->site, s->dev), 0 };
	}
	for (size_t i = 0; i < now->cap; i++) {
		const struct vg_growth_tally_entry *e = &now->v[i];
		if (!e->key || !e->live)
			continue;
		struct vg_growth_cand c = { (uint32_t)(e->key >> 16), (int16_t)(e->key & 0xffff), e->live, 0 };
		uint64_t before = vg_growth_tally_get(prev, c.site, c.dev);
		c.rose = c.live > before ? c.live - before : 0;
		vg_gw_top(holders, &nh, VG_GROWTH_SITES, &c, c.live, vg_gw_by_live);
		if (c.rose)
			vg_gw_top(risers, &nr, VG_GROWTH_SITES, &c, c.rose, vg_gw_by_rise);
	}
	/* Risers before holders: vg_growth_point admits in this order. */
	for (size_t i = 0; i < nr; i++)
		if (!vg_gw_listed(out, n, &risers[i]))
			out[n++] = risers[i];
	for (size_t i = 0; i < nh; i++)
		if (!vg_gw_listed(out, n, &holders[i]))
			out[n++] = holders[i];
	return n;
}

/* Per-site growth (accounting/growth.c) on a simulated clock: a leak is flagged and a steady holder is not, the
 * rate and the forecast are right, noise (a holder that wanders, one that churns around a level) is not growth, a
 * small riser is followed among many larger holders, memory stays bounded, growth reports come once per window at
 * most; the Theil-Sen fit and the tally on their own. */
#include <math.h>

#include "accounting/growth.h"
#include "tests/unit/unit.h"

#define S ((uint64_t)1000000000)
#define MIB ((uint64_t)1 << 20)
#define T0 ((uint64_t)1700000000 * S)
#define WINDOW (10 * S)                 /* a point a second */

/* One point from a tally the test filled: candidates as the sampler picks them, the tallies swapped. */
static void point(struct vg_growth *g, struct vg_growth_tally *now, struct vg_growth_tally *prev, uint64_t t)
{
	static struct vg_growth_cand c[VG_GROWTH_CANDIDATES];
	size_t n = vg_growth_candidates(g, now, prev, c);
	vg_growth_point(g, t, c, n);
	struct vg_growth_tally tmp = *prev;
	*prev = *now;
	*now = tmp;
	vg_growth_tally_clear(now);
}

static int slot_of(const struct vg_growth *g, uint32_t site, int dev)
{
	for (int i = 0; i < VG_GROWTH_SITES; i++)
		if (g->slot[i].site == site && g->slot[i].dev == dev)
			return i;
	return -1;
}

/* Site 1 holds 100 MiB; site 2 gains 1 MiB a second from 0 on device 0, under a 1 GiB quota. */
static void test_leak(void)
{
	static struct vg_growth g;
	struct vg_growth_tally now = { 0 }, prev = { 0 };
	vg_growth_init(&g, WINDOW);
	CHECK_EQ_U64(g.step_ns, S);
	uint64_t t = T0;
	int flagged_at = -1;
	for (int i = 0; i < 40; i++, t += S) {
		CHECK(vg_growth_due(&g, t));
		vg_growth_tally_add(&now, 1, 0, 60 * MIB);
		vg_growth_tally_add(&now, 1, 0, 40 * MIB);
		vg_growth_tally_add(&now, 2, 0, (uint64_t)i * MIB + 1);
		point(&g, &now, &prev, t);
		int s2 = slot_of(&g, 2, 0);
		if (flagged_at < 0 && s2 >= 0 && g.slot[s2].growing)
			flagged_at = i;
	}
	CHECK(!vg_growth_due(&g, t - S + S / 2));
	int s1 = slot_of(&g, 1, 0), s2 = slot_of(&g, 2, 0);
	CHECK(s1 >= 0 && s2 >= 0);
	CHECK_EQ_U64(flagged_at, VG_GROWTH_INTERVALS);         /* as soon as it has a whole window */
	CHECK(!g.slot[s1].growing && g.slot[s1].rate == 0);
	CHECK(g.slot[s2].growing);
	CHECK(fabs(g.slot[s2].rate - (double)MIB) < 1);        /* bytes per second */
	CHECK_EQ_U64(g.slot[s2].growing_since_ns, T0);
	double rate = vg_growth_rate(&g, 0);
	CHECK(fabs(rate - (double)MIB) < 1);
	CHECK(vg_growth_rate(&g, 1) == 0);
	uint64_t secs = 0, used = 100 * MIB + 39 * MIB;
	CHECK(vg_growth_forecast(used, 1024 * MIB, rate, &secs));
	CHECK_EQ_U64(secs, 1024 - 139);                         /* 885 MiB at 1 MiB/s */
	uint64_t tt[VG_GROWTH_POINTS], lv[VG_GROWTH_POINTS];
	size_t n = vg_growth_series(&g, s2, tt, lv);
	CHECK_EQ_U64(n, 40);
	CHECK_EQ_U64(tt[0], T0);
	CHECK_EQ_U64(lv[39], 39 * MIB + 1);
	vg_growth_tally_free(&now);
	vg_growth_tally_free(&prev);
}

static void test_forecast(void)
{
	uint64_t s = 7;
	CHECK(!vg_growth_forecast(10, 0, 1, &s));               /* no quota */
	CHECK(!vg_growth_forecast(10, UINT64_MAX, 1, &s));
	CHECK(!vg_growth_forecast(10, 100, 0, &s));             /* flat */
	CHECK(!vg_growth_forecast(10, 100, -5, &s));            /* falling */
	CHECK(!vg_growth_forecast(10, 100, NAN, &s));
	CHECK_EQ_U64(s, 7);
	CHECK(vg_growth_forecast(200, 100, 1, &s));             /* there already */
	CHECK_EQ_U64(s, 0);
	CHECK(vg_growth_forecast(0, UINT64_MAX - 1, 1e-9, &s));
	CHECK_EQ_U64(s, VG_GROWTH_FORECAST_MAX);
	CHECK(vg_growth_forecast(0, 3600, 1, &s));
	CHECK_EQ_U64(s, 3600);
	CHECK(vg_growth_forecast(99, 100, 1000, &s));          /* 1 ms away: a second, not "there already" */
	CHECK_EQ_U64(s, 1);
}

/* Noise is not growth: a holder that wanders at random, one that churns around a level, one that only falls; 2000
 * points each (a fixed seed: the same run every time). */
static void test_noise(void)
{
	static struct vg_growth g;
	struct vg_growth_tally now = { 0 }, prev = { 0 };
	vg_growth_init(&g, WINDOW);
	uint64_t t = T0, falling = 4000 * MIB;
	int flagged = 0;
	for (int i = 0; i < 2000; i++, t += S) {
		vg_growth_tally_add(&now, 1, 0, (unit_rand() % 512 + 1) * MIB);
		vg_growth_tally_add(&now, 2, 0, 300 * MIB + (unit_rand() % 64) * MIB);
		vg_growth_tally_add(&now, 3, 0, falling);
		falling -= (unit_rand() % 2) * MIB;
		point(&g, &now, &prev, t);
		for (int k = 0; k < VG_GROWTH_SITES; k++)
			flagged += g.slot[k].growing;
	}
	CHECK_EQ_U64(flagged, 0);
	CHECK(slot_of(&g, 1, 0) >= 0 && slot_of(&g, 2, 0) >= 0 && slot_of(&g, 3, 0) >= 0);
	CHECK(vg_growth_report_due(&g, t) < 0);
	vg_growth_tally_free(&now);
	vg_growth_tally_free(&prev);
}

/* A leak at a site that also frees and allocates again: +4 MiB a second under a churn of 0..3 MiB, growing from its
 * first whole window on, at its rate; a leak that rises in
 * half the intervals only (once every two seconds) is not "most of them"; a leak that pauses for two intervals is
 * judged again on the next window. */
static void test_leak_with_churn(void)
{
	static struct vg_growth g;
	struct vg_growth_tally now = { 0 }, prev = { 0 };
	vg_growth_init(&g, WINDOW);
	uint64_t t = T0;
	bool paused_flag = true, resumed = false, always = true;
	for (int i = 0; i < 40; i++, t += S) {
		vg_growth_tally_add(&now, 5, 1, (uint64_t)(4 * i) * MIB + (unit_rand() % 4) * MIB);
		vg_growth_tally_add(&now, 6, 1, (uint64_t)(i / 2) * MIB + MIB);
		/* site 7: a MiB a second, but flat at points 20 to 22 */
		vg_growth_tally_add(&now, 7, 1, (uint64_t)(i < 20 ? i : i <= 22 ? 20 : i - 2) * MIB + MIB);
		point(&g, &now, &prev, t);
		int s5 = slot_of(&g, 5, 1), s7 = slot_of(&g, 7, 1);
		if (i >= VG_GROWTH_INTERVALS && !g.slot[s5].growing)
			always = false;
		if (i == 22)
			paused_flag = g.slot[s7].growing;
		if (i == 22 + VG_GROWTH_INTERVALS)
			resumed = g.slot[s7].growing;
	}
	int s5 = slot_of(&g, 5, 1), s6 = slot_of(&g, 6, 1);
	CHECK(s5 >= 0 && g.slot[s5].growing);
	CHECK(always);
	CHECK(fabs(g.slot[s5].rate - 4.0 * MIB) < 0.2 * MIB);  /* the fit shrugs off the churn */
	CHECK(s6 >= 0 && !g.slot[s6].growing);
	CHECK(!paused_flag);
	CHECK(resumed);
	vg_growth_tally_free(&now);
	vg_growth_tally_free(&prev);
}

/* Forty holders of 1 GiB and more, and a small riser from point 5: it is followed (it rose) and flagged, though it
 * is never among the largest; the slots stay VG_GROWTH_SITES. A holder that stops rising may give its slot away
 * after a window, a growing one never. */
static void test_small_riser(void)
{
	static struct vg_growth g;
	struct vg_growth_tally now = { 0 }, prev = { 0 };
	vg_growth_init(&g, WINDOW);
	uint64_t t = T0;
	for (int i = 0; i < 40; i++, t += S) {
		for (uint32_t s = 1; s <= 40; s++)
			vg_growth_tally_add(&now, s, 0, (1024 + s) * MIB);
		if (i >= 5)
			vg_growth_tally_add(&now, 99, 0, (uint64_t)(i - 4) * MIB);
		point(&g, &now, &prev, t);
	}
	int s = slot_of(&g, 99, 0);
	CHECK(s >= 0 && g.slot[s].growing);
	int used = 0;
	for (int k = 0; k < VG_GROWTH_SITES; k++)
		used += g.slot[k].site != 0;
	CHECK_EQ_U64(used, VG_GROWTH_SITES);
	CHECK(slot_of(&g, 40, 0) >= 0);                         /* the largest holders stay */
	CHECK(sizeof(struct vg_growth) < 16 * 1024);            /* bounded: docs/report-format.md says so */
	vg_growth_tally_free(&now);
	vg_growth_tally_free(&prev);
}

/* Growth reports: the first when a pair grows, then one per window at most, the fastest pair named. */
static void test_reports(void)
{
	static struct vg_growth g;
	struct vg_growth_tally now = { 0 }, prev = { 0 };
	vg_growth_init(&g, WINDOW);
	uint64_t t = T0;
	int reports = 0, named = -1;
	uint64_t last = 0, least_gap = UINT64_MAX;
	for (int i = 0; i < 60; i++, t += S) {
		vg_growth_tally_add(&now, 7, 0, (uint64_t)i * MIB + 1);
		vg_growth_tally_add(&now, 8, 0, (uint64_t)(3 * i) * MIB + 1);
		point(&g, &now, &prev, t);
		int r = vg_growth_report_due(&g, t);
		if (r >= 0) {
			reports++;
			named = (int)g.slot[r].site;
			if (last && t - last < least_gap)
				least_gap = t - last;
			last = t;
		}
	}
	CHECK_EQ_U64(reports, 5);                               /* points 10, 20, 30, 40 and 50 */
	CHECK_EQ_U64(least_gap, WINDOW);
	CHECK_EQ_U64(named, 8);
	vg_growth_tally_free(&now);
	vg_growth_tally_free(&prev);
}

static void test_theil_sen(void)
{
	uint64_t t[11], v[11];
	for (int i = 0; i < 11; i++) {
		t[i] = T0 + (uint64_t)i * S;
		v[i] = 1000 + 10 * (uint64_t)i;
	}
	CHECK(fabs(vg_growth_theil_sen(t, v, 11) - 10) < 1e-9);
	v[3] = 1000000;                                         /* one outlier does not move it */
	v[7] = 0;
	CHECK(fabs(vg_growth_theil_sen(t, v, 11) - 10) < 1e-9);
	CHECK(vg_growth_theil_sen(t, v, 1) == 0);
	t[1] = t[0];                                            /* equal times are skipped */
	CHECK(fabs(vg_growth_theil_sen(t, v, 2)) == 0);
}

static void test_tally(void)
{
	struct vg_growth_tally t = { 0 };
	for (uint32_t s = 1; s <= 5000; s++)
		for (int d = 0; d < 3; d++)
			vg_growth_tally_add(&t, s, d, s * 10 + (uint64_t)d);
	vg_growth_tally_add(&t, 17, 2, 5);
	vg_growth_tally_add(&t, 0, 0, 5);                      /* no site: not counted */
	CHECK(!t.failed);
	CHECK_EQ_U64(t.n, 15000);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 17, 2), 177);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 5000, 0), 50000);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 5001, 0), 0);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 0, 0), 0);
	vg_growth_tally_clear(&t);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 17, 2), 0);
	vg_growth_tally_free(&t);
	CHECK_EQ_U64(vg_growth_tally_get(&t, 17, 2), 0);
}

int main(void)
{
	test_leak();
	test_forecast();
	test_noise();
	test_leak_with_churn();
	test_small_riser();
	test_reports();
	test_theil_sen();
	test_tally();
	return UNIT_DONE();
}

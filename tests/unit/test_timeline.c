/* The bounded usage timeline (accounting/timeline.c): bounded whatever the run's length, the highest peak and the
 * final denial counts never lost, times increasing, the whole run covered, points as often as the rules say. */
#include "accounting/timeline.h"
#include "tests/unit/unit.h"

#define S ((uint64_t)1000000000)
#define MIB ((uint64_t)1 << 20)
#define T0 ((uint64_t)1700000000 * S)

static int times_increase(const struct vg_timeline *t)
{
	for (uint32_t i = 1; i < t->n; i++)
		if (t->points[i].time_ns <= t->points[i - 1].time_ns)
			return 0;
	return 1;
}

static uint64_t max_peak(const struct vg_timeline *t)
{
	uint64_t m = 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->points[i].peak_bytes > m)
			m = t->points[i].peak_bytes;
	return m;
}

/* 10^6 samples, 10 ms apart (about 2.8 hours), of usage that wanders, bursts and is denied now and then. */
static void test_million(void)
{
	static struct vg_timeline t;
	uint64_t used = 0, peak = 0, dc = 0, db = 0, now = T0, sig = vg_timeline_significant(8192 * MIB, 0);
	uint32_t most = 0, compactions_seen = 0;
	int period_ok = 1, bounded = 1;

	vg_timeline_init(&t);
	for (int i = 0; i < 1000000; i++) {
		uint64_t r = unit_rand();
		uint64_t step = (r >> 8) % (256 * MIB);
		if (r & 1)
			used = used + step > 8192 * MIB ? 8192 * MIB : used + step;
		else
			used = used > step ? used - step : 0;
		if (used > peak)
			peak = used;
		if (i == 777777)        /* one burst between two samples: only the lifetime peak saw it */
			peak += 10240 * MIB;
		if ((r >> 40) % 5000 == 0) {
			dc++;
			db += step;
		}
		vg_timeline_sample(&t, now, used, peak, dc, db, sig);
		if (t.n > VG_TIMELINE_POINTS)
			bounded = 0;
		if (t.n > most)
			most = t.n;
		if (t.compactions != compactions_seen) {
			compactions_seen = t.compactions;
			if (t.period_ns != VG_TIMELINE_PERIOD_NS << t.compactions ||
			    t.gap_ns != VG_TIMELINE_GAP_NS << t.compactions)
				period_ok = 0;
		}
		if (i < 999999)
			now += 10 * 1000000;
	}
	CHECK(bounded);
	CHECK(most == VG_TIMELINE_POINTS);
	CHECK(sizeof(t) == VG_TIMELINE_POINTS * 40 + 40);
	CHECK(t.compactions >= 3);
	CHECK(period_ok);
	CHECK_EQ_U64(max_peak(&t), peak);
	CHECK(times_increase(&t));
	CHECK_EQ_U64(t.points[0].time_ns, T0);
	/* The last point is at most a period before the last sample: the run is covered to its end. */
	CHECK(now - t.points[t.n - 1].time_ns < t.period_ns);
	/* As a report shows it: one more point, now, with the final counts. */
	static struct vg_timeline_point out[VG_TIMELINE_POINTS + 1];
	uint32_t n = vg_timeline_finish(&t, out, now + S, used, peak, dc, db);
	CHECK_EQ_U64(n, t.n + 1);
	CHECK_EQ_U64(out[n - 1].time_ns, now + S);
	CHECK_EQ_U64(out[n - 1].denied_count, dc);
	CHECK_EQ_U64(out[n - 1].denied_bytes, db);
	CHECK_EQ_U64(out[n - 1].used_bytes, used);
	n = vg_timeline_finish(&t, out, t.points[t.n - 1].time_ns, used, peak, dc + 1, db);
	CHECK_EQ_U64(n, t.n);                   /* the clock did not move: the last point takes the final counts */
	CHECK_EQ_U64(out[n - 1].denied_count, dc + 1);
}

/* Nothing changes: one point per period only, and the period doubles with each compaction. */
static void test_flat(void)
{
	static struct vg_timeline t;
	vg_timeline_init(&t);
	for (uint64_t s = 0; s <= 1000; s++)    /* 1000 s sampled every second */
		vg_timeline_sample(&t, T0 + s * S, 100 * MIB, 100 * MIB, 0, 0, MIB);
	CHECK_EQ_U64(t.n, 101);                 /* the first sample, then every 10 s */
	CHECK_EQ_U64(t.points[1].time_ns - t.points[0].time_ns, 10 * S);
	CHECK_EQ_U64(t.compactions, 0);
	for (uint64_t s = 1001; s <= 2000; s++)
		vg_timeline_sample(&t, T0 + s * S, 100 * MIB, 100 * MIB, 0, 0, MIB);
	CHECK_EQ_U64(t.compactions, 1);
	CHECK_EQ_U64(t.period_ns, 20 * S);
	CHECK_EQ_U64(t.gap_ns, 2 * S);
	CHECK_EQ_U64(t.points[t.n - 1].time_ns - t.points[t.n - 2].time_ns, 20 * S);
	CHECK(times_increase(&t));
}

/* A job hovering across the significant step every 100 ms: at most one point per gap (1 s). */
static void test_hover(void)
{
	static struct vg_timeline t;
	vg_timeline_init(&t);
	for (uint64_t i = 0; i < 600; i++)      /* 60 s */
		vg_timeline_sample(&t, T0 + i * S / 10, i % 2 ? 200 * MIB : 100 * MIB, 200 * MIB, 0, 0, 64 * MIB);
	CHECK(t.n <= 61);
	CHECK(t.n >= 30);
	int gap_ok = 1;
	for (uint32_t i = 1; i < t.n; i++)
		if (t.points[i].time_ns - t.points[i - 1].time_ns < S)
			gap_ok = 0;
	CHECK(gap_ok);
}

/* A denial makes a point (after the gap), and a peak between samples shows in the point that ends its interval. */
static void test_denial_and_peak(void)
{
	static struct vg_timeline t;
	vg_timeline_init(&t);
	vg_timeline_sample(&t, T0, 10 * MIB, 10 * MIB, 0, 0, 64 * MIB);
	vg_timeline_sample(&t, T0 + S / 2, 10 * MIB, 900 * MIB, 0, 0, 64 * MIB);       /* a burst, freed */
	CHECK_EQ_U64(t.n, 1);                   /* within the gap */
	vg_timeline_sample(&t, T0 + 2 * S, 10 * MIB, 900 * MIB, 1, 4096 * MIB, 64 * MIB);
	CHECK_EQ_U64(t.n, 2);
	CHECK_EQ_U64(t.points[1].peak_bytes, 900 * MIB);
	CHECK_EQ_U64(t.points[1].used_bytes, 10 * MIB);
	CHECK_EQ_U64(t.points[1].denied_count, 1);
	vg_timeline_sample(&t, T0 + 4 * S, 10 * MIB, 900 * MIB, 1, 4096 * MIB, 64 * MIB);
	CHECK_EQ_U64(t.n, 2);                   /* nothing new, within the period */
	vg_timeline_sample(&t, T0 + 12 * S, 10 * MIB, 900 * MIB, 1, 4096 * MIB, 64 * MIB);
	CHECK_EQ_U64(t.n, 3);
	CHECK_EQ_U64(t.points[2].peak_bytes, 10 * MIB); /* the lifetime peak did not rise: the sampled usage */
}

static void test_significant(void)
{
	CHECK_EQ_U64(vg_timeline_significant(8192 * MIB, 0), 128 * MIB);
	CHECK_EQ_U64(vg_timeline_significant(16 * MIB, 0), MIB);
	CHECK_EQ_U64(vg_timeline_significant(UINT64_MAX, 81920 * MIB), 1280 * MIB);
	CHECK_EQ_U64(vg_timeline_significant(UINT64_MAX, 0), 64 * MIB);
}

int main(void)
{
	test_million();
	test_flat();
	test_hover();
	test_denial_and_peak();
	test_significant();
	return UNIT_DONE();
}

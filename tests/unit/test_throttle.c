/* The compute share's arithmetic (accounting/throttle.c) on a simulated clock: a process that always has work gets
 * its share of the GPU alone and next to another capped process (the GPU's time slicer simulated: two active
 * processes progress at half speed each), savings are capped, debt is paid back, a live change takes effect, and
 * the last minute's achieved share is what was used. */
#include "accounting/throttle.h"
#include "tests/unit/unit.h"

#define US ((uint64_t)1000)
#define MS ((uint64_t)1000000)
#define S ((uint64_t)1000000000)
#define T0 ((uint64_t)1700000000 * S + 123456789)

/* A simulated process: launches batches of `batch_ns` of GPU work (its time alone on the GPU) whenever its bucket
 * lets it, as a training loop that synchronizes after each batch. */
struct sim_proc {
	struct vg_throttle t;
	uint64_t batch_ns;      /* work per batch, at full speed */
	uint64_t left_ns;       /* work left in the current batch; 0: between batches */
	uint64_t waiting_until; /* the launch waits until then (0: not waiting) */
	uint64_t done_ns;       /* work done, ever */
};

/* Run procs[0..n) for `span` ns of simulated time, step `step` ns; the GPU splits its time evenly among the active
 * processes, as its time slicer does for contexts of equal priority. */
static void sim_run(struct sim_proc *p, int n, uint64_t *now, uint64_t span, uint64_t step)
{
	for (uint64_t end = *now + span; *now < end; *now += step) {
		int active = 0;
		for (int i = 0; i < n; i++) {
			if (p[i].left_ns == 0) {        /* between batches: launch if the bucket allows */
				vg_throttle_advance(&p[i].t, *now, 0);
				if (p[i].waiting_until > *now)
					continue;
				int64_t w = vg_throttle_wait_ns(&p[i].t);
				if (w > 0) {
					p[i].waiting_until = *now + (uint64_t)w;
					continue;
				}
				p[i].left_ns = p[i].batch_ns;
			}
			active++;
		}
		for (int i = 0; i < n; i++) {
			if (p[i].left_ns == 0)
				continue;
			vg_throttle_advance(&p[i].t, *now, 1000 / (uint32_t)active);
			uint64_t work = step / (uint64_t)active;
			work = work > p[i].left_ns ? p[i].left_ns : work;
			p[i].left_ns -= work;
			p[i].done_ns += work;
		}
	}
	for (int i = 0; i < n; i++)
		vg_throttle_advance(&p[i].t, *now, p[i].left_ns ? p[i].t.weight_pm : 0);
}

static void sim_init(struct sim_proc *p, uint32_t share_pm, uint64_t batch_ns, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	vg_throttle_init(&p->t, share_pm, now);
	p->batch_ns = batch_ns;
}

/* Achieved share (per mille of the GPU's time) within +-tol of the target over 20 s, alone, for each target. */
static void test_alone(void)
{
	static const uint32_t shares[] = { 100, 300, 500, 700, 900 };
	static const uint64_t batches[] = { 2 * MS, 150 * US };  /* a matmul batch; a small-kernel step */
	for (size_t b = 0; b < 2; b++)
		for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
			struct sim_proc p;
			uint64_t now = T0;
			sim_init(&p, shares[i], batches[b], now);
			sim_run(&p, 1, &now, 20 * S, 10 * US);
			uint64_t got = p.done_ns * 1000 / (20 * S);
			if (got + 5 >= shares[i] && got <= shares[i] + 5 + p.t.burst_ns * 1000 / (20 * S))
				unit_ok_("alone: the achieved share is the target");
			else
				CHECK(!"alone: achieved share off target");
			printf("# share %u per mille, batch %" PRIu64 " us: achieved %" PRIu64 "\n", shares[i],
			       batches[b] / US, got);
			CHECK_EQ_U64(p.t.used_ns, p.done_ns);   /* alone, charged time is work done */
		}
}

/* Two processes capped 30 % and 70 % (and 10/90, 50/50) that always have work: each gets its share, although
 * each is charged only half of the time during which both are active. */
static void test_together(void)
{
	static const uint32_t pairs[][2] = { { 300, 700 }, { 100, 900 }, { 500, 500 } };
	for (size_t i = 0; i < 3; i++) {
		struct sim_proc p[2];
		uint64_t now = T0;
		sim_init(&p[0], pairs[i][0], 2 * MS, now);
		sim_init(&p[1], pairs[i][1], 1 * MS, now);
		sim_run(p, 2, &now, 20 * S, 10 * US);
		uint64_t a = p[0].done_ns * 1000 / (20 * S), b = p[1].done_ns * 1000 / (20 * S);
		printf("# together %u/%u per mille: achieved %" PRIu64 "/%" PRIu64 "\n", pairs[i][0], pairs[i][1], a, b);
		CHECK(a + 10 >= pairs[i][0] && a <= pairs[i][0] + 10);
		CHECK(b + 10 >= pairs[i][1] && b <= pairs[i][1] + 10);
	}
}

/* No share: never waits, and charges what it used. A process far below its share (another holds the GPU) is not
 * held back: while it is charged at half rate its balance never goes negative at a 50 % share. */
static void test_no_share_and_sharing(void)
{
	struct vg_throttle t;
	vg_throttle_init(&t, 0, T0);
	vg_throttle_advance(&t, T0, 1000);
	vg_throttle_advance(&t, T0 + 5 * S, 0);
	CHECK_EQ_U64(t.used_ns, 5 * S);
	CHECK(vg_throttle_wait_ns(&t) == 0);
	vg_throttle_init(&t, 500, T0);
	vg_throttle_advance(&t, T0, 500);       /* active the whole time, but sharing the GPU with another */
	vg_throttle_advance(&t, T0 + 10 * S, 500);
	CHECK(t.balance_ns >= 0);
	CHECK(vg_throttle_wait_ns(&t) == 0);
	CHECK_EQ_U64(t.used_ns, 5 * S);
}

/* Savings are capped at the burst; debt is paid back at the share's rate; a live change applies from then on. */
static void test_burst_debt_live(void)
{
	struct vg_throttle t;
	vg_throttle_init(&t, 250, T0);
	vg_throttle_advance(&t, T0 + 3600 * S, 1000);   /* idle for an hour: saves up 50 ms, no more */
	CHECK(t.balance_ns == VG_THROTTLE_BURST_NS);
	vg_throttle_advance(&t, T0 + 3600 * S + 100 * MS, 0);   /* 100 ms of work: 25 ms earned, 100 ms charged */
	CHECK(t.balance_ns == VG_THROTTLE_BURST_NS + 25 * (int64_t)MS - 100 * (int64_t)MS);
	int64_t w = vg_throttle_wait_ns(&t);
	CHECK(w == 25 * (int64_t)MS * 4);                /* -25 ms of balance at 25 %: 100 ms idle */
	vg_throttle_advance(&t, T0 + 3600 * S + 100 * MS + (uint64_t)w, 0);
	CHECK(t.balance_ns == 0);
	CHECK(vg_throttle_wait_ns(&t) == 0);
	vg_throttle_set_share(&t, 1000, T0 + 3601 * S);
	vg_throttle_advance(&t, T0 + 3601 * S, 1000);
	vg_throttle_advance(&t, T0 + 3611 * S, 1000);   /* 100 %: active all the time, never in debt */
	CHECK(vg_throttle_wait_ns(&t) == 0);
	vg_throttle_set_share(&t, 100, T0 + 3611 * S);  /* lowered live: the next second of work puts it in debt */
	vg_throttle_advance(&t, T0 + 3612 * S, 0);
	CHECK(vg_throttle_wait_ns(&t) > 0);
	vg_throttle_advance(&t, T0 + 3610 * S, 0);      /* the clock went back: no time, no change */
	CHECK(t.last_ns == T0 + 3612 * S);
}

/* The share achieved over the last seconds: 40 % of the time active for a minute reads 400 per mille; a bucket under
 * a second old reads nothing; a pause longer than a minute reads 0. */
static void test_recent(void)
{
	struct vg_throttle t;
	uint64_t now = T0;
	unsigned span;
	vg_throttle_init(&t, 0, now);
	CHECK(vg_throttle_recent_pm(&t, now, 60, &span) == 0 && span == 0);
	for (int i = 0; i < 1000; i++) {        /* 100 ms periods: 40 ms active, 60 ms idle */
		vg_throttle_advance(&t, now, 1000);
		now += 40 * MS;
		vg_throttle_advance(&t, now, 0);
		now += 60 * MS;
	}
	vg_throttle_advance(&t, now, 0);
	uint32_t pm = vg_throttle_recent_pm(&t, now, 60, &span);
	printf("# recent: %u per mille over %u s\n", pm, span);
	CHECK(span == VG_THROTTLE_MINUTE - 1);
	CHECK(pm >= 395 && pm <= 405);
	now += 120 * S;
	vg_throttle_advance(&t, now, 0);
	CHECK(vg_throttle_recent_pm(&t, now, 60, &span) == 0);
	CHECK(span == VG_THROTTLE_MINUTE - 1);
}

int main(void)
{
	test_alone();
	test_together();
	test_no_share_and_sharing();
	test_burst_debt_live();
	test_recent();
	return UNIT_DONE();
}

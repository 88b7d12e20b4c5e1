/* The growth sampler's cost (issue 29): one growth point's walk of the allocation tables, and what it does to the
 * threads that allocate and free meanwhile. Linked with the library's own accounting/table.c and
 * accounting/growth.c (not preloaded): a point here is what interposer/growth.c's vg_gr_point does before its
 * bookkeeping of at most 48 candidates, i.e. the tally of live bytes by (site, device) over the three tables it walks
 * (vg_ptrs, vg_arrays, vg_vmm; the two empty ones cost 128 uncontended locks), then vg_growth_candidates.
 *
 *   bench_growth point N SITES ROUNDS    ms per point with N live allocations from SITES call sites (median, min, max
 *                                        of ROUNDS back-to-back points), and the longest a shard stays locked (the
 *                                        longest shard, each its best of 3 walks)
 *   bench_growth pairs N SITES SECS WALK  ns per insert+remove pair (the table's part of cuMemAlloc+cuMemFree, with
 *                                        the record store's) from 2 threads for SECS seconds, N live: p50, p99,
 *                                        p99.9, max, pairs over 100 us and over 1 ms; WALK 1: a third thread
 *                                        takes points back to back meanwhile, 0: none
 *
 * The records are 512-byte allocations of device 0, keys spaced as the double hands them out, sites round-robin. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accounting/growth.h"
#include "accounting/sites.h"
#include "accounting/table.h"
#include "bench/bench_lat.h"

static struct vg_table ptrs, arrays, vmm, one;
static struct vg_growth growth;
static struct vg_growth_tally now_t, prev_t;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(const struct vg_alloc *r, void *arg)
{
	if (r->site)
		vg_growth_tally_add(arg, r->site->id, r->dev, r->bytes);
}

/* What vg_gr_point does with the tables. */
static size_t point(void)
{
	struct vg_growth_cand c[VG_GROWTH_CANDIDATES];
	vg_growth_tally_clear(&now_t);
	vg_table_foreach(&ptrs, count, &now_t);
	vg_table_foreach(&arrays, count, &now_t);
	vg_table_foreach(&vmm, count, &now_t);
	size_t n = vg_growth_candidates(&growth, &now_t, &prev_t, c);
	struct vg_growth_tally t = prev_t;
	prev_t = now_t;
	now_t = t;
	return n;
}

static void fill(size_t n, unsigned nsites)
{
	struct vg_site **sites = calloc(nsites, sizeof(*sites));
	for (unsigned i = 0; i < nsites; i++) {
		sites[i] = calloc(1, sizeof(struct vg_site));
		sites[i]->id = i + 1;
	}
	vg_table_init(&ptrs);
	vg_table_init(&arrays);
	vg_table_init(&vmm);
	vg_growth_init(&growth, 600ull * 1000000000u);
	for (size_t i = 0; i < n; i++) {
		struct vg_alloc *r = vg_alloc_new();
		if (!r) {
			fprintf(stderr, "bench_growth: out of records\n");
			exit(1);
		}
		r->key = 0x600000000000ull + i * 512;
		r->bytes = 512;
		r->site = sites[i % nsites];
		r->dev = 0;
		if (vg_table_insert(&ptrs, r) != 0) {
			fprintf(stderr, "bench_growth: insert failed\n");
			exit(1);
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void run_point(unsigned rounds)
{
	uint64_t *t = calloc(rounds, sizeof(*t));
	point();        /* the tallies' memory, once */
	for (unsigned i = 0; i < rounds; i++) {
		uint64_t a = now_ns();
		point();
		t[i] = now_ns() - a;
	}
	qsort(t, rounds, sizeof(*t), cmp_u64);
	/* How long a point holds one shard: each of the 64 walked alone (moved into a table of its own), the best of
	 * three passes (a pass the scheduler interrupted says nothing of the walk), then the longest shard. */
	uint64_t worst = 0;
	for (int k = 0; k < VG_SHARDS; k++) {
		uint64_t best = UINT64_MAX;
		vg_table_init(&one);
		one.shard[0] = ptrs.shard[k];
		for (unsigned rep = 0; rep < 3; rep++) {
			vg_growth_tally_clear(&now_t);
			uint64_t a = now_ns();
			vg_table_foreach(&one, count, &now_t);
			uint64_t d = now_ns() - a;
			best = d < best ? d : best;
		}
		ptrs.shard[k] = one.shard[0];
		worst = best > worst ? best : worst;
	}
	printf("point_ms median %.3f min %.3f max %.3f shard_max_ms %.3f\n", t[rounds / 2] / 1e6, t[0] / 1e6,
	       t[rounds - 1] / 1e6, worst / 1e6);
}

/* ---- pairs from 2 threads, with or without a walker ---- */

static atomic_int stop;
static atomic_ulong points_done;
struct pairs_arg {
	int id;
	uint64_t *lat;
	size_t n, cap;
};

static void *walker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		point();
		atomic_fetch_add(&points_done, 1);
	}
	return NULL;
}

static void *pairs(void *arg)
{
	struct pairs_arg *p = arg;
	uint64_t key = 0x700000000000ull + ((uint64_t)p->id << 36);
	while (!atomic_load(&stop) && p->n < p->cap) {
		uint64_t a = now_ns();
		struct vg_alloc *r = vg_alloc_new();
		r->key = key;
		r->bytes = 512;
		vg_table_insert(&ptrs, r);
		vg_alloc_free(vg_table_remove(&ptrs, key));
		p->lat[p->n++] = now_ns() - a;
		key += 512;
	}
	return NULL;
}

static void run_pairs(double secs, int walk)
{
	struct pairs_arg pa[2];
	pthread_t th[3];
	point();
	for (int i = 0; i < 2; i++) {
		pa[i] = (struct pairs_arg){ .id = i, .cap = 200000000 };
		pa[i].lat = malloc(pa[i].cap * sizeof(uint64_t));
		if (!pa[i].lat) {
			fprintf(stderr, "bench_growth: no memory\n");
			exit(1);
		}
	}
	if (walk)
		pthread_create(&th[2], NULL, walker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, pairs, &pa[i]);
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2 + walk; i++)
		pthread_join(th[i], NULL);
	char more[48];
	snprintf(more, sizeof(more), " points %lu", atomic_load(&points_done));
	if (bench_lat_print(pa[0].lat, pa[0].n, pa[1].lat, pa[1].n, more) != 0) {
		fprintf(stderr, "bench_growth: no pairs timed, or no memory\n");
		exit(1);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "point") == 0) {
		fill(strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]));
		run_point((unsigned)atoi(argv[4]));
		return 0;
	}
	if (argc >= 6 && strcmp(argv[1], "pairs") == 0) {
		fill(strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]));
		run_pairs(atof(argv[4]), atoi(argv[5]));
		return 0;
	}
	fprintf(stderr, "usage: bench_growth point N SITES ROUNDS | pairs N SITES SECS WALK(0|1)\n");
	return 2;
}

/* Unit tests for accounting/: quota reserve/release semantics, the race (threads never exceed a limit together),
 * and the sharded tables. No CUDA. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "accounting/quota.h"
#include "accounting/table.h"
#include "tests/unit/unit.h"

static void test_reserve(void)
{
	uint64_t used = 0;
	vg_quota_set_limit(1, 1000);
	CHECK(vg_quota_reserve(1, 600, &used) == 0);
	CHECK_EQ_U64(used, 600);
	CHECK(vg_quota_reserve(1, 401, &used) == -ENOSPC);
	CHECK_EQ_U64(used, 600);
	CHECK(vg_quota_reserve(1, 400, &used) == 0);
	CHECK_EQ_U64(vg_quota_used(1), 1000);
	CHECK(vg_quota_reserve(1, 1, NULL) == -ENOSPC);
	vg_quota_release(1, 1000);
	CHECK_EQ_U64(vg_quota_used(1), 0);
	CHECK(vg_quota_reserve(1, 1001, NULL) == -ENOSPC);      /* larger than the whole quota */
	CHECK(vg_quota_reserve(1, UINT64_MAX, NULL) == -ENOSPC);
	vg_quota_release(1, 5);                                 /* never below zero */
	CHECK_EQ_U64(vg_quota_used(1), 0);
	CHECK_EQ_U64(vg_quota[1].peak, 1000);
	CHECK(vg_quota_reserve(2, UINT64_MAX / 2, NULL) == 0);  /* no limit set: unlimited */
	CHECK(vg_quota_reserve(-1, 1, NULL) == 0);              /* untracked ordinals always pass */
	CHECK(vg_quota_reserve(VG_MAX_DEVICES, 1, NULL) == 0);
	vg_quota_reset_usage();
	CHECK_EQ_U64(vg_quota_used(2), 0);
	CHECK_EQ_U64(vg_quota_limit(1), 1000);
}

#define RACE_THREADS 8
static _Atomic uint64_t race_inside, race_max;

static void *race_worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < 200000; i++) {
		seed = seed * 1103515245u + 12345u;
		uint64_t sz = (seed >> 16) % 300 + 1;
		if (vg_quota_reserve(3, sz, NULL) == 0) {
			uint64_t now = atomic_fetch_add(&race_inside, sz) + sz;
			uint64_t m = atomic_load(&race_max);
			while (now > m && !atomic_compare_exchange_weak(&race_max, &m, now))
				;
			atomic_fetch_sub(&race_inside, sz);
			vg_quota_release(3, sz);
		}
	}
	return NULL;
}

static void test_race(void)
{
	pthread_t th[RACE_THREADS];
	vg_quota_set_limit(3, 1000);
	for (int i = 0; i < RACE_THREADS; i++)
		pthread_create(&th[i], NULL, race_worker, (void *)(uintptr_t)(i + 7));
	for (int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&race_max) <= 1000);
	CHECK_EQ_U64(vg_quota_used(3), 0);
}

static bool inc_refs(struct vg_alloc *r, void *arg)
{
	(void)arg;
	return ++r->refs >= 3;
}

static bool below(const struct vg_alloc *r, void *arg)
{
	return r->key < *(uint64_t *)arg;
}

static void count_cb(const struct vg_alloc *r, void *arg)
{
	*(uint64_t *)arg += r->bytes;
}

static void test_table(void)
{
	static struct vg_table t;
	vg_table_init(&t);
	for (uint64_t k = 1; k <= 1000; k++) {
		struct vg_alloc *r = calloc(1, sizeof(*r));
		r->key = k * 512;
		r->bytes = k;
		CHECK(vg_table_insert(&t, r) == 0);
	}
	CHECK_EQ_U64(vg_table_count(&t), 1000);
	struct vg_alloc dup = { .key = 512 };
	CHECK(vg_table_insert(&t, &dup) == -EEXIST);
	struct vg_alloc *r = vg_table_remove(&t, 512);
	CHECK(r && r->bytes == 1);
	free(r);
	CHECK(vg_table_remove(&t, 512) == NULL);
	struct vg_alloc *gone = NULL;
	CHECK(vg_table_update(&t, 1024, inc_refs, NULL, &gone) == 0 && gone == NULL);
	CHECK(vg_table_update(&t, 1024, inc_refs, NULL, &gone) == 0 && gone == NULL);
	CHECK(vg_table_update(&t, 1024, inc_refs, NULL, &gone) == 0 && gone && gone->key == 1024);
	free(gone);
	CHECK(vg_table_update(&t, 7, inc_refs, NULL, &gone) == -ENOENT);
	uint64_t sum = 0;
	vg_table_foreach(&t, count_cb, &sum);
	CHECK_EQ_U64(sum, 1000 * 1001 / 2 - 1 - 2);
	uint64_t lim = 10 * 512;                    /* keys 3*512 .. 9*512 are left below it: 7 records */
	struct vg_alloc *low = vg_table_remove_if(&t, below, &lim);
	int n = 0;
	while (low) {
		struct vg_alloc *next = low->next;
		CHECK(low->key < lim);
		free(low);
		low = next;
		n++;
	}
	CHECK(n == 7);
	CHECK_EQ_U64(vg_table_count(&t), 998 - 7);
	vg_table_reset_child(&t);
	CHECK_EQ_U64(vg_table_count(&t), 0);
}

int main(void)
{
	test_reserve();
	test_race();
	test_table();
	return UNIT_DONE();
}

/* The growth benches' summary of the pairs two threads timed (bench/bench_growth.c, bench/bench_growth_app.c):
 * "pairs N<more> p50_ns .. p99_ns .. p999_ns .. max_us .. over_100us .. over_1ms ..", without the newline. */
#ifndef VG_BENCH_LAT_H
#define VG_BENCH_LAT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int bench_lat_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The latencies (ns) of both threads, a[0..na) and b[0..nb), summarized on stdout with `more` after the count of
 * pairs. -1 when there are none or no memory to sort them. */
static inline int bench_lat_print(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, const char *more)
{
	size_t n = na + nb, over = 0, over100 = 0;
	uint64_t *all = n ? malloc(n * sizeof(uint64_t)) : NULL;
	if (!all)
		return -1;
	memcpy(all, a, na * sizeof(uint64_t));
	memcpy(all + na, b, nb * sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) {
		over += all[i] > 1000000;
		over100 += all[i] > 100000;
	}
	qsort(all, n, sizeof(uint64_t), bench_lat_cmp);
	printf("pairs %zu%s p50_ns %lu p99_ns %lu p999_ns %lu max_us %.1f over_100us %zu over_1ms %zu", n, more,
	       (unsigned long)all[n / 2], (unsigned long)all[n * 99 / 100], (unsigned long)all[n * 999 / 1000],
	       all[n - 1] / 1e3, over100, over);
	free(all);
	return 0;
}

#endif

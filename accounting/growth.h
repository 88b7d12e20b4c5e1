/* Per-site growth: which call sites keep more device memory, how fast, and when the quota runs out at that rate.
 * Pure data (no CUDA, no locks; the only allocation is the tally's): the interposer's sampler feeds it
 * (interposer/growth.c, under its own mutex), reports copy it; tests drive it with a simulated clock.
 *
 * The model. What is followed is a (call site, device) pair: at most VG_GROWTH_SITES pairs at once, each with its
 * live bytes at the last VG_GROWTH_POINTS points. Points come at a fixed step, the growth window
 * (VRAMGUARD_GROWTH_WINDOW) divided into VG_GROWTH_INTERVALS intervals, so the last VG_GROWTH_INTERVALS + 1 points
 * always span one window and the series cover the last VG_GROWTH_POINTS / VG_GROWTH_INTERVALS windows, whatever
 * the run's length (unlike the device timeline, which compacts to keep the whole run: a slow leak that starts on
 * the third day is judged on recent points, not on hour-long ones).
 *
 * Which pairs. At each point the caller offers candidates (vg_growth_candidates picks them from two tallies of
 * the live allocations): the pairs already followed, the largest holders, and those that rose most since the
 * previous point. A pair not followed takes a free slot, or the slot of a pair that has been followed for a whole
 * window without rising over it and holds the least (never a growing one, never one followed for less than a
 * window); a riser may take such a slot even when it holds less, a holder only when it holds more.
 *
 * Growing. A pair followed for at least a window is growing when, over the window's VG_GROWTH_INTERVALS intervals:
 * its live bytes rose in more than half of them, never returned to an earlier level (each point is above every
 * point two or more intervals before it, and above the window's first: a fall, or a pause longer than an interval,
 * is not growth; frees and allocations again smaller than one interval's gain do not hide it), and the Theil-Sen
 * slope (the median of the slopes between every two of the window's points: a robust fit that a few outliers do
 * not move) is positive. A leak that rises in fewer than half of a window's tenths (one large block every few
 * minutes) needs a longer window. Its rate is the Theil-Sen slope of its points since it has been growing, at most
 * two windows of them. A device's rate is the sum of its growing pairs'; the forecast is when, at that rate, its
 * usage reaches the quota (none without a quota, or when nothing grows: flat or falling usage has no forecast). */
#ifndef VG_GROWTH_H
#define VG_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VG_GROWTH_SITES 16              /* (site, device) pairs followed at once */
#define VG_GROWTH_POINTS 64             /* points kept per pair: the last 6.4 windows */
#define VG_GROWTH_INTERVALS 10          /* intervals a window is judged on; a point every window / this */
#define VG_GROWTH_FIT_POINTS (2 * VG_GROWTH_INTERVALS + 1) /* a rate is fitted on at most two windows */
#define VG_GROWTH_CANDIDATES (3 * VG_GROWTH_SITES) /* at most: the followed, the largest holders, the largest risers */

struct vg_growth_slot {
	uint32_t site;                  /* the site's id; 0: the slot is free */
	int dev;                        /* CUDA ordinal */
	bool growing;
	uint64_t since;                 /* the index of the first point it has */
	uint64_t growing_from;          /* the first point of the first window it was growing over (growing since) */
	uint64_t growing_since_ns;      /* that point's time; 0 when not growing */
	double rate;                    /* bytes per second: the Theil-Sen slope of its points since growing_from (at most
					 * VG_GROWTH_FIT_POINTS); 0 when not growing */
	uint64_t live[VG_GROWTH_POINTS];        /* live bytes at point i in live[i % VG_GROWTH_POINTS] */
};

struct vg_growth {
	uint64_t window_ns, step_ns;    /* step_ns = window_ns / VG_GROWTH_INTERVALS */
	uint64_t npoints;               /* points taken; the last is npoints - 1 */
	uint64_t time_ns[VG_GROWTH_POINTS];     /* point i's time in time_ns[i % VG_GROWTH_POINTS] */
	uint64_t reported_ns;           /* the time of the last growth report asked for; 0: none */
	struct vg_growth_slot slot[VG_GROWTH_SITES];
};

/* A pair offered at a point: its live bytes now, and how much they rose since the previous point (0 if not). */
struct vg_growth_cand {
	uint32_t site;
	int dev;
	uint64_t live, rose;
};

/* window_ns: VRAMGUARD_GROWTH_WINDOW (at least VG_GROWTH_INTERVALS ns). */
void vg_growth_init(struct vg_growth *g, uint64_t window_ns);
/* Is a point due at now (a clock that does not go back: a step back delays the next point)? */
bool vg_growth_due(const struct vg_growth *g, uint64_t now_ns);
/* A point at now: every followed pair gets its live bytes from cands (absent: 0), free slots and worse pairs give
 * way to better candidates, and each pair's growth is judged again. cands may repeat a pair (the first counts). */
void vg_growth_point(struct vg_growth *g, uint64_t now_ns, const struct vg_growth_cand *cands, size_t n);

/* A followed pair's series, oldest first: its points' times and live bytes (room for VG_GROWTH_POINTS). Returns how
 * many. */
size_t vg_growth_series(const struct vg_growth *g, int slot, uint64_t *time_ns, uint64_t *live);
/* A device's rate: the sum of its growing pairs' rates, bytes per second (0: nothing grows there). */
double vg_growth_rate(const struct vg_growth *g, int dev);
/* When a device at `used` of `quota` reaches the quota at rate bytes per second: true and *seconds, rounded, at
 * least 1 while below the quota (0 when it is there already; capped at VG_GROWTH_FORECAST_MAX); false when there is no quota (0 or UINT64_MAX) or no rate. */
#define VG_GROWTH_FORECAST_MAX (100ull * 365 * 86400)  /* a century: "never", as far as anyone is concerned */
bool vg_growth_forecast(uint64_t used, uint64_t quota, double rate, uint64_t *seconds);
/* A growth report is due at now: the growing pair with the highest rate (its slot), once per window at most (the
 * first as soon as a pair grows); -1 if none is due. Records the report's time when one is. */
int vg_growth_report_due(struct vg_growth *g, uint64_t now_ns);

/* The Theil-Sen slope of n points (t in ns, increasing; at most VG_GROWTH_FIT_POINTS are used), bytes per second;
 * 0 with fewer than two distinct times. */
double vg_growth_theil_sen(const uint64_t *t, const uint64_t *v, size_t n);

/* ---- the tally: live bytes by (site, device), from a walk of the allocation tables ---- */

struct vg_growth_tally_entry {
	uint64_t key;                   /* site id << 16 | device; 0: empty */
	uint64_t live;
};
struct vg_growth_tally {
	struct vg_growth_tally_entry *v;
	size_t cap, n;                  /* cap: a power of two, or 0 */
	bool failed;                    /* out of memory: some bytes were not counted */
};
/* Add an allocation's bytes (site 0 is no site: not counted). Grows the table as needed. */
void vg_growth_tally_add(struct vg_growth_tally *t, uint32_t site, int dev, uint64_t bytes);
uint64_t vg_growth_tally_get(const struct vg_growth_tally *t, uint32_t site, int dev);
/* Empty it, keeping its memory; free it. */
void vg_growth_tally_clear(struct vg_growth_tally *t);
void vg_growth_tally_free(struct vg_growth_tally *t);
/* The candidates of a point from the tally now and the one at the previous point: the followed pairs, then the
 * VG_GROWTH_SITES largest holders and the VG_GROWTH_SITES pairs that rose most (each once). out has room for
 * VG_GROWTH_CANDIDATES; returns how many. */
size_t vg_growth_candidates(const struct vg_growth *g, const struct vg_growth_tally *now,
			    const struct vg_growth_tally *prev, struct vg_growth_cand *out);

#endif

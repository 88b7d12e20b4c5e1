/* The compute share's arithmetic: a bucket of GPU time for one process on one GPU, with no clock and no CUDA of its
 * own, so that a test drives it with a simulated clock (tests/unit/test_throttle.c). The interposer
 * (interposer/compute.c) feeds it what it measures: when the process has work on the GPU ("active") and, where
 * other vramguard processes run on the same GPU at that time, how many share it.
 *
 * While the process is active it is charged the GPU's time at the rate its weight says (1000 per mille alone, 500
 * while one other process is also active, as the GPU's time slicer splits it evenly); all the time, it earns its
 * share (share_pm per mille of the wall clock). Earnings saved while idle are capped at burst_ns, so a process idle
 * for an hour cannot then take the whole GPU for minutes; debt is never forgiven, so the share holds over any
 * interval longer than the burst. A launch waits while the balance is negative (vg_throttle_wait_ns). */
#ifndef VG_THROTTLE_H
#define VG_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#define VG_THROTTLE_BURST_NS 50000000ll /* 50 ms of GPU time may be saved up while idle: 5 times the burst a wait
					 * pays for (compute.h, VG_COMPUTE_RESUME_NS; docs/compute.md, Holding) */
#define VG_THROTTLE_MINUTE 60           /* seconds of per-second figures kept for "the last minute" */

struct vg_throttle {
	uint32_t share_pm;      /* the share, per mille of the GPU's time; 0: no limit (measured, never waits) */
	uint32_t weight_pm;     /* the charge's rate now: 0 idle, 1000 alone on the GPU, 1000/n with n sharing it */
	int64_t balance_ns;     /* GPU time the process may still use now; negative: it is ahead of its share */
	int64_t burst_ns;       /* the most balance_ns saves up */
	uint64_t last_ns;       /* the clock when balance_ns was last brought up to date; 0: never */
	uint64_t used_ns;       /* GPU time charged, ever */
	/* used_ns at the start of each of the last VG_THROTTLE_MINUTE seconds, for the share achieved lately */
	uint64_t sec_used[VG_THROTTLE_MINUTE];
	uint64_t sec_first;     /* the second (now_ns / 1e9) of sec_used's oldest entry in use */
	uint64_t sec_last;      /* ... and of its newest */
};

/* A bucket for share_pm (0: none), full (balance = burst) at now_ns. */
void vg_throttle_init(struct vg_throttle *t, uint32_t share_pm, uint64_t now_ns);

/* Bring the balance up to now_ns under the weight in force since the last call, then set the weight for what
 * follows (weight_pm as in the struct). A clock that went backwards counts as no time. */
void vg_throttle_advance(struct vg_throttle *t, uint64_t now_ns, uint32_t weight_pm);

/* Charge ns of GPU time at once (a short gap between two bursts of work, counted as busy: compute.h). */
void vg_throttle_charge(struct vg_throttle *t, uint64_t ns);

/* A new share from now on (a live change): the balance keeps its debt and its savings, capped at the burst. */
void vg_throttle_set_share(struct vg_throttle *t, uint32_t share_pm, uint64_t now_ns);

/* How long a launch should wait at now_ns (after vg_throttle_advance) before it may go: 0 when no share is set or
 * the balance is not negative, else the time the share takes to pay the debt back with the process idle. */
int64_t vg_throttle_wait_ns(const struct vg_throttle *t);

/* The share of the GPU's time the process used over the last `seconds` whole seconds before now (per mille; at
 * most VG_THROTTLE_MINUTE seconds, fewer when the bucket is younger), and the span measured (*span_s). */
uint32_t vg_throttle_recent_pm(const struct vg_throttle *t, uint64_t now_ns, unsigned seconds, unsigned *span_s);

#endif

/* The compute share's bucket of GPU time (throttle.h). Integer arithmetic only: nanoseconds and per mille. */
#include <string.h>

#include "accounting/throttle.h"

#define VG_NS_PER_S 1000000000ull

void vg_throttle_init(struct vg_throttle *t, uint32_t share_pm, uint64_t now_ns)
{
	memset(t, 0, sizeof(*t));
	t->share_pm = share_pm > 1000 ? 1000 : share_pm;
	t->burst_ns = VG_THROTTLE_BURST_NS;
	t->balance_ns = t->burst_ns;
	t->last_ns = now_ns;
	t->sec_first = t->sec_last = now_ns / VG_NS_PER_S;
	t->sec_used[t->sec_last % VG_THROTTLE_MINUTE] = 0;
}

/* Record used_ns at the start of every whole second between the last record and now_ns (the usage grows linearly
 * over the interval just charged, so a second's start gets its share of it). */
static void vg_throttle_seconds(struct vg_throttle *t, uint64_t from_ns, uint64_t now_ns, uint64_t used_before)
{
	uint64_t s = now_ns / VG_NS_PER_S;
	if (s <= t->sec_last)
		return;
	uint64_t dt = now_ns - from_ns, charged = t->used_ns - used_before;
	if (s - t->sec_last > VG_THROTTLE_MINUTE)       /* a long gap: only the last minute's starts matter */
		t->sec_last = s - VG_THROTTLE_MINUTE;
	for (uint64_t k = t->sec_last + 1; k <= s; k++) {
		uint64_t at = k * VG_NS_PER_S, part = 0;
		if (at > from_ns && dt > 0)
			part = (uint64_t)((unsigned __int128)charged * (at - from_ns) / dt);
		t->sec_used[k % VG_THROTTLE_MINUTE] = used_before + part;
	}
	t->sec_last = s;
	if (t->sec_last - t->sec_first >= VG_THROTTLE_MINUTE)
		t->sec_first = t->sec_last - VG_THROTTLE_MINUTE + 1;
}

void vg_throttle_advance(struct vg_throttle *t, uint64_t now_ns, uint32_t weight_pm)
{
	uint64_t from = t->last_ns, used_before = t->used_ns;
	if (now_ns > from) {
		uint64_t dt = now_ns - from;
		uint64_t charge = dt * t->weight_pm / 1000;
		int64_t earned = (int64_t)(dt * t->share_pm / 1000);
		t->used_ns += charge;
		if (t->share_pm) {
			t->balance_ns += earned - (int64_t)charge;
			if (t->balance_ns > t->burst_ns)
				t->balance_ns = t->burst_ns;
		}
		t->last_ns = now_ns;
		vg_throttle_seconds(t, from, now_ns, used_before);
	}
	t->weight_pm = weight_pm > 1000 ? 1000 : weight_pm;
}

void vg_throttle_charge(struct vg_throttle *t, uint64_t ns)
{
	t->used_ns += ns;
	if (t->share_pm)
		t->balance_ns -= (int64_t)ns;
}

void vg_throttle_set_share(struct vg_throttle *t, uint32_t share_pm, uint64_t now_ns)
{
	vg_throttle_advance(t, now_ns, t->weight_pm);
	if (!t->share_pm)
		t->balance_ns = t->burst_ns;    /* a first limit starts with a full bucket, as at start-up */
	t->share_pm = share_pm > 1000 ? 1000 : share_pm;
}

int64_t vg_throttle_wait_ns(const struct vg_throttle *t)
{
	if (!t->share_pm || t->balance_ns >= 0)
		return 0;
	return (-t->balance_ns * 1000 + t->share_pm - 1) / t->share_pm;
}

uint32_t vg_throttle_recent_pm(const struct vg_throttle *t, uint64_t now_ns, unsigned seconds, unsigned *span_s)
{
	uint64_t s = now_ns / VG_NS_PER_S;
	if (seconds > VG_THROTTLE_MINUTE - 1)
		seconds = VG_THROTTLE_MINUTE - 1;
	if (s > t->sec_last || s < t->sec_first + 1) {  /* not brought up to date, or under a second old */
		if (span_s)
			*span_s = 0;
		return 0;
	}
	uint64_t from = s - seconds < t->sec_first ? t->sec_first : s - seconds;
	uint64_t used = t->sec_used[s % VG_THROTTLE_MINUTE] - t->sec_used[from % VG_THROTTLE_MINUTE];
	unsigned span = (unsigned)(s - from);
	if (span_s)
		*span_s = span;
	return (uint32_t)(used * 1000 / ((uint64_t)span * VG_NS_PER_S));
}

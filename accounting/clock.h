/* Time units. The library keeps time in nanoseconds (CLOCK_MONOTONIC for intervals and deadlines, CLOCK_REALTIME
 * for what reports and regions show) and takes its settings in milliseconds: these name the conversions. Plain int
 * constants, so that each use keeps the type and signedness of its other operand. vg_clock_ns reads a clock in those
 * nanoseconds. */
#ifndef VG_CLOCK_H
#define VG_CLOCK_H

#include <stdint.h>
#include <time.h>

#define VG_NS_PER_SEC 1000000000
#define VG_NS_PER_MS 1000000
#define VG_MS_PER_SEC 1000

/* Clock c now, in nanoseconds. The _COARSE clocks are read in the vDSO, without a system call: cheap enough for
 * every allocation. */
static inline uint64_t vg_clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * VG_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

#endif

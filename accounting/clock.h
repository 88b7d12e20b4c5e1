/* Time units. The library keeps time in nanoseconds (CLOCK_MONOTONIC for intervals and deadlines, CLOCK_REALTIME
 * for what reports and regions show) and takes its settings in milliseconds: these name the conversions. Plain int
 * constants, so that each use keeps the type and signedness of its other operand. */
#ifndef VG_CLOCK_H
#define VG_CLOCK_H

#define VG_NS_PER_SEC 1000000000
#define VG_NS_PER_MS 1000000
#define VG_MS_PER_SEC 1000

#endif

/* What a call site's memory is, told from the report alone (report/allocator.c): which framework's allocator made
 * it, where the site's frames show one, and whether the site's allocations were freed and made again or only grew.
 * The text form and the HTML page say both, so that memory a caching allocator keeps is not read as a leak. */
#ifndef VG_ALLOCATOR_H
#define VG_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "report/report.h"

/* The allocators the frames can show, one row each (docs/report-format.md, *Allocators*): its name in a sentence,
 * its label in a table cell, and whether it caches. A caching allocator keeps what its users free and asks the
 * driver again only when it has too little: vramguard sees its requests to the driver, not its users' allocations
 * and frees, so what it holds is its cache, in use or not. A stream-ordered pool does not cache in that sense: its
 * users' allocations and frees are the driver calls vramguard sees (what the pool itself keeps is the device line's
 * "pools hold"). The patterns that tell them are report/allocator.c's VG_ALLOCATOR_PATTERNS. */
#define VG_ALLOCATORS(X)                                                                                              \
	X(NONE, "", "", false)                                                                                        \
	X(STREAM, "a stream-ordered pool", "stream-ordered pool (cuMemAllocAsync)", false)                            \
	X(TORCH, "PyTorch's caching allocator", "PyTorch (c10 CUDACachingAllocator)", true)                           \
	X(CUPY, "CuPy's memory pool", "CuPy (MemoryPool)", true)                                                      \
	X(TF, "TensorFlow's BFC allocator", "TensorFlow (BFC allocator)", true)                                       \
	X(XLA, "XLA's BFC allocator", "XLA / JAX (BFC allocator)", true)

enum vg_allocator {
#define VG_ALLOCATOR_ENUM(id, name, label, caches) VG_ALLOCATOR_##id,
	VG_ALLOCATORS(VG_ALLOCATOR_ENUM)
#undef VG_ALLOCATOR_ENUM
	VG_ALLOCATOR_COUNT
};

struct vg_allocator_info {
	const char *name;               /* for a sentence: "PyTorch's caching allocator"; "" for NONE */
	const char *label;              /* for a table cell: "PyTorch (c10 CUDACachingAllocator)"; "" for NONE */
	bool caches;
};

/* The allocator of site s: the site's entry point if it is a stream-ordered one, else the innermost frame that
 * matches a row of the patterns (native frames innermost first, then Python frames innermost first; within a frame
 * the table's first matching row). VG_ALLOCATOR_NONE when nothing matches. */
enum vg_allocator vg_allocator_of_site(const struct vg_report_site *s);
const struct vg_allocator_info *vg_allocator_info(enum vg_allocator a);

/* One frame against the table (for the unit tests and the site's walk): the allocator of the first row it matches,
 * VG_ALLOCATOR_NONE if none. Strings are bounded by their fields; bytes that are not UTF-8 are only bytes. */
enum vg_allocator vg_allocator_of_frame(const struct vg_report_frame *f);
enum vg_allocator vg_allocator_of_pyframe(const struct vg_report_pyframe *f);
enum vg_allocator vg_allocator_of_api(const char *api, size_t max);

/* What happened to a site's allocations, from its totals (made, ever) and what is still held (live):
 * ONLY_GREW: none was freed (total_allocs == live_count > 0); CHURN: some were freed and some are held
 * (total_allocs > live_count > 0); ALL_FREED: every one was freed (live_count == 0 < total_allocs); UNKNOWN: the
 * totals cannot say (total_allocs 0, or fewer than live_count: a report written by hand or damaged). */
enum vg_site_history { VG_SITE_UNKNOWN, VG_SITE_ONLY_GREW, VG_SITE_CHURN, VG_SITE_ALL_FREED };
enum vg_site_history vg_site_history(const struct vg_report_site *s);

/* How much of what r's sites hold is in caching allocators (vg_allocator_info(a)->caches), in bytes, and the one
 * allocator all of it is in (VG_ALLOCATOR_NONE if several). all is true when every live byte is: the walk stops at
 * the first live site that is not, so a report with many plain sites costs one site's frames. */
struct vg_allocator_summary {
	bool all;                       /* every site with live bytes is in a caching allocator (and some is) */
	enum vg_allocator only;         /* the one allocator they are all in, VG_ALLOCATOR_NONE if several */
	uint64_t bytes;                 /* their live bytes (meaningful when all) */
};
void vg_allocator_summary(const struct vg_report *r, struct vg_allocator_summary *out);

#endif

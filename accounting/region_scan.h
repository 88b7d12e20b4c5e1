/* Reading regions from outside: what `vramguard top`, `limit` and `region` see of the files in a directory. The
 * header, a device and a slot are copied out of the mapped file (strings terminated, a slot re-read until it is
 * consistent), so a caller never touches the layout of region.h; a scan finds and opens every region file of a
 * directory and says, per kind, which could not be opened and why. Linked into the command, not the library (it
 * uses getpwuid and directory scans, which the library avoids). */
#ifndef VG_REGION_SCAN_H
#define VG_REGION_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting/region.h"

#define VG_SCAN_DIR_MAX 256
#define VG_SCAN_WHY_MAX 640

/* A region's header, copied out of the file (another process may rewrite it at any time). */
struct vg_region_info {
	char name[VG_REGION_NAME_MAX];          /* "" for a control segment */
	char created_spec[VG_REGION_SPEC_MAX];  /* the limit spec it was created (or last started over) with */
	char spec[VG_REGION_SPEC_MAX];          /* the spec in force */
	char compute_spec[VG_REGION_SPEC_MAX];  /* the region-wide compute share ("": none) */
	bool persistent;                        /* VG_REGION_PERSISTENT */
	uint64_t reclaimed, evicted;
};
void vg_region_info_read(const struct vg_region *r, struct vg_region_info *out);

/* One region device, copied out. */
struct vg_dev_view {
	char uuid[VG_REGION_UUID_MAX];  /* "" = unused */
	int32_t ordinal;                /* of the process that registered it */
	uint64_t total;                 /* memory in bytes (0: unknown) */
	uint64_t limit;                 /* the region's budget (VG_REGION_NONE: none) */
	uint64_t used, peak, denied;
};
/* Copy region device d; false (v zeroed) if d is out of range or unused. */
bool vg_dev_read(const struct vg_region *r, int d, struct vg_dev_view *v);
/* The region's budget on device d (VG_REGION_NONE for none, an unused device, or a control segment). */
uint64_t vg_dev_limit(const struct vg_region *r, int d);

/* One process's slot, copied out of a region (consistent: re-read if a slot was claimed or reclaimed meanwhile). */
struct vg_slot_view {
	int32_t pid;
	int life;                       /* enum vg_slot_life: alive, dead (exited) or unverifiable */
	bool alive;                     /* life != VG_LIFE_DEAD: the process may hold memory, it is counted */
	uint64_t start;
	uint32_t bound;                 /* bit i: the process registered region device i */
	char cmd[VG_REGION_CMD_MAX];
	uint64_t used[VG_REGION_DEVS], peak[VG_REGION_DEVS], quota[VG_REGION_DEVS];
	/* What used[] is made of (published each sampler round): the allocations' bytes and the driver's own memory;
	 * count_mode: 0 not published yet, 1 device counting, 2 allocations. */
	uint64_t alloc[VG_REGION_DEVS], driver[VG_REGION_DEVS];
	uint32_t count_mode;
	/* Published with them (meaningful only when count_mode != 0): the soft limit per device (VG_REGION_NONE:
	 * none) and the process's counters over all its GPUs. */
	uint64_t soft[VG_REGION_DEVS];
	uint64_t allocs, denied_bytes, live_allocs, streams_pending;
	uint64_t denied, last_report_ns;
	uint32_t limit_seq;             /* how many `limit set --pid` requests it got */
	bool pending;                   /* the last one is not applied yet (its applied_seq lags limit_seq) */
	char limit_spec[VG_REGION_SPEC_MAX];    /* the last one; "" = none */
	/* The compute share (meaningful when compute_published): per mille, and nanoseconds of GPU time. */
	bool compute_published;
	uint32_t compute_pm[VG_REGION_DEVS], compute_recent_pm[VG_REGION_DEVS];
	uint64_t gpu_time_ns[VG_REGION_DEVS];
	/* The last `limit set --compute --pid` request ("": none), and whether the process has not applied it yet. */
	char compute_spec[VG_REGION_SPEC_MAX];
	bool compute_pending;
	/* The quota forecast per device, seconds (vg_region_slot.forecast); forecast_set bit i: device i has one. */
	uint64_t forecast_s[VG_REGION_DEVS];
	uint32_t forecast_set;
};

/* Copy slot i; false if it is free. */
bool vg_slot_read(const struct vg_region *r, uint32_t i, struct vg_slot_view *v);
/* Does the process use region device d (it registered the device: the slot's bound bit)? */
bool vg_slot_uses(const struct vg_region *r, const struct vg_slot_view *v, int d);

/* "root (uid 0, mode 0600)" / "uid 1234 (mode 0600)": the owner of path, for permission messages. */
const char *vg_region_owner(const char *path, char *buf, size_t len);

/* ---- the regions of a directory ---- */

struct vg_scan_region {
	struct vg_region r;             /* open */
	char label[VG_REGION_NAME_MAX + 8];     /* shared: its name (or the file's); control: "-" */
	bool control;
	bool admin;                     /* this process may change it (r itself is a reader's copy: reopen it) */
	uint64_t fdev, fino;            /* the file, so that a region named twice is listed once */
};

struct vg_scan {
	char dir[VG_SCAN_DIR_MAX];
	struct vg_scan_region *v;
	size_t n;
	int denied;                     /* files that could not be opened: permissions */
	char denied_why[VG_SCAN_WHY_MAX];       /* the first such file, and whose it is */
	int untrusted;                  /* opened read-only although we could write them: writable by every user */
	char untrusted_why[VG_SCAN_WHY_MAX];
	int changed;                    /* files that changed while read: truncated or replaced by their owner */
	char changed_why[VG_SCAN_WHY_MAX];
	int bad;                        /* files refused for another reason (not a region, other version...) */
	char bad_why[VG_SCAN_WHY_MAX];
	int missing;                    /* regions named with --shared / VRAMGUARD_SHARED that do not exist */
	char missing_why[VG_SCAN_WHY_MAX];
	int removed;                    /* control segments of exited processes removed */
	int removed_regions;            /* shared regions whose members have all exited, removed */
	int reclaimed;                  /* shares of exited processes reclaimed */
	bool no_dir;                    /* the directory itself could not be read */
	char dir_why[VG_SCAN_WHY_MAX];
};

#define VG_SCAN_DIR 1           /* every vramguard.* file of the directory, not only the named ones */
#define VG_SCAN_CLEAN 2         /* where writable: reclaim exited processes' shares, remove their control segments
				 * and the non-persistent regions they have all left */
#define VG_SCAN_READ 4          /* never open a file for changes, not even to learn whether we may (the exporter) */

/* A scan of dir with nothing in it yet. */
void vg_scan_init(struct vg_scan *s, const char *dir);
/* Open the region file at path and add it (once: a file already added is skipped). What is added is a reader's copy
 * of the file taken now (VG_OPEN_READ: no change to the file can fault it), marked admin where region.h lets this
 * process change the file (ours, our group's, or any user's for root; never a world-writable file). With
 * VG_SCAN_CLEAN, a file it may change is cleaned first (vg_region_clean, guarded) and left out if that removed it.
 * A file that cannot be opened, or changed under us, is counted with its reason, not fatal; named: a missing file
 * counts too (a region asked for by name). */
void vg_scan_add(struct vg_scan *s, const char *path, bool named, int flags);
/* Add every region file of s->dir (DIR/vramguard.*; temporary files skipped); s->no_dir if it cannot be read. */
void vg_scan_dir(struct vg_scan *s, int flags);
/* Shared regions first, by label then path; control segments after them. */
void vg_scan_sort(struct vg_scan *s);
/* Hand region i over to the caller (*out owns its copy and descriptor; vg_scan_close leaves it alone). */
void vg_scan_take(struct vg_scan *s, size_t i, struct vg_region *out);
/* Make s a scan of the one region r, handed over (closed with s); false, r closed, when out of memory. */
bool vg_scan_single(struct vg_scan *s, const char *dir, struct vg_region *r);
void vg_scan_close(struct vg_scan *s);

#endif

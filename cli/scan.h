/* The regions as the commands show them: the scan of VRAMGUARD_SHM_DIR (accounting/region_scan.h does the reading;
 * nothing in cli/ touches a region's layout), what it could not see, and the labels the tables and messages use.
 * Shared by top, limit and region. */
#ifndef VG_CLI_SCAN_H
#define VG_CLI_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting/region_scan.h"
#include "cli/cli.h"
#include "report/report.h"

_Static_assert(VG_CLI_DIR_MAX == VG_SCAN_DIR_MAX && VG_CLI_WHY_MAX == VG_SCAN_WHY_MAX, "one size for both");

/* Open the regions: the named ones (NAME or PATH each, resolved in dir) and, with VG_SCAN_DIR, every region file
 * of dir (vg_scan_add, vg_scan_dir), sorted. Returns 0, or -EINVAL with err for an invalid name. */
int vg_scan_open(struct vg_scan *s, const char *dir, char *const *names, size_t nnames, int flags, char *err,
		 size_t errlen);
/* The lines saying what could not be seen ("2 region files could not be opened ..."), each with prefix. */
void vg_scan_notes(const struct vg_scan *s, struct vg_strbuf *out, const char *prefix);

/* A region's name (copied out of the file: another process may rewrite it), else fallback, into buf. */
const char *vg_cli_region_label(const struct vg_region *r, const char *fallback, char *buf, size_t len);
/* "GPU-8f3a2c1d (0)" for a region device; "ordinal 0" for a device registered without a UUID. */
const char *vg_dev_label(const struct vg_dev_view *d, char *buf, size_t len);
/* vg_format_bytes, or "unlimited" for VG_REGION_NONE. */
const char *vg_cli_size(uint64_t v, char *buf, size_t len);

/* "alive", "exited" or "unverifiable": a slot view's life, as top and limit show it. */
const char *vg_life_name(int life);
/* "" / "(exited) " / "(unverifiable) ": the prefix of a process's command in the tables. */
const char *vg_life_tag(int life);

#endif

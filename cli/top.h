/* `vramguard top` and `vramguard limit`: the command's side of the regions in VRAMGUARD_SHM_DIR (accounting/region.h).
 * top.c finds and opens the regions (shared by both commands) and draws the live view; limit.c changes and shows
 * limits. Only region.h's API touches the files. */
#ifndef VG_CLI_TOP_H
#define VG_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting/region.h"
#include "report/report.h"

extern const char vg_usage_top[];
extern const char vg_usage_limit[];
extern const char vg_usage_region[];

/* The commands: argv[0] is "top" / "limit". Exit status 0 done, 1 error, 2 usage. */
int vg_cli_top(int argc, char **argv);
int vg_cli_limit(int argc, char **argv);
int vg_cli_region(int argc, char **argv);

/* ---- shared by top and limit ---- */

#define VG_CLI_DIR_MAX 256
#define VG_CLI_WHY_MAX 640

/* ---- shared by every command (cli/vramguard.c too) ---- */

/* "vramguard: error: ..." on stderr, one line; returns code (the exit status). */
int vg_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a usage error: the line, then usage; returns 2. */
int vg_cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A region's name (copied out of the file: another process may rewrite it), else fallback, into buf. */
const char *vg_cli_region_label(const struct vg_region *r, const char *fallback, char *buf, size_t len);

/* Text a user gave, as a message quotes it: vg_quote into one of 8 rotating buffers (one message may quote several
 * things), so that a line stays short whatever the argument. */
const char *vg_cli_q(const char *s);
/* getopt_long (opterr 0, optstring starting with ':') returned '?' or ':' for cmd: say which option and what is
 * wrong with it, then usage. Returns 2, the exit status of a usage error. */
int vg_cli_bad_option(const char *cmd, char **argv, int c, const char *usage);
/* A negative number among the operands ("dump -1", "limit set -1G"), which getopt would take for an option: the
 * first argument before "--" that starts with '-' and a digit and is not the value of one of the options in valued
 * (NULL-terminated spellings that take a separate value, e.g. "--pid", "-p"). NULL if there is none. */
const char *vg_cli_negative(int argc, char **argv, const char *const *valued);

/* The directory: opt (--dir) if given, else VRAMGUARD_SHM_DIR, else /dev/shm. 0, or -EINVAL with the message. */
int vg_cli_dir(const char *opt, char *out, size_t len, char *err, size_t errlen);

/* One process's slot, copied out of a region (consistent: re-read if a slot was claimed or reclaimed meanwhile). */
struct vg_slot_view {
	int32_t pid;
	int life;                       /* enum vg_slot_life: alive, dead (exited) or unverifiable (region.h) */
	bool alive;                     /* life != VG_LIFE_DEAD: the process may hold memory, it is counted */
	uint64_t start;
	uint32_t bound;                 /* bit i: the process registered region device i */
	char cmd[VG_REGION_CMD_MAX];
	uint64_t used[VG_REGION_DEVS], peak[VG_REGION_DEVS], quota[VG_REGION_DEVS];
	/* What used[] is made of (published each sampler round): the allocations' bytes and the driver's own memory;
	 * count_mode: 0 not published yet, 1 device counting, 2 allocations. */
	uint64_t alloc[VG_REGION_DEVS], driver[VG_REGION_DEVS];
	uint32_t count_mode;
	uint64_t denied, last_report_ns;
	uint32_t limit_seq;             /* how many `limit set --pid` requests it got */
	bool pending;                   /* the last one is not applied yet (its applied_seq lags limit_seq) */
	char limit_spec[VG_REGION_SPEC_MAX];    /* the last one; "" = none */
};

/* "alive", "exited" or "unverifiable": a slot view's life, as top and limit show it. */
const char *vg_life_name(int life);
/* "" / "(exited) " / "(unverifiable) ": the prefix of a process's command in the tables. */
const char *vg_life_tag(int life);

/* Copy slot i; false if it is free. */
bool vg_slot_read(const struct vg_region *r, uint32_t i, struct vg_slot_view *v);
/* Does the process use region device d (it registered the device: the slot's bound bit)? */
bool vg_slot_uses(const struct vg_region *r, const struct vg_slot_view *v, int d);

/* A string field of a mapped region (another process may rewrite it at any time), copied into dst of the field's
 * size n and terminated: the only way the commands read one. Returns dst. */
const char *vg_cli_field(char *dst, const char *src, size_t n);
#define VG_CLI_FIELD(dst, field)                                                                                   \
	((void)sizeof(struct { _Static_assert(sizeof(dst) == sizeof(field), "a buffer of the field's size"); int x; }), \
	 vg_cli_field((dst), (field), sizeof(dst)))

struct vg_scan_region {
	struct vg_region r;             /* open */
	char label[VG_REGION_NAME_MAX + 8];     /* shared: its name (or the file's); control: "-" */
	bool control;
	uint64_t fdev, fino;            /* the file, so that a region named twice is listed once */
};

struct vg_scan {
	char dir[VG_CLI_DIR_MAX];
	struct vg_scan_region *v;
	size_t n;
	int denied;                     /* files that could not be opened: permissions */
	char denied_why[VG_CLI_WHY_MAX];        /* the first such file, and whose it is */
	int untrusted;                  /* opened read-only although we could write them: writable by every user */
	char untrusted_why[VG_CLI_WHY_MAX];
	int bad;                        /* files refused for another reason (not a region, other version...) */
	char bad_why[VG_CLI_WHY_MAX];
	int missing;                    /* regions named with --shared / VRAMGUARD_SHARED that do not exist */
	char missing_why[VG_CLI_WHY_MAX];
	int removed;                    /* control segments of exited processes removed */
	int removed_regions;            /* shared regions whose members have all exited, removed */
	int reclaimed;                  /* shares of exited processes reclaimed */
	bool no_dir;                    /* the directory itself could not be read */
	char dir_why[VG_CLI_WHY_MAX];
};

#define VG_SCAN_DIR 1           /* every vramguard.* file of the directory, not only the named ones */
#define VG_SCAN_CLEAN 2         /* where writable: reclaim exited processes' shares, remove their control segments
				 * and the non-persistent regions they have all left */

/* Open the regions: the named ones (NAME or PATH each, resolved in dir) and, with VG_SCAN_DIR, every region file
 * of dir (temporary files skipped). Each is opened writable where region.h allows it (ours, our group's, or any
 * user's for root; never a world-writable file), read-only otherwise (reading checks only the layout). Files that
 * cannot be opened are counted, not fatal. Returns 0, or -EINVAL with err for an invalid name. */
int vg_scan_open(struct vg_scan *s, const char *dir, char *const *names, size_t nnames, int flags, char *err,
		 size_t errlen);
void vg_scan_close(struct vg_scan *s);
/* The lines saying what could not be seen ("2 region files could not be opened ..."), each with prefix. */
void vg_scan_notes(const struct vg_scan *s, struct vg_strbuf *out, const char *prefix);

/* "root (uid 0)" / "uid 1234": the owner of path, for permission messages. */
const char *vg_cli_owner(const char *path, char *buf, size_t len);

/* "GPU-8f3a2c1d (0)" for a region device; "ordinal 0" for a device registered without a UUID. */
const char *vg_dev_label(const struct vg_region_dev *d, char *buf, size_t len);
/* vg_format_bytes, or "unlimited" for VG_REGION_NONE. */
const char *vg_cli_size(uint64_t v, char *buf, size_t len);

/* JSON output (strings: vg_json_str, report/report.h): a size in bytes or null for VG_REGION_NONE. */
void vg_cj_size(struct vg_strbuf *b, uint64_t v);
/* The start of region device d's JSON object, left open for the caller's members: sep, then {"index": d,
 * "uuid": "...", "ordinal": N */
void vg_cj_dev_open(struct vg_strbuf *b, const char *sep, const struct vg_region *r, int d);
/* A slot's last `limit set --pid` request as JSON members (no braces): "requested_limit": "SPEC" or null,
 * "applied": true/false. */
void vg_cj_request(struct vg_strbuf *b, const struct vg_slot_view *v);
/* A region's header and device table as JSON members (no braces): "kind", "name", "path", ..., "devices": [...] */
void vg_cj_region(struct vg_strbuf *b, const struct vg_scan_region *sr);

/* Aligned text tables: columns separated by two spaces, 'l' or 'r' alignment per column, cells escaped. */
struct vg_tab {
	size_t ncols;
	const char *align;
	char **cell;
	size_t nrows, cap;
	int failed;
};
void vg_tab_init(struct vg_tab *t, size_t ncols, const char *align);
void vg_tab_row(struct vg_tab *t, const char *const *cells);
void vg_tab_render(const struct vg_tab *t, struct vg_strbuf *out, const char *indent);
void vg_tab_free(struct vg_tab *t);

#endif

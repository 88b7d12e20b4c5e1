/* What `vramguard autoscale`'s parts share (cli/autoscale_target.c): the policy from the options, the state (counters,
 * cool-downs), and a target (a region's budget or a process's quota on one GPU) found from an alert's labels or
 * from the memory of a raise, and written as `limit set` writes it (cli/limit_set.h: the same checks and ownership
 * rules). The parts, bottom to top: autoscale_payload.c reads Alertmanager's webhook payload whole; this file;
 * autoscale_shrink.c lowers a limit the receiver raised back to what it was, --shrink-after its alert resolved (never
 * lower, never one it did not raise, not while the target uses more); autoscale_act.c decides, for each firing
 * alert, whether to raise; autoscale.c is the command (options, --config's file, the listener, the bearer token, the
 * counters at /metrics). */
#ifndef VG_CLI_AUTOSCALE_TARGET_H
#define VG_CLI_AUTOSCALE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting/region.h"
#include "cli/autoscale_payload.h"
#include "cli/cli.h"

#define VG_AS_CEILINGS_MAX 64
#define VG_AS_ALERTS_MAX 32
#define VG_AS_COOL_MAX 512             /* targets remembered for the cool-down (the oldest is forgotten first) */
#define VG_AS_MIB ((uint64_t)1 << 20)

/* The results, one counter each: vramguard_autoscale_actions_total{result=...}. */
#define VG_AS_RESULTS(X) \
	X(RAISED, "raised") X(LOWERED, "lowered") X(LOWER_DEFERRED, "lower_deferred") X(DRY_RUN, "dry_run") \
	X(REFUSED_CEILING, "refused_ceiling") X(REFUSED_COOLDOWN, "refused_cooldown") X(REFUSED_UNKNOWN, "refused_unknown") \
	X(REFUSED_PAYLOAD, "refused_payload") X(REFUSED_AUTH, "refused_auth")
enum vg_as_result {
#define VG_AS_ENUM(id, name) VG_AS_##id,
	VG_AS_RESULTS(VG_AS_ENUM)
#undef VG_AS_ENUM
	VG_AS_NRESULTS
};
extern const char *const vg_as_result_names[VG_AS_NRESULTS];

struct vg_as_ceiling {
	bool pid_target;                /* pid:PID=SIZE, else region:NAME=SIZE */
	int32_t pid;
	char region[VG_REGION_NAME_MAX];
	uint64_t bytes;
};

/* A target the receiver raised (or would have, in a dry run): its cool-down and, for --shrink-after, what to lower
 * it back to and how to find it again. */
struct vg_as_cool {
	char key[128];                  /* "region team gpu 0", "pid 4242 start 123 gpu 0" */
	double at;                      /* monotonic seconds of the last raise (or dry run) */
	bool raised;                    /* orig, set... below are known; false once lowered or forgotten */
	bool is_pid;
	int32_t pid;
	int ord;                        /* the GPU's ordinal */
	char region[VG_REGION_NAME_MAX + 1];    /* the alert's region label ("" for a process's control segment) */
	char what[VG_REGION_CMD_MAX + VG_REGION_NAME_MAX + 96]; /* "region 'team' GPU 0", for the log */
	uint64_t orig;                  /* the limit before the receiver's first raise: never lowered below it */
	uint64_t set;                   /* the limit the receiver last wrote (a dry run: the one in force) */
	uint64_t shown;                 /* the limit it last raised to (a dry run: would have) */
	uint32_t seq;                   /* a process: its limit_seq after the receiver's request */
	bool timer, deferred;           /* its alert resolved: lower at due; deferred: its usage was above orig */
	double resolved, due;           /* monotonic seconds */
};

/* A target found from an alert's labels (or a remembered vg_as_cool): its limit in force and usage on one GPU. */
struct vg_as_target {
	bool is_pid;
	int32_t pid;
	int ord;                                /* the GPU's ordinal, as the exporter's gpu label and 'limit show' say */
	uint64_t old, used;                     /* the limit in force and the usage on that GPU */
	uint32_t seq;                           /* a process: its limit_seq */
	bool pending;                           /* a process: its last `limit set` request is not applied yet */
	int nbound, pick;                       /* a process's GPUs (ordinal, quota), pick: the one changed */
	int bord[VG_REGION_DEVS];
	uint64_t bq[VG_REGION_DEVS];
	char what[VG_REGION_CMD_MAX + VG_REGION_NAME_MAX + 96], key[128];
};

struct vg_as_policy {
	uint64_t step_bytes;            /* --step SIZE, or */
	unsigned step_pct;              /* --step N% of the limit in force */
	char step_text[32];             /* --step as given, for the log */
	uint64_t ceiling;               /* global --ceiling SIZE, 0 for none */
	struct vg_as_ceiling ceil[VG_AS_CEILINGS_MAX];
	int nceil;
	double cooldown;                /* seconds */
	const char *alerts[VG_AS_ALERTS_MAX];
	int nalerts;                    /* 0: every alert name */
	bool dry_run;
	double shrink_after;            /* --shrink-after seconds; < 0: never lower */
	char dir[VG_CLI_DIR_MAX];
};

struct vg_as_state {
	uint64_t count[VG_AS_NRESULTS];
	struct vg_as_cool cool[VG_AS_COOL_MAX];
	int ncool;
};

/* One decision: a line on stderr ("vramguard: autoscale: RESULT: ..."; result -1: "ignored", not counted). */
void vg_as_say(struct vg_as_state *st, int result, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The target an alert's labels name (a pid label: a process; else its region label: a region's budget) on the GPU
 * its gpu label names (or its only one): 0, or -1 with why. */
int vg_as_target_of(const struct vg_as_policy *p, const struct vg_as_alert *a, struct vg_as_target *t, char *why,
		    size_t len);
/* Find a remembered target again: 0, or -1 with why (it exited, its region is gone...). */
int vg_as_find(const struct vg_as_policy *p, const struct vg_as_cool *c, struct vg_as_target *t, char *why,
	       size_t len);
/* Set t's limit on its GPU to nv (the other GPUs keep theirs), as `limit set` would, or only check the spec in a dry
 * run: 0; -1 the spec was refused (why); 1 the limit could not be set (said above by limit set). The spec in spec. */
int vg_as_write(const struct vg_as_policy *p, const struct vg_as_target *t, const char *region, uint64_t nv,
		char *spec, size_t speclen, char *why, size_t len);
/* The cool-down entry of key (added if add: the oldest forgotten when full), or NULL. */
struct vg_as_cool *vg_as_cool_get(struct vg_as_state *st, const char *key, bool add);
/* Is s a region NAME (what the exporter's region label holds), not a path or anything else? */
bool vg_as_region_name(const char *s);
/* A size as the log and a spec write it: "120 MiB" / "120M" (bytes with "b" when not whole MiB). */
const char *vg_as_spec_size(uint64_t v, char *buf, size_t len);

#endif

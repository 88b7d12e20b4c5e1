/* `vramguard autoscale`'s parts: autoscale.c parses the flags (and --config's file), listens (cli/http.c), checks
 * the bearer token and serves the counters; autoscale_payload.c reads Alertmanager's webhook payload whole;
 * autoscale_act.c decides, for each firing alert, whether to raise the region's budget or the process's quota it
 * names, through `limit set`'s own functions (cli/limit.h: the same checks and ownership rules); autoscale_shrink.c
 * lowers a limit the receiver raised back to what it was, --shrink-after its alert resolved (never lower, never one
 * it did not raise, not while the target uses more). */
#ifndef VG_CLI_AUTOSCALE_H
#define VG_CLI_AUTOSCALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting/region.h"
#include "cli/cli.h"

#define VG_AS_CEILINGS_MAX 64
#define VG_AS_ALERTS_MAX 32
#define VG_AS_COOL_MAX 512             /* targets remembered for the cool-down (the oldest is forgotten first) */
#define VG_AS_BODY_MAX (1 << 20)       /* a webhook body, bytes */
#define VG_AS_PAYLOAD_ALERTS_MAX 1000  /* alerts in one payload */

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

/* One alert of a payload, the labels read (others are ignored: Alertmanager and rules add their own); a label
 * present but "" is not absent (has_). */
struct vg_as_alert {
	bool firing;
	/* command: the slot's, as the exporter's label writes it (each byte that is not UTF-8 three of U+FFFD) */
	char name[128], region[VG_REGION_NAME_MAX + 1], pid[24], command[3 * VG_REGION_CMD_MAX], gpu[16],
		gpu_uuid[VG_REGION_UUID_MAX];
	bool has_pid, has_region, has_gpu, has_gpu_uuid, has_command;
};

struct vg_as_payload {
	struct vg_as_alert *v;          /* malloc'd (free it, also after a refusal) */
	size_t n;
};

/* Read a webhook body whole (cli/autoscale_payload.c): 0, or -1 with a one-line reason in err; nothing is acted on.
 * UTF-8 JSON whose strings are all text, Alertmanager's version "4", at most VG_AS_PAYLOAD_ALERTS_MAX alerts. */
int vg_as_payload_parse(const char *body, size_t len, struct vg_as_payload *out, char *err, size_t errlen);

/* Act on one webhook body: every decision logged on stderr (one line each) and counted in st. The HTTP status to
 * answer and a one-line summary for the response's body in msg. */
int vg_as_handle(const struct vg_as_policy *p, struct vg_as_state *st, const char *body, size_t len, char *msg,
		 size_t msglen);
/* The due lowerings (--shrink-after), each one line: the milliseconds until the next is due, -1 for none. */
int vg_as_tick(const struct vg_as_policy *p, struct vg_as_state *st);

/* ---- between autoscale_act.c and autoscale_shrink.c ---- */

/* One decision: a line on stderr ("vramguard: autoscale: RESULT: ..."; result -1: "ignored", not counted). */
void vg_as_say(struct vg_as_state *st, int result, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Find a remembered target again: 0, or -1 with why (it exited, its region is gone...). */
int vg_as_find(const struct vg_as_policy *p, const struct vg_as_cool *c, struct vg_as_target *t, char *why,
	       size_t len);
/* Set t's limit on its GPU to nv (the other GPUs keep theirs), as `limit set` would, or only check the spec in a dry
 * run: 0; -1 the spec was refused (why); 1 the limit could not be set (said above by limit set). The spec in spec. */
int vg_as_write(const struct vg_as_policy *p, const struct vg_as_target *t, const char *region, uint64_t nv,
		char *spec, size_t speclen, char *why, size_t len);
/* The cool-down entry of key (added if add: the oldest forgotten when full), or NULL. */
struct vg_as_cool *vg_as_cool_get(struct vg_as_state *st, const char *key, bool add);
/* After a raise (or dry run) of t from t->old to nv: remember it for --shrink-after. */
void vg_as_remember(const struct vg_as_policy *p, struct vg_as_cool *c, const struct vg_as_target *t,
		    const char *region, uint64_t nv);
/* A resolved alert (an) for the target t: with --shrink-after, start its timer if the receiver raised it. */
void vg_as_resolved(const struct vg_as_policy *p, struct vg_as_state *st, const char *an,
		    const struct vg_as_target *t);
/* A firing alert (an) for the target key: a timer running for it is cancelled. */
void vg_as_fired(struct vg_as_state *st, const char *an, const char *key);

/* Is s a region NAME (what the exporter's region label holds), not a path or anything else? */
bool vg_as_region_name(const char *s);
/* A size as the log and a spec write it: "120 MiB" / "120M" (bytes with "b" when not whole MiB). */
const char *vg_as_spec_size(uint64_t v, char *buf, size_t len);

#endif

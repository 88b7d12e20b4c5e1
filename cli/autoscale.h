/* `vramguard autoscale`'s parts: autoscale.c parses the flags, listens (cli/http.c), checks the bearer token and
 * serves the counters; autoscale_act.c reads Alertmanager's webhook payload and decides, for each firing alert,
 * whether to raise the region's budget or the process's quota it names, through `limit set`'s own functions
 * (cli/limit.h: the same checks and ownership rules). */
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
	X(RAISED, "raised") X(DRY_RUN, "dry_run") X(REFUSED_CEILING, "refused_ceiling") \
	X(REFUSED_COOLDOWN, "refused_cooldown") X(REFUSED_UNKNOWN, "refused_unknown") \
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

struct vg_as_cool {
	char key[128];                  /* "region team gpu 0", "pid 4242 gpu 0" */
	double at;                      /* monotonic seconds of the last raise (or dry run) */
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
	char dir[VG_CLI_DIR_MAX];
};

struct vg_as_state {
	uint64_t count[VG_AS_NRESULTS];
	struct vg_as_cool cool[VG_AS_COOL_MAX];
	int ncool;
};

/* Act on one webhook body: every decision logged on stderr (one line each) and counted in st. The HTTP status to
 * answer and a one-line summary for the response's body in msg. */
int vg_as_handle(const struct vg_as_policy *p, struct vg_as_state *st, const char *body, size_t len, char *msg,
		 size_t msglen);
/* A size as the log and a spec write it: "120 MiB" / "120M" (bytes with "b" when not whole MiB). */
const char *vg_as_spec_size(uint64_t v, char *buf, size_t len);
double vg_as_now(void);

#endif

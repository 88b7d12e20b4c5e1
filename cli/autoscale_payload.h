/* Alertmanager's webhook payload as `vramguard autoscale` reads it (cli/autoscale_payload.c): whole, before anything
 * is acted on. The bottom of autoscale's parts (cli/autoscale_target.h names them all): it touches no region, so that
 * tests/fuzz/fuzz_webhook.c drives it alone. */
#ifndef VG_CLI_AUTOSCALE_PAYLOAD_H
#define VG_CLI_AUTOSCALE_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "accounting/region.h"

#define VG_AS_BODY_MAX (1 << 20)       /* a webhook body, bytes */
#define VG_AS_PAYLOAD_ALERTS_MAX 1000  /* alerts in one payload */

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

#endif

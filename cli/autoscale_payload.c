/* `vramguard autoscale`: reading Alertmanager's webhook payload (cli/autoscale_payload.h), before anything is acted on.
 * One rule for the whole payload: UTF-8 JSON whose every string, read or passed over, is text (no byte that is not
 * UTF-8, no \u0000, no \u escape of a lone surrogate), of Alertmanager's shape (version "4", an "alerts" array of
 * objects with a "status" and string "labels"), within bounded sizes; any other is refused whole with a one-line
 * reason. Nothing here touches a region, so that tests/fuzz/fuzz_webhook.c drives it alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/autoscale_payload.h"
#include "report/json.h"

/* A string value into dst; too long is a payload error, not a silent cut. */
static int as_str(struct vg_jp *p, char *dst, size_t size)
{
	if (vg_jp_peek(p) != '"')
		return vg_jp_field(p, "expected a string");
	struct vg_jp_out o = { .buf = dst, .cap = size };
	if (vg_jp_string(p, &o) != 0)
		return -1;
	if (o.full)
		return vg_jp_field(p, "string longer than %zu bytes", size - 1);
	return 0;
}

static int as_labels(struct vg_jp *p, struct vg_as_alert *a)
{
	if (vg_jp_peek(p) != '{')
		return vg_jp_field(p, "expected an object of label names and string values");
	char kbuf[64];
	struct vg_jp_out key = { .buf = kbuf, .cap = sizeof(kbuf) };
	size_t i = 0, at = p->pathlen;
	int rc;
	if (vg_jp_open(p) != 0)
		return -1;
	while ((rc = vg_jp_member(p, &i, &key)) == 1) {
		if (i > 256)
			return vg_jp_field(p, "more than 256 labels");
		/* The labels read, each into its field (and its has_ flag: a label present but "" is not absent). */
		static const struct { const char *k; size_t off, size, has; } L[] = {
#define AS_L(f) { #f, offsetof(struct vg_as_alert, f), sizeof(((struct vg_as_alert *)0)->f), \
		  offsetof(struct vg_as_alert, has_##f) }
			AS_L(pid), AS_L(region), AS_L(command), AS_L(gpu), AS_L(gpu_uuid),
#undef AS_L
			{ "alertname", offsetof(struct vg_as_alert, name), sizeof(((struct vg_as_alert *)0)->name), SIZE_MAX },
		};
		size_t k;
		for (k = 0; k < sizeof(L) / sizeof(L[0]); k++)
			if (!key.full && !strcmp(kbuf, L[k].k))
				break;
		vg_jp_path_push(p, key.full ? "?" : kbuf, 0, 0);
		if (k < sizeof(L) / sizeof(L[0])) {
			rc = as_str(p, (char *)a + L[k].off, L[k].size);
			if (L[k].has != SIZE_MAX)
				*(bool *)((char *)a + L[k].has) = true;
		} else {
			rc = vg_jp_peek(p) == '"' ? vg_jp_string(p, NULL) : vg_jp_field(p, "expected a string");
		}
		vg_jp_path_pop(p, at);
		if (rc != 0)
			return -1;
	}
	return rc;
}

static int as_alert(struct vg_jp *p, struct vg_as_alert *a)
{
	if (vg_jp_peek(p) != '{')
		return vg_jp_field(p, "expected an object");
	char kbuf[32], status[16] = "";
	struct vg_jp_out key = { .buf = kbuf, .cap = sizeof(kbuf) };
	size_t i = 0, at = p->pathlen;
	int rc;
	bool labels = false;
	memset(a, 0, sizeof(*a));
	if (vg_jp_open(p) != 0)
		return -1;
	while ((rc = vg_jp_member(p, &i, &key)) == 1) {
		bool is_status = !key.full && !strcmp(kbuf, "status"), is_labels = !key.full && !strcmp(kbuf, "labels");
		if (!is_status && !is_labels) {
			if (vg_jp_skip(p) != 0)
				return -1;
			continue;
		}
		vg_jp_path_push(p, kbuf, 0, 0);
		if (is_status)
			rc = as_str(p, status, sizeof(status));
		else {
			rc = as_labels(p, a);
			labels = true;
		}
		vg_jp_path_pop(p, at);
		if (rc != 0)
			return -1;
	}
	if (rc != 0)
		return -1;
	if (strcmp(status, "firing") && strcmp(status, "resolved"))
		return vg_jp_field(p, "status '%s': expected \"firing\" or \"resolved\"", status);
	if (!labels || !a->name[0])
		return vg_jp_field(p, "missing \"labels\" with an \"alertname\"");
	a->firing = !strcmp(status, "firing");
	return 0;
}

/* The whole payload: {"version": "4", "alerts": [...], ...}; other keys are passed over. */
int vg_as_payload_parse(const char *body, size_t len, struct vg_as_payload *out, char *err, size_t errlen)
{
	struct vg_jp p;
	char kbuf[32], version[16] = "";
	struct vg_jp_out key = { .buf = kbuf, .cap = sizeof(kbuf) };
	size_t i = 0, n = 0, cap = 0;
	int rc;
	bool alerts = false;
	memset(out, 0, sizeof(*out));
	vg_jp_init(&p, body, len, err, errlen);
	p.text_only = 1;
	if (vg_jp_peek(&p) != '{') {
		vg_jp_seterr(&p, -EINVAL, "not Alertmanager's webhook payload: expected a JSON object");
		return -1;
	}
	if (vg_jp_open(&p) != 0)
		return -1;
	while ((rc = vg_jp_member(&p, &i, &key)) == 1) {
		if (key.full || (strcmp(kbuf, "version") && strcmp(kbuf, "alerts"))) {
			if (vg_jp_skip(&p) != 0)
				return -1;
			continue;
		}
		vg_jp_path_push(&p, kbuf, 0, 0);
		if (!strcmp(kbuf, "version")) {
			if (as_str(&p, version, sizeof(version)) != 0)
				return -1;
		} else {
			if (vg_jp_peek(&p) != '[')
				return vg_jp_field(&p, "expected an array");
			if (vg_jp_open(&p) != 0)
				return -1;
			alerts = true;
			size_t j = 0;
			while ((rc = vg_jp_element(&p, &j)) == 1) {
				if (n == VG_AS_PAYLOAD_ALERTS_MAX)
					return vg_jp_field(&p, "more than %d alerts", VG_AS_PAYLOAD_ALERTS_MAX);
				if (n == cap) {         /* doubled: a payload of 1000 alerts is not 1000 reallocs */
					cap = cap ? 2 * cap : 16;
					struct vg_as_alert *v = realloc(out->v, cap * sizeof(*v));
					if (!v)
						return vg_jp_nomem(&p);
					out->v = v;
				}
				size_t at = p.pathlen;
				vg_jp_path_push(&p, NULL, j - 1, 1);
				if (as_alert(&p, &out->v[n]) != 0)
					return -1;
				vg_jp_path_pop(&p, at);
				out->n = ++n;
			}
			if (rc != 0)
				return -1;
		}
		vg_jp_path_pop(&p, 0);
	}
	if (rc != 0)
		return -1;
	if (vg_jp_peek(&p) >= 0)
		return vg_jp_syntax(&p, p.pos, "trailing data after the payload");
	if (strcmp(version, "4")) {
		/* Through vg_jp_seterr, which makes the payload's control characters '?': the reason stays one line. */
		char msg[96];
		snprintf(msg, sizeof(msg), "not Alertmanager's webhook payload version \"4\" (version '%s')", version);
		vg_jp_seterr(&p, -EINVAL, msg);
		return -1;
	}
	if (!alerts) {
		vg_jp_seterr(&p, -EINVAL, "not Alertmanager's webhook payload: no \"alerts\" array");
		return -1;
	}
	return 0;
}

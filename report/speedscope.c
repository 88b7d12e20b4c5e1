/* The speedscope export (report/flame.h): speedscope's JSON file format, "sampled" profiles whose samples are the
 * call sites (stacks of indices into shared.frames, root first) weighted by bytes. Frames are shared: one entry per
 * distinct (name, file, line). */
#include "report/flame.h"
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define VG_SS_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct vg_ss_frames {
	struct vg_strbuf keys;          /* every frame's key, NUL-terminated, one after another */
	size_t *off;                    /* key offsets, by frame index */
	size_t n, cap;
	uint32_t *slot;                 /* open addressing: frame index + 1, 0 empty */
	size_t nslots;
};

static uint64_t vg_ss_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int vg_ss_grow(struct vg_ss_frames *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 1024, i;
	uint32_t *slot = calloc(ns, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		const char *k = t->keys.data + t->off[i];
		size_t h = vg_ss_hash(k, strlen(k)) & (ns - 1);
		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

/* The index of the frame with this key (key[0..n) has no NUL), added if new; -ENOMEM. */
static long vg_ss_intern(struct vg_ss_frames *t, const char *key, size_t n)
{
	size_t h;

	if ((t->n + 1) * 2 > t->nslots && vg_ss_grow(t))
		return -ENOMEM;
	for (h = vg_ss_hash(key, n) & (t->nslots - 1); t->slot[h]; h = (h + 1) & (t->nslots - 1)) {
		const char *k = t->keys.data + t->off[t->slot[h] - 1];
		if (!strncmp(k, key, n) && !k[n])
			return (long)t->slot[h] - 1;
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		size_t *off = realloc(t->off, nc * sizeof(*off));
		if (!off)
			return -ENOMEM;
		t->off = off;
		t->cap = nc;
	}
	t->off[t->n] = t->keys.len;
	vg_strbuf_add(&t->keys, key, n);
	vg_strbuf_add(&t->keys, "", 1);
	if (t->keys.failed)
		return -ENOMEM;
	t->slot[h] = (uint32_t)t->n + 1;
	return (long)t->n++;
}

/* A frame's key is what its JSON entry says: "name\x1ffile\x1fline" (0: none). */
static void vg_ss_key(struct vg_strbuf *k, const struct vg_flame_frame *f)
{
	if (f->py) {
		vg_text_str(k, f->py->function[0] ? f->py->function : "?", VG_REPORT_PY_FUNCTION_STR);
		vg_strbuf_add(k, "\x1f", 1);
		vg_text_str(k, f->py->file, VG_REPORT_FRAME_STR);
		vg_strbuf_printf(k, "\x1f%" PRIu32, f->py->line);
	} else if (f->native && f->native->symbol[0]) {
		vg_flame_symbol(k, f->native);
		vg_strbuf_add(k, "\x1f", 1);
		vg_text_str(k, f->native->module, VG_REPORT_FRAME_STR);
		vg_strbuf_add(k, "\x1f" "0", 2);
	} else {                /* no symbol: the label carries the offset */
		vg_flame_label(k, f);
		vg_strbuf_add(k, "\x1f", 1);
		if (f->native)
			vg_text_str(k, f->native->module, VG_REPORT_FRAME_STR);
		vg_strbuf_add(k, "\x1f" "0", 2);
	}
}

static void vg_ss_frame_json(struct vg_strbuf *out, const char *key, const char *sep)
{
	const char *f = strchr(key, '\x1f'), *l = f ? strchr(f + 1, '\x1f') : NULL;
	if (!f || !l)
		return;
	vg_strbuf_printf(out, "%s{\"name\": ", sep);
	vg_json_str(out, key, (size_t)(f - key));
	if (l > f + 1) {
		vg_strbuf_str(out, ", \"file\": ");
		vg_json_str(out, f + 1, (size_t)(l - f - 1));
	}
	if (strcmp(l + 1, "0"))
		vg_strbuf_printf(out, ", \"line\": %s", l + 1);
	vg_strbuf_str(out, "}");
}

/* One sampled profile: a sample per site whose weight (live or total bytes) is not 0. */
static void vg_ss_profile(struct vg_strbuf *out, const struct vg_report *r, const char *name, int live,
			  const struct vg_strbuf *stacks, const size_t *stack_off)
{
	size_t i, k = 0;
	uint64_t sum = 0;

	for (i = 0; r->sites && i < r->nsites; i++)
		sum += live ? r->sites[i].live_bytes : r->sites[i].total_bytes;
	vg_strbuf_str(out, "    {\"type\": \"sampled\", \"name\": ");
	vg_json_str(out, name, strlen(name));
	vg_strbuf_printf(out, ", \"unit\": \"bytes\", \"startValue\": 0, \"endValue\": %" PRIu64 ",\n      \"samples\": [",
			 sum);
	for (i = 0; r->sites && i < r->nsites; i++) {
		if (!(live ? r->sites[i].live_bytes : r->sites[i].total_bytes))
			continue;
		vg_strbuf_printf(out, "%s[%s]", k++ ? ", " : "", stacks->data + stack_off[i]);
	}
	vg_strbuf_str(out, "],\n      \"weights\": [");
	for (i = 0, k = 0; r->sites && i < r->nsites; i++) {
		uint64_t w = live ? r->sites[i].live_bytes : r->sites[i].total_bytes;
		if (w)
			vg_strbuf_printf(out, "%s%" PRIu64, k++ ? ", " : "", w);
	}
	vg_strbuf_str(out, "]}");
}

int vg_report_render_speedscope(const struct vg_report *r, const char *name, struct vg_strbuf *out)
{
	struct vg_ss_frames t = { 0 };
	struct vg_strbuf stacks = { 0 }, key = { 0 };
	struct vg_flame_frame st[VG_FLAME_MAX];
	size_t *stack_off = calloc(r->nsites ? r->nsites : 1, sizeof(*stack_off)), i, j, n;
	char what[160];
	int rc = -ENOMEM;

	if (!stack_off)
		return -ENOMEM;
	for (i = 0; r->sites && i < r->nsites; i++) {
		stack_off[i] = stacks.len;
		n = vg_flame_stack(r, &r->sites[i], st);
		for (j = 0; j < n; j++) {
			long idx;
			key.len = 0;
			vg_ss_key(&key, &st[j]);
			if (key.failed || (idx = vg_ss_intern(&t, key.data, key.len)) < 0)
				goto out;
			vg_strbuf_printf(&stacks, "%s%ld", j ? ", " : "", idx);
		}
		vg_strbuf_add(&stacks, "", 1);
	}
	if (stacks.failed)
		goto out;
	vg_strbuf_str(out, "{\"$schema\": \"" VG_SS_SCHEMA "\",\n  \"name\": ");
	vg_json_str(out, name, strlen(name));
	vg_strbuf_str(out, ",\n  \"exporter\": \"vramguard " VG_VERSION "\",\n  \"activeProfileIndex\": 0,\n"
		      "  \"shared\": {\"frames\": [\n");
	for (i = 0; i < t.n; i++)
		vg_ss_frame_json(out, t.keys.data + t.off[i], i ? ",\n    " : "    ");
	vg_strbuf_str(out, "]},\n  \"profiles\": [\n");
	snprintf(what, sizeof(what), "live bytes by call site (pid %d, %.*s)", r->pid, (int)sizeof(r->reason), r->reason);
	vg_ss_profile(out, r, what, 1, &stacks, stack_off);
	vg_strbuf_str(out, ",\n");
	snprintf(what, sizeof(what), "bytes ever allocated by call site (pid %d)", r->pid);
	vg_ss_profile(out, r, what, 0, &stacks, stack_off);
	vg_strbuf_str(out, "\n  ]\n}\n");
	rc = vg_strbuf_result(out);
out:
	free(stack_off);
	free(t.off);
	free(t.slot);
	vg_strbuf_free(&t.keys);
	vg_strbuf_free(&stacks);
	vg_strbuf_free(&key);
	return rc;
}

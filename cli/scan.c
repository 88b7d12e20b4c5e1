/* The regions as the commands show them (cli/scan.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/scan.h"
#include "config/config.h"

int vg_scan_open(struct vg_scan *s, const char *dir, char *const *names, size_t nnames, int flags, char *err,
		 size_t errlen)
{
	vg_scan_init(s, dir);
	char path[VG_SHARED_PATH_MAX], why[VG_CLI_WHY_MAX];
	for (size_t i = 0; i < nnames; i++) {
		if (vg_region_path(dir, names[i], path, sizeof(path), why, sizeof(why)) != 0) {
			snprintf(err, errlen, "invalid --shared %s: %s", vg_cli_q(names[i]), why);
			return -EINVAL;
		}
		vg_scan_add(s, path, true, flags);
	}
	if (flags & VG_SCAN_DIR)
		vg_scan_dir(s, flags);
	vg_scan_sort(s);
	return 0;
}

void vg_scan_notes(const struct vg_scan *s, struct vg_strbuf *out, const char *prefix)
{
	if (s->no_dir)
		vg_strbuf_printf(out, "%s%s\n", prefix, s->dir_why);
	if (s->denied)
		vg_strbuf_printf(out, "%s%d region file%s could not be opened for lack of permission (%s%s): run as %s "
				 "owner or root to see %s\n", prefix, s->denied, s->denied == 1 ? "" : "s", s->denied_why,
				 s->denied > 1 ? ", ..." : "", s->denied == 1 ? "its" : "their",
				 s->denied == 1 ? "it" : "them");
	if (s->untrusted)
		vg_strbuf_printf(out, "%s%d region file%s shown read-only, not trusted for writing (%s%s): nothing is "
				 "reclaimed and no limit can be set there; remove %s when no process uses %s and let "
				 "vramguard create %s again (VRAMGUARD_SHARED_MODE=0600 or 0660)\n", prefix, s->untrusted,
				 s->untrusted == 1 ? "" : "s", s->untrusted_why, s->untrusted > 1 ? ", ..." : "",
				 s->untrusted == 1 ? "it" : "them", s->untrusted == 1 ? "it" : "them",
				 s->untrusted == 1 ? "it" : "them");
	if (s->changed)
		vg_strbuf_printf(out, "%s%d region file%s skipped this time, changed under vramguard (%s%s): %s owner "
				 "truncated or replaced %s; the next look reads %s again\n", prefix, s->changed,
				 s->changed == 1 ? "" : "s", s->changed_why, s->changed > 1 ? ", ..." : "",
				 s->changed == 1 ? "its" : "their", s->changed == 1 ? "it" : "them",
				 s->changed == 1 ? "it" : "them");
	if (s->bad)
		vg_strbuf_printf(out, "%s%d file%s skipped (%s%s)\n", prefix, s->bad, s->bad == 1 ? "" : "s", s->bad_why,
				 s->bad > 1 ? ", ..." : "");
	if (s->missing)
		vg_strbuf_printf(out, "%sno shared region: %s%s\n", prefix, s->missing_why, s->missing > 1 ? ", ..." : "");
}

const char *vg_cli_region_label(const struct vg_region *r, const char *fallback, char *buf, size_t len)
{
	struct vg_region_info info;
	vg_region_info_read(r, &info);
	const char *l = info.name[0] && info.name[0] != '/' ? info.name : fallback;
	size_t n = strnlen(l, len - 1);
	memcpy(buf, l, n);
	buf[n] = '\0';
	return buf;
}

const char *vg_dev_label(const struct vg_dev_view *d, char *buf, size_t len)
{
	const char *uuid = d->uuid;
	if (!strncmp(uuid, "ordinal:", 8))
		snprintf(buf, len, "ordinal %s", uuid + 8);
	else if ((!strncmp(uuid, "GPU-", 4) || !strncmp(uuid, "MIG-", 4)) && strlen(uuid) > 12)
		snprintf(buf, len, "%.12s (%d)", uuid, (int)d->ordinal);
	else
		snprintf(buf, len, "%s (%d)", uuid, (int)d->ordinal);
	return buf;
}

const char *vg_cli_size(uint64_t v, char *buf, size_t len)
{
	if (v == VG_REGION_NONE) {
		snprintf(buf, len, "unlimited");
		return buf;
	}
	return vg_format_bytes(v, buf, len);
}

const char *vg_life_name(int life)
{
	return life == VG_LIFE_ALIVE ? "alive" : life == VG_LIFE_UNVERIFIABLE ? "unverifiable" : "exited";
}

const char *vg_life_tag(int life)
{
	return life == VG_LIFE_ALIVE ? "" : life == VG_LIFE_UNVERIFIABLE ? "(unverifiable) " : "(exited) ";
}

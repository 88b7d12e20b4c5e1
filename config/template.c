/* VRAMGUARD_REPORT's file name template (template.h): the syntax, and the check the loader runs. */
#include "config/template.h"

#include <string.h>

bool vg_template_next(const char *t, size_t n, size_t *at, struct vg_template_part *part)
{
	size_t i = *at;

	if (i >= n)
		return false;
	if (t[i] != '%') {
		const char *pct = memchr(t + i, '%', n - i);
		size_t end = pct ? (size_t)(pct - t) : n;
		*part = (struct vg_template_part){ 0, t + i, end - i };
		*at = end;
		return true;
	}
	if (i + 1 == n)
		return false;
	switch (t[i + 1]) {
	case 'p': case 'n': case 'r': case 'h':
		*part = (struct vg_template_part){ t[i + 1], NULL, 0 };
		break;
	case '%':
		*part = (struct vg_template_part){ 0, t + i + 1, 1 };
		break;
	default:
		return false;
	}
	*at = i + 2;
	return true;
}

/* Length of the specifier after a '%' at t[i] as quoted in a message: one byte, or a whole UTF-8 sequence. */
static size_t vg_spec_len(const char *t, size_t i, size_t n)
{
	size_t k = i + 1;

	if ((unsigned char)t[i] >= 0x80)
		while (k < n && k < i + 4 && ((unsigned char)t[k] & 0xc0) == 0x80)
			k++;
	return k - i;
}

const char *vg_report_template_check(const char *t, size_t n, const char **bad, size_t *badn)
{
	struct vg_template_part part;
	size_t at = 0;

	*bad = NULL;
	*badn = 0;
	while (vg_template_next(t, n, &at, &part))
		;
	if (at == n)
		return NULL;
	if (at + 1 == n)
		return "lone '%' at the end";
	*bad = t + at;
	*badn = 1 + vg_spec_len(t, at + 1, n);
	return "unknown specifier";
}

bool vg_template_has(const char *t, char c)
{
	struct vg_template_part part;
	size_t at = 0, n = strlen(t);

	while (vg_template_next(t, n, &at, &part))
		if (part.spec == c)
			return true;
	return false;
}

/* Report file names from a VRAMGUARD_REPORT template (report/path.h). The template's syntax is config's
 * (config/template.h): a template the loader accepted always expands; this file gives each specifier its value. */
#include "report/path.h"
#include "config/template.h"

#include <errno.h>
#include <string.h>

/* Appends to out[*len..outlen) without ever writing past the end; *len may pass outlen, meaning "did not fit". */
static void vg_path_put(char *out, size_t outlen, size_t *len, const char *s, size_t n, int sanitize)
{
	size_t i;

	for (i = 0; i < n; i++, (*len)++)
		if (*len < outlen)
			out[*len] = (sanitize && s[i] == '/') ? '_' : s[i];
}

/* v in decimal, negative as "-N", into out[*len..). */
static void vg_path_num(char *out, size_t outlen, size_t *len, int negative, uint64_t v)
{
	char tmp[21];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (negative)
		vg_path_put(out, outlen, len, "-", 1, 0);
	vg_path_put(out, outlen, len, tmp + i, sizeof(tmp) - i, 0);
}

int vg_report_path_expand(const char *tmpl, int pid, uint64_t seq, const char *reason, const char *host, char *out,
			  size_t outlen)
{
	struct vg_template_part part;
	const char *bad;
	size_t len = 0, badn, at = 0, n;

	if (!tmpl || !out)
		return -EINVAL;
	n = strlen(tmpl);
	if (vg_report_template_check(tmpl, n, &bad, &badn))
		return -EINVAL;
	while (vg_template_next(tmpl, n, &at, &part)) {
		switch (part.spec) {
		case 'p':
			vg_path_num(out, outlen, &len, pid < 0,
				    pid < 0 ? (uint64_t)0 - (uint64_t)(int64_t)pid : (uint64_t)pid);
			break;
		case 'n':
			vg_path_num(out, outlen, &len, 0, seq);
			break;
		case 'r':
			if (reason)
				vg_path_put(out, outlen, &len, reason, strlen(reason), 1);
			break;
		case 'h':
			if (host)
				vg_path_put(out, outlen, &len, host, strlen(host), 1);
			break;
		default: /* literal text */
			vg_path_put(out, outlen, &len, part.text, part.n, 0);
			break;
		}
	}
	if (len >= outlen)
		return -ENAMETOOLONG;
	out[len] = '\0';
	return 0;
}

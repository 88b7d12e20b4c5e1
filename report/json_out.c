/* Writing JSON (report/json_out.h): escaped strings and "key": value members. */
#include "report/json_out.h"
#include "config/config.h"

#include <inttypes.h>
#include <string.h>

/* Module paths and symbols are bytes from the file system and the ELF tables: whatever is not
 * well-formed UTF-8 becomes U+FFFD, so the document always parses. */
void vg_json_str(struct vg_strbuf *b, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strnlen(str, max), i = 0, run = 0;

	vg_strbuf_add(b, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (k = vg_utf8_len(str + i, n - i)) != 0) {
			i += k;
			continue;
		}
		vg_strbuf_add(b, str + run, i - run);
		if (c == '"')
			vg_strbuf_add(b, "\\\"", 2);
		else if (c == '\\')
			vg_strbuf_add(b, "\\\\", 2);
		else if (c == '\n')
			vg_strbuf_add(b, "\\n", 2);
		else if (c == '\t')
			vg_strbuf_add(b, "\\t", 2);
		else if (c == '\r')
			vg_strbuf_add(b, "\\r", 2);
		else if (c < 0x80)
			vg_strbuf_printf(b, "\\u%04x", c);
		else
			vg_strbuf_add(b, "\\ufffd", 6);
		i++;
		run = i;
	}
	vg_strbuf_add(b, str + run, n - run);
	vg_strbuf_add(b, "\"", 1);
}

void vg_json_key(struct vg_strbuf *b, const char *sep, const char *key)
{
	vg_strbuf_printf(b, "%s\"%s\": ", sep, key);
}

void vg_json_kstr(struct vg_strbuf *b, const char *sep, const char *key, const char *s, size_t max)
{
	vg_json_key(b, sep, key);
	vg_json_str(b, s, max);
}

void vg_json_ku64(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	vg_strbuf_printf(b, "%s\"%s\": %" PRIu64, sep, key, v);
}

void vg_json_kint(struct vg_strbuf *b, const char *sep, const char *key, int v)
{
	vg_strbuf_printf(b, "%s\"%s\": %d", sep, key, v);
}

void vg_json_kbool(struct vg_strbuf *b, const char *sep, const char *key, int v)
{
	vg_strbuf_printf(b, "%s\"%s\": %s", sep, key, v ? "true" : "false");
}

void vg_json_knull(struct vg_strbuf *b, const char *sep, const char *key)
{
	vg_strbuf_printf(b, "%s\"%s\": null", sep, key);
}

void vg_json_kaddr(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v)
{
	vg_strbuf_printf(b, "%s\"%s\": \"0x%" PRIx64 "\"", sep, key, v);
}

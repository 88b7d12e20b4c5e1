/* The HTML text of the HTML report's pages and charts (report/html_out.h): escaping, sizes and times. */
#include "report/html_out.h"
#include "config/config.h"

#include <string.h>

void vg_html_esc(struct vg_strbuf *b, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strnlen(s, max), i = 0, run = 0;

	while (i < n) {
		unsigned char c = p[i];
		size_t len = vg_utf8_len((const char *)p + i, n - i);
		const char *rep = NULL;
		if (len == 1 && c >= 0x20 && c != 0x7f && !strchr("&<>\"'", c)) {
			i++, run++;
			continue;
		}
		if (len > 1) {
			i += len, run += len;
			continue;
		}
		vg_strbuf_add(b, (const char *)p + i - run, run);
		run = 0;
		switch (c) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		case '\n': rep = "\n"; break;
		default: rep = "\xef\xbf\xbd"; break;   /* U+FFFD: a control character or not UTF-8 */
		}
		vg_strbuf_str(b, rep);
		i++;
	}
	vg_strbuf_add(b, (const char *)p + i - run, run);
}

void vg_html_bytes(struct vg_strbuf *b, uint64_t v)
{
	char s[32];
	vg_strbuf_str(b, vg_format_bytes(v, s, sizeof(s)));
}

void vg_html_time(struct vg_strbuf *b, uint64_t ns)
{
	char s[64];
	vg_report_time(ns, 0, s, sizeof(s));
	vg_strbuf_str(b, s);
}
